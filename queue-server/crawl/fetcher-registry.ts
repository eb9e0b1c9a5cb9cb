/**
 * The fetchers a queue server has heard from: name, address, last sign of life, what each reported,
 * and what was counted here as its results were applied. Bounded: fetchers silent for a day are
 * forgotten, and at most 10,000 are kept.
 */
import type { FetcherStats } from '../../shared/protocol.js';

export interface FetcherInfo {
  readonly id: string;
  name: string;
  address: string;
  firstSeen: number;
  lastSeen: number;
  /** As the fetcher last reported them. */
  stats: FetcherStats;
  /** Counted here as its results are applied. */
  resultsApplied: number;
  pagesFetched: number;
}

const FORGET_AFTER_MS = 24 * 60 * 60 * 1000;
const MAX_FETCHERS = 10_000;

export class FetcherRegistry {
  readonly #fetchers = new Map<string, FetcherInfo>();

  touch(id: string, name: string, address: string, stats: FetcherStats | null, now: number): FetcherInfo {
    let info = this.#fetchers.get(id);
    if (info === undefined) {
      if (this.#fetchers.size >= MAX_FETCHERS) this.#forgetSilent(now);
      info = { id, name, address, firstSeen: now, lastSeen: now, stats: stats ?? { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 }, resultsApplied: 0, pagesFetched: 0 };
      this.#fetchers.set(id, info);
    }
    info.name = name;
    info.address = address;
    info.lastSeen = now;
    if (stats !== null) info.stats = stats;
    return info;
  }

  /** Forgets a fetcher known to be gone (its process exited): no longer listed, nor waited for. */
  forget(id: string): void {
    this.#fetchers.delete(id);
  }

  get(id: string): FetcherInfo | undefined {
    return this.#fetchers.get(id);
  }

  list(): FetcherInfo[] {
    return [...this.#fetchers.values()];
  }

  /** Fetchers heard from within `withinMs` of `now`. */
  live(now: number, withinMs: number): FetcherInfo[] {
    return this.list().filter((info) => now - info.lastSeen < withinMs);
  }

  #forgetSilent(now: number): void {
    for (const [id, info] of this.#fetchers) if (now - info.lastSeen > FORGET_AFTER_MS) this.#fetchers.delete(id);
  }
}
