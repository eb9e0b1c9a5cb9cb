/**
 * Freelist: which pages a write transaction may overwrite, and the high-water mark past which the file
 * grows. Owned by the Pager; memory is 4 bytes per free page (plus one copy during a transaction).
 *
 * The rule that keeps copy-on-write safe: a transaction may only write pages that the durable meta does
 * not reference. So a page is in one of three states here:
 *
 * - free:     unreferenced by the durable meta; allocatable now.
 * - pending:  referenced by the durable meta but dropped by this transaction (a node replaced by its
 *             copy, a merged node, the previous free-list chain). It becomes free only once this commit's
 *             meta is durable, i.e. from the next transaction on, because a crash before then reopens the
 *             durable meta, which still needs it.
 * - in use:   everything else below the high-water mark.
 *
 * Lowest ids are handed out first, so the file stays compact and reuses its front.
 */
import { asPageId, type PageId } from './keys.js';

export class Freelist {
  /** Free ids, sorted descending, so pop() returns the lowest. */
  #free: PageId[];
  #pending: PageId[] = [];
  #pageCount: number;
  #snapshot: { free: PageId[]; pageCount: number } | null = null;

  constructor(freeIds: readonly PageId[], pageCount: number) {
    this.#free = [...freeIds].sort((a, b) => b - a);
    this.#pageCount = pageCount;
  }

  /** Pages currently free (outside a transaction: what the durable free-list records). */
  get freeCount(): number {
    return this.#free.length;
  }

  /** High-water mark: every page id ever allocated is below it. */
  get pageCount(): number {
    return this.#pageCount;
  }

  /** Pages the open transaction released (durable pages it no longer references). */
  get released(): readonly PageId[] {
    return this.#pending;
  }

  get inTransaction(): boolean {
    return this.#snapshot !== null;
  }

  begin(): void {
    if (this.#snapshot !== null) throw new Error('bug: freelist transaction already open');
    this.#snapshot = { free: [...this.#free], pageCount: this.#pageCount };
    this.#pending = [];
  }

  /** The lowest free page, or a new page at the end of the file. */
  allocate(): PageId {
    this.#assertTxn();
    return this.#free.pop() ?? asPageId(this.#pageCount++);
  }

  /** A page the durable meta references is no longer needed by this transaction. */
  release(id: PageId): void {
    this.#assertTxn();
    this.#pending.push(id);
  }

  /** A page allocated in this transaction is no longer needed: it never became durable, so reuse it now. */
  reuse(id: PageId): void {
    this.#assertTxn();
    let lo = 0;
    let hi = this.#free.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#free[mid]! > id) lo = mid + 1;
      else hi = mid;
    }
    this.#free.splice(lo, 0, id);
  }

  /**
   * Commit step 0: release the old chain pages, allocate pages for the new chain, and return the chain and
   * the free ids it must record (ascending): what stays free plus what this transaction released.
   */
  layOut(oldChain: readonly PageId[], perPage: number): { chain: PageId[]; ids: PageId[] } {
    this.#assertTxn();
    for (const id of oldChain) this.release(id);
    const chain: PageId[] = [];
    while (chain.length * perPage < this.#free.length + this.#pending.length) chain.push(this.allocate());
    const ids = [...this.#free, ...this.#pending].sort((a, b) => a - b);
    return { chain, ids };
  }

  /** After the meta is durable: the recorded ids are the free set of the next transaction. */
  finish(ids: readonly PageId[]): void {
    this.#assertTxn();
    this.#free = [...ids].reverse();
    this.#pending = [];
    this.#snapshot = null;
  }

  /** Abort: forget every allocation and release made since begin(). No-op outside a transaction. */
  rollback(): void {
    if (this.#snapshot === null) return;
    this.#free = this.#snapshot.free;
    this.#pageCount = this.#snapshot.pageCount;
    this.#pending = [];
    this.#snapshot = null;
  }

  #assertTxn(): void {
    if (this.#snapshot === null) throw new Error('bug: freelist used outside a transaction');
  }
}
