/**
 * The busiest hosts, for the status API and the admin page: page requests per origin, counted with
 * the Space-Saving algorithm (Metwally, Agrawal, El Abbadi, "Efficient computation of frequent and
 * top-k elements in data streams", 2005) in a table of at most `capacity` origins, so memory stays
 * bounded however many origins a crawl touches.
 *
 * Guarantee: an origin that got more than 1/capacity of all counted requests is always in the table.
 * When the table is full, a newcomer takes the place of the least-counted origin and inherits its
 * count; that inherited part is kept as `overcount`, so `requests - overcount` is a lower bound and
 * `requests` an upper bound. Errors and bytes are counted from the moment an origin entered the table.
 *
 * Failure mode: none; with fewer origins than `capacity` every count is exact.
 */

export interface HostCount {
  readonly origin: string;
  /** Page requests counted for the origin (an upper bound when `overcount` > 0). */
  readonly requests: number;
  /** Part of `requests` inherited from the origin it displaced in the table (0 when exact). */
  readonly overcount: number;
  /** Answers that were an HTTP error status or no response at all. */
  readonly errors: number;
  /** Body bytes received. */
  readonly bytes: number;
  /** ms since epoch of the last counted request. */
  readonly lastAt: number;
}

export interface BusyHost extends HostCount {
  /** URLs of the origin waiting in the frontier. */
  readonly queued: number;
  /** A slot of the origin is out on a lease now. */
  readonly active: boolean;
}

export interface HostsOverview {
  /** Origins with a slot out on a lease now: being fetched. */
  readonly active: number;
  /** Origins with queued URLs and no slot out: waiting for their politeness delay, robots.txt or a free fetcher. */
  readonly waiting: number;
  /** The busiest origins by page requests, busiest first, at most BUSIEST_SHOWN. */
  readonly busiest: BusyHost[];
}

/** What the overview needs from the frontier. */
export interface QueuedByOrigin {
  /** Origins with at least one queued URL. */
  readonly queuedOrigins: number;
  /** URLs of the origin waiting in the frontier (0 for an origin it does not know). */
  queuedOf(origin: string): number;
}

export const BUSIEST_SHOWN = 20;
const TABLE_SIZE = 200;

interface Entry {
  origin: string;
  requests: number;
  overcount: number;
  errors: number;
  bytes: number;
  lastAt: number;
}

export class HostTally {
  readonly #table = new Map<string, Entry>();
  readonly #capacity: number;

  constructor(capacity = TABLE_SIZE) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new Error(`HostTally: capacity must be a positive integer, got ${capacity}`);
    this.#capacity = capacity;
  }

  get size(): number {
    return this.#table.size;
  }

  count(origin: string, answer: { readonly error: boolean; readonly bytes: number }, now: number): void {
    let entry = this.#table.get(origin);
    if (entry === undefined) {
      let inherited = 0;
      if (this.#table.size >= this.#capacity) {
        // O(capacity) only when a newcomer meets a full table; the table is small.
        let least: Entry | undefined;
        for (const candidate of this.#table.values()) if (least === undefined || candidate.requests < least.requests) least = candidate;
        inherited = least!.requests;
        this.#table.delete(least!.origin);
      }
      entry = { origin, requests: inherited, overcount: inherited, errors: 0, bytes: 0, lastAt: now };
      this.#table.set(origin, entry);
    }
    entry.requests++;
    if (answer.error) entry.errors++;
    entry.bytes += answer.bytes;
    entry.lastAt = now;
  }

  /** The `n` most-requested origins, busiest first (ties: the most recent first, then by name). */
  top(n: number): HostCount[] {
    return [...this.#table.values()]
      .sort((a, b) => b.requests - a.requests || b.lastAt - a.lastAt || (a.origin < b.origin ? -1 : 1))
      .slice(0, n)
      .map((entry) => ({ ...entry }));
  }

  /**
   * Active and waiting origins and the busiest ones. `activeOrigins` are the origins of slots out on
   * a lease now (the caller has them from its lease table; bounded by the leases out).
   */
  overview(activeOrigins: ReadonlySet<string>, frontier: QueuedByOrigin): HostsOverview {
    let activeWithQueue = 0;
    for (const origin of activeOrigins) if (frontier.queuedOf(origin) > 0) activeWithQueue++;
    return {
      active: activeOrigins.size,
      waiting: Math.max(0, frontier.queuedOrigins - activeWithQueue),
      busiest: this.top(BUSIEST_SHOWN).map((host) => ({ ...host, queued: frontier.queuedOf(host.origin), active: activeOrigins.has(host.origin) })),
    };
  }
}
