/**
 * The crawl database record: what Petrel knows about one URL (Nutch's CrawlDatum), stored as the value
 * under the URL's 8-byte hash in `crawldb.btree`, and its binary codec. How a record changes after a
 * fetch is decided in `transition.ts`; when it is due again in `fetch-schedule.ts`.
 *
 * Byte layout, version 1 (little-endian; times are f64 ms since epoch; hashes are 8 raw bytes, shown
 * to callers as 16 lowercase hex digits):
 *
 *   offset size  field
 *        0    1  version            1
 *        1    1  status             index into CRAWL_STATUSES
 *        2    2  flags              which nullable fields are present (FLAG_* below)
 *        4    2  header bytes       104 in version 1: where the URL starts
 *        6    2  url length         bytes of UTF-8 (ASCII after normalization)
 *        8    4  depth              u32
 *       12    4  retries            u32
 *       16    8  score              f64
 *       24    8  first fetch at     f64, if FLAG_FIRST_FETCH
 *       32    8  last fetch at      f64, if FLAG_LAST_FETCH
 *       40    8  modified at        f64, if FLAG_MODIFIED
 *       48    8  fetch interval     f64, ms
 *       56    8  next fetch at      f64
 *       64    8  signature          xxHash64 of the body, if FLAG_SIGNATURE
 *       72    8  simhash            64-bit simhash of the text, if FLAG_SIMHASH
 *       80    8  duplicate of       URL hash of the original, if FLAG_DUPLICATE_OF
 *       88    8  redirect to        URL hash of the redirect target, if FLAG_REDIRECT_TO
 *       96    2  last HTTP status   u16, if FLAG_HTTP_STATUS
 *       98    2  error code length  bytes of UTF-8, if FLAG_ERROR_CODE (else 0)
 *      100    4  reserved           0
 *      104   56  WARC capture       where the URL's latest capture is, if FLAG_WARC (then header bytes
 *                                   is 160); layout in queue-server/warc/location.ts
 *                                   `encodeCaptureLocation`
 *  104/160       url, then error code
 *
 * Absent fields are zero bytes, so the layout is fixed up to the URL. Size: 104 (160 with a WARC
 * capture) + URL + error code,
 * at most MAX_CRAWLDB_RECORD_BYTES (the B-Tree's value limit at 16 KiB pages, see btree/LAYOUT.md):
 * a 2,048-character URL leaves 1,930 bytes for the error code. A larger record is refused with
 * CRAWLDB_RECORD_TOO_LARGE (disposition `skip`: the URL is not stored; nothing else is affected).
 *
 * Room to grow: a compatible addition (a new optional field) appends bytes after offset 104 and raises
 * `header bytes`, or takes a reserved byte or an unused flag bit; this decoder skips what it does not
 * know. An incompatible change (a field whose meaning changes, a new status) raises `version`, and this
 * decoder refuses it with CRAWLDB_RECORD_VERSION rather than misread it.
 *
 * The WARC capture was such a compatible addition (flag bit 9, header bytes 160): records written
 * before it decode with `warc: null`, and a Petrel from before it reads records that have one, skipping
 * the field (so the layout stays version 1; a version bump would have made every existing crawl
 * database unreadable for no gain).
 */
import { CAPTURE_LOCATION_BYTES, decodeCaptureLocation, encodeCaptureLocation, type CaptureLocation } from '../warc/location.js';
import type { FetchSchedulePolicy } from './fetch-schedule.js';

export const CRAWL_STATUSES = ['unfetched', 'fetched', 'notmodified', 'gone', 'redir_temp', 'redir_perm', 'retry', 'duplicate', 'robots_denied'] as const;
export type CrawlDbStatus = (typeof CRAWL_STATUSES)[number];

export interface CrawlDbRecord {
  /** Normalized URL. */
  url: string;
  status: CrawlDbStatus;
  /** Links followed from a seed (seeds are 0). */
  depth: number;
  /** Page importance (f64). */
  score: number;
  /** ms since epoch: first and last time the URL was requested (any answer, or none); null: never. */
  firstFetchAt: number | null;
  lastFetchAt: number | null;
  /** ms since epoch: when a fetch last found new or changed content; null: never. */
  modifiedAt: number | null;
  /** Current adaptive fetch interval, ms. */
  fetchIntervalMs: number;
  /** ms since epoch: when the URL is due again. */
  nextFetchAt: number;
  /** Consecutive transient failures (0 after any definitive answer). */
  retries: number;
  /** Status of the last HTTP response; null: none yet, or the last attempt got no response. */
  lastHttpStatus: number | null;
  /** 16 lowercase hex, xxHash64 of the body */
  signature: string | null;
  /** 16 hex */
  simhash: string | null;
  /** 16 hex URL hash of the original (exact/near duplicate, or canonical target); set only when status is duplicate, or retry of a duplicate (transition.ts) */
  duplicateOf: string | null;
  /** 16 hex URL hash of a redirect target; set only when status is redir_temp or redir_perm */
  redirectTo: string | null;
  /** last failure code, e.g. 'timeout', 'http-503'; null after a success */
  errorCode: string | null;
  /**
   * Where the URL's latest capture with content is in the WARC archive (queue-server/warc/): its
   * latest response, or identical-payload revisit; a server-not-modified revisit leaves it where it
   * was (queue-server/warc/revisit.ts). Null: nothing archived.
   */
  warc: CaptureLocation | null;
}

/** The B-Tree's value limit at 16 KiB pages: floor((16384 - 16) / 4) - 10 (btree/LAYOUT.md). */
export const MAX_CRAWLDB_RECORD_BYTES = 4082;

export type CrawlDbRecordErrorCode =
  /** The encoded record would exceed MAX_CRAWLDB_RECORD_BYTES. Disposition `skip`. */
  | 'CRAWLDB_RECORD_TOO_LARGE'
  /** Stored bytes that do not decode: cut short, an unknown status, inconsistent lengths. Disposition `fatal`. */
  | 'CRAWLDB_RECORD_CORRUPT'
  /** Stored bytes of a layout version this code does not know (written by a newer Petrel). Disposition `fatal`. */
  | 'CRAWLDB_RECORD_VERSION';

export class CrawlDbRecordError extends Error {
  override readonly name = 'CrawlDbRecordError';
  readonly code: CrawlDbRecordErrorCode;
  readonly disposition: 'skip' | 'fatal';
  /** The URL concerned, when known. */
  readonly url: string | null;

  constructor(code: CrawlDbRecordErrorCode, message: string, url: string | null = null) {
    super(message);
    this.code = code;
    this.disposition = code === 'CRAWLDB_RECORD_TOO_LARGE' ? 'skip' : 'fatal';
    this.url = url;
  }
}

const VERSION = 1;
const HEADER_BYTES = 104;
/** With a WARC capture: the 56-byte location follows the fixed fields. */
const HEADER_BYTES_WARC = HEADER_BYTES + CAPTURE_LOCATION_BYTES;

const FLAG_FIRST_FETCH = 1 << 0;
const FLAG_LAST_FETCH = 1 << 1;
const FLAG_MODIFIED = 1 << 2;
const FLAG_SIGNATURE = 1 << 3;
const FLAG_SIMHASH = 1 << 4;
const FLAG_DUPLICATE_OF = 1 << 5;
const FLAG_REDIRECT_TO = 1 << 6;
const FLAG_HTTP_STATUS = 1 << 7;
const FLAG_ERROR_CODE = 1 << 8;
const FLAG_WARC = 1 << 9;

const HEX64 = /^[0-9a-f]{16}$/;

/** A record for a URL just discovered: unfetched, due now, at the policy's initial interval. */
export function newCrawlDbRecord(url: string, depth: number, score: number, now: number, policy: FetchSchedulePolicy): CrawlDbRecord {
  return {
    url,
    status: 'unfetched',
    depth,
    score,
    firstFetchAt: null,
    lastFetchAt: null,
    modifiedAt: null,
    fetchIntervalMs: policy.initialIntervalMs,
    nextFetchAt: now,
    retries: 0,
    lastHttpStatus: null,
    signature: null,
    simhash: null,
    duplicateOf: null,
    redirectTo: null,
    errorCode: null,
    warc: null,
  };
}

const NO_BYTES = Buffer.alloc(0);

/**
 * Encodes a record. A record that breaks the type's invariants (an unknown status, a hash that is not
 * 16 lowercase hex digits, a negative depth, a NaN time) is a bug and throws a plain Error; one that is
 * merely too large throws CrawlDbRecordError CRAWLDB_RECORD_TOO_LARGE.
 */
export function encodeCrawlDbRecord(record: CrawlDbRecord): Uint8Array {
  const statusIndex = CRAWL_STATUSES.indexOf(record.status);
  if (statusIndex < 0) throw new Error(`crawl db record of ${record.url}: unknown status ${JSON.stringify(record.status)}`);
  const url = Buffer.from(record.url, 'utf8');
  const errorCode = record.errorCode === null ? NO_BYTES : Buffer.from(record.errorCode, 'utf8');
  const headerBytes = record.warc === null ? HEADER_BYTES : HEADER_BYTES_WARC;
  const size = headerBytes + url.length + errorCode.length;
  if (size > MAX_CRAWLDB_RECORD_BYTES) {
    throw new CrawlDbRecordError(
      'CRAWLDB_RECORD_TOO_LARGE',
      `crawl db record of ${size} bytes exceeds ${MAX_CRAWLDB_RECORD_BYTES} (URL ${url.length} bytes, error code ${errorCode.length} bytes)`,
      record.url.slice(0, 200),
    );
  }
  // From the Buffer pool (a zeroed allocation of its own cost about 1 µs a record: 1.1 s of a
  // 1,000,000-URL inject, profiled): the header is zeroed here, the URL and error code fill the rest.
  // Records live until their commit writes them (insert log, tree page), so the pool's slabs do not stay.
  const out = Buffer.allocUnsafe(size).fill(0, 0, headerBytes);
  let flags = 0;
  out.writeUInt8(VERSION, 0);
  out.writeUInt8(statusIndex, 1);
  out.writeUInt16LE(headerBytes, 4);
  out.writeUInt16LE(url.length, 6);
  out.writeUInt32LE(u32(record.depth, 'depth', record.url), 8);
  out.writeUInt32LE(u32(record.retries, 'retries', record.url), 12);
  out.writeDoubleLE(finite(record.score, 'score', record.url), 16);
  const time = (value: number | null, flag: number, offset: number, name: string): void => {
    if (value === null) return;
    flags |= flag;
    out.writeDoubleLE(finite(value, name, record.url), offset);
  };
  time(record.firstFetchAt, FLAG_FIRST_FETCH, 24, 'firstFetchAt');
  time(record.lastFetchAt, FLAG_LAST_FETCH, 32, 'lastFetchAt');
  time(record.modifiedAt, FLAG_MODIFIED, 40, 'modifiedAt');
  out.writeDoubleLE(finite(record.fetchIntervalMs, 'fetchIntervalMs', record.url), 48);
  out.writeDoubleLE(finite(record.nextFetchAt, 'nextFetchAt', record.url), 56);
  const hash = (value: string | null, flag: number, offset: number, name: string): void => {
    if (value === null) return;
    if (!HEX64.test(value)) throw new Error(`crawl db record of ${record.url}: ${name} is not 16 lowercase hex digits: ${JSON.stringify(value)}`);
    flags |= flag;
    out.write(value, offset, 8, 'hex');
  };
  hash(record.signature, FLAG_SIGNATURE, 64, 'signature');
  hash(record.simhash, FLAG_SIMHASH, 72, 'simhash');
  hash(record.duplicateOf, FLAG_DUPLICATE_OF, 80, 'duplicateOf');
  hash(record.redirectTo, FLAG_REDIRECT_TO, 88, 'redirectTo');
  if (record.lastHttpStatus !== null) {
    const status = record.lastHttpStatus;
    if (!Number.isInteger(status) || status < 0 || status > 0xffff) throw new Error(`crawl db record of ${record.url}: lastHttpStatus ${status} is not a u16`);
    flags |= FLAG_HTTP_STATUS;
    out.writeUInt16LE(status, 96);
  }
  if (record.errorCode !== null) flags |= FLAG_ERROR_CODE;
  out.writeUInt16LE(errorCode.length, 98);
  if (record.warc !== null) {
    flags |= FLAG_WARC;
    encodeCaptureLocation(record.warc, out, HEADER_BYTES);
  }
  out.writeUInt16LE(flags, 2);
  url.copy(out, headerBytes);
  errorCode.copy(out, headerBytes + url.length);
  return out;
}

export function decodeCrawlDbRecord(bytes: Uint8Array): CrawlDbRecord {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length < 1) throw new CrawlDbRecordError('CRAWLDB_RECORD_CORRUPT', 'crawl db record is empty');
  const version = view.readUInt8(0);
  if (version !== VERSION) throw new CrawlDbRecordError('CRAWLDB_RECORD_VERSION', `crawl db record has layout version ${version}; this Petrel reads version ${VERSION}`);
  if (view.length < HEADER_BYTES) throw new CrawlDbRecordError('CRAWLDB_RECORD_CORRUPT', `crawl db record of ${view.length} bytes is shorter than its ${HEADER_BYTES}-byte header`);
  const status = CRAWL_STATUSES[view.readUInt8(1)];
  if (status === undefined) throw new CrawlDbRecordError('CRAWLDB_RECORD_CORRUPT', `crawl db record has unknown status ${view.readUInt8(1)}`);
  const flags = view.readUInt16LE(2);
  const headerBytes = view.readUInt16LE(4);
  const urlLength = view.readUInt16LE(6);
  const errorLength = view.readUInt16LE(98);
  if (headerBytes < HEADER_BYTES || headerBytes + urlLength + errorLength !== view.length) {
    throw new CrawlDbRecordError(
      'CRAWLDB_RECORD_CORRUPT',
      `crawl db record lengths (header ${headerBytes}, url ${urlLength}, error code ${errorLength}) do not add up to its ${view.length} bytes`,
    );
  }
  const has = (flag: number): boolean => (flags & flag) !== 0;
  if (has(FLAG_WARC) && headerBytes < HEADER_BYTES_WARC) {
    throw new CrawlDbRecordError('CRAWLDB_RECORD_CORRUPT', `crawl db record says it has a WARC capture but its header of ${headerBytes} bytes has no room for one`);
  }
  const time = (flag: number, offset: number): number | null => (has(flag) ? view.readDoubleLE(offset) : null);
  const hash = (flag: number, offset: number): string | null => (has(flag) ? view.toString('hex', offset, offset + 8) : null);
  const urlStart = headerBytes;
  const errorStart = urlStart + urlLength;
  return {
    url: view.toString('utf8', urlStart, errorStart),
    status,
    depth: view.readUInt32LE(8),
    score: view.readDoubleLE(16),
    firstFetchAt: time(FLAG_FIRST_FETCH, 24),
    lastFetchAt: time(FLAG_LAST_FETCH, 32),
    modifiedAt: time(FLAG_MODIFIED, 40),
    fetchIntervalMs: view.readDoubleLE(48),
    nextFetchAt: view.readDoubleLE(56),
    retries: view.readUInt32LE(12),
    lastHttpStatus: has(FLAG_HTTP_STATUS) ? view.readUInt16LE(96) : null,
    signature: hash(FLAG_SIGNATURE, 64),
    simhash: hash(FLAG_SIMHASH, 72),
    duplicateOf: hash(FLAG_DUPLICATE_OF, 80),
    redirectTo: hash(FLAG_REDIRECT_TO, 88),
    errorCode: has(FLAG_ERROR_CODE) ? view.toString('utf8', errorStart, errorStart + errorLength) : null,
    warc: has(FLAG_WARC) ? decodeWarc(view) : null,
  };
}

function decodeWarc(view: Buffer): CaptureLocation {
  try {
    return decodeCaptureLocation(view, HEADER_BYTES);
  } catch (error) {
    throw new CrawlDbRecordError('CRAWLDB_RECORD_CORRUPT', `crawl db record has a WARC capture that does not decode: ${(error as Error).message}`);
  }
}

function u32(value: number, name: string, url: string): number {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`crawl db record of ${url}: ${name} ${value} is not a u32`);
  return value;
}

function finite(value: number, name: string, url: string): number {
  if (!Number.isFinite(value)) throw new Error(`crawl db record of ${url}: ${name} ${value} is not a finite number`);
  return value;
}
