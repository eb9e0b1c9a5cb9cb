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
  readonly #fetches: Ring<RecentFetch>;
  readonly #errors: Ring<RecentError>;
  readonly #hosts = new HostTally();

  constructor(size: number) {
    this.#fetches = new Ring(size);
    this.#errors = new Ring(size);
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
