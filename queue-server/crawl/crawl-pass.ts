/**
 * Crawl passes. `petrel crawl` on a data directory either resumes a pass that did not finish (the
 * queue server was killed or stopped) or starts a new pass, which recrawls everything known. The
 * current pass is kept in `pass.json`, replaced atomically.
 */
import { isHostFailure } from '../../shared/fetch-codes.js';
import { HOST_FAILING_CODE } from '../frontier/host-backoff.js';
import { readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import type { FileOps } from '../storage/file-ops.js';

/**
 * Whether a URL was given up for its host's failure, not its own: robots.txt could not be fetched
 * (robots/robots.ts), the host was given up for failing (frontier/host-backoff.ts), or the connection
 * itself failed until its retries ran out (shared/fetch-codes.ts `isHostFailure`, no answer at all).
 */
function givenUpForItsHost(errorCode: string): boolean {
  return errorCode === 'robots-unreachable' || errorCode === HOST_FAILING_CODE || isHostFailure(null, errorCode, null);
}

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

export interface PassPolicy {
  /** A one-shot crawl (passes), not a continuous one. */
  readonly once: boolean;
  /** --max-pages is set: a pass refetches only what is due by its next fetch time. */
  readonly pageLimit: boolean;
}

/**
 * Whether a known URL is due when the queue server starts (or a pass begins). Pure.
 *  - Continuous mode: due when its next fetch time has come.
 *  - A pass (one-shot crawl): URLs waiting for a first fetch or a retry are due at their time; URLs
 *    fetched before this pass began are due now (a new pass recrawls everything known: the cache
 *    decides between skipping, revalidating and fetching), except under a page limit (--max-pages),
 *    where they are due when their next fetch time has come, as Nutch's generator selects: the limit
 *    goes to URLs never fetched and to those whose time has come, not to revalidations of pages fetched
 *    minutes before (a recrawl review measured 21 URLs of a host left unfetched over three passes of
 *    --max-pages 40, each spent on 304s); URLs gone or robots-denied keep their
 *    rare recheck time, except those given up for their host (its robots.txt unreachable, its requests
 *    failing: givenUpForItsHost), which every start of a one-shot crawl asks again: the operator runs
 *    it again once the site is up, and before, a site down at the first run was never crawled by the
 *    next ones; URLs already visited in this pass are done.
 * Returns the time it is due (possibly in the future), or null when it is not due in this pass.
 */
export function dueAt(record: { status: string; nextFetchAt: number; lastFetchAt: number | null; errorCode?: string | null }, pass: CrawlPass | null, policy: PassPolicy, now: number): number | null {
  if (!policy.once || pass === null) return record.nextFetchAt;
  switch (record.status) {
    case 'unfetched':
    case 'retry':
      return record.nextFetchAt;
    case 'gone':
    case 'robots_denied':
      if (record.errorCode != null && givenUpForItsHost(record.errorCode)) return now;
      return record.nextFetchAt <= now ? record.nextFetchAt : null;
    default:
      if ((record.lastFetchAt ?? 0) >= pass.startedAt) return null;
      if (policy.pageLimit) return record.nextFetchAt <= now ? now : null;
      return now;
  }
}

