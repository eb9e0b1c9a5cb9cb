/**
 * Page codec: bytes <-> plain page records. No I/O, no caching, no tree logic. LAYOUT.md draws every
 * layout encoded here; keep the two in step.
 *
 * Every page starts with the same 16-byte header; integers are little-endian, keys are raw bytes:
 *
 *   0      4      5      6        8          12         16
 *   +------+------+------+--------+----------+----------+---------------- ... --+
 *   | crc  | kind | rsvd | count  | page id  | next     | body                  |
 *   | u32  | u8   | u8   | u16    | u32      | u32      |                       |
 *   +------+------+------+--------+----------+----------+---------------- ... --+
 *
 * `crc` is CRC-32 (zlib's, ISO-HDLC) of bytes [4, pageSize): a torn, zeroed, misdirected or bit-flipped
 * page fails it (the page id inside the checksummed area catches a correct page written at the wrong
 * offset). Decoding never returns data from a page that fails: it throws `BTREE_CORRUPT` with the page
 * number.
 *
 * Two ways in: the records below (`decodePage`, `encodeLeaf`, ...) for the checker, the free list and the
 * tests; and, for the hot path, `verifyNodePage` plus the offset helpers (`leafLengthsAt`, ...) with which
 * node.ts reads and edits tree pages in place, in exactly these layouts.
 */
import { crc32 } from 'node:zlib';
import { corruptPage } from './errors.js';
import { KEY_BYTES, asPageId, type PageId, type UrlKey } from './keys.js';

export const PAGE_HEADER_BYTES = 16;
export const MIN_PAGE_SIZE = 1024;
export const MAX_PAGE_SIZE = 65536;
export const DEFAULT_PAGE_SIZE = 4096;
/** Pages 0 and 1 hold the two meta copies; tree and free-list pages start at 2. */
export const META_PAGES = 2;
/** Per-entry bytes in a leaf besides the value: the key and its u16 value length. */
export const LEAF_ENTRY_OVERHEAD = KEY_BYTES + 2;
/** Per-separator bytes in a branch: the key and one more u32 child pointer. */
export const BRANCH_ENTRY_BYTES = KEY_BYTES + 4;
/**
 * Version 2: the page checksum is CRC-32 (zlib, native) instead of version 1's CRC-32C in JavaScript,
 * about five times faster per page; the layouts are otherwise those of version 1. A version 1 file is
 * refused with BTREE_VERSION.
 */
export const FORMAT_VERSION = 2;
/** The older format `petrel btree upgrade` (upgrade.ts) rewrites in this one. */
export const UPGRADABLE_VERSION = 1;

const OFF_CRC = 0;
const OFF_KIND = 4;
const OFF_COUNT = 6;
const OFF_ID = 8;
const OFF_NEXT = 12;

const KIND_META = 1;
const KIND_BRANCH = 2;
const KIND_LEAF = 3;
const KIND_FREELIST = 4;

/** Meta body offsets (after the common header). */
const META_MAGIC = new TextEncoder().encode('PETRELBT');
const OFF_MAGIC = 16;
const OFF_VERSION = 24;
const OFF_PAGE_SIZE = 28;
const OFF_TXID = 32;
const OFF_ROOT = 40;
const OFF_FREELIST = 44;
const OFF_PAGE_COUNT = 48;
const OFF_FREE_COUNT = 52;
const OFF_KEY_COUNT = 56;
const OFF_HEIGHT = 64;
const OFF_STAMP = 68;
/** Bytes of a meta page that `probeMetaHeader` needs to learn the page size. */
export const META_PROBE_BYTES = 72;

export function isValidPageSize(n: number): boolean {
  return Number.isInteger(n) && n >= MIN_PAGE_SIZE && n <= MAX_PAGE_SIZE && (n & (n - 1)) === 0;
}

/** Bytes of a page after the header. */
export function usableBytes(pageSize: number): number {
  return pageSize - PAGE_HEADER_BYTES;
}

/**
 * A non-root node whose body is smaller than this is merged with or refilled from a sibling. A quarter of
 * the usable page: small enough that a split never produces a node under it (each half of a split gets at
 * least 3/8), large enough that the tree stays shallow.
 */
export function minFillBytes(pageSize: number): number {
  return Math.floor(usableBytes(pageSize) / 4);
}

/**
 * Longest value a leaf accepts: one entry (key + length + value) takes at most a quarter of the usable
 * page, so every leaf can hold at least four entries and any split leaves both halves within a page.
 * 1 KiB: 242, 4 KiB: 1010, 16 KiB: 4082, 64 KiB: 16370 bytes.
 */
export function maxValueBytes(pageSize: number): number {
  return minFillBytes(pageSize) - LEAF_ENTRY_OVERHEAD;
}

/** Page ids one free-list page holds. */
export function freelistCapacity(pageSize: number): number {
  return Math.floor(usableBytes(pageSize) / 4);
}

export function leafBytes(keyCount: number, valueBytes: number): number {
  return PAGE_HEADER_BYTES + keyCount * LEAF_ENTRY_OVERHEAD + valueBytes;
}

export function branchBytes(keyCount: number): number {
  return PAGE_HEADER_BYTES + 4 + keyCount * BRANCH_ENTRY_BYTES;
}

/** The durable root of everything: what a commit publishes and what open reads first. */
export interface MetaFields {
  readonly pageSize: number;
  /** Commit counter; 0 for a freshly created file. */
  readonly txid: number;
  /** Root node, or null for an empty tree. */
  readonly root: PageId | null;
  /** First page of the free-list chain, or null when no page is free. */
  readonly freelistHead: PageId | null;
  /** High-water mark: pages [0, pageCount) are meta, tree, free-list or free; later bytes are garbage. */
  readonly pageCount: number;
  /** Number of free page ids recorded in the free-list chain. */
  readonly freeCount: number;
  readonly keyCount: number;
  /** Levels in the tree: 0 when empty, 1 when the root is a leaf. */
  readonly height: number;
  /**
   * A number the file's owner commits with its entries, 0 until it sets one (files written before this
   * field held zeros here). The crawl database keeps in it how many commits the search index had made
   * when the crawl database committed, so that a start can tell an index that lost acknowledged ones.
   */
  readonly stamp: number;
}

export interface LeafRecord {
  readonly kind: 'leaf';
  readonly keys: readonly UrlKey[];
  readonly values: readonly Uint8Array[];
}

export interface BranchRecord {
  readonly kind: 'branch';
  readonly keys: readonly UrlKey[];
  /** keys.length + 1 children; child i holds keys in [keys[i-1], keys[i]). */
  readonly children: readonly PageId[];
}

export interface FreelistRecord {
  readonly kind: 'freelist';
  readonly ids: readonly PageId[];
  readonly next: PageId | null;
}

export interface MetaRecord {
  readonly kind: 'meta';
  readonly meta: MetaFields;
}

export type PageRecord = LeafRecord | BranchRecord | FreelistRecord | MetaRecord;

function view(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function newPage(pageSize: number, kind: number, id: number, count: number, next: number): Uint8Array {
  const bytes = new Uint8Array(pageSize);
  const dv = view(bytes);
  dv.setUint8(OFF_KIND, kind);
  dv.setUint16(OFF_COUNT, count, true);
  dv.setUint32(OFF_ID, id, true);
  dv.setUint32(OFF_NEXT, next, true);
  return bytes;
}

/** The checksum of a page: CRC-32 of bytes [4, pageSize). */
export function pageChecksum(bytes: Uint8Array, pageSize: number = bytes.length): number {
  return crc32(bytes.subarray(4, pageSize));
}

function seal(bytes: Uint8Array): Uint8Array {
  setU32(bytes, OFF_CRC, pageChecksum(bytes));
  return bytes;
}

function checksumOk(bytes: Uint8Array): boolean {
  return u32(bytes, OFF_CRC) === pageChecksum(bytes);
}

// ---- in-place access for node.ts: little-endian integers and where each part of a node page starts ----

export function u16(b: Uint8Array, at: number): number {
  return b[at]! | (b[at + 1]! << 8);
}

export function u32(b: Uint8Array, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

export function setU16(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
}

export function setU32(b: Uint8Array, at: number, v: number): void {
  b[at] = v & 0xff;
  b[at + 1] = (v >>> 8) & 0xff;
  b[at + 2] = (v >>> 16) & 0xff;
  b[at + 3] = (v >>> 24) & 0xff;
}

/** Leaf with n entries: keys start at PAGE_HEADER_BYTES, the u16 lengths here, the values at leafValuesAt. */
export function leafLengthsAt(n: number): number {
  return PAGE_HEADER_BYTES + n * KEY_BYTES;
}

export function leafValuesAt(n: number): number {
  return PAGE_HEADER_BYTES + n * LEAF_ENTRY_OVERHEAD;
}

/** Branch with n keys: the n + 1 u32 children start at PAGE_HEADER_BYTES, the keys here. */
export function branchKeysAt(n: number): number {
  return PAGE_HEADER_BYTES + 4 * (n + 1);
}

/**
 * Finishes a tree page built in place in `bytes` (which may be longer than a page while a node is being
 * edited): header, zeros from `used` to the end of the page, checksum. Returns the page's bytes.
 */
export function sealNode(bytes: Uint8Array, kind: 'leaf' | 'branch', id: PageId, count: number, used: number, pageSize: number): Uint8Array {
  if (used > pageSize) throw new Error(`bug: ${kind} ${id} of ${used} bytes does not fit ${pageSize}`);
  const page = bytes.length === pageSize ? bytes : bytes.subarray(0, pageSize);
  page[OFF_KIND] = kind === 'leaf' ? KIND_LEAF : KIND_BRANCH;
  page[OFF_KIND + 1] = 0;
  setU16(page, OFF_COUNT, count);
  setU32(page, OFF_ID, id);
  setU32(page, OFF_NEXT, 0);
  page.fill(0, used);
  setU32(page, OFF_CRC, pageChecksum(page));
  return page;
}

/**
 * Verifies a tree page read from offset id * pageSize without decoding it (the read path of the cache):
 * checksum, page id, kind, and that its entries fit. Throws `BTREE_CORRUPT` like `decodePage`.
 */
export function verifyNodePage(bytes: Uint8Array, id: PageId): { kind: 'leaf' | 'branch'; count: number; used: number } {
  const pageSize = bytes.length;
  if (!checksumOk(bytes)) throw corruptPage(id, 'checksum mismatch (torn or damaged page)');
  const storedId = u32(bytes, OFF_ID);
  if (storedId !== id) throw corruptPage(id, `page claims to be page ${storedId} (misdirected write)`);
  const kind = bytes[OFF_KIND]!;
  const n = u16(bytes, OFF_COUNT);
  if (kind === KIND_BRANCH) {
    const used = branchBytes(n);
    if (used > pageSize) throw corruptPage(id, `branch count ${n} does not fit the page`);
    return { kind: 'branch', count: n, used };
  }
  if (kind !== KIND_LEAF) {
    const name = kind === KIND_META ? 'meta' : kind === KIND_FREELIST ? 'freelist' : `kind ${kind}`;
    throw corruptPage(id, `expected a tree node, found a ${name} page`);
  }
  let used = leafValuesAt(n);
  if (used > pageSize) throw corruptPage(id, `leaf count ${n} does not fit the page`);
  const lengths = leafLengthsAt(n);
  for (let i = 0; i < n; i++) used += u16(bytes, lengths + 2 * i);
  if (used > pageSize) throw corruptPage(id, 'leaf values run past the page end');
  return { kind: 'leaf', count: n, used };
}

export function encodeLeaf(id: PageId, rec: Omit<LeafRecord, 'kind'>, pageSize: number): Uint8Array {
  const n = rec.keys.length;
  let valueBytes = 0;
  for (const v of rec.values) valueBytes += v.length;
  if (rec.values.length !== n || leafBytes(n, valueBytes) > pageSize) {
    throw new Error(`bug: leaf ${id} with ${n} keys and ${valueBytes} value bytes does not fit ${pageSize}`);
  }
  const bytes = newPage(pageSize, KIND_LEAF, id, n, 0);
  const dv = view(bytes);
  let lenAt = PAGE_HEADER_BYTES + n * KEY_BYTES;
  let dataAt = PAGE_HEADER_BYTES + n * LEAF_ENTRY_OVERHEAD;
  for (let i = 0; i < n; i++) {
    bytes.set(rec.keys[i]!, PAGE_HEADER_BYTES + i * KEY_BYTES);
    const v = rec.values[i]!;
    dv.setUint16(lenAt, v.length, true);
    bytes.set(v, dataAt);
    lenAt += 2;
    dataAt += v.length;
  }
  return seal(bytes);
}

export function encodeBranch(id: PageId, rec: Omit<BranchRecord, 'kind'>, pageSize: number): Uint8Array {
  const n = rec.keys.length;
  if (rec.children.length !== n + 1 || branchBytes(n) > pageSize) {
    throw new Error(`bug: branch ${id} with ${n} keys, ${rec.children.length} children does not fit ${pageSize}`);
  }
  const bytes = newPage(pageSize, KIND_BRANCH, id, n, 0);
  const dv = view(bytes);
  for (let i = 0; i <= n; i++) dv.setUint32(PAGE_HEADER_BYTES + 4 * i, rec.children[i]!, true);
  const keysAt = PAGE_HEADER_BYTES + 4 * (n + 1);
  for (let i = 0; i < n; i++) bytes.set(rec.keys[i]!, keysAt + i * KEY_BYTES);
  return seal(bytes);
}

export function encodeFreelist(
  id: PageId,
  ids: readonly PageId[],
  next: PageId | null,
  pageSize: number,
): Uint8Array {
  if (ids.length > freelistCapacity(pageSize)) {
    throw new Error(`bug: free-list page ${id} given ${ids.length} ids`);
  }
  const bytes = newPage(pageSize, KIND_FREELIST, id, ids.length, next ?? 0);
  const dv = view(bytes);
  for (let i = 0; i < ids.length; i++) dv.setUint32(PAGE_HEADER_BYTES + 4 * i, ids[i]!, true);
  return seal(bytes);
}

/** Encodes the meta for `slot` (0 or 1): the page that goes at byte offset slot * pageSize. */
export function encodeMeta(slot: 0 | 1, meta: MetaFields): Uint8Array {
  const bytes = newPage(meta.pageSize, KIND_META, slot, 0, 0);
  const dv = view(bytes);
  bytes.set(META_MAGIC, OFF_MAGIC);
  dv.setUint32(OFF_VERSION, FORMAT_VERSION, true);
  dv.setUint32(OFF_PAGE_SIZE, meta.pageSize, true);
  dv.setBigUint64(OFF_TXID, BigInt(meta.txid), true);
  dv.setUint32(OFF_ROOT, meta.root ?? 0, true);
  dv.setUint32(OFF_FREELIST, meta.freelistHead ?? 0, true);
  dv.setUint32(OFF_PAGE_COUNT, meta.pageCount, true);
  dv.setUint32(OFF_FREE_COUNT, meta.freeCount, true);
  dv.setBigUint64(OFF_KEY_COUNT, BigInt(meta.keyCount), true);
  dv.setUint32(OFF_HEIGHT, meta.height, true);
  dv.setBigUint64(OFF_STAMP, BigInt(meta.stamp), true);
  return seal(bytes);
}

/**
 * Reads the page size a meta page claims, from its first `META_PROBE_BYTES` bytes, or null when they do
 * not look like a meta page of this format. The claim is only trusted after `decodeMeta` verifies the
 * checksum over the whole page of that size.
 */
export function probeMetaPageSize(head: Uint8Array): number | null {
  if (head.length < META_PROBE_BYTES) return null;
  const dv = view(head);
  if (dv.getUint8(OFF_KIND) !== KIND_META) return null;
  for (let i = 0; i < META_MAGIC.length; i++) if (head[OFF_MAGIC + i] !== META_MAGIC[i]) return null;
  if (dv.getUint32(OFF_VERSION, true) !== FORMAT_VERSION) return null;
  const pageSize = dv.getUint32(OFF_PAGE_SIZE, true);
  return isValidPageSize(pageSize) ? pageSize : null;
}

/**
 * The format version a meta page's first `META_PROBE_BYTES` bytes announce, when they carry the magic of
 * a Petrel B-Tree (of any version); null otherwise. Lets open tell a file of another version from a
 * damaged one.
 */
export function probeMetaVersion(head: Uint8Array): number | null {
  if (head.length < META_PROBE_BYTES || head[OFF_KIND] !== KIND_META) return null;
  for (let i = 0; i < META_MAGIC.length; i++) if (head[OFF_MAGIC + i] !== META_MAGIC[i]) return null;
  return u32(head, OFF_VERSION);
}

/** Decodes and verifies one page read from offset id * pageSize. Throws `BTREE_CORRUPT` on any doubt. */
export function decodePage(bytes: Uint8Array, id: PageId): PageRecord {
  const pageSize = bytes.length;
  if (!checksumOk(bytes)) throw corruptPage(id, 'checksum mismatch (torn or damaged page)');
  const dv = view(bytes);
  const storedId = dv.getUint32(OFF_ID, true);
  if (storedId !== id) throw corruptPage(id, `page claims to be page ${storedId} (misdirected write)`);
  const kind = dv.getUint8(OFF_KIND);
  const n = dv.getUint16(OFF_COUNT, true);
  switch (kind) {
    case KIND_LEAF:
      return decodeLeafBody(bytes, dv, id, n);
    case KIND_BRANCH: {
      if (branchBytes(n) > pageSize) throw corruptPage(id, `branch count ${n} does not fit the page`);
      const children: PageId[] = [];
      for (let i = 0; i <= n; i++) children.push(asPageId(dv.getUint32(PAGE_HEADER_BYTES + 4 * i, true)));
      const keysAt = PAGE_HEADER_BYTES + 4 * (n + 1);
      const keys: UrlKey[] = [];
      for (let i = 0; i < n; i++) {
        keys.push(bytes.subarray(keysAt + i * KEY_BYTES, keysAt + (i + 1) * KEY_BYTES) as UrlKey);
      }
      return { kind: 'branch', keys, children };
    }
    case KIND_FREELIST: {
      if (n > freelistCapacity(pageSize)) throw corruptPage(id, `free-list count ${n} does not fit the page`);
      const ids: PageId[] = [];
      for (let i = 0; i < n; i++) ids.push(asPageId(dv.getUint32(PAGE_HEADER_BYTES + 4 * i, true)));
      const next = dv.getUint32(OFF_NEXT, true);
      return { kind: 'freelist', ids, next: next === 0 ? null : asPageId(next) };
    }
    case KIND_META: {
      if (probeMetaPageSize(bytes) !== pageSize) throw corruptPage(id, 'meta page has a bad header');
      return { kind: 'meta', meta: decodeMetaBody(dv, pageSize) };
    }
    default:
      throw corruptPage(id, `unknown page kind ${kind}`);
  }
}

function decodeLeafBody(bytes: Uint8Array, dv: DataView, id: PageId, n: number): LeafRecord {
  const lenAt = PAGE_HEADER_BYTES + n * KEY_BYTES;
  let dataAt = PAGE_HEADER_BYTES + n * LEAF_ENTRY_OVERHEAD;
  if (dataAt > bytes.length) throw corruptPage(id, `leaf count ${n} does not fit the page`);
  const keys: UrlKey[] = [];
  const values: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const keyAt = PAGE_HEADER_BYTES + i * KEY_BYTES;
    keys.push(bytes.subarray(keyAt, keyAt + KEY_BYTES) as UrlKey);
    const len = dv.getUint16(lenAt + 2 * i, true);
    if (dataAt + len > bytes.length) throw corruptPage(id, `leaf value ${i} runs past the page end`);
    values.push(bytes.subarray(dataAt, dataAt + len));
    dataAt += len;
  }
  return { kind: 'leaf', keys, values };
}

function decodeMetaBody(dv: DataView, pageSize: number): MetaFields {
  const root = dv.getUint32(OFF_ROOT, true);
  const freelistHead = dv.getUint32(OFF_FREELIST, true);
  return {
    pageSize,
    txid: Number(dv.getBigUint64(OFF_TXID, true)),
    root: root === 0 ? null : asPageId(root),
    freelistHead: freelistHead === 0 ? null : asPageId(freelistHead),
    pageCount: dv.getUint32(OFF_PAGE_COUNT, true),
    freeCount: dv.getUint32(OFF_FREE_COUNT, true),
    keyCount: Number(dv.getBigUint64(OFF_KEY_COUNT, true)),
    height: dv.getUint32(OFF_HEIGHT, true),
    stamp: Number(dv.getBigUint64(OFF_STAMP, true)),
  };
}

/** A meta page's fields, or null if the page is torn, damaged or not a meta page of this format. */
export function decodeMeta(bytes: Uint8Array, slot: 0 | 1): MetaFields | null {
  try {
    const rec = decodePage(bytes, asPageId(slot));
    return rec.kind === 'meta' ? rec.meta : null;
  } catch {
    return null;
  }
}
