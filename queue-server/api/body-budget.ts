/**
 * The request body bytes the queue server holds at once, across all requests: a counting semaphore
 * in bytes. A signed request reserves its declared Content-Length before a byte of its body is read,
 * and its inflated bytes as they come out of gunzip; the reservation is released when the answer has
 * gone out (a results post is answered after the group commit, so its parsed body lives that long).
 * A request that does not fit gets 503 with Retry-After and is retried by the fetcher
 * (fetcher/queue-client.ts), so many large posts at once queue up instead of adding up.
 *
 * Memory bound: `capacity` bytes of bodies, as received plus as inflated; the JSON parse of them is
 * bounded by bounded-json.ts. Owned by the app's request-auth middleware; single-threaded.
 */

/** Default capacity: two of the largest bodies (LIMITS.requestBodyBytes, 64 MiB) at once. */
export const DEFAULT_BODY_BYTES_IN_FLIGHT = 128 * 1024 * 1024;

export class BodyBudget {
  readonly capacity: number;
  #inUse = 0;

  constructor(capacity: number = DEFAULT_BODY_BYTES_IN_FLIGHT) {
    if (!(Number.isSafeInteger(capacity) && capacity > 0)) throw new Error('BodyBudget needs a positive capacity');
    this.capacity = capacity;
  }

  /** Bytes reserved now. */
  get inUse(): number {
    return this.#inUse;
  }

  /** A reservation of `bytes`, or null when they do not fit now. */
  reserve(bytes: number): Reservation | null {
    if (!this.#fits(bytes)) return null;
    this.#inUse += bytes;
    return new Reservation(this, bytes);
  }

  #fits(bytes: number): boolean {
    return bytes >= 0 && this.#inUse + bytes <= this.capacity;
  }

  /** For Reservation only. */
  grow(bytes: number): boolean {
    if (!this.#fits(bytes)) return false;
    this.#inUse += bytes;
    return true;
  }

  /** For Reservation only. */
  giveBack(bytes: number): void {
    this.#inUse -= bytes;
    if (this.#inUse < 0) throw new Error('BodyBudget: more bytes given back than reserved');
  }
}

/** Bytes one request holds; release() once, when its answer is out. */
export class Reservation {
  readonly #budget: BodyBudget;
  #bytes: number;
  #released = false;

  constructor(budget: BodyBudget, bytes: number) {
    this.#budget = budget;
    this.#bytes = bytes;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Reserves `bytes` more (inflated body bytes); false when they do not fit. */
  grow(bytes: number): boolean {
    if (this.#released || !this.#budget.grow(bytes)) return false;
    this.#bytes += bytes;
    return true;
  }

  release(): void {
    if (this.#released) return;
    this.#released = true;
    this.#budget.giveBack(this.#bytes);
  }
}
