/**
 * PageCache: a bounded LRU of decoded, clean nodes, keyed by page id. Owned by the Pager.
 *
 * Memory bound: at most `capacity` nodes, each retaining about one page of bytes. Upper levels of the
 * tree are touched by every lookup, so LRU keeps them resident. Entries are immutable: a page id's content
 * only changes when the page is reused by a commit, and the commit replaces the entry.
 *
 * A JS Map iterates in insertion order, so re-inserting on every hit makes the first key the least
 * recently used one.
 */
import type { PageId } from './keys.js';
import type { BTNode } from './node.js';

export class PageCache {
  readonly capacity: number;
  readonly #nodes = new Map<PageId, BTNode>();
  #hits = 0;
  #misses = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.#nodes.size;
  }

  get hits(): number {
    return this.#hits;
  }

  get misses(): number {
    return this.#misses;
  }

  /** Looks a page up, counting a hit or a miss. */
  get(id: PageId): BTNode | undefined {
    const node = this.#nodes.get(id);
    if (node === undefined) {
      this.#misses++;
      return undefined;
    }
    this.#hits++;
    this.#nodes.delete(id);
    this.#nodes.set(id, node);
    return node;
  }

  set(id: PageId, node: BTNode): void {
    this.#nodes.delete(id);
    this.#nodes.set(id, node);
    while (this.#nodes.size > this.capacity) {
      const oldest = this.#nodes.keys().next();
      if (oldest.done === true) break;
      this.#nodes.delete(oldest.value);
    }
  }

  delete(id: PageId): void {
    this.#nodes.delete(id);
  }

  clear(): void {
    this.#nodes.clear();
  }
}
