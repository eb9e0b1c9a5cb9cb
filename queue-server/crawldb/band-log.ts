/**
 * The band log in front of `duplicates.btree`'s near-duplicate band entries (duplicate-store.ts): a page
 * indexed under its simhash is appended here, one 32-byte frame, instead of staging four band keys in
 * the tree, and reaches the tree later with the other entries of its band buckets, bucket by bucket
 * in key order (a sweep). IRLbot's DRUM idea again, as the crawl database's insert log does it.
 *
 * Why: a band key (band, 16-bit band value, age) lands on a random bucket, so every staged entry
 * rewrote a 4 KiB leaf of its own at the next commit; at 2.5 million known URLs the duplicate indexes'
 * commit took 13 % of the queue server's time. A sweep of a generation of GENERATION_ENTRIES entries
 * rewrites each leaf once for all its entries: at 2.5 million known URLs (about 30,000 band leaves)
 * some 17 entries a leaf, at 10 million (about 260,000) two.
 *
 * Look-ups: each generation keeps its entries in typed arrays, chained per band bucket in age order
 * (ages only grow), so a bucket's logged entries are a walk of its chain; duplicate-store.ts merges
 * them with the tree's by age. An entry whose bucket a sweep already put in the tree is no longer
 * answered from here.
 *
 * Files, beside the tree: `duplicates.bands-<generation>`. The newest is appended to; when it holds
 * GENERATION_ENTRIES entries a new one is begun and the full one is swept, a run of buckets with each
 * of the store's commits, then deleted. So at most two live.
 *
 *   file    header 16 bytes: "PETRELBL", version u32 (1), generation u32 (little-endian)
 *   frame   32 bytes: crc u32 (zlib CRC-32 of bytes 4..32), kind u8 (1 entry, 2 removal), 3 zero
 *           bytes, age u64, URL hash 8 bytes, simhash high u32, low u32 (a removal: its entry's age, the rest zero)
 *
 * Crash model, as the store's (a lost entry lets a later copy count as an original; a lost removal
 * leaves a stale entry, which the crawl database's record gives away): frames are written with every
 * store commit and fsynced with the tree's commits, so a kill -9 loses none of them and a power loss
 * at most the frames since the last fsync. A torn or damaged tail is cut off on open. After a crash
 * during a sweep the whole file is read again: entries already in the tree are then in both places,
 * and the store's merge keeps one of each age; the sweep puts them in the tree again only where the
 * tree has no such key.
 *
 * Memory: 41 bytes an entry (URL hash, simhash, age, removed flag, four chain links; an entry is
 * found by its age with a binary search, ages only growing within a generation) up to
 * GENERATION_ENTRIES a generation, two generations at most (about 43 MiB), plus 2 MiB of chain heads
 * and tails a generation.
 */
import { crc32 } from 'node:zlib';
import { basename, dirname } from 'node:path';
import { fsyncDir, nodeFileOps, readFully, writeFully, type FileOps } from '../storage/file-ops.js';
import { beginNumberedFile, numberedFilePath, numberedFiles } from '../storage/numbered-files.js';

const MAGIC = Buffer.from('PETRELBL', 'latin1');
const VERSION = 1;
const HEADER_BYTES = 16;
const FRAME_BYTES = 32;
const KIND_ENTRY = 1;
const KIND_REMOVAL = 2;
export const BANDS = 4;
/** Band buckets: four bands of 16-bit values. A bucket's id (band * 65,536 + value) is its keys' order in the tree. */
export const BUCKETS = BANDS * 65_536;
export const GENERATION_ENTRIES = 1 << 19;
/** Buckets a sweep slice takes at least (a few hundred leaves' worth at most). */
const SWEEP_MIN_BUCKETS = 1024;

/** One logged entry, as a bucket walk hands it out. */
export interface LoggedBand {
  readonly age: number;
  readonly high: number;
  readonly low: number;
  readonly urlHi: number;
  readonly urlLo: number;
}

export interface BandLogOptions {
  readonly io?: FileOps;
  /** Entries a generation holds (default GENERATION_ENTRIES); small in tests, to make sweeps happen. */
  readonly generationEntries?: number;
  /** Buckets a sweep slice takes, fixed (default: paced by the new generation's filling); for tests of long sweeps. */
  readonly sweepSliceBuckets?: number;
  /** Deletes the files there are instead of reading them: the tree is new, and files left beside it belong to one deleted. */
  readonly discard?: boolean;
}

export interface BandLogStats {
  readonly entries: number;
  readonly files: number;
  readonly bytes: number;
  readonly cutBytes: number;
  /** Buckets of the generation being swept not in the tree yet (0: no sweep). */
  readonly sweepBucketsLeft: number;
}

/** The band value of a simhash's band (the 16-bit quarter the bucket is keyed by). */
export function bandValue(high: number, low: number, band: number): number {
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

class Generation {
  readonly number: number;
  readonly path: string;
  readonly fd: number;
  /** Bytes of whole frames (and the header): where the next append goes. */
  end = HEADER_BYTES;
  count = 0;
  live = 0;
  /** Buckets below this are in the tree (a sweep put them there): their entries are not answered from here. */
  sweptBuckets = 0;
  #capacity = 0;
  urlHi = new Uint32Array(0);
  urlLo = new Uint32Array(0);
  high = new Uint32Array(0);
  low = new Uint32Array(0);
  age = new Float64Array(0);
  removed = new Uint8Array(0);
  /** Per entry and band, the next entry of the same bucket (-1: none). */
  next = new Int32Array(0);
  readonly head = new Int32Array(BUCKETS).fill(-1);
  readonly tail = new Int32Array(BUCKETS).fill(-1);

  /** Entries the generation is meant to hold: its arrays grow to this, and past it (a sweep begins only with a tree commit) by an eighth at a time. */
  readonly #bound: number;

  constructor(number: number, path: string, fd: number, bound: number) {
    this.number = number;
    this.path = path;
    this.fd = fd;
    this.#bound = bound;
  }

  add(age: number, urlHi: number, urlLo: number, high: number, low: number): void {
    if (this.count === this.#capacity) this.#grow();
    const i = this.count++;
    this.urlHi[i] = urlHi;
    this.urlLo[i] = urlLo;
    this.high[i] = high;
    this.low[i] = low;
    this.age[i] = age;
    this.removed[i] = 0;
    this.live++;
    for (let band = 0; band < BANDS; band++) {
      const bucket = band * 65_536 + bandValue(high, low, band);
      this.next[i * BANDS + band] = -1;
      const last = this.tail[bucket]!;
      if (last < 0) this.head[bucket] = i;
      else this.next[last * BANDS + band] = i;
      this.tail[bucket] = i;
    }
  }

  /** Marks the entry of `age` removed; false when this generation has none (or it is removed already). */
  remove(age: number): boolean {
    const i = this.#indexOf(age);
    if (i < 0 || this.removed[i] === 1) return false;
    this.removed[i] = 1;
    this.live--;
    return true;
  }

  /** The entry of `age`, by binary search: a generation's ages only grow (the store hands them out in order). */
  #indexOf(age: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = this.age[mid]!;
      if (at === age) return mid;
      if (at < age) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  #grow(): void {
    const capacity = this.#capacity < this.#bound ? Math.min(this.#bound, Math.max(1024, this.#capacity * 2)) : this.#capacity + Math.max(1024, this.#bound >>> 3);
    const grow32 = (from: Uint32Array<ArrayBuffer>): Uint32Array<ArrayBuffer> => {
      const to = new Uint32Array(capacity);
      to.set(from);
      return to;
    };
    this.urlHi = grow32(this.urlHi);
    this.urlLo = grow32(this.urlLo);
    this.high = grow32(this.high);
    this.low = grow32(this.low);
    const age = new Float64Array(capacity);
    age.set(this.age);
    this.age = age;
    const removed = new Uint8Array(capacity);
    removed.set(this.removed);
    this.removed = removed;
    const next = new Int32Array(capacity * BANDS);
    next.set(this.next);
    this.next = next;
    this.#capacity = capacity;
  }
}

export class BandLog {
  readonly #io: FileOps;
  readonly #generationEntries: number;
  readonly #sweepSliceBuckets: number | undefined;
  readonly #discard: boolean;
  readonly #dir: string;
  readonly #prefix: string;
  /** Live generations, oldest first; the last is appended to, the one before it (if any) is being swept. */
  readonly #generations: Generation[] = [];
  /** Frames not yet written (written by `flush`). */
  #pending: Buffer[] = [];
  #cutBytes = 0;
  #maxAge = -1;

  private constructor(treePath: string, options: BandLogOptions) {
    this.#io = options.io ?? nodeFileOps;
    this.#generationEntries = options.generationEntries ?? GENERATION_ENTRIES;
    this.#sweepSliceBuckets = options.sweepSliceBuckets;
    this.#discard = options.discard === true;
    if (!Number.isInteger(this.#generationEntries) || this.#generationEntries < 1) throw new RangeError(`band log: ${this.#generationEntries} entries a generation is not a positive integer`);
    this.#dir = dirname(treePath);
    this.#prefix = `${basename(treePath).replace(/\.btree$/, '')}.bands-`;
  }

  /** Opens (and replays) the band log of the tree at `treePath`, creating its first file if there is none. */
  static open(treePath: string, options: BandLogOptions = {}): BandLog {
    const log = new BandLog(treePath, options);
    try {
      log.#openFiles();
    } catch (error) {
      log.close();
      throw error;
    }
    return log;
  }

  /** The highest age any logged frame carries (-1: none): the store's next age is above it. */
  get maxAge(): number {
    return this.#maxAge;
  }

  /** Live entries in every generation (removed ones not counted). */
  get size(): number {
    let live = 0;
    for (const generation of this.#generations) live += generation.live;
    return live;
  }

  /** Logs a page's entry under its simhash (the age comes from the store, above every age before). */
  add(age: number, urlHi: number, urlLo: number, high: number, low: number): void {
    const current = this.#generations[this.#generations.length - 1]!;
    current.add(age, urlHi, urlLo, high, low);
    this.#pending.push(frameOf(KIND_ENTRY, age, urlHi, urlLo, high, low));
    if (age > this.#maxAge) this.#maxAge = age;
  }

  /**
   * Removes the logged entry of `age`. Returns the buckets below which its generation's entries are in
   * the tree already (a sweep under way: the caller deletes the entry's keys of those buckets from the
   * tree), or null when no generation holds it (it is in the tree alone).
   */
  remove(age: number): number | null {
    for (const generation of this.#generations) {
      if (generation.remove(age)) {
        this.#pending.push(frameOf(KIND_REMOVAL, age, 0, 0, 0, 0));
        return generation.sweptBuckets;
      }
    }
    return null;
  }

  /** The logged live entries of a bucket, in age order (oldest first, generations in order). */
  bucket(bucket: number): LoggedBand[] {
    const out: LoggedBand[] = [];
    const band = Math.floor(bucket / 65_536);
    for (const generation of this.#generations) {
      if (bucket < generation.sweptBuckets) continue;
      for (let i = generation.head[bucket]!; i >= 0; i = generation.next[i * BANDS + band]!) {
        if (generation.removed[i] === 1) continue;
        out.push({ age: generation.age[i]!, high: generation.high[i]!, low: generation.low[i]!, urlHi: generation.urlHi[i]!, urlLo: generation.urlLo[i]! });
      }
    }
    return out;
  }

  /** Writes the frames logged since the last call (no fsync: `sync` does that with the tree's commit). */
  flush(): void {
    if (this.#pending.length === 0) return;
    const current = this.#generations[this.#generations.length - 1]!;
    const bytes = this.#pending.length === 1 ? this.#pending[0]! : Buffer.concat(this.#pending);
    writeFully(this.#io, current.fd, bytes, current.end);
    current.end += bytes.length;
    this.#pending = [];
  }

  /** Makes the written frames durable (the store's tree commit calls it first). */
  sync(): void {
    for (const generation of this.#generations) this.#io.fsync(generation.fd);
  }

  /**
   * The next run of buckets to put in the tree, as sorted (key, value) pairs for `insertAbsentSorted`,
   * or null when nothing is to be swept. Begins a sweep (a new file to append to) once the newest
   * generation is full. The run is long enough that the sweep ends before the new generation fills.
   * `sweptTo` is called once the tree commit holding it is durable.
   */
  sweepSlice(): { readonly entries: Array<readonly [Uint8Array, Uint8Array]>; readonly toBucket: number } | null {
    const current = this.#generations[this.#generations.length - 1]!;
    if (this.#generations.length === 1) {
      if (current.count < this.#generationEntries) return null;
      this.#startGeneration(current.number + 1);
    }
    const sweeping = this.#generations[0]!;
    const fresh = this.#generations[this.#generations.length - 1]!;
    // Buckets done, at least, by the share of the new generation filled so far (all of them once it is full).
    const due = Math.ceil((BUCKETS * Math.min(1, (fresh.count + 1) / this.#generationEntries)) * 1.25);
    const toBucket = Math.min(BUCKETS, this.#sweepSliceBuckets !== undefined ? sweeping.sweptBuckets + this.#sweepSliceBuckets : Math.max(sweeping.sweptBuckets + SWEEP_MIN_BUCKETS, due));
    const entries: Array<readonly [Uint8Array, Uint8Array]> = [];
    for (let bucket = sweeping.sweptBuckets; bucket < toBucket; bucket++) {
      const band = Math.floor(bucket / 65_536);
      const value = bucket % 65_536;
      for (let i = sweeping.head[bucket]!; i >= 0; i = sweeping.next[i * BANDS + band]!) {
        if (sweeping.removed[i] === 1) continue;
        entries.push([bandKey(band, value, sweeping.age[i]!), bandValueBytes(sweeping.urlHi[i]!, sweeping.urlLo[i]!, sweeping.high[i]!, sweeping.low[i]!)]);
      }
    }
    return { entries, toBucket };
  }

  /** The tree commit holding a slice is durable: its buckets leave the log; a generation swept to its end is deleted. */
  sweptTo(toBucket: number): void {
    const sweeping = this.#generations[0];
    if (sweeping === undefined || this.#generations.length < 2) return;
    sweeping.sweptBuckets = Math.max(sweeping.sweptBuckets, toBucket);
    if (sweeping.sweptBuckets < BUCKETS) return;
    this.#generations.shift();
    this.#io.close(sweeping.fd);
    try {
      this.#io.unlink(sweeping.path);
      fsyncDir(this.#io, this.#dir);
    } catch {
      // Left behind, the file is read again on the next open; every entry of it is in the tree by then.
    }
  }

  stats(): BandLogStats {
    let bytes = 0;
    for (const generation of this.#generations) bytes += generation.end;
    const sweeping = this.#generations.length > 1 ? this.#generations[0]! : null;
    return { entries: this.size, files: this.#generations.length, bytes, cutBytes: this.#cutBytes, sweepBucketsLeft: sweeping === null ? 0 : BUCKETS - sweeping.sweptBuckets };
  }

  close(): void {
    for (const generation of this.#generations.splice(0)) {
      try {
        this.#io.close(generation.fd);
      } catch {
        // Nothing is lost by a failed close of a file whose frames were written.
      }
    }
  }

  #openFiles(): void {
    const numbers = numberedFiles(this.#dir, this.#prefix);
    if (this.#discard && numbers.length > 0) {
      for (const number of numbers) this.#io.unlink(numberedFilePath(this.#dir, this.#prefix, number));
      fsyncDir(this.#io, this.#dir);
      numbers.length = 0;
    }
    const removals: number[] = [];
    for (const number of numbers) this.#replay(number, removals);
    if (this.#generations.length === 0) this.#startGeneration(1);
    // A removal may name an entry of an older file (the one being swept when it was logged).
    for (const age of removals) for (const generation of this.#generations) if (generation.remove(age)) break;
  }

  #startGeneration(number: number): void {
    const path = numberedFilePath(this.#dir, this.#prefix, number);
    const fd = beginNumberedFile(this.#io, this.#dir, path, headerOf(number));
    this.#generations.push(new Generation(number, path, fd, this.#generationEntries));
  }

  /** Reads one file's frames; a torn or damaged tail is cut off. */
  #replay(number: number, removals: number[]): void {
    const path = numberedFilePath(this.#dir, this.#prefix, number);
    const fd = this.#io.open(path, 'r+');
    const generation = new Generation(number, path, fd, this.#generationEntries);
    this.#generations.push(generation);
    const size = this.#io.size(fd);
    const header = Buffer.alloc(HEADER_BYTES);
    if (size < HEADER_BYTES || readFully(this.#io, fd, header, 0) < HEADER_BYTES || !header.equals(headerOf(number))) {
      // Begun, killed before its header was durable (or not a band log of this version): begun again empty.
      this.#cutBytes += size;
      this.#io.ftruncate(fd, 0);
      writeFully(this.#io, fd, headerOf(number), 0);
      this.#io.fsync(fd);
      return;
    }
    const chunk = Buffer.allocUnsafe(FRAME_BYTES * 32_768);
    let at = HEADER_BYTES;
    reading: while (at < size) {
      const length = Math.min(chunk.length, Math.floor((size - at) / FRAME_BYTES) * FRAME_BYTES);
      if (length === 0) break;
      const read = readFully(this.#io, fd, chunk.subarray(0, length), at);
      for (let offset = 0; offset + FRAME_BYTES <= read; offset += FRAME_BYTES) {
        const frame = chunk.subarray(offset, offset + FRAME_BYTES);
        if (crc32(frame.subarray(4)) !== frame.readUInt32LE(0)) break reading;
        const kind = frame[4];
        const age = Number(frame.readBigUInt64LE(8));
        if (kind === KIND_ENTRY) {
          generation.add(age, frame.readUInt32BE(16), frame.readUInt32BE(20), frame.readUInt32LE(24), frame.readUInt32LE(28));
          if (age > this.#maxAge) this.#maxAge = age;
        } else if (kind === KIND_REMOVAL) {
          if (!generation.remove(age)) removals.push(age);
        } else break reading;
        at += FRAME_BYTES;
      }
      if (read < length) break;
    }
    generation.end = at;
    if (at < size) {
      this.#cutBytes += size - at;
      this.#io.ftruncate(fd, at);
      this.#io.fsync(fd);
    }
  }
}

function frameOf(kind: number, age: number, urlHi: number, urlLo: number, high: number, low: number): Buffer {
  const frame = Buffer.allocUnsafe(FRAME_BYTES);
  frame[4] = kind;
  frame[5] = 0;
  frame[6] = 0;
  frame[7] = 0;
  frame.writeBigUInt64LE(BigInt(age), 8);
  frame.writeUInt32BE(urlHi >>> 0, 16);
  frame.writeUInt32BE(urlLo >>> 0, 20);
  frame.writeUInt32LE(high >>> 0, 24);
  frame.writeUInt32LE(low >>> 0, 28);
  frame.writeUInt32LE(crc32(frame.subarray(4)), 0);
  return frame;
}

function headerOf(number: number): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(VERSION, 8);
  header.writeUInt32LE(number >>> 0, 12);
  return header;
}

/** A band entry's tree key: band (1), band value (2, big-endian), age (5, big-endian). */
export function bandKey(band: number, value: number, age: number): Buffer {
  const key = Buffer.alloc(8);
  key[0] = band;
  key.writeUInt16BE(value, 1);
  key.writeUIntBE(age, 3, 5);
  return key;
}

/** A band entry's tree value: 1 | URL hash (8) | simhash high (4, big-endian) | low (4). */
export function bandValueBytes(urlHi: number, urlLo: number, high: number, low: number): Buffer {
  const value = Buffer.alloc(17);
  value[0] = 1;
  value.writeUInt32BE(urlHi >>> 0, 1);
  value.writeUInt32BE(urlLo >>> 0, 5);
  value.writeUInt32BE(high >>> 0, 9);
  value.writeUInt32BE(low >>> 0, 13);
  return value;
}
