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
 * lease); without a store about 40 bytes per waiting URL.
 */
import { urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import type { QueuedUrl } from './frontier.js';
import type { FrontierStore } from './frontier-store.js';
import { MinHeap } from './heap.js';

/** Waiting URLs read back from the store at a time when they fall due. */
const DUE_BATCH = 10_000;

export class UrlPlacement {
  readonly #pending = new Map<string, QueuedUrl>();
  readonly #dueLater = new MinHeap<{ at: number; hash: UrlHash }>((a, b) => a.at < b.at);
  readonly #store: FrontierStore | null;

  constructor(store: FrontierStore | null = null) {
    this.#store = store;
  }

  pending(entry: QueuedUrl): void {
    this.#pending.set(urlHashHex(entry.hash), entry);
  }

  /** The URL is at rest again (result applied, denied, skipped as fresh, dropped). */
  settled(entry: QueuedUrl): void {
    if (this.#pending.get(urlHashHex(entry.hash)) === entry) this.#pending.delete(urlHashHex(entry.hash));
  }

  pendingEntry(hash: UrlHash): QueuedUrl | undefined {
    return this.#pending.get(urlHashHex(hash));
  }

  get pendingCount(): number {
    return this.#pending.size;
  }

  /** Forgets every pending URL that is not out on lease (the frontier was cleared). */
  dropQueued(): void {
    for (const [key, entry] of this.#pending) if (!entry.leased) this.#pending.delete(key);
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
