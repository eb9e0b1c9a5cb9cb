/**
 * The most recent fetches and errors, for the status API and the admin page: two ring buffers of a
 * fixed size, so memory stays bounded however long the crawl runs, and the busiest hosts (a bounded
 * tally, host-activity.ts) counted from the same fetches. Strings are already bounded by the
 * protocol's limits; they come from the web and are untrusted (the admin page shows them as text).
 */
import { HostTally, type HostsOverview, type QueuedByOrigin } from './host-activity.js';

export interface RecentFetch {
  readonly url: string;
  readonly status: number | null;
  /** The page's <title>, as extracted; null when it has none or is not HTML. */
  readonly title: string | null;
  readonly bytes: number;
  readonly durationMs: number;
  /** ms since epoch */
  readonly at: number;
}

export interface RecentError {
  readonly url: string;
  readonly code: string;
  readonly at: number;
}

/**
 * A host whose robots.txt could not be fetched: its URLs wait for the next attempt (`retryAt`), or,
 * after the last attempt (`retryAt` null), were given up as robots-unreachable. Shown live so that a
 * crawl waiting on a dead host says so instead of sitting silent.
 */
export interface RobotsTrouble {
  readonly origin: string;
  /** Why the last attempt failed: a fetch code (connection-refused, timeout) or http-NNN. */
  readonly code: string;
  /** Attempts made so far, and allowed (--robots-attempts). */
  readonly attempt: number;
  readonly attempts: number;
  /** ms since epoch of the next attempt; null when the host was given up. */
  readonly retryAt: number | null;
  /** ms since epoch of the last attempt. */
  readonly at: number;
  /**
   * The failed attempts of this run of failures before the last one, oldest first, at most
   * MAX_EARLIER_ATTEMPTS. Readers of the status look now and then (the progress of `petrel crawl`
   * connects after the first fetcher starts and samples at most four times a second; the ops log every
   * few seconds): with these they tell every attempt, not only the ones they happened to see.
   */
  readonly earlier: readonly EarlierRobotsAttempt[];
}

/** A failed robots.txt attempt that a later one followed. */
export interface EarlierRobotsAttempt {
  readonly attempt: number;
  readonly code: string;
  /** ms since epoch of the attempt, and of the next one it scheduled. */
  readonly at: number;
  readonly retryAt: number;
}

/** Hosts with robots.txt trouble kept for the status, at most. */
const MAX_ROBOTS_TROUBLE = 50;
/** Earlier attempts kept per host, at most (the default is 3 attempts; a status holds at most 50 x 10 of them). */
const MAX_EARLIER_ATTEMPTS = 10;

class Ring<T> {
  readonly #items: T[] = [];
  #next = 0;
  readonly #size: number;

  constructor(size: number) {
    this.#size = size;
  }

  push(item: T): void {
    if (this.#items.length < this.#size) this.#items.push(item);
    else this.#items[this.#next] = item;
    this.#next = (this.#next + 1) % this.#size;
  }

  /** Newest first. */
  newestFirst(): T[] {
    const ordered = this.#items.length < this.#size ? [...this.#items] : [...this.#items.slice(this.#next), ...this.#items.slice(0, this.#next)];
    return ordered.reverse();
  }
}

export class RecentEvents {
  readonly #size: number;
  #fetches: Ring<RecentFetch>;
  #errors: Ring<RecentError>;
  #hosts = new HostTally();
  /** By origin, oldest first (a Map keeps insertion order). */
  #robotsTrouble = new Map<string, RobotsTrouble>();

  constructor(size: number) {
    this.#size = size;
    this.#fetches = new Ring(size);
    this.#errors = new Ring(size);
  }

  /** A new crawl: what the last one fetched and failed is not shown as this one's. */
  clear(): void {
    this.#fetches = new Ring(this.#size);
    this.#errors = new Ring(this.#size);
    this.#hosts = new HostTally();
    this.#robotsTrouble = new Map();
  }

  /**
   * A robots.txt attempt failed (see RobotsTrouble); the oldest host is forgotten past the bound. The
   * attempt before it, if it was one of the same run (a lower number, not yet given up), becomes the
   * newest of `earlier`.
   */
  robotsUnreachable(trouble: Omit<RobotsTrouble, 'earlier'>): void {
    const before = this.#robotsTrouble.get(trouble.origin);
    let earlier: EarlierRobotsAttempt[] = [];
    if (before !== undefined && before.retryAt !== null && before.attempt < trouble.attempt) {
      earlier = [...before.earlier, { attempt: before.attempt, code: before.code, at: before.at, retryAt: before.retryAt }].slice(-MAX_EARLIER_ATTEMPTS);
    }
    this.#robotsTrouble.delete(trouble.origin);
    this.#robotsTrouble.set(trouble.origin, { ...trouble, earlier });
    if (this.#robotsTrouble.size > MAX_ROBOTS_TROUBLE) this.#robotsTrouble.delete(this.#robotsTrouble.keys().next().value!);
  }

  /** robots.txt of the origin answered: no trouble any more. */
  robotsReachable(origin: string): void {
    this.#robotsTrouble.delete(origin);
  }

  /** Hosts whose robots.txt could not be fetched, most recent first. */
  robotsTrouble(): RobotsTrouble[] {
    return [...this.#robotsTrouble.values()].reverse();
  }

  fetch(event: RecentFetch): void {
    this.#fetches.push(event);
    this.#hosts.count(new URL(event.url).origin, { error: event.status === null || event.status >= 400, bytes: event.bytes }, event.at);
  }

  error(event: RecentError): void {
    this.#errors.push(event);
  }

  fetches(): RecentFetch[] {
    return this.#fetches.newestFirst();
  }

  errors(): RecentError[] {
    return this.#errors.newestFirst();
  }

  /** Active and waiting hosts and the busiest ones; `activeOrigins` are the origins with a slot out now. */
  hosts(activeOrigins: ReadonlySet<string>, frontier: QueuedByOrigin): HostsOverview {
    return this.#hosts.overview(activeOrigins, frontier);
  }
}
