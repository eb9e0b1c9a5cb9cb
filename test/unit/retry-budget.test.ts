import { describe, expect, it } from 'vitest';
import { MAX_REQUESTS_PER_URL, MAX_RETRY_AFTER_WAITS, UrlRetryBudget } from '../../queue-server/crawl/retry-after.js';
import { applyFetch, HOST_RECHECK_MS, type FetchOutcome } from '../../queue-server/crawldb/transition.js';
import { newCrawlDbRecord, type CrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';

const HOUR = 3_600_000;

/**
 * Plays a URL that always answers `answer` through the budget and the crawl database transition, as the
 * result applier does, and returns how many requests it got before it stopped being retried.
 */
function requestsUntilGone(answer: (n: number) => { status: number | null; code: string; retryAfterMs: number | null }, maxRetries: number): number {
  const policy = { ...DEFAULT_FETCH_SCHEDULE, maxRetries };
  const budget = new UrlRetryBudget();
  let record: CrawlDbRecord = newCrawlDbRecord('http://a.test/x' as NormalizedUrl, 0, 0, 0, policy);
  for (let n = 1; n <= 100; n++) {
    const a = answer(n);
    const verdict = budget.failed('k', a.retryAfterMs, HOUR);
    const outcome: FetchOutcome = { kind: 'transient', code: a.code, status: a.status, retryAfterMs: verdict.retryAfterMs, giveUp: verdict.giveUp };
    record = applyFetch(record, outcome, n * 1000, policy).record;
    if (record.status !== 'retry') return n;
  }
  throw new Error('never given up');
}

describe('requests of one URL per pass', () => {
  it('asks a URL answering 429 with Retry-After for ever 1 + max retries + 5 times', () => {
    for (const maxRetries of [0, 1, 3]) {
      expect(requestsUntilGone(() => ({ status: 429, code: 'http-429', retryAfterMs: 1000 }), maxRetries)).toBe(1 + maxRetries + MAX_RETRY_AFTER_WAITS);
    }
  });

  it('never asks a URL more than 10 times, whatever the mix of 5xx, 429 and Retry-After and however many retries are allowed', () => {
    expect(MAX_REQUESTS_PER_URL).toBeLessThanOrEqual(10);
    const mixes = [
      (n: number) => (n % 2 === 0 ? { status: 503, code: 'http-503', retryAfterMs: 1000 } : { status: 500, code: 'http-500', retryAfterMs: null }),
      (n: number) => (n % 3 === 0 ? { status: null, code: 'timeout', retryAfterMs: null } : { status: 429, code: 'http-429', retryAfterMs: 1 }),
      () => ({ status: 503, code: 'http-503', retryAfterMs: 0 }),
    ];
    for (const mix of mixes) for (const maxRetries of [3, 20]) expect(requestsUntilGone(mix, maxRetries)).toBeLessThanOrEqual(MAX_REQUESTS_PER_URL);
    expect(requestsUntilGone(() => ({ status: 503, code: 'http-503', retryAfterMs: 1 }), 20)).toBe(MAX_REQUESTS_PER_URL);
  });

  it('gives a URL up rather than wait longer than a one-shot crawl allows', () => {
    const budget = new UrlRetryBudget();
    expect(budget.failed('k', 30_000, 60_000)).toEqual({ retryAfterMs: 30_000, giveUp: false, waitTooLongMs: null });
    // The wait asked goes with the verdict: apply-results.ts gives the host up for it.
    expect(budget.failed('k', 120_000, 60_000)).toEqual({ retryAfterMs: null, giveUp: true, waitTooLongMs: 120_000 });
    for (let i = 0; i < MAX_REQUESTS_PER_URL - 1; i++) budget.failed('j', null, 60_000);
    expect(budget.failed('j', null, 60_000)).toEqual({ retryAfterMs: null, giveUp: true, waitTooLongMs: null });
  });

  it('starts the count over once the URL got a final answer', () => {
    const budget = new UrlRetryBudget();
    for (let i = 0; i < MAX_REQUESTS_PER_URL - 1; i++) expect(budget.failed('k', null, HOUR).giveUp).toBe(false);
    budget.settled('k');
    expect(budget.failed('k', null, HOUR).giveUp).toBe(false);
  });

  it('records a URL given up with its host as gone, keeping its fetch times and last status', () => {
    const old = { ...newCrawlDbRecord('http://a.test/x' as NormalizedUrl, 0, 0, 0, DEFAULT_FETCH_SCHEDULE), status: 'retry' as const, retries: 2, lastFetchAt: 5, lastHttpStatus: null, errorCode: 'timeout' };
    const { record } = applyFetch(old, { kind: 'given-up', code: 'host-failing' }, 100, DEFAULT_FETCH_SCHEDULE);
    // Its host failed, not the URL: asked again after a day, not at the rare recheck of a gone page.
    expect(record).toMatchObject({ status: 'gone', errorCode: 'host-failing', lastFetchAt: 5, retries: 2, nextFetchAt: 100 + Math.min(DEFAULT_FETCH_SCHEDULE.goneRecheckMs, HOST_RECHECK_MS) });
    expect(HOST_RECHECK_MS).toBeLessThan(DEFAULT_FETCH_SCHEDULE.goneRecheckMs);
  });
});
