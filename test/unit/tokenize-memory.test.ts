/**
 * The stem cache (shared/tokenize.ts) keeps words and terms across pages, bounded by its entry count.
 * It must keep them as strings of their own: a word of 13 characters or more cut from a page's text is,
 * in V8, a view that keeps the whole text alive, so a cache of such words kept every page that gave it
 * a new long word. Measured in a child process of its own (`node --expose-gc`, the built tokenizer from
 * dist/, which `npm test` builds first), where a full collection can be asked for.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const TOKENIZE = new URL('../../dist/shared/tokenize.js', import.meta.url).href;

/** Tokenizes `pages` texts of about `pageBytes` each, every one with a word no other page has; returns the heap in use after full collections, MiB. */
function heapAfterPages(pages: number, pageBytes: number): number {
  const script = `
    const { tokenize } = await import(${JSON.stringify(TOKENIZE)});
    const filler = 'plain words repeated over and over '.repeat(Math.ceil(${pageBytes} / 35)).slice(0, ${pageBytes});
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < ${pages}; i++) {
      // A fresh text each time (the prefix makes a new string), with a long word found nowhere else.
      const text = 'page' + i + ' uniquelongidentifier' + i + 'x ' + filler;
      const terms = tokenize(text);
      if (!terms.includes('uniquelongidentifier' + i + 'x')) throw new Error('the unique word was not tokenized');
    }
    gc();
    gc();
    console.log(JSON.stringify({ grownMiB: (process.memoryUsage().heapUsed - before) / 1048576 }));
  `;
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8', cwd: fileURLToPath(new URL('.', import.meta.url)) });
  return (JSON.parse(out.trim().split('\n').at(-1)!) as { grownMiB: number }).grownMiB;
}

describe('stem cache memory', () => {
  it('does not keep the texts of the pages its words came from', () => {
    // 60 pages of 1 MB: kept, they would be 60 MiB; the cache's own words are a few KiB.
    const grown = heapAfterPages(60, 1_000_000);
    expect(grown).toBeLessThan(8);
  });
});
