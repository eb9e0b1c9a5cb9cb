/**
 * BTNode: one tree page in memory, plus the structural edits a B+tree needs (insert, remove, split, merge).
 * Pure: no I/O and no page allocation; the caller (WriteTxn) hands in page ids.
 *
 * Ownership: a node read from disk is shared through the page cache and is never edited. WriteTxn edits
 * only nodes it created in the current transaction (copies made with `cloneAs`, or fresh nodes).
 *
 * Sizes are tracked in encoded bytes, not entry counts, because values vary in length:
 * - overfull: encodedBytes > pageSize, so the node must split before it can be written;
 * - underfull: body < minFillBytes (a quarter of the usable page), so a non-root node is merged with or
 *   refilled from a sibling.
 */
import { compareKeys, type PageId, type UrlKey } from './keys.js';
import {
  BRANCH_ENTRY_BYTES,
  LEAF_ENTRY_OVERHEAD,
  PAGE_HEADER_BYTES,
  branchBytes,
  encodeBranch,
  encodeLeaf,
  minFillBytes,
  type BranchRecord,
  type LeafRecord,
} from './page-codec.js';

export type NodeKind = 'leaf' | 'branch';

export class BTNode {
  readonly kind: NodeKind;
  readonly id: PageId;
  readonly #keys: UrlKey[];
  /** Leaf only: values[i] belongs to keys[i]. */
  readonly #values: Uint8Array[];
  /** Branch only: keys.length + 1 children; child i holds keys k with keys[i-1] <= k < keys[i]. */
  readonly #children: PageId[];
  #bytes: number;

  private constructor(kind: NodeKind, id: PageId, keys: UrlKey[], values: Uint8Array[], children: PageId[]) {
    this.kind = kind;
    this.id = id;
    this.#keys = keys;
    this.#values = values;
    this.#children = children;
    this.#bytes = 0;
    this.#recount();
  }

  static leaf(id: PageId, keys: UrlKey[] = [], values: Uint8Array[] = []): BTNode {
    return new BTNode('leaf', id, keys, values, []);
  }

  static branch(id: PageId, keys: UrlKey[], children: PageId[]): BTNode {
    if (children.length !== keys.length + 1) throw new Error('bug: branch needs keys.length + 1 children');
    return new BTNode('branch', id, keys, [], children);
  }

  static fromRecord(id: PageId, rec: LeafRecord | BranchRecord): BTNode {
    return rec.kind === 'leaf'
      ? BTNode.leaf(id, [...rec.keys], [...rec.values])
      : BTNode.branch(id, [...rec.keys], [...rec.children]);
  }

  get keys(): readonly UrlKey[] {
    return this.#keys;
  }

  get values(): readonly Uint8Array[] {
    return this.#values;
  }

  get children(): readonly PageId[] {
    return this.#children;
  }

  get count(): number {
    return this.#keys.length;
  }

  /** Size of this node once encoded, header included. */
  get encodedBytes(): number {
    return this.#bytes;
  }

  isOverfull(pageSize: number): boolean {
    return this.#bytes > pageSize;
  }

  isUnderfull(pageSize: number): boolean {
    return this.#bytes - PAGE_HEADER_BYTES < minFillBytes(pageSize);
  }

  /** First index i with keys[i] >= key (keys.length if none). */
  lowerBound(key: Uint8Array): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.#keys[mid]!, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Branch: index of the child whose range holds `key` (the number of separators <= key). */
  childIndex(key: Uint8Array): number {
    let lo = 0;
    let hi = this.#keys.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeys(this.#keys[mid]!, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** A private, editable copy under a new page id (copy-on-write). Keys and values are immutable bytes. */
  cloneAs(id: PageId): BTNode {
    return new BTNode(this.kind, id, [...this.#keys], [...this.#values], [...this.#children]);
  }

  encode(pageSize: number): Uint8Array {
    return this.kind === 'leaf'
      ? encodeLeaf(this.id, { keys: this.#keys, values: this.#values }, pageSize)
      : encodeBranch(this.id, { keys: this.#keys, children: this.#children }, pageSize);
  }

  // ---- leaf edits ----

  insertEntry(index: number, key: UrlKey, value: Uint8Array): void {
    this.#assertKind('leaf');
    this.#keys.splice(index, 0, key);
    this.#values.splice(index, 0, value);
    this.#bytes += LEAF_ENTRY_OVERHEAD + value.length;
  }

  replaceValue(index: number, value: Uint8Array): void {
    this.#assertKind('leaf');
    const old = this.#values[index]!;
    this.#values[index] = value;
    this.#bytes += value.length - old.length;
  }

  removeEntry(index: number): void {
    this.#assertKind('leaf');
    const [old] = this.#values.splice(index, 1);
    this.#keys.splice(index, 1);
    this.#bytes -= LEAF_ENTRY_OVERHEAD + old!.length;
  }

  // ---- branch edits ----

  setChild(index: number, id: PageId): void {
    this.#assertKind('branch');
    this.#children[index] = id;
  }

  setSeparator(index: number, key: UrlKey): void {
    this.#assertKind('branch');
    this.#keys[index] = key;
  }

  /** After child `index` split: `separator` is the first key of the new right sibling `rightId`. */
  insertSplit(index: number, separator: UrlKey, rightId: PageId): void {
    this.#assertKind('branch');
    this.#keys.splice(index, 0, separator);
    this.#children.splice(index + 1, 0, rightId);
    this.#bytes += BRANCH_ENTRY_BYTES;
  }

  /** After child `index + 1` was merged into child `index`: drop the separator between them and the right. */
  removeSeparator(index: number): void {
    this.#assertKind('branch');
    this.#keys.splice(index, 1);
    this.#children.splice(index + 1, 1);
    this.#bytes -= BRANCH_ENTRY_BYTES;
  }

  // ---- structural edits ----

  /**
   * Moves the upper part of this node into a new node `rightId` so the two are as even in bytes as possible,
   * and returns the separator the parent must insert (all keys in the right node are >= it). For a leaf
   * the separator is the right node's first key; for a branch it is the middle key, which moves up.
   */
  splitOff(rightId: PageId): { separator: UrlKey; right: BTNode } {
    const n = this.#keys.length;
    if (this.kind === 'branch') {
      if (n < 3) throw new Error(`bug: splitting branch ${this.id} with ${n} keys`);
      const m = n >>> 1;
      const separator = this.#keys[m]!;
      const right = BTNode.branch(rightId, this.#keys.splice(m + 1), this.#children.splice(m + 1));
      this.#keys.length = m;
      this.#recount();
      return { separator, right };
    }
    if (n < 2) throw new Error(`bug: splitting leaf ${this.id} with ${n} keys`);
    const m = this.#leafSplitIndex();
    const right = BTNode.leaf(rightId, this.#keys.splice(m), this.#values.splice(m));
    this.#recount();
    return { separator: right.#keys[0]!, right };
  }

  /**
   * Appends every entry of `right` (the next sibling) to this node. For branches the parent's separator
   * between the two comes down between them. The caller decides whether the result must split again.
   */
  absorb(right: BTNode, separator: UrlKey): void {
    if (right.kind !== this.kind) throw new Error('bug: merging nodes of different kinds');
    if (this.kind === 'branch') this.#keys.push(separator);
    this.#keys.push(...right.#keys);
    this.#values.push(...right.#values);
    this.#children.push(...right.#children);
    this.#recount();
  }

  /** Split index 1..n-1 minimizing the larger half's bytes. */
  #leafSplitIndex(): number {
    const n = this.#keys.length;
    const total = this.#bytes - PAGE_HEADER_BYTES;
    let left = 0;
    let best = 1;
    let bestMax = Infinity;
    for (let m = 1; m < n; m++) {
      left += LEAF_ENTRY_OVERHEAD + this.#values[m - 1]!.length;
      const worse = Math.max(left, total - left);
      if (worse < bestMax) {
        bestMax = worse;
        best = m;
      }
    }
    return best;
  }

  #recount(): void {
    if (this.kind === 'branch') {
      this.#bytes = branchBytes(this.#keys.length);
      return;
    }
    let bytes = PAGE_HEADER_BYTES + this.#keys.length * LEAF_ENTRY_OVERHEAD;
    for (const v of this.#values) bytes += v.length;
    this.#bytes = bytes;
  }

  #assertKind(kind: NodeKind): void {
    if (this.kind !== kind) throw new Error(`bug: ${kind} edit on ${this.kind} node ${this.id}`);
  }
}
