/**
 * WriteTxn: one write transaction's private, copy-on-write view of the tree.
 *
 * Nothing durable is touched here. The first time the transaction edits a node it copies it to a freshly
 * allocated page id (`#writable`), releases the old id to the freelist as pending, and points the parent at
 * the copy, so every edit copies the path from the root down to the leaf. Edited nodes live in `#dirty`
 * until the Pager writes them in `commit`. If the transaction is abandoned, dropping this object and
 * rolling back the freelist is the whole undo.
 *
 * Rebalancing is local and byte-based (see node.ts): after every edit below a branch, `#settleChild`
 * splits an overfull child or merges/refills an underfull one from a sibling, and `#settleRoot` grows or
 * shrinks the tree at the top. So at the end of every operation all non-root nodes are at least a quarter
 * full and all leaves are at the same depth.
 */
import { compareKeys, type PageId, type UrlKey } from './keys.js';
import { BTNode } from './node.js';
import { LEAF_ENTRY_OVERHEAD } from './page-codec.js';
import type { Pager } from './pager.js';
import { lookup } from './cursor.js';

export class WriteTxn {
  readonly #pager: Pager;
  readonly #pageSize: number;
  readonly #dirty = new Map<PageId, BTNode>();
  #root: PageId | null;
  #height: number;
  #keyCount: number;
  #stamp: number;
  #changed = false;

  /** Starts a transaction on the pager's durable state; the caller must commit or roll back the pager. */
  constructor(pager: Pager) {
    pager.begin();
    this.#pager = pager;
    this.#pageSize = pager.pageSize;
    this.#root = pager.meta.root;
    this.#height = pager.meta.height;
    this.#keyCount = pager.meta.keyCount;
    this.#stamp = pager.meta.stamp;
  }

  get stamp(): number {
    return this.#stamp;
  }

  /** Sets the meta's stamp (page-codec.ts MetaFields.stamp); a new value is a change to commit. */
  setStamp(stamp: number): void {
    if (!Number.isSafeInteger(stamp) || stamp < 0) throw new Error(`bug: B-Tree stamp ${stamp} is not a safe non-negative integer`);
    if (stamp === this.#stamp) return;
    this.#stamp = stamp;
    this.#changed = true;
  }

  /** True once any page was changed; a transaction that changed nothing is not committed. */
  get changed(): boolean {
    return this.#changed;
  }

  get root(): PageId | null {
    return this.#root;
  }

  get height(): number {
    return this.#height;
  }

  get keyCount(): number {
    return this.#keyCount;
  }

  get dirtyNodes(): Iterable<BTNode> {
    return this.#dirty.values();
  }

  /** The value as this transaction sees it (a copy). */
  get(key: UrlKey): Uint8Array | null {
    return lookup(this.#root, key, (id) => this.#node(id));
  }

  put(key: UrlKey, value: Uint8Array): void {
    this.#changed = true;
    if (this.#root === null) {
      const leaf = this.#fresh(() => BTNode.emptyLeaf(this.#pager.allocate(), this.#pager.buffers));
      leaf.insertEntry(0, key, value);
      this.#root = leaf.id;
      this.#height = 1;
      this.#keyCount++;
      return;
    }
    this.#root = this.#putInto(this.#root, key, value);
    this.#settleRoot();
  }

  /**
   * Inserts each of `entries` whose key is absent (keys ascending, each once); a present key keeps its
   * value. Returns how many were inserted. The keys that fall in one leaf are found with one read-only
   * descent and merged into the leaf in one pass (BTNode.insertEntries), as many as keep it overfull by
   * at most one entry, as a single insert leaves it, so the one split that follows settles it; a run
   * with nothing to insert copies no page.
   */
  insertAbsentSorted(entries: ReadonlyArray<readonly [UrlKey, Uint8Array]>): number {
    let from = 0;
    let inserted = 0;
    while (from < entries.length) {
      if (this.#root === null) {
        this.put(entries[from]![0], entries[from]![1]);
        inserted++;
        from++;
        continue;
      }
      const run = this.#absentRun(entries, from);
      from = run.next;
      if (run.at.length === 0) continue;
      this.#changed = true;
      this.#root = this.#insertRunInto(this.#root, run);
      this.#keyCount += run.at.length;
      inserted += run.at.length;
      this.#settleRoot();
    }
    return inserted;
  }

  /** The absent keys from `from` on that belong in the leaf holding entries[from], where each goes in it, and the first entry left for another pass. */
  #absentRun(entries: ReadonlyArray<readonly [UrlKey, Uint8Array]>, from: number): AbsentRun {
    const first = entries[from]![0];
    let node = this.#node(this.#root!);
    /** The leaf's keys are below this separator (a copy: the page holding it may be evicted by the reads below). */
    let upper: UrlKey | null = null;
    while (node.kind === 'branch') {
      const i = node.childIndex(first);
      if (i < node.count) upper = node.copyKeyAt(i);
      node = this.#node(node.childAt(i));
    }
    const leaf = node;
    const run: AbsentRun = { leaf: first, at: [], keys: [], values: [], next: from };
    let used = leaf.encodedBytes;
    while (run.next < entries.length && used <= this.#pageSize) {
      const [key, value] = entries[run.next]!;
      if (upper !== null && compareKeys(key, upper) >= 0) break;
      run.next++;
      const index = leaf.lowerBound(key);
      if (index < leaf.count && leaf.compareAt(index, key) === 0) continue;
      run.at.push(index);
      run.keys.push(key);
      run.values.push(value);
      used += LEAF_ENTRY_OVERHEAD + value.length;
    }
    return run;
  }

  #insertRunInto(id: PageId, run: AbsentRun): PageId {
    const node = this.#writable(id);
    if (node.kind === 'leaf') node.insertEntries(run.at, run.keys, run.values);
    else {
      const i = node.childIndex(run.leaf);
      node.setChild(i, this.#insertRunInto(node.childAt(i), run));
      this.#settleChild(node, i);
    }
    return node.id;
  }

  /** Removes `key`; returns false (and copies nothing) when it is absent. */
  delete(key: UrlKey): boolean {
    if (this.#root === null || this.get(key) === null) return false;
    this.#changed = true;
    this.#root = this.#deleteFrom(this.#root, key);
    this.#keyCount--;
    this.#settleRoot();
    return true;
  }

  #putInto(id: PageId, key: UrlKey, value: Uint8Array): PageId {
    const node = this.#writable(id);
    if (node.kind === 'leaf') {
      const i = node.lowerBound(key);
      if (i < node.count && node.compareAt(i, key) === 0) {
        node.replaceValue(i, value);
      } else {
        node.insertEntry(i, key, value);
        this.#keyCount++;
      }
    } else {
      const i = node.childIndex(key);
      node.setChild(i, this.#putInto(node.childAt(i), key, value));
      this.#settleChild(node, i);
    }
    return node.id;
  }

  #deleteFrom(id: PageId, key: UrlKey): PageId {
    const node = this.#writable(id);
    if (node.kind === 'leaf') {
      const i = node.lowerBound(key);
      if (i >= node.count || node.compareAt(i, key) !== 0) throw new Error('bug: deleting absent key');
      node.removeEntry(i);
    } else {
      const i = node.childIndex(key);
      node.setChild(i, this.#deleteFrom(node.childAt(i), key));
      this.#settleChild(node, i);
    }
    return node.id;
  }

  /** Child `i` of writable `parent` was just edited: split it if overfull, merge or refill it if underfull. */
  #settleChild(parent: BTNode, i: number): void {
    const child = this.#node(parent.childAt(i));
    if (child.isOverfull(this.#pageSize)) {
      const { separator, right } = child.splitOff(this.#pager.allocate());
      this.#dirty.set(right.id, right);
      parent.insertSplit(i, separator, right.id);
      return;
    }
    if (!child.isUnderfull(this.#pageSize) || parent.childCount < 2) return;
    const li = i > 0 ? i - 1 : i;
    const left = this.#writable(parent.childAt(li));
    parent.setChild(li, left.id);
    const right = this.#writable(parent.childAt(li + 1));
    parent.setChild(li + 1, right.id);
    left.absorb(right, parent.keyAt(li));
    if (!left.isOverfull(this.#pageSize)) {
      // Merge: the two fit in one page.
      parent.removeSeparator(li);
      this.#discard(right.id);
      return;
    }
    // Refill: too big for one page, so split the combined node evenly, reusing the right sibling's page.
    const { separator, right: refilled } = left.splitOff(right.id);
    this.#dirty.set(refilled.id, refilled);
    parent.setSeparator(li, separator);
  }

  /** Grows the tree when the root overflowed; shrinks it when the root has a single child or no keys. */
  #settleRoot(): void {
    let root = this.#node(this.#root!);
    while (root.isOverfull(this.#pageSize)) {
      const { separator, right } = root.splitOff(this.#pager.allocate());
      this.#dirty.set(right.id, right);
      const left = root;
      root = this.#fresh(() => BTNode.newRoot(this.#pager.allocate(), separator, left.id, right.id, this.#pager.buffers));
      this.#height++;
    }
    while (root.kind === 'branch' && root.count === 0) {
      const only = root.childAt(0);
      this.#discard(root.id);
      root = this.#node(only);
      this.#height--;
    }
    if (root.kind === 'leaf' && root.count === 0) {
      this.#discard(root.id);
      this.#root = null;
      this.#height = 0;
      return;
    }
    this.#root = root.id;
  }

  #node(id: PageId): BTNode {
    return this.#dirty.get(id) ?? this.#pager.readNode(id);
  }

  /** The node at `id` if this transaction already owns it; otherwise a copy under a new page id. */
  #writable(id: PageId): BTNode {
    const own = this.#dirty.get(id);
    if (own !== undefined) return own;
    const copy = this.#pager.copyForWrite(id, this.#pager.allocate());
    this.#pager.release(id);
    this.#dirty.set(copy.id, copy);
    return copy;
  }

  #fresh(make: () => BTNode): BTNode {
    const node = make();
    this.#dirty.set(node.id, node);
    return node;
  }

  /** Drops a node from the tree: its page goes back to the freelist (now, or at commit if durable). */
  #discard(id: PageId): void {
    if (this.#dirty.delete(id)) this.#pager.reuse(id);
    else this.#pager.release(id);
  }
}

/** New entries for one leaf (insertAbsentSorted): where each goes among the leaf's entries, found on the leaf as it was read. */
interface AbsentRun {
  /** A key of the leaf's range, to descend to it again. */
  readonly leaf: UrlKey;
  readonly at: number[];
  readonly keys: UrlKey[];
  readonly values: Uint8Array[];
  /** The first entry not looked at. */
  next: number;
}
