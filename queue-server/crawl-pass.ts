/**
 * Crawl passes. `petrel crawl` on a data directory either resumes a pass that did not finish (the
 * queue server was killed or stopped) or starts a new pass, which recrawls everything known. The
 * current pass is kept in `pass.json`, replaced atomically.
 */
import { readJsonFile, writeFileAtomic } from './atomic-file.js';

export interface CrawlPass {
  readonly number: number;
  /** ms since epoch */
  readonly startedAt: number;
  readonly finishedAt: number | null;
}

/** The pass to run: the unfinished one, or a new one after it. Pure. */
export function nextPass(previous: CrawlPass | null, now: number): { pass: CrawlPass; resumed: boolean } {
  if (previous !== null && previous.finishedAt === null) return { pass: previous, resumed: true };
  return { pass: { number: (previous?.number ?? 0) + 1, startedAt: now, finishedAt: null }, resumed: false };
}

export function readPass(path: string): CrawlPass | null {
  return readJsonFile<CrawlPass>(path);
}

export function writePass(path: string, pass: CrawlPass): void {
  writeFileAtomic(path, `${JSON.stringify(pass)}\n`);
}
