/**
 * The nonces of signed requests the queue server accepted, remembered for as long as their timestamp
 * would still be accepted, so a captured request cannot be sent again (shared/request-signing.ts).
 *
 * Layout: nonces are filed in buckets by their (signed) timestamp, `bucketMs` wide. A replay carries
 * the same timestamp, so it is looked up in one bucket. A bucket is dropped whole once the latest
 * timestamp it can hold is older than the window: from then on the timestamp check refuses any
 * request of it, remembered or not.
 *
 *   timestamp:  ... | b-1 | b | b+1 | ...         (bucket = floor(timestamp / bucketMs))
 *   alive:      buckets with (b + 1) * bucketMs + windowMs > now: about 2 * windowMs / bucketMs + 1
 *
 * Memory bound: at most `capacity` nonces (about 100 bytes each: 1,000,000 is about 100 MB). When it
 * is full, `remember` answers `full` and the request is refused (503, retried by the fetcher) rather
 * than accepted unremembered: a replay must never get in because memory ran out.
 * Time is a parameter (`now`, ms since epoch); this module never reads the clock. Owned by the one
 * request-auth middleware of an app; single-threaded, so check-and-remember is atomic.
 */

export type NonceVerdict = 'remembered' | 'replayed' | 'full';

export interface NonceMemoryOptions {
  /** How long after (or before) its timestamp a request is accepted, ms. */
  readonly windowMs: number;
  /** Nonces remembered at most. */
  readonly capacity: number;
  /** Width of a bucket, ms (default 30 s). */
  readonly bucketMs?: number;
}

export const DEFAULT_NONCE_CAPACITY = 1_000_000;

export class NonceMemory {
  readonly #windowMs: number;
  readonly #capacity: number;
  readonly #bucketMs: number;
  /** Bucket number (floor(timestamp / bucketMs)) to the nonces whose timestamp falls in it. */
  readonly #buckets = new Map<number, Set<string>>();
  #size = 0;

  constructor(options: NonceMemoryOptions) {
    if (!(options.windowMs > 0 && options.capacity > 0)) throw new Error('NonceMemory needs a positive window and capacity');
    this.#windowMs = options.windowMs;
    this.#capacity = options.capacity;
    this.#bucketMs = options.bucketMs ?? 30_000;
  }

  get size(): number {
    return this.#size;
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** True when this nonce was accepted with this timestamp before (and is still remembered). */
  seen(nonce: string, timestamp: number): boolean {
    return this.#buckets.get(Math.floor(timestamp / this.#bucketMs))?.has(nonce) === true;
  }

  /**
   * Remembers a nonce, unless it was seen (`replayed`) or memory is full (`full`, nothing stored).
   * The caller checked that `timestamp` is within the window of `now`.
   */
  remember(nonce: string, timestamp: number, now: number): NonceVerdict {
    this.forgetExpired(now);
    const key = Math.floor(timestamp / this.#bucketMs);
    let bucket = this.#buckets.get(key);
    if (bucket?.has(nonce) === true) return 'replayed';
    if (this.#size >= this.#capacity) return 'full';
    if (bucket === undefined) {
      bucket = new Set();
      this.#buckets.set(key, bucket);
    }
    bucket.add(nonce);
    this.#size++;
    return 'remembered';
  }

  /** Drops every bucket whose newest possible timestamp is out of the window. */
  forgetExpired(now: number): void {
    for (const [key, bucket] of this.#buckets) {
      if ((key + 1) * this.#bucketMs + this.#windowMs <= now) {
        this.#buckets.delete(key);
        this.#size -= bucket.size;
      }
    }
  }
}
