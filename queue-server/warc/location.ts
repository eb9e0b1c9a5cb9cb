/**
 * Where records are: WARC file names, a record's place in its file, and a capture's place (the request
 * record and the response or revisit record after it, always written together into one file).
 *
 * File names follow WARC 1.1 annex B's Prefix-Timestamp-Serial pattern:
 * `petrel-<YYYYMMDDhhmmssSSS UTC, when the file was begun>-<serial, 5+ digits>.warc.gz`. The serial
 * grows by one per file in a data directory, so names sort in writing order; name and (time, serial)
 * convert both ways, which lets the crawl database keep a file as two fixed-size numbers.
 */
import { recordIdBytes, recordIdFromBytes } from '../../shared/warc/record.js';

export const WARC_FILE_PATTERN = /^petrel-(\d{17})-(\d{5,10})\.warc\.gz$/;

export interface WarcFileId {
  /** ms since epoch: when the file was begun (the timestamp in its name). */
  readonly createdAt: number;
  readonly serial: number;
}

/**
 * The last name and id converted, either way: every crawl database record with a capture converts
 * one (encoding or decoding its location), and nearly all of them name the file being written, so a
 * one-entry memo answers almost every call (the conversion's Date, ISO string and regular expressions
 * were about 1.5 % of the queue server's time on the test web).
 */
let memo: { readonly name: string; readonly id: WarcFileId } | null = null;

export function warcFileName(file: WarcFileId): string {
  if (memo !== null && memo.id.createdAt === file.createdAt && memo.id.serial === file.serial) return memo.name;
  if (!Number.isInteger(file.serial) || file.serial < 0 || file.serial > 0xffffffff) throw new Error(`WARC file serial ${file.serial} is not a u32`);
  const iso = new Date(file.createdAt).toISOString();
  const stamp = iso.replace(/[-:T.Z]/g, '');
  if (!/^\d{17}$/.test(stamp)) throw new Error(`WARC file time ${file.createdAt} has no 17-digit timestamp`);
  const name = `petrel-${stamp}-${String(file.serial).padStart(5, '0')}.warc.gz`;
  memo = { name, id: { createdAt: file.createdAt, serial: file.serial } };
  return name;
}

/** The time and serial of a Petrel WARC file name, or null for any other name. */
export function parseWarcFileName(name: string): WarcFileId | null {
  if (memo !== null && memo.name === name) return memo.id;
  const match = WARC_FILE_PATTERN.exec(name);
  if (match === null) return null;
  const s = match[1]!;
  const createdAt = Date.UTC(+s.slice(0, 4), +s.slice(4, 6) - 1, +s.slice(6, 8), +s.slice(8, 10), +s.slice(10, 12), +s.slice(12, 14), +s.slice(14, 17));
  const serial = Number(match[2]);
  if (!Number.isFinite(createdAt) || serial > 0xffffffff) return null;
  const id = { createdAt, serial };
  // Only the one spelling warcFileName writes (no extra leading zeros, a real date); that call memoizes it.
  return warcFileName(id) === name ? memo!.id : null;
}

/** One record (one gzip member) in a file. */
export interface RecordLocation {
  /** File name in the data directory's `warc/`. */
  readonly file: string;
  /** Byte offset of the member in the file. */
  readonly offset: number;
  /** Bytes of the member. */
  readonly length: number;
}

/**
 * A URL's capture as the crawl database keeps it: the request record at `offset`, the response (or
 * revisit) record right after it, `length` bytes for both. What the capture record is and its WARC-Date
 * and WARC-Record-ID are kept too, so a later revisit can refer to it without reading the file.
 */
export interface CaptureLocation extends RecordLocation {
  /** Bytes of the request record; the response or revisit member starts at offset + requestLength. */
  readonly requestLength: number;
  /** The type of the record after the request: a response, or an identical-payload-digest revisit. */
  readonly kind: 'response' | 'revisit';
  /** ms since epoch: WARC-Date of the capture. */
  readonly date: number;
  /** WARC-Record-ID of the response or revisit record. */
  readonly recordId: string;
}

/** The response (or revisit) record of a capture. */
export function responseRecordOf(capture: CaptureLocation): RecordLocation {
  return { file: capture.file, offset: capture.offset + capture.requestLength, length: capture.length - capture.requestLength };
}

/**
 * A CaptureLocation in 56 fixed bytes (little-endian), as the crawl database record and the digest
 * index store it:
 *
 *   offset size  field
 *        0    8  file begun at      f64 ms since epoch (the file name's timestamp)
 *        8    4  file serial        u32
 *       12    4  request length     u32
 *       16    8  offset             u64
 *       24    4  length             u32
 *       28    1  kind               0 response, 1 revisit
 *       29    3  reserved           0
 *       32    8  date               f64 ms since epoch
 *       40   16  record id          the UUID of `<urn:uuid:...>`
 */
export const CAPTURE_LOCATION_BYTES = 56;

export function encodeCaptureLocation(location: CaptureLocation, out: Buffer, at: number): void {
  const file = parseWarcFileName(location.file);
  if (file === null) throw new Error(`capture location names ${JSON.stringify(location.file)}, not a Petrel WARC file`);
  const u32 = (value: number, name: string): number => {
    if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`capture location ${name} ${value} is not a u32`);
    return value;
  };
  if (!Number.isSafeInteger(location.offset) || location.offset < 0) throw new Error(`capture location offset ${location.offset} is not a byte offset`);
  if (!Number.isFinite(location.date)) throw new Error(`capture location date ${location.date} is not finite`);
  if (location.requestLength > location.length) throw new Error(`capture location request length ${location.requestLength} exceeds its length ${location.length}`);
  out.writeDoubleLE(file.createdAt, at);
  out.writeUInt32LE(file.serial, at + 8);
  out.writeUInt32LE(u32(location.requestLength, 'request length'), at + 12);
  out.writeBigUInt64LE(BigInt(location.offset), at + 16);
  out.writeUInt32LE(u32(location.length, 'length'), at + 24);
  out.writeUInt8(location.kind === 'response' ? 0 : 1, at + 28);
  out.fill(0, at + 29, at + 32);
  out.writeDoubleLE(location.date, at + 32);
  recordIdBytes(location.recordId).copy(out, at + 40);
}

export function decodeCaptureLocation(bytes: Buffer, at: number): CaptureLocation {
  const kind = bytes.readUInt8(at + 28);
  if (kind > 1) throw new Error(`capture location has unknown kind ${kind}`);
  return {
    file: warcFileName({ createdAt: bytes.readDoubleLE(at), serial: bytes.readUInt32LE(at + 8) }),
    requestLength: bytes.readUInt32LE(at + 12),
    offset: Number(bytes.readBigUInt64LE(at + 16)),
    length: bytes.readUInt32LE(at + 24),
    kind: kind === 0 ? 'response' : 'revisit',
    date: bytes.readDoubleLE(at + 32),
    recordId: recordIdFromBytes(bytes.subarray(at + 40, at + 56)),
  };
}
