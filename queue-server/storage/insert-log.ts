/**
 * The insert log in front of the crawl database's B-Tree: records of keys the tree does not hold yet
 * (a URL the crawl meets for the first time) are appended here instead of being written into the
 * tree at once, and reach the tree later, many at a time, in key order (a sweep).
 *
 * Why: a new URL's key is a random 64-bit hash, so a group commit that inserts a few thousand of them
 * into a tree of a million copies that many 16 KiB leaves (about 14 KB written and checksummed per
 * URL, and as much page memory per commit). Appended, a record costs its own bytes and one fsync
 * per commit; the sweep later rewrites each leaf once for all the log's records in it (IRLbot's DRUM:
 * batch the random updates, apply them in one ordered pass).
 *
 * Files, beside the tree: `<name>.inserts-<generation>`, generation a counter that only grows. One is
 * appended to; when it holds half of `maxEntries` records, a new one is started and the old one is
 * swept into the tree a slice of keys per group commit (a slice spans at most about
 * SWEEP_SLICE_LEAVES leaves), then deleted. So at most two are live (more only after a deletion
 * failed; all are read on open).
 *
 *   file   header 16 bytes: "PETRELIL", version u32 (1), generation u32 (little-endian)
 *   frame  length u32 (of key + value), crc u32 (zlib CRC-32 of key + value), key 8 bytes, value
 *
 * Crash model: `append` writes a commit's frames and fsyncs before the commit is acknowledged; a
 * kill mid-append leaves a torn last frame, which open cuts off (nothing acknowledged was in it).
 * A key leaves the log for the tree in a tree commit (a sweep slice, or the record changing: the
 * change is staged in the tree), and the log's copy is dropped from memory only after that commit;
 * the file still holds it until the whole file is swept. So a key may be in both the tree and the
 * log (after a restart): the tree's record is the newer, and every reader asks the tree first.
 * Nothing is ever deleted from the crawl database, so a key absent from the tree and present here
 * is the record as first stored.
 *
 * Memory: UrlHashMap, 15 bytes a slot at most 70 % full (31 MiB for the default 1,048,576), at most `maxEntries` (beyond it new keys
 * go to the tree as before), the records of one commit window not yet appended, and while a file is
 * swept its keys (8 bytes each, sorted).
 */
import { crc32 } from 'node:zlib';
import { basename, dirname } from 'node:path';
import { urlHashFromHalves, urlHashHigh, urlHashLow, type UrlHash } from '../../shared/url-hash.js';
import { fsyncDir, nodeFileOps, readFully, writeFully, type FileOps } from './file-ops.js';
import { UrlHashMap } from './url-hash-map.js';
import { beginNumberedFile, numberedFilePath, numberedFiles } from './numbered-files.js';
import { stagingBuffer } from './staging-buffer.js';

const MAGIC = Buffer.from('PETRELIL', 'latin1');
const VERSION = 1;
const HEADER_BYTES = 16;
const FRAME_HEAD_BYTES = 8;
const KEY_BYTES = 8;
/** Longer values can not be logged (UrlHashMap keeps lengths in 16 bits); the crawl database's are at most 4,082. */
export const MAX_LOGGED_VALUE_BYTES = 65_535;
/** A sweep slice rewrites about this many tree leaves (4 MiB of 16 KiB pages) in one commit: the write volume of a whole sweep is the same however it is sliced, smaller slices only keep less memory per commit. */
export const SWEEP_SLICE_LEAVES = 256;
/** ...and merges at least this many keys, so that a sweep of a small file takes few commits... */
const SWEEP_SLICE_MIN_KEYS = 2048;
/** ...and at most this many (about 2 MiB of records, some 130 new leaves), however small the tree still is. */
const SWEEP_SLICE_MAX_KEYS = 8192;
export const DEFAULT_INSERT_LOG_ENTRIES = 1 << 20;

export class InsertLogError extends Error {
  readonly code = 'INSERT_LOG_CORRUPT';
}

export interface InsertLogOptions {
  readonly io?: FileOps;
  /** Open for reading only: nothing is cut, created or swept. */
  readonly readOnly?: boolean;
  /** Records the log holds at most (default DEFAULT_INSERT_LOG_ENTRIES); 0 turns it off. */
  readonly maxEntries?: number;
  /** Keys a sweep slice merges, fixed (default: sized by the tree, see SWEEP_SLICE_LEAVES); for tests of long sweeps. */
  readonly sliceKeys?: number;
}

interface LogFile {
  readonly generation: number;
  readonly path: string;
  readonly fd: number;
  /** Bytes of whole frames (and the header): where the next append goes. */
  end: number;
}

/** The slice of the swept file a commit merges into the tree. */
export interface SweepSlice {
  readonly entries: ReadonlyArray<readonly [UrlHash, Uint8Array]>;
  readonly next: number;
}

export interface InsertLogStats {
  readonly entries: number;
  readonly files: number;
  readonly bytes: number;
  readonly indexBytes: number;
  /** Bytes of a torn last frame cut off when the files were opened. */
  readonly cutBytes: number;
  /** Keys of the file being swept that are not merged yet (0: no sweep). */
  readonly sweepLeft: number;
}

export class InsertLog {
  readonly #io: FileOps;
  readonly #readOnly: boolean;
  readonly #maxEntries: number;
  readonly #sliceKeys: number | undefined;
  readonly #dir: string;
  readonly #prefix: string;
  readonly #index = new UrlHashMap();
  /** Records of this commit window, appended by `append`; hex key -> [key, value]. */
  readonly #pending = new Map<string, readonly [UrlHash, Uint8Array]>();
  /** Live files by generation, oldest first; the last is appended to. */
  readonly #files: LogFile[] = [];
  #sweep: { readonly file: LogFile; readonly keys: BigUint64Array; next: number } | null = null;
  #cutBytes = 0;

  private constructor(treePath: string, options: InsertLogOptions) {
    this.#io = options.io ?? nodeFileOps;
    this.#readOnly = options.readOnly === true;
    this.#maxEntries = options.maxEntries ?? DEFAULT_INSERT_LOG_ENTRIES;
    this.#sliceKeys = options.sliceKeys;
    this.#dir = dirname(treePath);
    this.#prefix = `${basename(treePath).replace(/\.btree$/, '')}.inserts-`;
  }

  /** Opens (and replays) the log files of the tree at `treePath`; creates the first one unless read-only. */
  static open(treePath: string, options: InsertLogOptions = {}): InsertLog {
    const log = new InsertLog(treePath, options);
    try {
      log.#openFiles();
    } catch (error) {
      log.close();
      throw error;
    }
    return log;
  }

  /** Records in the log (stale ones included: see the crash model) and of the commit window. */
  get size(): number {
    return this.#index.size + this.#pending.size;
  }

  /** Whether a new key may still be logged (otherwise it goes to the tree). */
  get hasRoom(): boolean {
    return !this.#readOnly && this.#maxEntries > 0 && this.size < this.#maxEntries && this.#files.length > 0;
  }

  has(hash: UrlHash, hex: string): boolean {
    return this.#pending.has(hex) || this.#index.has(urlHashHigh(hash), urlHashLow(hash));
  }

  /** The logged record of `hash` (its value bytes), or null. Callers ask the tree first. */
  read(hash: UrlHash, hex: string): Uint8Array | null {
    const pending = this.#pending.get(hex);
    if (pending !== undefined) return pending[1];
    const span = this.#index.get(urlHashHigh(hash), urlHashLow(hash));
    if (span === null) return null;
    const file = this.#fileOf(span.generation);
    if (file === undefined) return null;
    const value = Buffer.allocUnsafe(span.length);
    readRecord(this.#io, file.fd, value, span.offset, file.path);
    return value;
  }

  /** Logs a new key's record with the next `append` (the key must be absent from the tree and the log). */
  add(hash: UrlHash, hex: string, value: Uint8Array): void {
    if (value.length > MAX_LOGGED_VALUE_BYTES) throw new RangeError(`insert log: a value of ${value.length} bytes is over ${MAX_LOGGED_VALUE_BYTES}`);
    this.#pending.set(hex, [hash, value]);
  }

  /**
   * The key's record changed and is staged in the tree: a record of this window is dropped at once;
   * a logged one is forgotten once `committedToTree` says the tree commit holding the change is durable.
   */
  supersede(hash: UrlHash, hex: string, forgetAfterCommit: UrlHash[]): void {
    if (this.#pending.delete(hex)) return;
    if (this.#index.has(urlHashHigh(hash), urlHashLow(hash))) forgetAfterCommit.push(hash);
  }

  /** Forgets logged keys whose newer records are now in the tree. */
  forget(hashes: readonly UrlHash[]): void {
    for (const hash of hashes) this.#index.delete(urlHashHigh(hash), urlHashLow(hash));
  }

  /** Writes this window's records and fsyncs; on failure nothing is kept of the attempt and they stay pending. */
  append(): void {
    if (this.#pending.size === 0) return;
    const file = this.#files[this.#files.length - 1]!;
    const spans: Array<readonly [UrlHash, number, number]> = [];
    // The frames are built in the shared staging buffer and written each time it is full. A frame
    // always fits: `add` refuses values over MAX_LOGGED_VALUE_BYTES, far below STAGING_BYTES.
    const staging = stagingBuffer();
    let total = 0;
    let at = 0;
    try {
      for (const [hash, value] of this.#pending.values()) {
        const payload = KEY_BYTES + value.length;
        const frame = FRAME_HEAD_BYTES + payload;
        if (at + frame > staging.length) {
          writeFully(this.#io, file.fd, staging.subarray(0, at), file.end + total - at);
          at = 0;
        }
        staging.writeUInt32LE(payload, at);
        staging.set(hash, at + FRAME_HEAD_BYTES);
        staging.set(value, at + FRAME_HEAD_BYTES + KEY_BYTES);
        staging.writeUInt32LE(crc32(staging.subarray(at + FRAME_HEAD_BYTES, at + frame)), at + 4);
        spans.push([hash, file.end + total + FRAME_HEAD_BYTES + KEY_BYTES, value.length]);
        total += frame;
        at += frame;
      }
      if (at > 0) writeFully(this.#io, file.fd, staging.subarray(0, at), file.end + total - at);
      this.#io.fsync(file.fd);
    } catch (error) {
      try {
        this.#io.ftruncate(file.fd, file.end);
      } catch {
        // The next append writes over the torn bytes anyway; open cuts them if it never comes.
      }
      throw error;
    }
    file.end += total;
    const generation = file.generation & 0xff;
    for (const [hash, offset, length] of spans) this.#index.set(urlHashHigh(hash), urlHashLow(hash), { generation, offset, length });
    this.#pending.clear();
  }

  /**
   * The next keys to merge into the tree, in key order, with their records, or null when there is
   * nothing to sweep. Starts a sweep (a new file to append to, the old one to sweep) when the log is
   * half full. `treePages`: the tree's pages now, to size the slice (asked only while a sweep runs). Keys the tree may hold (a changed
   * record: see the crash model) are included: the caller puts a record only where the tree has none.
   */
  sweepSlice(treePages: () => number): SweepSlice | null {
    if (this.#readOnly) return null;
    if (this.#sweep === null) {
      const oldest = this.#files[0];
      if (oldest === undefined) return null;
      // Appending (maxEntries > 0): the only file is swept once half full, new records going to a new
      // one meanwhile. Not appending (the log turned off): files left from before are swept at once.
      if (this.#maxEntries > 0 && this.#files.length < 2) {
        if (this.#index.size < this.#maxEntries / 2) return null;
        this.#startFile(oldest.generation + 1);
      }
      this.#sweep = this.#sweepOf(oldest);
    }
    const sweep = this.#sweep;
    const generation = sweep.file.generation & 0xff;
    const wanted = this.#sliceKeys ?? Math.min(SWEEP_SLICE_MAX_KEYS, Math.max(SWEEP_SLICE_MIN_KEYS, Math.ceil((sweep.keys.length * SWEEP_SLICE_LEAVES) / Math.max(1, treePages()))));
    const end = Math.min(sweep.keys.length, sweep.next + wanted);
    const entries: Array<readonly [UrlHash, Uint8Array]> = [];
    for (let i = sweep.next; i < end; i++) {
      const key = sweep.keys[i]!;
      const hi = Number(key >> 32n);
      const lo = Number(key & 0xffffffffn);
      const span = this.#index.get(hi, lo);
      if (span === null || span.generation !== generation) continue;
      const value = Buffer.allocUnsafe(span.length);
      readRecord(this.#io, sweep.file.fd, value, span.offset, sweep.file.path);
      entries.push([urlHashFromHalves(hi, lo), value]);
    }
    return { entries, next: end };
  }

  /** The tree commit holding `slice` is durable: its keys leave the log; a file swept to its end is deleted. */
  sweptTo(slice: SweepSlice): void {
    const sweep = this.#sweep;
    if (sweep === null) return;
    const generation = sweep.file.generation & 0xff;
    for (const [hash] of slice.entries) {
      const span = this.#index.get(urlHashHigh(hash), urlHashLow(hash));
      if (span !== null && span.generation === generation) this.#index.delete(urlHashHigh(hash), urlHashLow(hash));
    }
    sweep.next = slice.next;
    if (sweep.next < sweep.keys.length) return;
    // Keys of the file that left for the tree without a sweep (supersede) have no span of its generation left either.
    this.#sweep = null;
    this.#files.shift();
    this.#io.close(sweep.file.fd);
    try {
      this.#io.unlink(sweep.file.path);
      fsyncDir(this.#io, this.#dir);
    } catch {
      // Left behind, the file is read again on the next open; every key of it is in the tree by then.
    }
  }

  /** Every logged record (not this window's), in key order: for iteration merged with the tree's. */
  *sorted(): IterableIterator<[UrlHash, Uint8Array]> {
    const keys = new BigUint64Array(this.#index.size);
    let n = 0;
    this.#index.forEach((hi, lo) => {
      keys[n++] = (BigInt(hi) << 32n) | BigInt(lo);
    });
    keys.sort();
    for (const key of keys) {
      const hi = Number(key >> 32n);
      const lo = Number(key & 0xffffffffn);
      const hash = urlHashFromHalves(hi, lo);
      const value = this.read(hash, '');
      if (value !== null) yield [hash, value];
    }
  }

  /**
   * Every logged record the log still answers for (not this window's), in no particular order, each
   * file read front to back in chunks of FRAME_READ_CHUNK_BYTES: for a pass over all of them that
   * needs no key order (the counts and the seen-set on start), where `sorted` costs a read per record.
   * A frame counts only where the index still points at it: a key forgotten (its newer record is in
   * the tree) is skipped. `value` is a view into the read buffer, valid only during the call.
   */
  scan(visit: (hash: UrlHash, value: Uint8Array) => void): void {
    for (const file of this.#files) {
      const generation = file.generation & 0xff;
      const frames = new FrameReader(this.#io, file, file.end);
      for (let frame = frames.next(); frame !== null; frame = frames.next()) {
        if (this.#index.holdsSpan(frame.hi, frame.lo, generation, frame.valueAt)) visit(urlHashFromHalves(frame.hi, frame.lo), frame.value);
      }
    }
  }

  /** The tree holds a record of `hash`, which is newer than any logged copy (see the crash model): the log forgets its copy. */
  forgetCopyOf(hash: UrlHash): void {
    this.#index.delete(urlHashHigh(hash), urlHashLow(hash));
  }

  stats(): InsertLogStats {
    let bytes = 0;
    for (const file of this.#files) bytes += file.end;
    return {
      entries: this.#index.size,
      files: this.#files.length,
      bytes,
      indexBytes: this.#index.bytes,
      cutBytes: this.#cutBytes,
      sweepLeft: this.#sweep === null ? 0 : this.#sweep.keys.length - this.#sweep.next,
    };
  }

  close(): void {
    for (const file of this.#files.splice(0)) {
      try {
        this.#io.close(file.fd);
      } catch {
        // Closing a read descriptor loses nothing.
      }
    }
    this.#sweep = null;
  }

  #fileOf(generation: number): LogFile | undefined {
    for (const file of this.#files) if ((file.generation & 0xff) === generation) return file;
    return undefined;
  }

  #sweepOf(file: LogFile): { file: LogFile; keys: BigUint64Array; next: number } {
    const generation = file.generation & 0xff;
    const all = new BigUint64Array(this.#index.size);
    let n = 0;
    this.#index.forEach((hi, lo, span) => {
      if (span.generation === generation) all[n++] = (BigInt(hi) << 32n) | BigInt(lo);
    });
    const keys = all.subarray(0, n).sort();
    return { file, keys, next: 0 };
  }

  #openFiles(): void {
    for (const generation of numberedFiles(this.#dir, this.#prefix)) this.#replay(generation);
    if (this.#readOnly || this.#maxEntries === 0) return;
    if (this.#files.length === 0) this.#startFile(1);
  }

  #startFile(generation: number): void {
    const path = numberedFilePath(this.#dir, this.#prefix, generation);
    const fd = beginNumberedFile(this.#io, this.#dir, path, headerOf(generation));
    this.#files.push({ generation, path, fd, end: HEADER_BYTES });
  }

  /** Reads one file's frames into the index; a torn or damaged tail is cut off (left alone when read-only). */
  #replay(generation: number): void {
    const path = numberedFilePath(this.#dir, this.#prefix, generation);
    const fd = this.#io.open(path, this.#readOnly ? 'r' : 'r+');
    const file: LogFile = { generation, path, fd, end: 0 };
    this.#files.push(file);
    const size = this.#io.size(fd);
    if (size < HEADER_BYTES) {
      // Created, killed before its header was durable: an empty file.
      if (!this.#readOnly) this.#rewriteHeader(file);
      else file.end = size;
      this.#cutBytes += size;
      return;
    }
    const header = Buffer.alloc(HEADER_BYTES);
    readRecord(this.#io, fd, header, 0, path);
    if (!header.equals(headerOf(generation))) {
      throw new InsertLogError(`${path}: not an insert log of this version (header ${header.toString('hex')})`);
    }
    const generationByte = generation & 0xff;
    const frames = new FrameReader(this.#io, file, size);
    for (let frame = frames.next(); frame !== null; frame = frames.next()) {
      this.#index.set(frame.hi, frame.lo, { generation: generationByte, offset: frame.valueAt, length: frame.value.length });
    }
    const at = frames.at;
    file.end = at;
    if (at < size) {
      this.#cutBytes += size - at;
      if (!this.#readOnly) {
        this.#io.ftruncate(fd, at);
        this.#io.fsync(fd);
      }
    }
  }

  #rewriteHeader(file: LogFile): void {
    this.#io.ftruncate(file.fd, 0);
    writeFully(this.#io, file.fd, headerOf(file.generation), 0);
    this.#io.fsync(file.fd);
    file.end = HEADER_BYTES;
  }
}

/** A whole frame of a log file: its key's halves, where its value starts in the file, and the value (a view into the reader's chunk). */
interface Frame {
  readonly hi: number;
  readonly lo: number;
  readonly valueAt: number;
  readonly value: Buffer;
}

/** Bytes a FrameReader reads at once: more than the longest frame (8 + 8 + 65,535 bytes). */
const FRAME_READ_CHUNK_BYTES = 1 << 20;

/**
 * Reads a log file's frames front to back, a chunk at a time (one pread per FRAME_READ_CHUNK_BYTES,
 * not one per record), up to `size` bytes. A frame is handed out only whole, with a sane length and
 * its CRC right; `next` returns null at the end or at the first that is not, and `at` is then where
 * the whole frames end. A frame's value is valid until the next call.
 */
class FrameReader {
  readonly #io: FileOps;
  readonly #file: LogFile;
  readonly #size: number;
  readonly #chunk = Buffer.allocUnsafe(FRAME_READ_CHUNK_BYTES);
  #chunkStart = 0;
  #chunkLength = 0;
  /** File offset of the next frame. */
  at = HEADER_BYTES;

  constructor(io: FileOps, file: LogFile, size: number) {
    this.#io = io;
    this.#file = file;
    this.#size = size;
  }

  next(): Frame | null {
    const head = this.#view(this.at, FRAME_HEAD_BYTES);
    if (head === null) return null;
    const payload = head.readUInt32LE(0);
    const crc = head.readUInt32LE(4);
    if (payload < KEY_BYTES || payload > KEY_BYTES + MAX_LOGGED_VALUE_BYTES) return null;
    const body = this.#view(this.at + FRAME_HEAD_BYTES, payload);
    if (body === null || crc32(body) !== crc) return null;
    const valueAt = this.at + FRAME_HEAD_BYTES + KEY_BYTES;
    this.at += FRAME_HEAD_BYTES + payload;
    return { hi: body.readUInt32BE(0), lo: body.readUInt32BE(4), valueAt, value: body.subarray(KEY_BYTES) };
  }

  /** `length` bytes at `offset` from the chunk, reading the next chunk from there when they are not in it; null past `size`. */
  #view(offset: number, length: number): Buffer | null {
    if (offset + length > this.#size) return null;
    if (offset < this.#chunkStart || offset + length > this.#chunkStart + this.#chunkLength) {
      this.#chunkStart = offset;
      this.#chunkLength = Math.min(this.#chunk.length, this.#size - offset);
      readRecord(this.#io, this.#file.fd, this.#chunk.subarray(0, this.#chunkLength), offset, this.#file.path);
    }
    return this.#chunk.subarray(offset - this.#chunkStart, offset - this.#chunkStart + length);
  }
}

function readRecord(io: FileOps, fd: number, into: Uint8Array, position: number, path: string): void {
  const read = readFully(io, fd, into, position);
  if (read < into.length) throw new InsertLogError(`${path}: ended at ${position + read}, ${into.length - read} bytes short of a record`);
}

function headerOf(generation: number): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(VERSION, 8);
  header.writeUInt32LE(generation >>> 0, 12);
  return header;
}
