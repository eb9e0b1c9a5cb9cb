/**
 * Crawl passes. `petrel crawl` on a data directory either resumes a pass that did not finish (the
 * queue server was killed or stopped) or starts a new pass, which recrawls everything known. The
 * current pass is kept in `pass.json`, replaced atomically.
 */
import { readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import type { FileOps } from '../storage/file-ops.js';

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

export function writePass(path: string, pass: CrawlPass, io?: FileOps): void {
  writeFileAtomic(path, `${JSON.stringify(pass)}\n`, { io });
}

/**
 * Whether a known URL is due when the queue server starts (or a pass begins). Pure.
 *  - Continuous mode: due when its next fetch time has come.
 *  - A pass (one-shot crawl): URLs waiting for a first fetch or a retry are due at their time; URLs
 *    fetched before this pass began are due now (a new pass recrawls everything known: the cache
 *    decides between skipping, revalidating and fetching); URLs gone or robots-denied keep their
 *    rare recheck time; URLs already visited in this pass are done.
 * Returns the time it is due (possibly in the future), or null when it is not due in this pass.
 */
export function dueAt(record: { status: string; nextFetchAt: number; lastFetchAt: number | null }, pass: CrawlPass | null, once: boolean, now: number): number | null {
  if (!once || pass === null) return record.nextFetchAt;
  switch (record.status) {
    case 'unfetched':
    case 'retry':
      return record.nextFetchAt;
    case 'gone':
    case 'robots_denied':
      return record.nextFetchAt <= now ? record.nextFetchAt : null;
    default:
      return (record.lastFetchAt ?? 0) < pass.startedAt ? now : null;
  }
}

