/**
 * BTNode: one tree page in memory, held as its page bytes in the on-disk layout (page-codec.ts,
 * LAYOUT.md), plus the structural edits a B+tree needs (insert, remove, split, merge), done in place on
 * those bytes. Pure: no I/O and no page allocation; the caller (WriteTxn) hands in page ids.
 *
 * Why bytes and not arrays of keys and values: a page read from disk is usable as soon as its checksum
 * is verified (no decoding into one object per key and value), a lookup is a binary search over the
 * page, a commit writes the node's bytes as they are, and the page cache holds exactly one page of
 * bytes per entry. The price is that an insert moves bytes (a few `copyWithin` over at most a page).
 *
 * Ownership and lifetime:
 * - A clean node (read from disk, or written by a commit) is owned by the page cache and never edited.
 *   When the cache evicts it, its buffer goes back to the cache's pool for another page and the node
 *   is dead: any further use throws. So a clean node may only be used until the next page read;
 *   readers that keep a position across reads (the cursor) hold page ids or a copy of the bytes.
 * - A writable node belongs to one write transaction (a copy made with `cloneAs`, or a fresh node) and
 *   is edited only by it. While an edit leaves it larger than a page (before the split that follows),
 *   its buffer grows.
 *
 * Sizes are tracked in encoded bytes, not entry counts, because values vary in length:
 * - overfull: encodedBytes > pageSize, so the node must split before it can be written;
 * - underfull: body < minFillBytes (a quarter of the usable page), so a non-root node is merged with or
 *   refilled from a sibling.
 *
 * Leaf with n entries (offsets from the page start): keys at 16 + 8i, u16 lengths at 16 + 8n + 2i,
 * values at 16 + 10n + (sum of the earlier lengths). Branch with n keys: u32 children at 16 + 4i
 * (i <= n), keys at 20 + 4n + 8i.
 */
import { KEY_BYTES, type PageId, type UrlKey } from './keys.js';
import {
  BRANCH_ENTRY_BYTES,
  LEAF_ENTRY_OVERHEAD,
  PAGE_HEADER_BYTES,
  branchBytes,
  branchKeysAt,
  leafLengthsAt,
  leafValuesAt,
  minFillBytes,
  sealNode,
  setU16,
  setU32,
  u16,
  u32,
} from './page-codec.js';

export type NodeKind = 'leaf' | 'branch';

/** Where writable nodes get page-sized buffers (the page cache's pool of spare pages). */
export interface PageBufferSource {
  readonly pageSize: number;
  /** A page-sized buffer; its content is garbage (edits write before they read). */
  take(): Uint8Array;
}

const CHILDREN_AT = PAGE_HEADER_BYTES;

/** Where insertEntries lays a leaf out before copying it back: one buffer for the process, grown as needed (edits are synchronous). */
let scratch = new Uint8Array(0);
function scratchOf(bytes: number): Uint8Array {
  if (scratch.length < bytes) scratch = new Uint8Array(Math.max(bytes, 2 * scratch.length));
  return scratch;
}

/** The 8-byte key at byte `at` of `b` compared with `key`, unsigned bytewise. */
function compareKeyAt(b: Uint8Array, at: number, key: Uint8Array): number {
  for (let j = 0; j < KEY_BYTES; j++) {
    const d = b[at + j]! - key[j]!;
    if (d !== 0) return d;
  }
  return 0;
}

export class BTNode {
  readonly kind: NodeKind;
  readonly id: PageId;
  /** The page bytes; null once the cache has taken the buffer back (the node is dead). */
  #buf: Uint8Array | null;
  /** Entries (leaf) or separator keys (branch). */
  #n: number;
  /** Encoded size, header included; the bytes past it are not part of the node. */
  #used: number;
  /** Set for a transaction's own nodes; null for clean nodes, which are never edited. */
  #buffers: PageBufferSource | null;

  private constructor(kind: NodeKind, id: PageId, buf: Uint8Array, n: number, used: number, buffers: PageBufferSource | null) {
    this.kind = kind;
    this.id = id;
    this.#buf = buf;
    this.#n = n;
    this.#used = used;
    this.#buffers = buffers;
  }

  /**
   * A node over a verified page (page-codec.ts `verifyNodePage` gave kind, count and size): clean, or
   * writable under a new id when `buffers` is given (a page read straight into a write transaction).
   */
  static fromPage(id: PageId, page: Uint8Array, kind: NodeKind, count: number, used: number, buffers: PageBufferSource | null = null): BTNode {
    return new BTNode(kind, id, page, count, used, buffers);
  }

  /** An empty writable leaf. */
  static emptyLeaf(id: PageId, buffers: PageBufferSource): BTNode {
    return new BTNode('leaf', id, buffers.take(), 0, PAGE_HEADER_BYTES, buffers);
  }

  /** A writable branch with one separator and two children (a new root). */
  static newRoot(id: PageId, separator: UrlKey, left: PageId, right: PageId, buffers: PageBufferSource): BTNode {
    const buf = buffers.take();
    setU32(buf, CHILDREN_AT, left);
    setU32(buf, CHILDREN_AT + 4, right);
    buf.set(separator, branchKeysAt(1));
    return new BTNode('branch', id, buf, 1, branchBytes(1), buffers);
  }

  get count(): number {
    return this.#n;
  }

  /** Children of a branch (count + 1); 0 for a leaf. */
  get childCount(): number {
    return this.kind === 'branch' ? this.#n + 1 : 0;
  }

  /** Size of this node once encoded, header included. */
  get encodedBytes(): number {
    return this.#used;
  }

  get writable(): boolean {
    return this.#buffers !== null;
  }

  isOverfull(pageSize: number): boolean {
    return this.#used > pageSize;
  }

  isUnderfull(pageSize: number): boolean {
    return this.#used - PAGE_HEADER_BYTES < minFillBytes(pageSize);
  }

  // ---- reads ----

  /** Byte offset of key i in the page. */
  #keyAt(i: number): number {
    return this.kind === 'leaf' ? PAGE_HEADER_BYTES + i * KEY_BYTES : branchKeysAt(this.#n) + i * KEY_BYTES;
  }

  /** Key i as a view into the page: valid while the node is (copy it to keep it). */
  keyAt(i: number): UrlKey {
    const at = this.#keyAt(i);
    return this.#bytes().subarray(at, at + KEY_BYTES) as UrlKey;
  }

  /** Key i, copied. */
  copyKeyAt(i: number): UrlKey {
    return this.keyAt(i).slice() as UrlKey;
  }

  /** key(i) compared with `key`, unsigned bytewise: negative, zero or positive. */
  compareAt(i: number, key: Uint8Array): number {
    return compareKeyAt(this.#bytes(), this.#keyAt(i), key);
  }

  /** First index i with keys[i] >= key (count if none). */
  lowerBound(key: Uint8Array): number {
    const b = this.#bytes();
    const keys = this.#keyAt(0);
    let lo = 0;
    let hi = this.#n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeyAt(b, keys + mid * KEY_BYTES, key) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Branch: index of the child whose range holds `key` (the number of separators <= key). */
  childIndex(key: Uint8Array): number {
    const b = this.#bytes();
    const keys = this.#keyAt(0);
    let lo = 0;
    let hi = this.#n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareKeyAt(b, keys + mid * KEY_BYTES, key) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Branch: child i (0 <= i <= count). */
  childAt(i: number): PageId {
    return u32(this.#bytes(), CHILDREN_AT + 4 * i) as PageId;
  }

  /** Leaf: the length of value i. */
  valueLength(i: number): number {
    return u16(this.#bytes(), leafLengthsAt(this.#n) + 2 * i);
  }

  /** Leaf: byte offset of value i in the page. */
  #valueAt(i: number): number {
    const b = this.#bytes();
    const lengths = leafLengthsAt(this.#n);
    let at = leafValuesAt(this.#n);
    for (let j = 0; j < i; j++) at += u16(b, lengths + 2 * j);
    return at;
  }

  /** Leaf: value i as a view into the page: valid while the node is (copy it to hand it out). */
  valueAt(i: number): Uint8Array {
    const at = this.#valueAt(i);
    return this.#bytes().subarray(at, at + this.valueLength(i));
  }

  /** Bytes [at, end) of the page, copied into their own buffer (a cursor that tracks value offsets itself). */
  copyRange(at: number, end: number): Uint8Array {
    return this.#bytes().slice(at, end);
  }

  /** Bytes [at, end) of the page as a view: valid while the node is (a walk that tracks value offsets itself). */
  viewRange(at: number, end: number): Uint8Array {
    return this.#bytes().subarray(at, end);
  }

  /** Leaf: value i, copied into its own buffer. */
  copyValueAt(i: number): Uint8Array {
    const at = this.#valueAt(i);
    return this.#bytes().slice(at, at + this.valueLength(i));
  }

  /** A private copy of the node's bytes (header included, up to encodedBytes), for readers that keep it. */
  copyBytes(): Uint8Array {
    return this.#bytes().slice(0, this.#used);
  }

  /** A private, editable copy under a new page id (copy-on-write), in a buffer from `buffers`. */
  cloneAs(id: PageId, buffers: PageBufferSource): BTNode {
    const src = this.#bytes();
    const buf = buffers.take();
    if (buf.length < this.#used) throw new Error(`bug: cloning node ${this.id} of ${this.#used} bytes into a ${buf.length}-byte buffer`);
    buf.set(src.subarray(0, this.#used));
    return new BTNode(this.kind, id, buf, this.#n, this.#used, buffers);
  }

  /** Finishes the page in place (header, zero tail, checksum) and returns its bytes. */
  encode(pageSize: number): Uint8Array {
    return sealNode(this.#bytes(), this.kind, this.id, this.#n, this.#used, pageSize);
  }

  /** A committed node becomes clean: the cache owns it and nothing edits it any more. */
  freeze(): void {
    this.#buffers = null;
  }

  /** The cache takes the buffer back: the node is dead from here on. */
  release(): Uint8Array | null {
    const buf = this.#buf;
    this.#buf = null;
    return buf;
  }

  // ---- leaf edits ----

  insertEntry(index: number, key: UrlKey, value: Uint8Array): void {
    this.#assertEdit('leaf');
    const n = this.#n;
    const m = value.length;
    const valueOff = this.#valueAt(index);
    const end = this.#used;
    const b = this.#room(end + LEAF_ENTRY_OVERHEAD + m);
    const values = leafValuesAt(n);
    const lengths = leafLengthsAt(n);
    // Every region moves right; the rightmost moves first so nothing is overwritten before it moved.
    b.copyWithin(valueOff + LEAF_ENTRY_OVERHEAD + m, valueOff, end); // values from `index` on
    b.copyWithin(values + LEAF_ENTRY_OVERHEAD, values, valueOff); // values before `index`
    b.set(value, valueOff + LEAF_ENTRY_OVERHEAD);
    b.copyWithin(lengths + KEY_BYTES + 2 * (index + 1), lengths + 2 * index, lengths + 2 * n);
    b.copyWithin(lengths + KEY_BYTES, lengths, lengths + 2 * index);
    setU16(b, lengths + KEY_BYTES + 2 * index, m);
    const keyAt = PAGE_HEADER_BYTES + index * KEY_BYTES;
    b.copyWithin(keyAt + KEY_BYTES, keyAt, lengths);
    b.set(key, keyAt);
    this.#n = n + 1;
    this.#used = end + LEAF_ENTRY_OVERHEAD + m;
  }

  /**
   * Inserts several new entries in one pass: entry j (keys[j], values[j]) goes before the entry now at
   * index at[j] (`at` non-decreasing, keys ascending and absent from the node). Keys, lengths and values
   * are laid out again once, a block of old entries at a time, where insertEntry moves them once per
   * entry: a run of sorted new keys that falls in one leaf (a sweep of the crawl database's insert log).
   */
  insertEntries(at: readonly number[], keys: readonly Uint8Array[], values: readonly Uint8Array[]): void {
    this.#assertEdit('leaf');
    const k = keys.length;
    if (k === 0) return;
    const n = this.#n;
    const total = n + k;
    let added = 0;
    for (const value of values) added += LEAF_ENTRY_OVERHEAD + value.length;
    const used = this.#used + added;
    const src = this.#bytes();
    const out = scratchOf(used);
    out.set(src.subarray(0, PAGE_HEADER_BYTES));
    const oldLengths = leafLengthsAt(n);
    const lengths = leafLengthsAt(total);
    let oldValueAt = leafValuesAt(n);
    let valueAt = leafValuesAt(total);
    let i = 0;
    let w = 0;
    // Old entries [i, upTo) as three blocks: their keys, their lengths, their values.
    const copyOld = (upTo: number): void => {
      if (upTo <= i) return;
      out.set(src.subarray(PAGE_HEADER_BYTES + i * KEY_BYTES, PAGE_HEADER_BYTES + upTo * KEY_BYTES), PAGE_HEADER_BYTES + w * KEY_BYTES);
      out.set(src.subarray(oldLengths + 2 * i, oldLengths + 2 * upTo), lengths + 2 * w);
      let bytes = 0;
      for (let e = i; e < upTo; e++) bytes += u16(src, oldLengths + 2 * e);
      out.set(src.subarray(oldValueAt, oldValueAt + bytes), valueAt);
      oldValueAt += bytes;
      valueAt += bytes;
      w += upTo - i;
      i = upTo;
    };
    for (let j = 0; j < k; j++) {
      copyOld(at[j]!);
      const value = values[j]!;
      out.set(keys[j]!, PAGE_HEADER_BYTES + w * KEY_BYTES);
      setU16(out, lengths + 2 * w, value.length);
      out.set(value, valueAt);
      valueAt += value.length;
      w++;
    }
    copyOld(n);
    this.#room(used).set(out.subarray(0, used));
    this.#n = total;
    this.#used = used;
  }

  replaceValue(index: number, value: Uint8Array): void {
    this.#assertEdit('leaf');
    const old = this.valueLength(index);
    const m = value.length;
    const at = this.#valueAt(index);
    const end = this.#used;
    const b = this.#room(end + m - old);
    b.copyWithin(at + m, at + old, end);
    b.set(value, at);
    setU16(b, leafLengthsAt(this.#n) + 2 * index, m);
    this.#used = end + m - old;
  }

  removeEntry(index: number): void {
    this.#assertEdit('leaf');
    const b = this.#bytes();
    const n = this.#n;
    const m = this.valueLength(index);
    const valueOff = this.#valueAt(index);
    const end = this.#used;
    const values = leafValuesAt(n);
    const lengths = leafLengthsAt(n);
    // Every region moves left; the leftmost moves first.
    const keyAt = PAGE_HEADER_BYTES + index * KEY_BYTES;
    b.copyWithin(keyAt, keyAt + KEY_BYTES, lengths);
    b.copyWithin(lengths - KEY_BYTES, lengths, lengths + 2 * index);
    b.copyWithin(lengths - KEY_BYTES + 2 * index, lengths + 2 * (index + 1), lengths + 2 * n);
    b.copyWithin(values - LEAF_ENTRY_OVERHEAD, values, valueOff);
    b.copyWithin(valueOff - LEAF_ENTRY_OVERHEAD, valueOff + m, end);
    this.#n = n - 1;
    this.#used = end - LEAF_ENTRY_OVERHEAD - m;
  }

  // ---- branch edits ----

  setChild(index: number, id: PageId): void {
    this.#assertEdit('branch');
    setU32(this.#bytes(), CHILDREN_AT + 4 * index, id);
  }

  setSeparator(index: number, key: UrlKey): void {
    this.#assertEdit('branch');
    this.#bytes().set(key, this.#keyAt(index));
  }

  /** After child `index` split: `separator` is the first key of the new right sibling `rightId`. */
  insertSplit(index: number, separator: UrlKey, rightId: PageId): void {
    this.#assertEdit('branch');
    const n = this.#n;
    const end = this.#used;
    const b = this.#room(end + BRANCH_ENTRY_BYTES);
    const keys = branchKeysAt(n);
    const keyAt = keys + index * KEY_BYTES;
    // Keys move right by 4 (one more child before them), those from `index` on by 12; then the children.
    b.copyWithin(keyAt + 4 + KEY_BYTES, keyAt, end);
    b.copyWithin(keys + 4, keys, keyAt);
    b.set(separator, keyAt + 4);
    const childAt = CHILDREN_AT + 4 * (index + 1);
    b.copyWithin(childAt + 4, childAt, keys);
    setU32(b, childAt, rightId);
    this.#n = n + 1;
    this.#used = end + BRANCH_ENTRY_BYTES;
  }

  /** After child `index + 1` was merged into child `index`: drop the separator between them and the right. */
  removeSeparator(index: number): void {
    this.#assertEdit('branch');
    const b = this.#bytes();
    const n = this.#n;
    const keys = branchKeysAt(n);
    const keyAt = keys + index * KEY_BYTES;
    const childAt = CHILDREN_AT + 4 * (index + 1);
    b.copyWithin(childAt, childAt + 4, keys);
    b.copyWithin(keys - 4, keys, keyAt);
    b.copyWithin(keyAt - 4, keyAt + KEY_BYTES, this.#used);
    this.#n = n - 1;
    this.#used -= BRANCH_ENTRY_BYTES;
  }

  // ---- structural edits ----

  /**
   * Moves the upper part of this node into a new node `rightId` so the two are as even in bytes as possible,
   * and returns the separator the parent must insert (all keys in the right node are >= it; a copy). For a
   * leaf the separator is the right node's first key; for a branch it is the middle key, which moves up.
   */
  splitOff(rightId: PageId): { separator: UrlKey; right: BTNode } {
    const buffers = this.#assertEdit(this.kind);
    const b = this.#bytes();
    const n = this.#n;
    const rb = buffers.take();
    let right: BTNode;
    let separator: UrlKey;
    if (this.kind === 'branch') {
      if (n < 3) throw new Error(`bug: splitting branch ${this.id} with ${n} keys`);
      const m = n >>> 1;
      const keys = branchKeysAt(n);
      separator = this.copyKeyAt(m);
      const rn = n - m - 1;
      rb.set(b.subarray(CHILDREN_AT + 4 * (m + 1), CHILDREN_AT + 4 * (n + 1)), CHILDREN_AT);
      rb.set(b.subarray(keys + (m + 1) * KEY_BYTES, keys + n * KEY_BYTES), branchKeysAt(rn));
      right = new BTNode('branch', rightId, rb, rn, branchBytes(rn), buffers);
      b.copyWithin(branchKeysAt(m), keys, keys + m * KEY_BYTES);
      this.#n = m;
      this.#used = branchBytes(m);
    } else {
      if (n < 2) throw new Error(`bug: splitting leaf ${this.id} with ${n} keys`);
      const m = this.#leafSplitIndex();
      const lengths = leafLengthsAt(n);
      const splitAt = this.#valueAt(m);
      const rn = n - m;
      rb.set(b.subarray(PAGE_HEADER_BYTES + m * KEY_BYTES, lengths), PAGE_HEADER_BYTES);
      rb.set(b.subarray(lengths + 2 * m, lengths + 2 * n), leafLengthsAt(rn));
      rb.set(b.subarray(splitAt, this.#used), leafValuesAt(rn));
      right = new BTNode('leaf', rightId, rb, rn, leafValuesAt(rn) + (this.#used - splitAt), buffers);
      const values = leafValuesAt(n);
      b.copyWithin(leafLengthsAt(m), lengths, lengths + 2 * m);
      b.copyWithin(leafValuesAt(m), values, splitAt);
      this.#n = m;
      this.#used = leafValuesAt(m) + (splitAt - values);
      separator = right.copyKeyAt(0);
    }
    this.#shrink(buffers);
    return { separator, right };
  }

  /**
   * Appends every entry of `right` (the next sibling) to this node. For branches the parent's separator
   * between the two comes down between them. The caller decides whether the result must split again.
   */
  absorb(right: BTNode, separator: UrlKey): void {
    if (right.kind !== this.kind) throw new Error('bug: merging nodes of different kinds');
    this.#assertEdit(this.kind);
    const rb = right.#bytes();
    const ln = this.#n;
    const rn = right.#n;
    if (this.kind === 'branch') {
      const n = ln + 1 + rn;
      const b = this.#room(branchBytes(n));
      const lkeys = branchKeysAt(ln);
      const keys = branchKeysAt(n);
      b.copyWithin(keys, lkeys, lkeys + ln * KEY_BYTES);
      b.set(rb.subarray(CHILDREN_AT, CHILDREN_AT + 4 * (rn + 1)), CHILDREN_AT + 4 * (ln + 1));
      b.set(separator, keys + ln * KEY_BYTES);
      const rkeys = branchKeysAt(rn);
      b.set(rb.subarray(rkeys, rkeys + rn * KEY_BYTES), keys + (ln + 1) * KEY_BYTES);
      this.#n = n;
      this.#used = branchBytes(n);
      return;
    }
    const n = ln + rn;
    const lValueBytes = this.#used - leafValuesAt(ln);
    const rValueBytes = right.#used - leafValuesAt(rn);
    const used = leafValuesAt(n) + lValueBytes + rValueBytes;
    const b = this.#room(used);
    b.copyWithin(leafValuesAt(n), leafValuesAt(ln), this.#used);
    b.copyWithin(leafLengthsAt(n), leafLengthsAt(ln), leafValuesAt(ln));
    b.set(rb.subarray(PAGE_HEADER_BYTES, leafLengthsAt(rn)), PAGE_HEADER_BYTES + ln * KEY_BYTES);
    b.set(rb.subarray(leafLengthsAt(rn), leafValuesAt(rn)), leafLengthsAt(n) + 2 * ln);
    b.set(rb.subarray(leafValuesAt(rn), right.#used), leafValuesAt(n) + lValueBytes);
    this.#n = n;
    this.#used = used;
  }

  /** Split index 1..n-1 minimizing the larger half's bytes. */
  #leafSplitIndex(): number {
    const b = this.#bytes();
    const n = this.#n;
    const lengths = leafLengthsAt(n);
    const total = this.#used - PAGE_HEADER_BYTES;
    let left = 0;
    let best = 1;
    let bestMax = Infinity;
    for (let m = 1; m < n; m++) {
      left += LEAF_ENTRY_OVERHEAD + u16(b, lengths + 2 * (m - 1));
      const worse = Math.max(left, total - left);
      if (worse < bestMax) {
        bestMax = worse;
        best = m;
      }
    }
    return best;
  }

  #bytes(): Uint8Array {
    const buf = this.#buf;
    if (buf === null) throw new Error(`bug: node ${this.id} used after the page cache released it`);
    return buf;
  }

  /** The buffer, grown (doubled) if it holds fewer than `bytes`: an edit may overfill a node until it splits. */
  #room(bytes: number): Uint8Array {
    const buf = this.#bytes();
    if (bytes <= buf.length) return buf;
    const grown = new Uint8Array(Math.max(bytes, 2 * buf.length));
    grown.set(buf.subarray(0, this.#used));
    this.#buf = grown;
    return grown;
  }

  /** After a split, move a grown buffer's content back into a page-sized one, so caches hold pages only. */
  #shrink(buffers: PageBufferSource): void {
    const buf = this.#bytes();
    if (buf.length <= buffers.pageSize || this.#used > buffers.pageSize) return;
    const page = buffers.take();
    page.set(buf.subarray(0, this.#used));
    this.#buf = page;
  }

  #assertEdit(kind: NodeKind): PageBufferSource {
    if (this.kind !== kind) throw new Error(`bug: ${kind} edit on ${this.kind} node ${this.id}`);
    if (this.#buffers === null) throw new Error(`bug: edit of clean node ${this.id}`);
    return this.#buffers;
  }
}
