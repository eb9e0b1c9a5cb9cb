/**
 * Reading Petrel WARC files: walking them member by member (each record is one gzip member that
 * states its own length, shared/warc/gzip-member.ts), finding where the last whole member ends after a
 * crash, and reading a record back (all of it, or only its fields and HTTP head, for indexing).
 *
 * Everything read is bounded: a member at most MAX_MEMBER_BYTES, a WARC header at most 64 KiB, an
 * HTTP head at most MAX_HEAD_BYTES; anything else is WARC_RECORD_CORRUPT.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { constants, inflateRawSync } from 'node:zlib';
import { WarcError } from '../../shared/warc/errors.js';
import { MAX_HEAD_BYTES } from '../../shared/warc/exchange.js';
import { gunzipMember, MEMBER_HEADER_BYTES, memberLength } from '../../shared/warc/gzip-member.js';
import { headEnd, parseHead, type ParsedHead } from '../../shared/warc/http-head.js';

/** No record Petrel writes comes near this (a body limit of at most 64 MiB, the size of a results post). */
export const MAX_MEMBER_BYTES = 80 * 1024 * 1024;
const MAX_WARC_HEADER_BYTES = 64 * 1024;

export interface Member {
  readonly offset: number;
  readonly length: number;
}

/**
 * The whole members of an open file from `start`, in order, ending at the first byte that does not
 * begin a whole member (a torn tail, or the end of the file); the generator's return value is that
 * offset. Reads 24 bytes per member.
 */
export function* walkMembers(fd: number, options: { start?: number; size?: number } = {}): Generator<Member, number> {
  const size = options.size ?? fstatSync(fd).size;
  const header = Buffer.alloc(MEMBER_HEADER_BYTES);
  let offset = options.start ?? 0;
  while (offset < size) {
    if (readFully(fd, header, offset) < MEMBER_HEADER_BYTES) return offset;
    const length = memberLength(header);
    if (length === null || length > MAX_MEMBER_BYTES || offset + length > size) return offset;
    yield { offset, length };
    offset += length;
  }
  return offset;
}

/**
 * Where the file's whole records end: past the last member that is complete and, for the last one,
 * inflates with a correct CRC-32 and size (a crash leaves at most a cut last member; a power loss may
 * leave unsynced bytes that are not the ones written, which this check also catches in the last member).
 */
export function endOfWholeRecords(fd: number): number {
  let last: Member | null = null;
  const walk = walkMembers(fd);
  let step = walk.next();
  while (step.done !== true) {
    last = step.value;
    step = walk.next();
  }
  const end = step.value;
  if (last === null) return 0;
  try {
    gunzipMember(readAt(fd, last.offset, last.length));
    return end;
  } catch {
    return last.offset;
  }
}

/** `length` bytes at `offset`, or WARC_RECORD_CORRUPT when the file ends first. */
export function readAt(fd: number, offset: number, length: number): Buffer {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0 || length > MAX_MEMBER_BYTES) {
    throw new WarcError('WARC_RECORD_CORRUPT', `no record can be at offset ${offset} with length ${length}`);
  }
  const buffer = Buffer.allocUnsafe(length);
  const got = readFully(fd, buffer, offset);
  if (got < length) throw new WarcError('WARC_RECORD_CORRUPT', `the file ends ${length - got} bytes before the record at ${offset} (length ${length}) does`);
  return buffer;
}

function readFully(fd: number, buffer: Buffer, position: number): number {
  let done = 0;
  while (done < buffer.length) {
    const read = readSync(fd, buffer, done, buffer.length - done, position + done);
    if (read === 0) break;
    done += read;
  }
  return done;
}

/** Opens `path` read-only for `use`, and closes it. */
export function withFile<T>(path: string, use: (fd: number) => T): T {
  const fd = openSync(path, 'r');
  try {
    return use(fd);
  } finally {
    closeSync(fd);
  }
}

export interface WarcRecord {
  /** WARC named fields in order, names as written. */
  readonly fields: readonly (readonly [string, string])[];
  readonly block: Buffer;
}

/** The first value of a WARC field (case-insensitive name), or null. */
export function warcField(record: Pick<WarcRecord, 'fields'>, name: string): string | null {
  const lower = name.toLowerCase();
  for (const [field, value] of record.fields) if (field.toLowerCase() === lower) return value;
  return null;
}

/** Reads and parses the record at `location` (one member): fields and block. */
export function readRecord(fd: number, location: Member): WarcRecord {
  const member = readAt(fd, location.offset, location.length);
  let bytes: Buffer;
  try {
    bytes = gunzipMember(member);
  } catch (error) {
    throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${location.offset} does not inflate: ${(error as Error).message}`);
  }
  return parseRecord(bytes, location.offset);
}

/** Parses one uncompressed WARC record: version line, fields, block of Content-Length bytes, CRLF CRLF. */
export function parseRecord(bytes: Buffer, offset = 0): WarcRecord {
  const end = bytes.subarray(0, MAX_WARC_HEADER_BYTES).indexOf('\r\n\r\n');
  if (end < 0) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} has no end of its WARC header within ${MAX_WARC_HEADER_BYTES} bytes`);
  const fields = headerFields(bytes.toString('utf8', 0, end), offset);
  const length = Number(warcField({ fields }, 'Content-Length'));
  const start = end + 4;
  if (!Number.isSafeInteger(length) || length < 0 || start + length + 4 !== bytes.length || bytes.toString('latin1', start + length) !== '\r\n\r\n') {
    throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} has a block that does not match its Content-Length ${length}`);
  }
  return { fields, block: bytes.subarray(start, start + length) };
}

function headerFields(text: string, offset: number): [string, string][] {
  const lines = text.split('\r\n');
  if (!/^WARC\/1\.[01]$/.test(lines[0] ?? '')) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} does not start with a WARC version line`);
  const fields: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} has a field line without a name: ${JSON.stringify(line.slice(0, 100))}`);
    fields.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return fields;
}

export interface RecordHead {
  readonly fields: readonly (readonly [string, string])[];
  /** The HTTP head of an application/http block, parsed; null for other blocks. */
  readonly http: ParsedHead | null;
}

/**
 * The WARC fields and HTTP head of a member without inflating its body: inflates a prefix of the
 * deflate stream (zlib's sync flush gives what that prefix holds), larger until both heads are in it.
 */
export function readRecordHead(fd: number, location: Member): RecordHead {
  const deflated = location.length - MEMBER_HEADER_BYTES - 8;
  if (deflated <= 0) throw new WarcError('WARC_RECORD_CORRUPT', `the member at ${location.offset} is too short (${location.length} bytes)`);
  for (let want = Math.min(deflated, 16 * 1024); ; want = Math.min(deflated, want * 4)) {
    const prefix = readAt(fd, location.offset + MEMBER_HEADER_BYTES, want);
    let text: Buffer;
    try {
      text = inflateRawSync(prefix, { finishFlush: constants.Z_SYNC_FLUSH });
    } catch (error) {
      throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${location.offset} does not inflate: ${(error as Error).message}`);
    }
    const head = headsOf(text, location.offset);
    if (head !== null) return head;
    if (want === deflated) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${location.offset} holds no complete WARC and HTTP head`);
  }
}

function headsOf(bytes: Buffer, offset: number): RecordHead | null {
  const end = bytes.subarray(0, MAX_WARC_HEADER_BYTES).indexOf('\r\n\r\n');
  if (end < 0) {
    if (bytes.length >= MAX_WARC_HEADER_BYTES) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} has no end of its WARC header within ${MAX_WARC_HEADER_BYTES} bytes`);
    return null;
  }
  const fields = headerFields(bytes.toString('utf8', 0, end), offset);
  const type = (warcField({ fields }, 'Content-Type') ?? '').toLowerCase();
  if (!type.startsWith('application/http')) return { fields, http: null };
  const block = bytes.subarray(end + 4, end + 4 + Number(warcField({ fields }, 'Content-Length') ?? 0));
  const httpEnd = headEnd(block.subarray(0, MAX_HEAD_BYTES));
  if (httpEnd < 0) {
    if (block.length >= MAX_HEAD_BYTES || block.length === Number(warcField({ fields }, 'Content-Length'))) return { fields, http: parseHead(block.subarray(0, MAX_HEAD_BYTES)) };
    return null;
  }
  return { fields, http: parseHead(block.subarray(0, httpEnd)) };
}
