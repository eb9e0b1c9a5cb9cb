/**
 * Crash-test writer for the search index (test/integration/search-index-crash.test.ts runs it as a
 * real child process and SIGKILLs it at random instants).
 *
 *   node index-crash-writer.js DIR [LOG_BYTES]
 *
 * LOG_BYTES is the commit log's bound (SearchIndexOptions.logBytes, default 64 KiB here, so checkpoints
 * run in the worker between commits and kills land in them too; a large one keeps every commit in the
 * log: kills between the log append and any segment file).
 * Opens the index in DIR (merges in the worker thread, a small staging bound so buffers are also
 * flushed between commits), prints `ready COMMITS`, then forever: stages the changes of commit
 * `COMMITS + 1` (`crashChanges`), commits, prints the commit number once `commit()` has returned
 * (durable), and yields to the event loop so finished merges are installed between commits. Changes
 * depend only on the commit number, so the test can rebuild the expected index after any commit.
 */
import * as fs from 'node:fs';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { buildIndexData } from '../shared/index-data.js';
import { SearchIndex, type IndexChange } from '../queue-server/search/search-index.js';
import { mulberry32 } from './test-web/prng.js';

export const CRASH_URLS = 300;
const WORDS = ['river', 'stone', 'cloud', 'ember', 'frost', 'grove', 'harbor', 'island', 'jungle', 'meadow'];

export function crashUrl(i: number): string {
  return `http://h${i % 7}.crash.test/page/${i}`;
}

/** One page version: its own marker words u<i> and u<i>x<commit>, filler, a link to page i + 1 whose anchor text has a<i>. */
export function crashPage(i: number, commit: number): IndexChange {
  const rand = mulberry32(i * 7919 + commit);
  const filler = Array.from({ length: 20 + Math.floor(rand() * 200) }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  return {
    kind: 'page',
    url: crashUrl(i),
    fetchedAt: commit,
    data: buildIndexData({
      title: `Page ${i}`,
      headings: [`section u${i}`],
      bodyText: `u${i} u${i}x${commit} ${filler}`,
      language: 'en',
      anchors: [{ url: crashUrl((i + 1) % CRASH_URLS), text: `next after a${i}` }],
    }),
  };
}

/** The changes of commit `commit`: 1 to ~60 pages (re)staged or removed. */
export function crashChanges(commit: number): IndexChange[] {
  const rand = mulberry32(Math.imul(commit, 0x9e3779b1) ^ 0x5bd1e995);
  const r = rand();
  const count = 1 + Math.floor(r * r * 60);
  const changes: IndexChange[] = [];
  for (let k = 0; k < count; k++) {
    const i = Math.floor(rand() * CRASH_URLS);
    changes.push(rand() < 0.15 ? { kind: 'remove', url: crashUrl(i) } : crashPage(i, commit));
  }
  return changes;
}

async function main(argv: readonly string[]): Promise<void> {
  const [dir, logArg] = argv;
  if (dir === undefined) {
    process.stderr.write('usage: index-crash-writer DIR\n');
    process.exitCode = 2;
    return;
  }
  const index = SearchIndex.open(dir, { merges: 'worker', bufferBytes: 16 * 1024, logBytes: logArg === undefined ? 64 * 1024 : Number(logArg) });
  let commits = index.stats().commits;
  fs.writeSync(1, `ready ${commits}\n`);
  for (;;) {
    const next = commits + 1;
    for (const change of crashChanges(next)) index.stage(change);
    commits = index.commit().commits;
    if (commits !== next) throw new Error(`expected commit ${next}, the index says ${commits}`);
    fs.writeSync(1, `${commits}\n`);
    await yieldToLoop();
  }
}

const invoked = process.argv[1];
if (invoked !== undefined && import.meta.url === pathToFileURL(invoked).href) await main(process.argv.slice(2));
