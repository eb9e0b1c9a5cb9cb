/**
 * When a known URL is due again: Nutch's AdaptiveFetchSchedule, as pure functions of a policy, an
 * interval and `now` (all times ms since epoch, all durations ms).
 *
 *  - A page that did not change since the last fetch is fetched less often (interval * (1 + incRate)),
 *    a page that changed more often (interval * (1 - decRate)), always within [minIntervalMs,
 *    maxIntervalMs]. Nutch's defaults: +40 % / -20 %, 1 minute to 90 days, 30 days to start
 *    (db.fetch.schedule.adaptive.inc_rate, dec_rate, min_interval; db.fetch.interval.default, .max).
 *  - HTTP freshness (RFC 9111 section 4.2) is a floor: a page is never due while the response we hold
 *    is still fresh, whatever the interval says.
 *  - Transient failures back off exponentially: retry n waits retryBaseMs * 2^(n-1) (30 s, 1 min, 2 min
 *    with the default settings), never longer than maxIntervalMs.
 *  - Gone pages (and robots-denied ones) are rechecked rarely, goneRecheckMs after the verdict.
 *
 * Nutch's SYNC_DELTA (pulling the schedule towards the server's Last-Modified) is not implemented:
 * Petrel's signal for "changed" is the body signature, not a header the server may get wrong.
 */

export interface FetchSchedulePolicy {
  /** Interval of a URL never fetched, ms (Nutch db.fetch.interval.default: 30 days). */
  initialIntervalMs: number;
  /** Lower bound of the adaptive interval, ms (Nutch: 1 minute). */
  minIntervalMs: number;
  /** Upper bound of the adaptive interval, ms (Nutch db.fetch.interval.max: 90 days). */
  maxIntervalMs: number;
  /** Growth factor after a fetch that found the page unchanged: interval * (1 + incRate) (Nutch 0.4). */
  incRate: number;
  /** Shrink factor after a fetch that found the page changed: interval * (1 - decRate) (Nutch 0.2). */
  decRate: number;
  /** Consecutive transient failures tolerated; the next one makes the URL gone (Nutch db.fetch.retry.max: 3). */
  maxRetries: number;
  /** Wait before retry 1, ms; retry n waits retryBaseMs * 2^(n-1). */
  retryBaseMs: number;
  /** Wait before a gone or robots-denied URL is tried again, ms. */
  goneRecheckMs: number;
  /** Longest retry wait, ms (a one-shot crawl: 1 min, host-backoff.ts ONE_SHOT_MAX_WAIT_MS); absent: maxIntervalMs. */
  maxRetryWaitMs?: number;
}

/**
 * Nutch's adaptive rates, the part of the policy that is no crawl setting. The rest comes from the crawl's
 * settings (crawl-config.ts `fetchScheduleOf`, which also holds DEFAULT_FETCH_SCHEDULE).
 */
export const NUTCH_ADAPTIVE_RATES = Object.freeze({ incRate: 0.4, decRate: 0.2 });

/**
 * Throws (with the offending field in the message) when a policy cannot give sane schedules; call it
 * once where a policy is built from options, not on every transition.
 */
export function checkFetchSchedulePolicy(policy: FetchSchedulePolicy): FetchSchedulePolicy {
  const positive = (name: Exclude<keyof FetchSchedulePolicy, 'maxRetryWaitMs'>): void => {
    const value = policy[name];
    if (!Number.isFinite(value) || value <= 0) throw new Error(`fetch schedule: ${name} must be a positive number, got ${value}`);
  };
  positive('minIntervalMs');
  positive('maxIntervalMs');
  positive('initialIntervalMs');
  positive('retryBaseMs');
  positive('goneRecheckMs');
  if (policy.minIntervalMs > policy.maxIntervalMs) throw new Error('fetch schedule: minIntervalMs exceeds maxIntervalMs');
  if (policy.initialIntervalMs < policy.minIntervalMs || policy.initialIntervalMs > policy.maxIntervalMs) {
    throw new Error('fetch schedule: initialIntervalMs must lie within [minIntervalMs, maxIntervalMs]');
  }
  if (!(policy.incRate >= 0 && policy.incRate <= 10)) throw new Error(`fetch schedule: incRate must be in [0, 10], got ${policy.incRate}`);
  if (!(policy.decRate >= 0 && policy.decRate < 1)) throw new Error(`fetch schedule: decRate must be in [0, 1), got ${policy.decRate}`);
  if (!Number.isInteger(policy.maxRetries) || policy.maxRetries < 0) throw new Error(`fetch schedule: maxRetries must be a non-negative integer, got ${policy.maxRetries}`);
  return policy;
}

/** `intervalMs` held within the policy's bounds. */
export function clampInterval(intervalMs: number, policy: FetchSchedulePolicy): number {
  return Math.min(policy.maxIntervalMs, Math.max(policy.minIntervalMs, intervalMs));
}

/**
 * The interval after a fetch whose content was compared with the stored one: longer when it was not
 * modified, shorter when it was (rounded to whole ms), clamped to [minIntervalMs, maxIntervalMs].
 */
export function adaptInterval(intervalMs: number, modified: boolean, policy: FetchSchedulePolicy): number {
  const factor = modified ? 1 - policy.decRate : 1 + policy.incRate;
  return clampInterval(Math.round(intervalMs * factor), policy);
}

/** next fetch time: now + interval, but never before the HTTP freshness expiry (freshUntil) when one is known */
export function nextFetchAt(now: number, intervalMs: number, freshUntil: number | null): number {
  const due = now + intervalMs;
  return freshUntil === null ? due : Math.max(due, freshUntil);
}

/** Wait before retry number `retry` (1 for the first), ms: retryBaseMs * 2^(retry-1), at most maxIntervalMs. */
export function retryDelayMs(retry: number, policy: FetchSchedulePolicy): number {
  return Math.min(policy.maxRetryWaitMs ?? policy.maxIntervalMs, policy.maxIntervalMs, policy.retryBaseMs * 2 ** Math.max(0, retry - 1));
}
