/**
 * The duplicate indexes on disk, `duplicates.btree` in the data directory: which original page a
 * freshly fetched page duplicates, exactly (same body signature) or nearly (64-bit simhash within
 * NEAR_DUPLICATE_DISTANCE bits, found through four 16-bit bands: Manku, Jain and Das Sarma, WWW 2007).
 * The same answers as the in-memory indexes of near-duplicates.ts (which stay as the model its tests
 * hold this one to), at no memory per page: a StagedTree (the pattern of warc/digest-index.ts) whose
 * page cache is the bound (4,096 pages of 4 KiB, 16 MiB) plus what is staged between its commits.
 *
 * Keys, 8 bytes, by their first byte:
 *
 *   byte 0      bytes 1..7                          value (first byte: its kind)
 *   0..3 band   band value (2), age (5, big-endian)  1 | URL hash (8) | simhash high (4) | low (4)
 *   0x10        signature bytes 0..6                 2 | count (2) | count x (signature (8), URL hash (8)), oldest first
 *   0xff        zero                                 3 | next age (8)
 *
 * A band bucket is a key range, in age order, so a look-up reads the oldest candidates first and stops
 * at the first within distance, or at the asking page's own age (an entry never answers a page older
 * than itself: near-duplicates.ts says why). A signature shares its key with others whose first 7
 * bytes match; the whole signature is in the value and compared; at most 62 pages per key are kept
 * (the 63rd and later are never the oldest).
 *
 * Commit: with every DUPLICATES_COMMIT_EVERY-th commit of the crawl database (before it), with the first
 * after DUPLICATES_STAGE_MAX changes are staged, and at close,
 * as the payload digest index is committed with the WARC files. A kill loses at most those commits'
 * changes: a lost entry lets a later copy count as an original; a lost removal leaves an entry naming a
 * page that no longer holds that content, which the crawl database's record of that page gives away
 * (crawl-db.ts checks every answer against it and drops such an entry).
 */
import { NEAR_DUPLICATE_DISTANCE, popcount32, simhashHalves } from '../../shared/simhash.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';
import type { FileOps } from '../storage/file-ops.js';
import { StagedTree } from '../storage/staged-tree.js';

export const DUPLICATES_FILE = 'duplicates.btree';
/**
 * Pages of 4 KiB. Every change lands on a random band value or signature, so a commit rewrites about
 * one leaf per change whatever the page size: a smaller page is fewer bytes copied, encoded and
 * written per change. (A file keeps the page size it was created with.)
 */
export const DUPLICATES_PAGE_SIZE = 4 * 1024;
/**
 * The page cache's bound in bytes: 4,096 pages of 4 KiB, twice a full stage's leaves. A page's
 * look-ups read the leaves its commit rewrites (its signature's and its four bands'), so with the
 * stage's leaves still cached the commit reads nothing again. With 4 MiB (1,024 pages, fewer than one
 * commit rewrites) it read each a second time: `node dist/scripts/bench-duplicates.js` (900,000 pages
 * indexed, then 33,000 more at 110 a group commit; two runs) counted 9.43 and 9.54 page reads a page
 * with 4 MiB, 5.15 and 5.16 with 16 MiB (writes 5.1 either way), filling took 261 and 253 s instead of
 * 285 and 267, for 22 MiB more RSS. In a queue server at 2 million known URLs a read cost about 13 us
 * (`read` 16.6 s of a 60 s profile, about 21,000 reads a second), so about 55 us a page.
 */
export const DUPLICATES_CACHE_BYTES = 16 * 1024 * 1024;
export const DUPLICATES_COMMIT_EVERY = 20;
/**
 * ...or sooner, once this many changes are staged. A commit copies about one leaf per change while it
 * runs (changes land on random band values and signatures): the changes of 20 group commits copied
 * 2,186 pages of 16 KiB (34 MiB) at 920,000 known URLs, and more as the file grows and fewer changes
 * share a leaf. So the stage bounds that memory: about this many pages (8 MiB of 4 KiB pages) plus
 * one group commit's changes. A page makes five changes (a signature, four bands), so at 110 pages a
 * group commit the stage, not DUPLICATES_COMMIT_EVERY, decides when to commit: every 4th.
 */
export const DUPLICATES_STAGE_MAX = 2048;
const SIGNATURE_SPACE = 0x10;
const META_KEY = Buffer.from([0xff, 0, 0, 0, 0, 0, 0, 0]);
/** Pages per signature key (oldest first): 3 + 62 x 16 bytes, within the 1,010 a 4 KiB page's leaf takes (btree/page-codec.ts maxValueBytes). */
const MAX_HOLDERS = 62;
const BANDS = 4;
const MAX_AGE = 2 ** 40;

type Raw = Uint8Array;

export class DuplicateStore extends StagedTree<Raw> {
  /** Staged band entries by bucket (band << 16 | value): hex key -> value, or null for a removal. A range read merges them in. */
  readonly #bucketStage = new Map<number, Map<string, Raw | null>>();
  #nextAge: number | null = null;
  #sinceCommit = 0;

  /** `cacheBytes`: the page cache's bound (default DUPLICATES_CACHE_BYTES; scripts/bench-duplicates.ts compares sizes). */
  static open(path: string, options: { io?: FileOps; cacheBytes?: number } = {}): DuplicateStore {
    // A new file gets DUPLICATES_PAGE_SIZE; one made with 16 KiB pages keeps them, with a cache of the same bytes.
    const tree = StagedTree.openTree(path, { pageSize: DUPLICATES_PAGE_SIZE, cacheBytes: options.cacheBytes ?? DUPLICATES_CACHE_BYTES, io: options.io });
    return new DuplicateStore(tree, { encode: (value) => value, decode: (bytes) => Uint8Array.from(bytes) });
  }

  // Exact duplicates -----------------------------------------------------------------------------

  /**
   * The oldest page with this signature other than `excludeHex`; null when none, or when `excludeHex`
   * is the oldest. A holder `holds` denies (a stale entry) is removed and the next one asked.
   */
  findSignature(signature: string, excludeHex: string, holds: (urlHex: string) => boolean): string | null {
    for (const oldest of this.#holders(signature)) {
      if (oldest === excludeHex) return null;
      if (holds(oldest)) return oldest;
      this.removeSignature(signature, oldest);
    }
    return null;
  }

  addSignature(signature: string, urlHex: string): void {
    const holders = this.#holders(signature);
    if (holders.includes(urlHex) || holders.length >= MAX_HOLDERS) return;
    this.#writeHolders(signature, [...holders, urlHex]);
  }

  removeSignature(signature: string, urlHex: string): void {
    const holders = this.#holders(signature);
    if (!holders.includes(urlHex)) return;
    this.#writeHolders(signature, holders.filter((holder) => holder !== urlHex));
  }

  // Near duplicates ------------------------------------------------------------------------------

  /**
   * The oldest page within NEAR_DUPLICATE_DISTANCE bits of `simhash`, other than `excludeHex`, and only
   * one older than `excludeHex` when that page is indexed (under `excludeSimhash`, its indexed simhash).
   */
  findNear(simhash: string, excludeHex: string, excludeSimhash: string | null, holds: (urlHex: string, simhash: string) => boolean): string | null {
    const [high, low] = simhashHalves(simhash);
    const ageLimit = excludeSimhash === null ? Number.POSITIVE_INFINITY : (this.#entryOf(excludeHex, excludeSimhash)?.age ?? Number.POSITIVE_INFINITY);
    let best: { url: string; age: number } | null = null;
    for (let band = 0; band < BANDS; band++) {
      for (const entry of this.#bucket(band, bandOf(high, low, band))) {
        if (entry.age >= ageLimit || (best !== null && entry.age >= best.age)) break;
        if (popcount32(entry.high ^ high) + popcount32(entry.low ^ low) <= NEAR_DUPLICATE_DISTANCE) {
          const url = urlOf(entry);
          if (url === excludeHex) continue;
          const entrySimhash = simhashHex(entry.high, entry.low);
          if (!holds(url, entrySimhash)) {
            // Stale (see the file comment): gone from every band, and the scan goes on.
            this.removeNear(url, entrySimhash);
            continue;
          }
          best = { url, age: entry.age };
          break;
        }
      }
    }
    return best?.url ?? null;
  }

  /** Indexes a page under its simhash, newest; a page indexed under this simhash already keeps its age. */
  addNear(urlHex: string, simhash: string): void {
    if (this.#entryOf(urlHex, simhash) !== null) return;
    const [high, low] = simhashHalves(simhash);
    const age = this.#takeAge();
    const value = Buffer.alloc(17);
    value[0] = 1;
    Buffer.from(urlHex, 'hex').copy(value, 1);
    value.writeUInt32BE(high, 9);
    value.writeUInt32BE(low, 13);
    for (let band = 0; band < BANDS; band++) this.#stageBand(bandKey(band, bandOf(high, low, band), age), value);
  }

  removeNear(urlHex: string, simhash: string): void {
    const entry = this.#entryOf(urlHex, simhash);
    if (entry === null) return;
    const [high, low] = simhashHalves(simhash);
    for (let band = 0; band < BANDS; band++) this.#stageBand(bandKey(band, bandOf(high, low, band), entry.age), null);
  }

  /** Part of the crawl database's commit: the staged changes every DUPLICATES_COMMIT_EVERY-th time (`force`: now). */
  commitSome(force = false): void {
    if (!force && ++this.#sinceCommit < DUPLICATES_COMMIT_EVERY && this.stagedCount < DUPLICATES_STAGE_MAX) return;
    this.commit();
    this.#bucketStage.clear();
    this.#sinceCommit = 0;
  }

  override close(): void {
    try {
      this.commitSome(true);
    } finally {
      super.close();
    }
  }

  // ----------------------------------------------------------------------------------------------

  #holders(signature: string): string[] {
    const value = this.get(signatureKey(signature));
    if (value === null) return [];
    const sig = signatureBytes(signature);
    const view = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    const holders: string[] = [];
    const count = view.readUInt16BE(1);
    for (let i = 0; i < count; i++) {
      const at = 3 + i * 16;
      if (view.compare(sig, 0, 8, at, at + 8) === 0) holders.push(view.toString('hex', at + 8, at + 16));
    }
    return holders;
  }

  /** Rewrites the holders of `signature`, keeping those of other signatures sharing the key. */
  #writeHolders(signature: string, holders: readonly string[]): void {
    const key = signatureKey(signature);
    const sig = signatureBytes(signature);
    const others: Buffer[] = [];
    const current = this.get(key);
    if (current !== null) {
      const view = Buffer.from(current.buffer, current.byteOffset, current.byteLength);
      const count = view.readUInt16BE(1);
      for (let i = 0; i < count; i++) {
        const at = 3 + i * 16;
        if (view.compare(sig, 0, 8, at, at + 8) !== 0) others.push(view.subarray(at, at + 16));
      }
    }
    const pairs = [...others, ...holders.map((hex) => Buffer.concat([sig, Buffer.from(hex, 'hex')]))].slice(0, MAX_HOLDERS);
    if (pairs.length === 0) {
      this.stage(key as UrlHash, null);
      return;
    }
    const value = Buffer.alloc(3 + pairs.length * 16);
    value[0] = 2;
    value.writeUInt16BE(pairs.length, 1);
    pairs.forEach((pair, i) => pair.copy(value, 3 + i * 16));
    this.stage(key as UrlHash, value);
  }

  /** The entries of one band bucket, oldest first: committed ones merged with the staged ones. */
  #bucket(band: number, value: number): BandEntry[] {
    const from = bandKey(band, value, 0);
    const staged = this.#bucketStage.get(bucketId(band, value));
    const entries: BandEntry[] = [];
    for (const [key, bytes] of this.committedFrom(from)) {
      if (key[0] !== band || key[1] !== from[1] || key[2] !== from[2]) break;
      // A key changed since the last commit is taken from the stage instead (below).
      if (staged !== undefined && staged.has(Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex'))) continue;
      entries.push(bandEntry(key, bytes));
    }
    // Keys are (band, value, age): the committed entries came in age order. Most buckets have nothing
    // staged; a scan of one that has merges it in and sorts again.
    if (staged === undefined) return entries;
    for (const [hex, bytes] of staged) if (bytes !== null) entries.push(bandEntry(Buffer.from(hex, 'hex'), bytes));
    return entries.sort((a, b) => a.age - b.age);
  }

  /** The page's entry under this simhash (looked for in its first band's bucket), or null. */
  #entryOf(urlHex: string, simhash: string): { age: number } | null {
    const [high, low] = simhashHalves(simhash);
    for (const entry of this.#bucket(0, bandOf(high, low, 0))) if (entry.high === high && entry.low === low && urlOf(entry) === urlHex) return entry;
    return null;
  }

  #stageBand(key: Buffer, value: Raw | null): void {
    const id = bucketId(key[0]!, (key[1]! << 8) | key[2]!);
    let staged = this.#bucketStage.get(id);
    if (staged === undefined) this.#bucketStage.set(id, (staged = new Map()));
    staged.set(key.toString('hex'), value);
    this.stage(key as unknown as UrlHash, value);
  }

  #takeAge(): number {
    if (this.#nextAge === null) {
      const meta = this.get(META_KEY as unknown as UrlHash);
      this.#nextAge = meta === null ? 0 : Number(Buffer.from(meta.buffer, meta.byteOffset, meta.byteLength).readBigUInt64BE(1));
    }
    const age = this.#nextAge++;
    if (age >= MAX_AGE) throw new Error(`duplicate index: age ${age} past the key's 40 bits`);
    const value = Buffer.alloc(9);
    value[0] = 3;
    value.writeBigUInt64BE(BigInt(this.#nextAge), 1);
    this.stage(META_KEY as unknown as UrlHash, value);
    return age;
  }
}

/** A band entry: its value (1 | URL hash | simhash high | low), the simhash's halves and the age from its key. */
interface BandEntry {
  readonly value: Uint8Array;
  readonly high: number;
  readonly low: number;
  readonly age: number;
}

/** A band entry from its key (band, value, age) and value. The URL is read only when asked (`urlOf`): most entries a scan passes are not near. */
function bandEntry(key: Uint8Array, value: Uint8Array): BandEntry {
  return { value, high: u32At(value, 9), low: u32At(value, 13), age: key[3]! * 2 ** 32 + u32At(key, 4) };
}

function u32At(bytes: Uint8Array, at: number): number {
  return ((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0;
}

/** The entry's URL hash, 16 hex. */
function urlOf(entry: BandEntry): string {
  const value = entry.value;
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex', 1, 9);
}

function bandOf(high: number, low: number, band: number): number {
  switch (band) {
    case 0:
      return high >>> 16;
    case 1:
      return high & 0xffff;
    case 2:
      return low >>> 16;
    default:
      return low & 0xffff;
  }
}

function simhashHex(high: number, low: number): string {
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
}

function bucketId(band: number, value: number): number {
  return band * 65_536 + value;
}

function bandKey(band: number, value: number, age: number): Buffer {
  const key = Buffer.alloc(8);
  key[0] = band;
  key.writeUInt16BE(value, 1);
  key.writeUIntBE(age, 3, 5);
  return key;
}

/** A signature's 8 bytes: its 16 hex digits (contentSignature), or the hash of any other spelling. */
function signatureBytes(signature: string): Buffer {
  return /^[0-9a-f]{16}$/.test(signature) ? Buffer.from(signature, 'hex') : Buffer.from(urlHash(signature));
}

function signatureKey(signature: string): UrlHash {
  const key = Buffer.alloc(8);
  key[0] = SIGNATURE_SPACE;
  signatureBytes(signature).copy(key, 1, 0, 7);
  return key as unknown as UrlHash;
}

