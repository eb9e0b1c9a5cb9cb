/**
 * The search index's commit log: what makes a group commit's index changes durable with one
 * sequential append and one fdatasync, instead of a segment file, deletion files and a manifest with
 * their fsyncs (LAYOUT.md "Commit log").
 *
 * A log file (`log-NNNNNN.plg`) is a run of records. Each commit appends the segment(s) it staged, as
 * segment images (the same bytes as a `.psg` file), then one COMMIT record listing the URLs the commit
 * removed, then fdatasyncs the file: that is the commit point. Replaying a log (search-index.ts) opens
 * the segments of every committed group in order, each entry superseding its URL's earlier live entry,
 * then applies the group's removals; segment records after the last COMMIT are an unacknowledged tail,
 * cut off by the next writable open.
 *
 *   record header (32 bytes): "PETRELLG" | u32 kind (1 segment, 2 commit) | u32 segment id (0 for a
 *                             commit) | u32 payload length lo | u32 hi | u32 zero | u32 crc32c of [0, 28)
 *   segment payload:          a segment image (guarded by its own footer and section checksums)
 *   commit payload:           varint commits, varint group start (offset of its first record),
 *                             varint removed, removed x (u32 hi, u32 lo) URL hashes, u32 crc32c of the rest
 *
 * A record's payload is written before its header, so a process killed mid-record leaves a header of
 * zeros (a torn tail) rather than a header naming bytes that never came.
 *
 * Memory: nothing beyond the record being written or read (a commit's removals).
 */
import { closeSync, fdatasyncSync, fstatSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import { crc32c } from '../storage/crc32c.js';
import { ByteReader, ByteWriter } from './bytes.js';
import { IndexError } from './errors.js';
import type { SegmentContent } from './segment-writer.js';
import { writeSegmentAt } from './segment-writer.js';

export const LOG_HEADER_BYTES = 32;
const MAGIC = Buffer.from('PETRELLG', 'latin1');
const KIND_SEGMENT = 1;
const KIND_COMMIT = 2;

export function logFileName(n: number): string {
  return `log-${String(n).padStart(6, '0')}.plg`;
}

export function logNumberOf(file: string): number | null {
  const m = /^log-(\d{6})\.plg$/.exec(file);
  return m === null ? null : Number(m[1]);
}

export interface LogSegment {
  readonly id: number;
  /** Offset of the segment image (the record's payload) in the log file. */
  readonly offset: number;
  readonly length: number;
}

export interface LogGroup {
  readonly segments: LogSegment[];
  /** The commit count after this commit. */
  readonly commits: number;
  /** URL hashes (hi, lo pairs) whose final state in the commit is "no entry". */
  readonly removed: Uint32Array;
  /** Offset of the group's first record. */
  readonly start: number;
  /** Offset just past its COMMIT record. */
  readonly end: number;
}

export interface LogScan {
  readonly groups: LogGroup[];
  /** Where the last committed group ends: the log is valid up to here. */
  readonly validEnd: number;
  readonly fileBytes: number;
  /** A valid COMMIT record of a later group past a damaged record: committed data is damaged (not a torn tail). */
  readonly damage: string | null;
}

function header(kind: number, id: number, length: number): Buffer {
  const b = Buffer.alloc(LOG_HEADER_BYTES);
  MAGIC.copy(b, 0);
  b.writeUInt32LE(kind, 8);
  b.writeUInt32LE(id, 12);
  b.writeUInt32LE(length % 2 ** 32, 16);
  b.writeUInt32LE(Math.floor(length / 2 ** 32), 20);
  b.writeUInt32LE(crc32c(b, 0, 28), 28);
  return b;
}

function parseHeader(b: Buffer): { kind: number; id: number; length: number } | null {
  if (!b.subarray(0, 8).equals(MAGIC) || b.readUInt32LE(28) !== crc32c(b, 0, 28)) return null;
  const kind = b.readUInt32LE(8);
  if (kind !== KIND_SEGMENT && kind !== KIND_COMMIT) return null;
  return { kind, id: b.readUInt32LE(12), length: b.readUInt32LE(16) + b.readUInt32LE(20) * 2 ** 32 };
}

function writeAll(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.length) done += writeSync(fd, bytes, done, bytes.length - done, position + done);
}

function readAt(fd: number, length: number, position: number): Buffer | null {
  const out = Buffer.allocUnsafe(length);
  let done = 0;
  while (done < length) {
    const n = readSync(fd, out, done, length - done, position + done);
    if (n === 0) return null;
    done += n;
  }
  return out;
}

/** The writer's handle on the current log file: appends at `end`, which it alone moves. */
export class CommitLog {
  readonly path: string;
  readonly number: number;
  #fd: number;
  #end: number;
  /** Where the records of the commit being written start. */
  #groupStart: number;

  private constructor(path: string, number: number, fd: number, end: number) {
    this.path = path;
    this.number = number;
    this.#fd = fd;
    this.#end = end;
    this.#groupStart = end;
  }

  /** Opens (creating it if need be) a log for appending after `validEnd`; anything past it (an unacknowledged tail) is cut off. */
  static openForAppend(path: string, number: number, validEnd: number): CommitLog {
    const fd = openSync(path, 'a+', 0o600);
    try {
      if (fstatSync(fd).size !== validEnd) ftruncateSync(fd, validEnd);
      // 'a+' appends regardless of position on Linux; reopen for positioned writes.
    } finally {
      closeSync(fd);
    }
    return new CommitLog(path, number, openSync(path, 'r+'), validEnd);
  }

  get bytes(): number {
    return this.#end;
  }

  /** Appends a segment record (not synced); returns where its image is. */
  appendSegment(id: number, content: SegmentContent): LogSegment {
    const offset = this.#end + LOG_HEADER_BYTES;
    const { bytes } = writeSegmentAt(this.#fd, offset, content);
    writeAll(this.#fd, header(KIND_SEGMENT, id, bytes), this.#end);
    this.#end = offset + bytes;
    return { id, offset, length: bytes };
  }

  /** Appends the COMMIT record of the records since the last one and fdatasyncs: the commit point. */
  commit(commits: number, removed: readonly (readonly [number, number])[]): void {
    const w = new ByteWriter(16 + removed.length * 8);
    w.varint(commits);
    w.varint(this.#groupStart);
    w.varint(removed.length);
    const pair = Buffer.alloc(8);
    for (const [hi, lo] of removed) {
      pair.writeUInt32LE(hi, 0);
      pair.writeUInt32LE(lo, 4);
      w.bytes(pair);
    }
    const body = w.view();
    const payload = Buffer.alloc(body.length + 4);
    payload.set(body, 0);
    payload.writeUInt32LE(crc32c(body), body.length);
    writeAll(this.#fd, payload, this.#end + LOG_HEADER_BYTES);
    writeAll(this.#fd, header(KIND_COMMIT, 0, payload.length), this.#end);
    this.#end += LOG_HEADER_BYTES + payload.length;
    fdatasyncSync(this.#fd);
    this.#groupStart = this.#end;
  }

  close(): void {
    if (this.#fd < 0) return;
    closeSync(this.#fd);
    this.#fd = -1;
  }
}

function decodeCommit(payload: Buffer): { commits: number; start: number; removed: Uint32Array } | null {
  if (payload.length < 4) return null;
  const body = payload.subarray(0, payload.length - 4);
  if (payload.readUInt32LE(payload.length - 4) !== crc32c(body)) return null;
  try {
    const r = new ByteReader(body);
    const commits = r.varint();
    const start = r.varint();
    const n = r.varint();
    const removed = new Uint32Array(n * 2);
    for (let i = 0; i < n * 2; i++) {
      const b = r.take(4);
      removed[i] = (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
    }
    if (!r.done) return null;
    return { commits, start, removed };
  } catch {
    return null;
  }
}

/**
 * Reads a log's committed groups (headers and COMMIT records only: segments are verified when opened).
 * Stops at the first record that is not whole; if a whole COMMIT record of a group that starts past
 * that point follows, committed data is damaged (`damage`), not merely a torn tail.
 */
export function scanLog(path: string): LogScan {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { groups: [], validEnd: 0, fileBytes: 0, damage: null };
    throw error;
  }
  try {
    const fileBytes = fstatSync(fd).size;
    const groups: LogGroup[] = [];
    let segments: LogSegment[] = [];
    let at = 0;
    let validEnd = 0;
    for (;;) {
      if (at + LOG_HEADER_BYTES > fileBytes) break;
      const h = parseHeader(readAt(fd, LOG_HEADER_BYTES, at)!);
      if (h === null || at + LOG_HEADER_BYTES + h.length > fileBytes) break;
      const payloadAt = at + LOG_HEADER_BYTES;
      if (h.kind === KIND_SEGMENT) {
        segments.push({ id: h.id, offset: payloadAt, length: h.length });
      } else {
        const commit = decodeCommit(readAt(fd, h.length, payloadAt)!);
        if (commit === null) break;
        groups.push({ segments, commits: commit.commits, removed: commit.removed, start: commit.start, end: payloadAt + h.length });
        segments = [];
        validEnd = payloadAt + h.length;
      }
      at = payloadAt + h.length;
    }
    let damage: string | null = null;
    if (at < fileBytes) damage = laterCommit(fd, at, fileBytes, validEnd, path);
    return { groups, validEnd, fileBytes, damage };
  } finally {
    closeSync(fd);
  }
}

/** Looks past a record that is not whole for a whole COMMIT record of a group starting after the last good one. */
function laterCommit(fd: number, from: number, fileBytes: number, validEnd: number, path: string): string | null {
  const rest = readAt(fd, fileBytes - from, from);
  if (rest === null) return null;
  for (let i = rest.indexOf(MAGIC, 0); i >= 0; i = rest.indexOf(MAGIC, i + 1)) {
    if (i + LOG_HEADER_BYTES > rest.length) break;
    const h = parseHeader(rest.subarray(i, i + LOG_HEADER_BYTES));
    if (h === null || h.kind !== KIND_COMMIT || i + LOG_HEADER_BYTES + h.length > rest.length) continue;
    const commit = decodeCommit(rest.subarray(i + LOG_HEADER_BYTES, i + LOG_HEADER_BYTES + h.length));
    if (commit !== null && commit.start > validEnd) {
      return `${path}: record at ${from} is damaged, but commit ${commit.commits} (group at ${commit.start}) follows it`;
    }
  }
  return null;
}

export function logCorrupt(message: string): IndexError {
  return new IndexError('INDEX_CORRUPT', message);
}
