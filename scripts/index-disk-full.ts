/**
 * Disk-full scenario for the search index as the crawl's store (test/integration/index-disk-full.test.ts
 * runs it inside its own mount namespace, on a tmpfs of a few hundred KiB, so the disk really fills):
 *
 *   node index-disk-full.js INDEX_DIR
 *
 * Opens an IndexStore (queue-server/crawl/index-store.ts) in INDEX_DIR, writes a filler file, then
 * stages pages (each with a word of its own and 12 KiB of stored text that does not compress) and
 * commits after each, until a commit fails. While the disk is still full it stages three more pages and
 * commits again (which must fail too); then it deletes the filler and commits, which must succeed with
 * every page staged since the last good commit, restaged from what the store kept of them. It reports
 * on stdout, one JSON object per line: each commit, the failure (errno), the retries, and at the end,
 * from the index reopened read-only, which pages their own word finds.
 */
import { rmSync, writeFileSync, writeSync } from 'node:fs';
import { createCipheriv } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildIndexData } from '../shared/index-data.js';
import { IndexStore } from '../queue-server/crawl/index-store.js';
import { errnoCodeOf } from '../queue-server/crawl/storage-error.js';
import { SearchIndex } from '../queue-server/search/search-index.js';

function report(event: Record<string, unknown>): void {
  writeSync(1, `${JSON.stringify(event)}\n`);
}

/** Letters that do not repeat (so the stored text does not compress), as words. */
function noiseText(n: number, chars: number): string {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(n + 1, 0);
  const bytes = createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(chars));
  let text = '';
  for (let i = 0; i < bytes.length; i++) text += i % 8 === 7 ? ' ' : String.fromCharCode(97 + (bytes[i]! % 26));
  return text;
}

/** The word only page `n` has: letters, so the tokenizer keeps it whole, ending in x, which no English suffix does (two pages' words never stem alike). */
function wordOf(n: number): string {
  return `pageword${n.toString(26).replace(/[0-9]/g, (d) => 'qrstuvwxyz'[Number(d)]!)}x`;
}

function main(dir: string): void {
  const store = IndexStore.open(dir, { merges: 'off' });
  writeFileSync(join(dir, 'filler'), Buffer.alloc(256 * 1024, 1));
  let next = 0;
  const stage = () => {
    const n = next++;
    const url = `http://127.0.0.2/page/${n}`;
    const data = buildIndexData({ title: `Page ${n}`, headings: [], bodyText: `${wordOf(n)} ${noiseText(n, 12 * 1024)}`, language: 'en', anchors: [] });
    store.stage({ kind: 'page', url, fetchedAt: Date.UTC(2026, 5, 1) + n, data });
  };
  let committed = 0;
  let failure: unknown = null;
  for (let i = 0; i < 200 && failure === null; i++) {
    stage();
    try {
      store.commit();
      committed = next;
      report({ event: 'commit', pages: next });
    } catch (error) {
      failure = error;
    }
  }
  report({ event: 'failed', pages: next, committed, errno: errnoCodeOf(failure), message: failure instanceof Error ? failure.message.slice(0, 300) : String(failure) });
  for (let i = 0; i < 3; i++) stage();
  try {
    store.commit();
    report({ event: 'retry-while-full', ok: true });
  } catch (error) {
    report({ event: 'retry-while-full', ok: false, errno: errnoCodeOf(error) });
  }
  rmSync(join(dir, 'filler'));
  store.commit();
  report({ event: 'retry-after', ok: true, pages: next });
  void store.close();
  const index = SearchIndex.open(dir, { readOnly: true, merges: 'off' });
  const found: number[] = [];
  for (let n = 0; n < next; n++) {
    const hits = index.search(wordOf(n), { limit: 10, snippets: false });
    if (hits.total === 1 && hits.results[0]!.url === `http://127.0.0.2/page/${n}`) found.push(n);
  }
  void index.close();
  report({ event: 'searched', pages: next, found: found.length, missing: [...Array(next).keys()].filter((n) => !found.includes(n)) });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dir] = process.argv.slice(2);
  if (dir === undefined) {
    process.stderr.write('usage: node index-disk-full.js INDEX_DIR\n');
    process.exit(2);
  }
  main(dir);
}
