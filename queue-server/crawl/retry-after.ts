/**
 * How often one URL may be asked in a pass, whatever mix of 5xx, 429 and Retry-After it answers.
 *
 *  - A 429 or 5xx with Retry-After (RFC 9110 section 10.2.3) is honoured: the URL and its host wait,
 *    and the wait spends no --max-retries; but at most MAX_RETRY_AFTER_WAITS times per URL per pass,
 *    counted across every other answer in between (a URL alternating 503+Retry-After and 500 cannot
 *    start the count over). A one-shot crawl does not wait longer than `maxWaitMs` (a longer
 *    Retry-After gives the URL up instead, and its host with it: apply-results.ts; never asked early,
 *    never waited for an hour). A Retry-After under a second is no wait (an ordinary failure).
 *  - Every failed request of the URL counts towards MAX_REQUESTS_PER_URL; the one that reaches it
 *    gives the URL up (gone) whatever it answered.
 *
 * So a URL gets at most min(MAX_REQUESTS_PER_URL, 1 + --max-retries + MAX_RETRY_AFTER_WAITS) requests
 * per pass (10 at most). The count lives in memory: a queue server restart starts it over.
 * Memory: one entry per URL that is failing now; a final answer (or giving up) forgets it.
 */
export const MAX_RETRY_AFTER_WAITS = 5;
/** Requests of one URL per pass at most, whatever it answers. */
export const MAX_REQUESTS_PER_URL = 10;
/** Longest wait honoured; a longer Retry-After is cut to this. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

export interface RetryVerdict {
  /** The Retry-After wait to honour, ms; null: none (no Retry-After, or the URL's waits are used up). */
  readonly retryAfterMs: number | null;
  /** This failure gives the URL up: its requests reached MAX_REQUESTS_PER_URL, or the wait asked is too long. */
  readonly giveUp: boolean;
  /** The wait asked (ms) when it was longer than the crawl waits, which gave the URL up; else null. */
  readonly waitTooLongMs: number | null;
}

interface Attempts {
  requests: number;
  waits: number;
}

export class UrlRetryBudget {
  readonly #attempts = new Map<string, Attempts>();

  /**
   * A request of the URL failed transiently (5xx, 429, timeout, connection error): what to do.
   * `retryAfterMs`: the answer's Retry-After worth honouring (shared/fetch-codes.ts honouredRetryAfter:
   * a 429 or 5xx asking for a second or more), else null.
   */
  failed(key: string, retryAfterMs: number | null, maxWaitMs: number): RetryVerdict {
    const attempts = this.#attempts.get(key) ?? { requests: 0, waits: 0 };
    attempts.requests++;
    this.#attempts.set(key, attempts);
    if (attempts.requests >= MAX_REQUESTS_PER_URL) return this.#giveUp(key, null);
    if (retryAfterMs === null || attempts.waits >= MAX_RETRY_AFTER_WAITS) return { retryAfterMs: null, giveUp: false, waitTooLongMs: null };
    const wait = Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
    if (wait > maxWaitMs) return this.#giveUp(key, retryAfterMs);
    attempts.waits++;
    return { retryAfterMs: wait, giveUp: false, waitTooLongMs: null };
  }

  /** The URL got a final answer (or was given up): its count ends. */
  settled(key: string): void {
    this.#attempts.delete(key);
  }

  /** A new crawl: every count starts over. */
  clear(): void {
    this.#attempts.clear();
  }

  #giveUp(key: string, waitTooLongMs: number | null): RetryVerdict {
    this.#attempts.delete(key);
    return { retryAfterMs: null, giveUp: true, waitTooLongMs };
  }
}
