/**
 * Honouring Retry-After (RFC 9110 section 10.2.3) from 429 and 503 answers: the host waits, the URL
 * is retried, and the retry is not counted as a failure; but only a few times per URL, so a server
 * that always says "later" cannot keep a URL alive for ever. Memory: one entry per URL currently
 * being told to wait.
 */
export const MAX_RETRY_AFTER_WAITS = 5;
/** Longest wait honoured; a longer Retry-After is cut to this. */
export const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

export class RetryAfterBudget {
  readonly #waits = new Map<string, number>();

  /** The wait to honour for this answer, or null: no Retry-After, or this URL's waits are used up. */
  honour(key: string, retryAfterMs: number | null): number | null {
    if (retryAfterMs === null) {
      this.#waits.delete(key);
      return null;
    }
    const waits = (this.#waits.get(key) ?? 0) + 1;
    if (waits > MAX_RETRY_AFTER_WAITS) {
      this.#waits.delete(key);
      return null;
    }
    this.#waits.set(key, waits);
    return Math.min(retryAfterMs, MAX_RETRY_AFTER_MS);
  }
}
