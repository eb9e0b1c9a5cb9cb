/**
 * The duplicate indexes on disk, `duplicates.btree` in the data directory: which original page a
 * freshly fetched page duplicates, exactly (same body signature) or nearly (64-bit simhash within
 * NEAR_DUPLICATE_DISTANCE bits, found through four 16-bit bands: Manku, Jain and Das Sarma, WWW 2007).
 * The same answers as the in-memory indexes of near-duplicates.ts (which stay as the model its tests
 * hold this one to), at no memory per page: a StagedTree (the pattern of warc/digest-index.ts) whose
 * page cache is the bound (4,096 pages of 4 KiB, 16 MiB) plus what is staged between its commits, and
 * the band log's bounded generations of new entries.
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
 * A new band entry does not go to the tree at once: it is appended to the band log (band-log.ts),
 * which keeps it in memory, chained per bucket, until a sweep puts a whole generation of them in the
 * tree bucket by bucket, a leaf rewritten once for all its new keys instead of once per key. A bucket's
 * look-up merges the tree's entries with the log's by age. Removals of logged entries are logged too;
 * removals of the tree's entries, the signatures and the next age are staged in the tree.
 *
 * Commit: the band log's frames are written with every commit of the crawl database (before it); the
 * stage, with a slice of the band log's sweep and after an fsync of the log, with every
 * DUPLICATES_COMMIT_EVERY-th, with the first after DUPLICATES_STAGE_MAX changes are staged, and at
 * close, as the payload digest index is committed with the WARC files. A kill -9 loses only the stage
 * (the written frames are the kernel's), a power loss also the frames since the last fsync: a lost
 * entry lets a later copy count as an original; a lost removal leaves an entry naming a page that no
 * longer holds that content, which the crawl database's record of that page gives away (crawl-db.ts
 * checks every answer against it and drops such an entry).
 */
import { NEAR_DUPLICATE_DISTANCE, popcount32, simhashHalves } from '../../shared/simhash.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';
import { nodeFileOps, type FileOps } from '../storage/file-ops.js';
import { StagedTree } from '../storage/staged-tree.js';
import { BANDS, BandLog, bandKey, bandValue, type BandLogStats, type LoggedBand } from './band-log.js';

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
const MAX_AGE = 2 ** 40;

type Raw = Uint8Array;

export class DuplicateStore extends StagedTree<Raw> {
  /** Staged band deletions by bucket (band << 16 | value): hex key -> null. A range read leaves them out. */
  readonly #bucketStage = new Map<number, Map<string, Raw | null>>();
  /** New band entries, before the tree (band-log.ts). */
  readonly #log: BandLog;
  #nextAge: number | null = null;
  #sinceCommit = 0;

  /**
   * `cacheBytes`: the page cache's bound (default DUPLICATES_CACHE_BYTES; scripts/bench-duplicates.ts
   * compares sizes). `bandLogEntries`, `bandSweepBuckets`: a band log generation's entries and a sweep
   * slice's buckets (tests make them small, so that sweeps happen and take several commits).
   */
  static open(path: string, options: { io?: FileOps; cacheBytes?: number; bandLogEntries?: number; bandSweepBuckets?: number } = {}): DuplicateStore {
    // A new file gets DUPLICATES_PAGE_SIZE; one made with 16 KiB pages keeps them, with a cache of the same bytes.
    const fresh = !(options.io ?? nodeFileOps).exists(path);
    const tree = StagedTree.openTree(path, { pageSize: DUPLICATES_PAGE_SIZE, cacheBytes: options.cacheBytes ?? DUPLICATES_CACHE_BYTES, io: options.io });
    let log: BandLog;
    try {
      // A new tree (the crawl database rebuilds the indexes when the file is missing) starts a new log too.
      log = BandLog.open(path, { io: options.io, generationEntries: options.bandLogEntries, sweepSliceBuckets: options.bandSweepBuckets, discard: fresh });
    } catch (error) {
      tree.close();
      throw error;
    }
    return new DuplicateStore(tree, { encode: (value) => value, decode: (bytes) => Uint8Array.from(bytes) }, log);
  }

  private constructor(tree: ConstructorParameters<typeof StagedTree<Raw>>[0], codec: ConstructorParameters<typeof StagedTree<Raw>>[1], log: BandLog) {
    super(tree, codec);
    this.#log = log;
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
    this.#log.add(age, Number.parseInt(urlHex.slice(0, 8), 16), Number.parseInt(urlHex.slice(8, 16), 16), high, low);
  }

  removeNear(urlHex: string, simhash: string): void {
    const entry = this.#entryOf(urlHex, simhash);
    if (entry === null) return;
    const [high, low] = simhashHalves(simhash);
    // Logged: gone from the log's buckets at once; those a sweep already put in the tree are deleted there.
    // In the tree alone (or in both, after a crash during a sweep): deleted from the tree.
    const swept = this.#log.remove(entry.age);
    for (let band = 0; band < BANDS; band++) {
      const value = bandOf(high, low, band);
      if (swept === null || bucketId(band, value) < swept) this.#stageBandDeletion(bandKey(band, value, entry.age));
    }
    if (swept === null) return;
    // After a crash during a sweep a logged entry may be in the tree for every band: deleted there too.
    for (let band = 0; band < BANDS; band++) {
      const value = bandOf(high, low, band);
      if (bucketId(band, value) >= swept && this.#committedHas(band, value, entry.age)) this.#stageBandDeletion(bandKey(band, value, entry.age));
    }
  }

  /**
   * Part of the crawl database's commit: the band log's new frames are written every time; the staged
   * changes, with a slice of the band log's sweep, go to the tree every DUPLICATES_COMMIT_EVERY-th time
   * (`force`: now), the log's frames made durable first.
   */
  commitSome(force = false): void {
    this.#log.flush();
    if (!force && ++this.#sinceCommit < DUPLICATES_COMMIT_EVERY && this.stagedCount < DUPLICATES_STAGE_MAX) return;
    this.#log.sync();
    const slice = this.#log.sweepSlice();
    if (slice === null) this.commit();
    else {
      // In key order, bucket by bucket: each leaf takes its run of keys in one pass. Only where the tree
      // has no such key: after a crash during a sweep, part of a generation is in the tree already.
      this.commit((batch) => batch.insertAbsentSorted(slice.entries));
      this.#log.sweptTo(slice.toBucket);
    }
    this.#bucketStage.clear();
    this.#sinceCommit = 0;
  }

  bandLogStats(): BandLogStats {
    return this.#log.stats();
  }

  override close(): void {
    try {
      this.commitSome(true);
    } finally {
      try {
        super.close();
      } finally {
        this.#log.close();
      }
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

  /** The entries of one band bucket, oldest first: the tree's (less those staged for deletion) merged with the band log's. */
  #bucket(band: number, value: number): BandEntry[] {
    const from = bandKey(band, value, 0);
    const staged = this.#bucketStage.get(bucketId(band, value));
    const entries: BandEntry[] = [];
    for (const [key, bytes] of this.committedFrom(from)) {
      if (key[0] !== band || key[1] !== from[1] || key[2] !== from[2]) break;
      if (staged !== undefined && staged.has(Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex'))) continue;
      entries.push(bandEntry(key, bytes));
    }
    const logged = this.#log.bucket(bucketId(band, value));
    if (logged.length === 0) return entries;
    // Keys are (band, value, age), so the tree's came in age order, and the log's are in age order too.
    // Most of the time every logged entry is newer than the tree's; after a crash during a sweep some are in both: one of each age is kept.
    const merged: BandEntry[] = [];
    let t = 0;
    for (const entry of logged) {
      while (t < entries.length && entries[t]!.age < entry.age) merged.push(entries[t++]!);
      if (t < entries.length && entries[t]!.age === entry.age) continue;
      merged.push(loggedEntry(entry));
    }
    while (t < entries.length) merged.push(entries[t++]!);
    return merged;
  }

  /** Whether the tree holds the band key (band, value, age), committed and not staged for deletion. */
  #committedHas(band: number, value: number, age: number): boolean {
    const key = bandKey(band, value, age);
    const staged = this.#bucketStage.get(bucketId(band, value));
    if (staged !== undefined && staged.has(key.toString('hex'))) return false;
    for (const [found] of this.committedFrom(key)) return Buffer.compare(found, key) === 0;
    return false;
  }

  /** The page's entry under this simhash (looked for in its first band's bucket), or null. */
  #entryOf(urlHex: string, simhash: string): { age: number } | null {
    const [high, low] = simhashHalves(simhash);
    for (const entry of this.#bucket(0, bandOf(high, low, 0))) if (entry.high === high && entry.low === low && urlOf(entry) === urlHex) return entry;
    return null;
  }

  #stageBandDeletion(key: Buffer): void {
    const id = bucketId(key[0]!, (key[1]! << 8) | key[2]!);
    let staged = this.#bucketStage.get(id);
    if (staged === undefined) this.#bucketStage.set(id, (staged = new Map()));
    staged.set(key.toString('hex'), null);
    this.stage(key as unknown as UrlHash, null);
  }

  #takeAge(): number {
    if (this.#nextAge === null) {
      const meta = this.get(META_KEY as unknown as UrlHash);
      const committed = meta === null ? 0 : Number(Buffer.from(meta.buffer, meta.byteOffset, meta.byteLength).readBigUInt64BE(1));
      // The log may hold ages handed out after the tree's last commit (its frames are written first).
      this.#nextAge = Math.max(committed, this.#log.maxAge + 1);
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
  /** The tree's value (1 | URL hash | simhash), or null for an entry of the band log, whose URL hash is in `log`. */
  readonly value: Uint8Array | null;
  readonly log?: LoggedBand;
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
  if (value === null) return (entry.log!.urlHi >>> 0).toString(16).padStart(8, '0') + (entry.log!.urlLo >>> 0).toString(16).padStart(8, '0');
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex', 1, 9);
}

/** A logged entry as a band entry; its URL is read only when asked (`urlOf`), as for the tree's. */
function loggedEntry(entry: LoggedBand): BandEntry {
  return { value: null, log: entry, high: entry.high, low: entry.low, age: entry.age };
}

const bandOf = bandValue;

function simhashHex(high: number, low: number): string {
  return high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
}

function bucketId(band: number, value: number): number {
  return band * 65_536 + value;
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

