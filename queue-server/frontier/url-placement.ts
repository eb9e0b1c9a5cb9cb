/**
 * Where each known URL is right now, for the URLs that are not at rest in the crawl database:
 * pending (queued in the frontier or out on lease, from admission until its result is applied, it
 * is denied, skipped as fresh, or dropped), or waiting for a time (`dueLater`: a retry's backoff, or
 * in continuous mode the next fetch time). Pending entries are found by hash, so a result that
 * arrives without a lease (after a queue server restart) can settle its URL, and a URL is never
 * pending twice. Only URLs in memory are pending: a URL queued on disk only (frontier-store.ts)
 * becomes pending when its origin's queue reads it back. Waiting URLs live in the frontier store when
 * there is one (on disk, read back in batches when due); without one in a heap in memory.
 * Memory: one map entry per pending URL (bounded by --frontier-memory-urls plus the URLs out on
 * lease), keyed by a number: the hash's low 32 bits, the URL's own high 32 bits telling apart the
 * rare URLs that share them (a key of 16 hex characters cost a string per pending URL and one more
 * per look-up); without a store about 40 bytes per waiting URL.
 */
import { urlHashHigh, urlHashLow, type UrlHash } from '../../shared/url-hash.js';
import type { QueuedUrl } from './frontier.js';
import type { FrontierStore } from './frontier-store.js';
import { MinHeap } from './heap.js';

/** Waiting URLs read back from the store at a time when they fall due. */
const DUE_BATCH = 10_000;

/** The map key of a hash's low half: as a signed 32-bit integer it is a small integer to V8, not a boxed number. */
const keyOf = (low: number): number => low | 0;

export class UrlPlacement {
  /** Pending URLs by the low half of their hash; an array for the rare low halves two pending URLs share. */
  readonly #pending = new Map<number, QueuedUrl | QueuedUrl[]>();
  #pendingCount = 0;
  readonly #dueLater = new MinHeap<{ at: number; hash: UrlHash }>((a, b) => a.at < b.at);
  readonly #store: FrontierStore | null;

  constructor(store: FrontierStore | null = null) {
    this.#store = store;
  }

  /** The URL is pending from now on; it replaces a pending entry of the same hash. */
  pending(entry: QueuedUrl): void {
    const key = keyOf(entry.hashLow);
    const there = this.#pending.get(key);
    if (there === undefined) {
      this.#pending.set(key, entry);
      this.#pendingCount++;
      return;
    }
    const list = Array.isArray(there) ? there : [there];
    const same = list.findIndex((other) => other.hashHigh === entry.hashHigh);
    if (same >= 0) {
      list[same] = entry;
    } else {
      list.push(entry);
      this.#pendingCount++;
    }
    this.#pending.set(key, list.length === 1 ? list[0]! : list);
  }

  /** The URL is at rest again (result applied, denied, skipped as fresh, dropped); nothing when another entry of its hash is pending. */
  settled(entry: QueuedUrl): void {
    const key = keyOf(entry.hashLow);
    const there = this.#pending.get(key);
    if (there === entry) {
      this.#pending.delete(key);
      this.#pendingCount--;
    } else if (Array.isArray(there)) {
      const at = there.indexOf(entry);
      if (at < 0) return;
      there.splice(at, 1);
      if (there.length === 1) this.#pending.set(key, there[0]!);
      this.#pendingCount--;
    }
  }

  pendingEntry(hash: UrlHash): QueuedUrl | undefined {
    const high = urlHashHigh(hash);
    const there = this.#pending.get(keyOf(urlHashLow(hash)));
    if (there === undefined) return undefined;
    if (!Array.isArray(there)) return there.hashHigh === high ? there : undefined;
    return there.find((entry) => entry.hashHigh === high);
  }

  get pendingCount(): number {
    return this.#pendingCount;
  }

  /** Forgets every pending URL that is not out on lease (the frontier was cleared). */
  dropQueued(): void {
    for (const [key, there] of this.#pending) {
      if (!Array.isArray(there)) {
        if (there.leased === true) continue;
        this.#pending.delete(key);
        this.#pendingCount--;
        continue;
      }
      const kept = there.filter((entry) => entry.leased === true);
      this.#pendingCount -= there.length - kept.length;
      if (kept.length === 0) this.#pending.delete(key);
      else this.#pending.set(key, kept.length === 1 ? kept[0]! : kept);
    }
  }

  /** Forgets every URL waiting for a time (a crawl stopped, or a new one that reloads them from the crawl database). */
  dropWaiting(): void {
    this.#dueLater.clear();
    this.#store?.clearWaiting();
  }

  later(hash: UrlHash, at: number): void {
    if (this.#store !== null) this.#store.putWaiting(hash, at);
    else this.#dueLater.push({ at, hash });
  }

  get waiting(): number {
    return this.#store?.waiting ?? this.#dueLater.size;
  }

  nextDueAt(): number | null {
    if (this.#store !== null) return this.#store.nextDueAt();
    return this.#dueLater.peek()?.at ?? null;
  }

  /** Hashes whose time has come (the caller checks the record still wants fetching); from a store at most a batch, the rest at the next call. */
  takeDue(now: number): UrlHash[] {
    if (this.#store !== null) return this.#store.takeDue(now, DUE_BATCH);
    const due: UrlHash[] = [];
    for (let next = this.#dueLater.peek(); next !== undefined && next.at <= now; next = this.#dueLater.peek()) {
      this.#dueLater.pop();
      due.push(next.hash);
    }
    return due;
  }
}
