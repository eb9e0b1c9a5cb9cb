/**
 * Accounting for pages fetched more than once across queue server kills, for the durability tests.
 *
 * The invariant: in a one-shot pass, every URL ends with exactly one result that a queue server both
 * applied and acknowledged (the acknowledgement follows the commit, and a committed URL is never
 * leased again). Every other request for that URL also produced a result, and a fetcher posts each
 * result until some queue server acknowledges it; the queue server that does so counted it as a
 * duplicate or late result (`duplicateResults`, `lateResults`) before committing. So, for a URL that
 * answered without a Retry-After wait,
 *
 *   requests - 1  <=  duplicate and late results counted by the queue server that acknowledged them
 *
 * and summed over every queue server process (each reports its own counters, read just before it is
 * killed, and the last one's summary), the repeats of the crawl are at most the sum. The sum may
 * overcount (a duplicate counted but not yet acknowledged when its process was killed is posted and
 * counted again), never undercount, except for a duplicate counted and acknowledged (a group commit
 * completed) in the millisecond or two between the status read and the SIGKILL.
 *
 * A fetcher that drops results it holds while the queue server is away, or a queue server that
 * acknowledges results before they are durable, breaks it: the URL is fetched again and no second
 * result is ever posted for it.
 */
import type { ChildProcess } from 'node:child_process';
import type { RequestLogEntry } from '../../scripts/test-web.js';
import { readStatus, type QueueStatus } from './admin-api.js';
import { countBy, pageRequests, urlOf } from './request-log.js';

/**
 * Polls the status until the queue server has URLs out on lease; null when its pass ended first (or
 * it exited). Throws after `timeoutMs` without work out (a stuck crawl).
 */
export async function untilWorkOut(server: ChildProcess, serverUrl: string, adminToken: string, timeoutMs = 60_000): Promise<QueueStatus | null> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null) return null;
    const status = await readStatus(serverUrl, adminToken).catch(() => null);
    if (status !== null && status.displayState === 'done') return null;
    if (status !== null && status.itemsLeased > 0) return status;
    if (Date.now() > deadline) throw new Error(`no URL out on lease within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export interface KillMoment {
  /** URLs that must still be out on lease (work the fetchers go on with while the queue server is away). */
  readonly minLeased?: number;
  /**
   * Wait for results applied within this many ms of the results applied before them: their post then
   * waits for a group commit that is at most 100 ms after the previous one, so their commit is still
   * pending at the kill (a queue server that acknowledged before committing would lose them).
   */
  readonly afterPreviousWithinMs?: number;
  /**
   * URLs that must still be queued: work left for after the kill. Between the status read and the kill
   * a loaded machine can let the crawl run on for a second; without work left it may end first, and a
   * one-shot queue server restarted after its crawl ended begins a new pass, with no fetcher left.
   */
  readonly minQueued?: number;
}

/**
 * The moment a durability test most wants to kill at: right after the queue server applied results,
 * while their group commit may still be pending. Polls the status until more results were applied
 * than at the previous read, as `moment` asks; returns the last status read (null if the queue server
 * went away), or after `timeoutMs` whatever it shows then (the kill moment is a choice of the test,
 * never a condition of its verdict).
 */
export async function justAfterResults(serverUrl: string, adminToken: string, timeoutMs: number, moment: KillMoment = {}): Promise<QueueStatus | null> {
  const deadline = Date.now() + timeoutMs;
  let previous = await readStatus(serverUrl, adminToken).catch(() => null);
  if (previous === null) return null;
  let previousAppliedAt: number | null = null;
  for (;;) {
    const status = await readStatus(serverUrl, adminToken).catch(() => null);
    const now = Date.now();
    if (status === null || status.displayState === 'done' || now > deadline) return status;
    if (status.requests > previous.requests) {
      const soon = moment.afterPreviousWithinMs === undefined || (previousAppliedAt !== null && now - previousAppliedAt < moment.afterPreviousWithinMs);
      if (soon && status.itemsLeased >= (moment.minLeased ?? 0) && status.frontierSize >= (moment.minQueued ?? 0)) return status;
      previousAppliedAt = now;
    }
    previous = status;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Results a queue server refused as already applied or not its fetcher's: every legitimate second fetch leaves one. */
export function refusedResults(counters: Pick<QueueStatus, 'duplicateResults' | 'lateResults'>): number {
  return counters.duplicateResults + counters.lateResults;
}

export interface Repeats {
  /** Requests beyond the first, summed over URLs. */
  readonly total: number;
  /** URL -> requests, for the URLs requested more than once. */
  readonly byUrl: ReadonlyMap<string, number>;
}

/**
 * Page requests beyond the first per URL, not counting URLs the crawl asks again by design: answered
 * 429 or 5xx (a Retry-After wait, a retry), or left without an answer (status 0).
 */
export function pageRepeats(log: readonly RequestLogEntry[]): Repeats {
  const pages = pageRequests(log);
  const waited = new Set(pages.filter((entry) => entry.status === 429 || entry.status >= 500 || entry.status === 0).map(urlOf));
  const byUrl = new Map<string, number>();
  let total = 0;
  for (const [url, count] of countBy(pages, urlOf)) {
    if (count < 2 || waited.has(url)) continue;
    byUrl.set(url, count);
    total += count - 1;
  }
  return { total, byUrl };
}
