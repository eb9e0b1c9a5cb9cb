/**
 * PageCache: a bounded cache of clean nodes keyed by page id, and the pool of spare page buffers that
 * reads and write transactions take their buffers from. Owned by the Pager.
 *
 * Memory bound: at most `capacity` cached pages, one page of bytes each, and an index of 4 bytes per page
 * of the file; a write transaction's own nodes come on top until its commit, when they become cached
 * pages. Spare buffers: at most a quarter of the capacity (at least 16), or as many as the last commit
 * wrote if that is more, so that the next transaction of the same size allocates nothing; since they
 * are at most what that transaction held, they never raise the peak. But never more than the capacity:
 * a tree that commits seldom and much at a time (the duplicate indexes, every 20th group commit) would
 * otherwise hold its largest commit's worth between commits (measured: 2,186 spare pages of 16 KiB,
 * 34 MiB, beside a 256-page cache at 920,000 known URLs), memory the other trees' commits could use.
 * A cached page's content changes only when a commit reuses its page id, and the commit replaces the
 * entry.
 *
 * Eviction is CLOCK (second chance), an approximation of LRU that costs a hit nothing but setting a
 * bit: a hand sweeps the slots, clearing the bit of each page used since its last visit and evicting the
 * first page whose bit is already clear. Upper levels of the tree are used by every lookup, so they keep
 * their bit set and stay resident. The index from page id to slot is a typed array (page ids are dense
 * small integers), so a look-up is two array reads, not a hash probe.
 *
 * Recycling buffers is what makes a cache miss cheap (no allocation, nothing for the garbage collector),
 * and it is why a node evicted from here is dead: its buffer is released to the pool and may hold
 * another page a moment later (node.ts, "Ownership and lifetime").
 */
import type { PageId } from './keys.js';
import type { BTNode, PageBufferSource } from './node.js';

export class PageCache implements PageBufferSource {
  readonly capacity: number;
  readonly pageSize: number;
  /** Slot of each cached page id, plus one (0: not cached); grown as page ids grow. */
  #slotOf: Int32Array = new Int32Array(1024);
  readonly #nodes: Array<BTNode | null> = [];
  /** 1 when the slot's page was used since the hand last passed it. */
  readonly #used: Uint8Array;
  /** Slots emptied by `delete`, reused before the hand evicts anything. */
  readonly #holes: number[] = [];
  #hand = 0;
  #size = 0;
  readonly #spare: Uint8Array[] = [];
  readonly #minSpare: number;
  #spareCapacity: number;
  #hits = 0;
  #misses = 0;

  constructor(capacity: number, pageSize: number) {
    this.capacity = capacity;
    this.pageSize = pageSize;
    this.#used = new Uint8Array(capacity);
    this.#minSpare = Math.max(16, capacity >>> 2);
    this.#spareCapacity = this.#minSpare;
  }

  /** A commit wrote `pages` pages: keep up to that many spare buffers for the next transaction (at most the capacity). */
  sizeSpareFor(pages: number): void {
    this.#spareCapacity = Math.min(Math.max(this.#minSpare, this.capacity), Math.max(this.#minSpare, pages));
    if (this.#spare.length > this.#spareCapacity) this.#spare.length = this.#spareCapacity;
  }

  get size(): number {
    return this.#size;
  }

  get hits(): number {
    return this.#hits;
  }

  get misses(): number {
    return this.#misses;
  }

  /** Looks a page up, counting a hit or a miss. */
  get(id: PageId): BTNode | undefined {
    const slot = id < this.#slotOf.length ? this.#slotOf[id]! - 1 : -1;
    if (slot < 0) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#used[slot] = 1;
    return this.#nodes[slot]!;
  }

  set(id: PageId, node: BTNode): void {
    const existing = id < this.#slotOf.length ? this.#slotOf[id]! - 1 : -1;
    if (existing >= 0) {
      const old = this.#nodes[existing]!;
      if (old !== node) this.#recycle(old);
      this.#nodes[existing] = node;
      this.#used[existing] = 1;
      return;
    }
    const slot = this.#freeSlot();
    this.#nodes[slot] = node;
    this.#used[slot] = 1;
    this.#index(id, slot);
    this.#size++;
  }

  delete(id: PageId): void {
    const slot = id < this.#slotOf.length ? this.#slotOf[id]! - 1 : -1;
    if (slot < 0) return;
    this.#recycle(this.#nodes[slot]!);
    this.#nodes[slot] = null;
    this.#used[slot] = 0;
    this.#slotOf[id] = 0;
    this.#holes.push(slot);
    this.#size--;
  }

  clear(): void {
    for (const node of this.#nodes) node?.release();
    this.#nodes.length = 0;
    this.#holes.length = 0;
    this.#slotOf.fill(0);
    this.#used.fill(0);
    this.#hand = 0;
    this.#size = 0;
    this.#spare.length = 0;
  }

  /** A page-sized buffer: a spare one, or a new one. Its content is garbage. */
  take(): Uint8Array {
    return this.#spare.pop() ?? new Uint8Array(this.pageSize);
  }

  /** Counts a read that bypasses the cache (a page copied straight into a write transaction). */
  countMiss(): void {
    this.#misses++;
  }

  /** Hands a buffer back that nobody references any more. */
  give(buf: Uint8Array): void {
    if (buf.length === this.pageSize && this.#spare.length < this.#spareCapacity) this.#spare.push(buf);
  }

  /** An empty slot: a hole, a slot never used yet, or the one the CLOCK hand evicts. */
  #freeSlot(): number {
    const hole = this.#holes.pop();
    if (hole !== undefined) return hole;
    if (this.#nodes.length < this.capacity) {
      this.#nodes.push(null);
      return this.#nodes.length - 1;
    }
    for (;;) {
      const slot = this.#hand;
      this.#hand = slot + 1 === this.capacity ? 0 : slot + 1;
      if (this.#used[slot] === 1) {
        this.#used[slot] = 0;
        continue;
      }
      const victim = this.#nodes[slot]!;
      this.#slotOf[victim.id] = 0;
      this.#recycle(victim);
      this.#nodes[slot] = null;
      this.#size--;
      return slot;
    }
  }

  #index(id: PageId, slot: number): void {
    if (id >= this.#slotOf.length) {
      let length = this.#slotOf.length;
      while (length <= id) length *= 2;
      const grown = new Int32Array(length);
      grown.set(this.#slotOf);
      this.#slotOf = grown;
    }
    this.#slotOf[id] = slot + 1;
  }

  #recycle(node: BTNode): void {
    const buf = node.release();
    if (buf !== null) this.give(buf);
  }
}
