/**
 * A cumulative counter over time (pages fetched), so the admin page's pages-per-second chart shows
 * the last minutes as soon as it opens, not only what it saw itself. At most one sample a second,
 * taken when the crawl changes (the caller rate-limits; see routes.ts), in a ring of `capacity`
 * samples: 600 cover ten busy minutes, and longer when the crawl is quiet (a quiet second takes no
 * sample). Times are ms since epoch, passed in.
 */
export type CounterSample = readonly [at: number, value: number];

export class CounterHistory {
  readonly #samples: CounterSample[] = [];
  readonly #capacity: number;
  #next = 0;

  constructor(capacity = 600) {
    this.#capacity = capacity;
  }

  record(at: number, value: number): void {
    const sample: CounterSample = [at, value];
    if (this.#samples.length < this.#capacity) this.#samples.push(sample);
    else this.#samples[this.#next] = sample;
    this.#next = (this.#next + 1) % this.#capacity;
  }

  /** Oldest first. */
  samples(): CounterSample[] {
    return this.#samples.length < this.#capacity ? [...this.#samples] : [...this.#samples.slice(this.#next), ...this.#samples.slice(0, this.#next)];
  }
}
