/**
 * From one HTTP exchange to its WARC records: what a fetcher hands over (`Exchange`), what it posts to
 * the queue server (`Capture`: the gzip members of a `request` and a `response` record, plus the few
 * facts the queue server decides on), and the records the queue server makes itself (a `revisit` in
 * place of the response, a `warcinfo` opening each file).
 *
 * Fetchers build the records so that the hashing and the compression, the costly part, runs on the
 * machines that scale out; the queue server only decides (queue-server/warc/revisit.ts) and appends.
 *
 * Bounds: a head at most MAX_HEAD_BYTES, a body at most the caller's `maxBodyBytes` (longer ones are
 * cut and marked `WARC-Truncated: length`), so one capture is at most maxBodyBytes + 2 heads + 2 KiB
 * of WARC fields before compression.
 */
import { isIP } from 'node:net';
import { WarcError } from './errors.js';
import { gzipMember } from './gzip-member.js';
import { fieldValue, headEnd, mediaType, parseHead } from './http-head.js';
import { newRecordId, RECORD_BLOCK_START, recordParts, sha1Digest, type RevisitProfile, type WarcTruncation } from './record.js';

/**
 * One HTTP request and its response, as the fetcher saw them on the wire. This is the whole contract
 * between the download code and the archive: everything in a record comes from here.
 */
export interface Exchange {
  /** The absolute http(s) URL requested (printable ASCII, as normalized URLs are): every record's WARC-Target-URI. */
  readonly url: string;
  /** The address of the peer the request went to (IPv4 dotted quad or IPv6 text), or null when the socket did not say. */
  readonly ipAddress: string | null;
  /** ms since epoch when the request started: the WARC-Date of both records (WARC 1.1 section 5.4: "the instant that data capture for record creation began"). */
  readonly startedAt: number;
  /** The request head as sent: request line, field lines, the empty line (ends with CRLF CRLF). See http-head.ts `requestHead`. */
  readonly requestHead: Uint8Array;
  /** The response head as received: status line, field lines, the empty line (ends with CRLF CRLF). See http-head.ts `responseHead`. */
  readonly responseHead: Uint8Array;
  /**
   * The response body as received, in order: the message body with the transfer coding removed
   * (chunked framing undone, as undici hands it over) and the content coding kept (gzip bytes stay
   * gzip). WARC 1.1 section 6.3.2 defines a response's payload as exactly this, "with any
   * transfer-encoding removed". Empty for HEAD, 204 and 304. Bytes beyond `maxBodyBytes` are cut here.
   */
  readonly responseBody: readonly Uint8Array[];
  /** Why the body is incomplete, or null when it is whole: `length` (a body limit), `time` (a timeout), `disconnect`, `unspecified`. */
  readonly truncated: WarcTruncation | null;
}

/** What a fetcher posts for one exchange: both records, compressed, and what the queue server decides on. */
export interface Capture {
  readonly url: string;
  /** ms since epoch: WARC-Date of both records. */
  readonly date: number;
  readonly ipAddress: string | null;
  /** HTTP status of the response. */
  readonly status: number;
  /** Media type of the response's Content-Type (lowercase, no parameters), or null. */
  readonly mime: string | null;
  /** WARC-Payload-Digest of the response: `sha1:` base32 of the body as stored. */
  readonly payloadDigest: string;
  /** Bytes of the body as stored. */
  readonly payloadLength: number;
  readonly truncated: WarcTruncation | null;
  readonly requestId: string;
  /** WARC-Record-ID of the response record, kept by a revisit that replaces it (the request's WARC-Concurrent-To names it). */
  readonly responseId: string;
  /** The response head as stored in the record (a revisit's block is made of it). */
  readonly responseHead: Uint8Array;
  /** The `request` record, one gzip member. */
  readonly requestRecord: Uint8Array;
  /** The `response` record, one gzip member. */
  readonly responseRecord: Uint8Array;
}

/** A head (status line or request line and fields) is at most this long: 64 KiB of response fields (fetcher/download.ts) plus what rebuilding them adds. */
export const MAX_HEAD_BYTES = 72 * 1024;
const MAX_URL_CHARS = 8192;

/**
 * zlib level of the fetcher's records. Measured on the test web's pages (13.9 KiB of HTML on average,
 * `node dist/scripts/bench-warc.js 400`, two runs on a busy two-core machine): levels 1, 3 and 6 all
 * cost 0.37-0.42 ms of CPU per page for both records (SHA-1s included), within noise of each other, and
 * level 6 makes the smallest records (5.76 KiB per page against 5.95 at level 1). Pages less repetitive
 * than the test web's may tip this towards a lower level: `gzipLevel` is the knob. The fetcher turns
 * it to 1 (fetcher/fetch-item.ts FETCHER_GZIP_LEVEL), measured there in isolation.
 */
export const DEFAULT_GZIP_LEVEL = 6;

/** The payload digest of a request record: a GET has no body, so it is the SHA-1 of nothing (a test checks it). */
export const EMPTY_PAYLOAD_DIGEST = 'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ';

export interface CaptureOptions {
  /** Body bytes stored at most; the fetcher's --max-body-bytes. */
  readonly maxBodyBytes: number;
  readonly gzipLevel?: number;
  /** Record ids, for tests that want fixed ones; random UUIDs by default. */
  readonly newId?: () => string;
}

/** Media types whose bytes are compressed already (a deflate pass over them costs time and saves nothing). */
const COMPRESSED_MEDIA = /^(?:image\/(?:jpeg|png|gif|webp|avif|heic)|video\/[a-z0-9.+-]+|audio\/(?:mpeg|mp4|aac|ogg|opus|webm|flac)|font\/woff2?|application\/(?:gzip|x-gzip|zip|x-bzip2|x-xz|zstd|x-7z-compressed|vnd\.rar|x-rar-compressed))$/;

/**
 * Whether a response's payload is compressed already: a content coding other than `identity` (gzip,
 * br, deflate, zstd: the fetcher asks for the first three) or a compressed media type. Such a body is
 * stored in its record rather than deflated again: on the PostgreSQL manual's pages gzipped (3.5 KB
 * each), zlib level 1 took 66 µs a page to make them 5 bytes larger.
 */
export function payloadIsCompressed(contentEncoding: string | null, mime: string | null): boolean {
  if (contentEncoding !== null && contentEncoding.split(',').some((coding) => !/^\s*(?:identity)?\s*$/i.test(coding))) return true;
  return mime !== null && COMPRESSED_MEDIA.test(mime);
}

/** Builds the request and response records of an exchange. Throws WarcError WARC_EXCHANGE_INVALID when the exchange breaks its contract. */
export function buildCapture(exchange: Exchange, options: CaptureOptions): Capture {
  const url = checkUrl(exchange.url);
  const ipAddress = exchange.ipAddress;
  if (ipAddress !== null && isIP(ipAddress) === 0) invalid(`WARC-IP-Address ${JSON.stringify(ipAddress.slice(0, 100))} is not an IP address`);
  if (!Number.isFinite(exchange.startedAt) || exchange.startedAt < 0) invalid(`startedAt ${exchange.startedAt} is not a time`);
  checkHead(exchange.requestHead, 'request');
  checkHead(exchange.responseHead, 'response');
  const parsed = parseHead(exchange.responseHead);
  if (parsed.status === null) invalid(`response head does not start with a status line: ${JSON.stringify(parsed.startLine.slice(0, 100))}`);
  const { body, cut } = limitBody(exchange.responseBody, options.maxBodyBytes);
  const truncated: WarcTruncation | null = exchange.truncated ?? (cut ? 'length' : null);
  // The stored body has no transfer coding; a head that still announced one would make readers undo it again.
  const head = withoutTransferCoding(exchange.responseHead);
  const level = options.gzipLevel ?? DEFAULT_GZIP_LEVEL;
  const newId = options.newId ?? newRecordId;
  const requestId = newId();
  const responseId = newId();
  const payloadDigest = sha1Digest(body);
  const payloadLength = body.reduce((sum, part) => sum + part.length, 0);
  const common = { date: exchange.startedAt, targetUri: url, ipAddress };
  const requestRecord = gzipMember(
    recordParts(
      { ...common, type: 'request', recordId: requestId, concurrentTo: responseId, contentType: 'application/http;msgtype=request', payloadDigest: EMPTY_PAYLOAD_DIGEST },
      [exchange.requestHead],
    ),
    level,
  );
  const mime = mediaType(fieldValue(parsed, 'content-type'));
  const responseParts = recordParts({ ...common, type: 'response', recordId: responseId, contentType: 'application/http;msgtype=response', payloadDigest, truncated }, [head, ...body]);
  // The block is the HTTP head, then the body: a compressed body is stored from the part after the head.
  const responseRecord = gzipMember(responseParts, level, payloadIsCompressed(fieldValue(parsed, 'content-encoding'), mime) ? RECORD_BLOCK_START + 1 : responseParts.length);
  return {
    url,
    date: exchange.startedAt,
    ipAddress,
    status: parsed.status,
    mime,
    payloadDigest,
    payloadLength,
    truncated,
    requestId,
    responseId,
    responseHead: head,
    requestRecord,
    responseRecord,
  };
}

/** The earlier record a revisit refers to (WARC 1.1 sections 5.11, 5.12, 5.17). */
export interface RevisitTarget {
  readonly profile: RevisitProfile;
  readonly recordId: string;
  readonly targetUri: string;
  /** ms since epoch: that record's WARC-Date. */
  readonly date: number;
}

/**
 * The `revisit` record that takes the place of a capture's response record, with the same record id
 * (so the request's WARC-Concurrent-To still names it). Its block is the response head alone:
 * identical-payload-digest: the head of this response, "truncated to avoid storing the duplicate
 * content", with WARC-Truncated: length and the payload's digest (section 6.7.2);
 * server-not-modified: the 304 response, which has no body anyway, and no payload digest (6.7.3).
 */
export function buildRevisitRecord(capture: Capture, target: RevisitTarget, options: { gzipLevel?: number } = {}): Buffer {
  const identical = target.profile === 'identical-payload-digest';
  return gzipMember(
    recordParts(
      {
        type: 'revisit',
        recordId: capture.responseId,
        date: capture.date,
        targetUri: capture.url,
        ipAddress: capture.ipAddress,
        profile: target.profile,
        refersTo: target.recordId,
        refersToTargetUri: target.targetUri,
        refersToDate: target.date,
        contentType: 'application/http;msgtype=response',
        payloadDigest: identical ? capture.payloadDigest : undefined,
        truncated: identical ? 'length' : null,
      },
      [capture.responseHead],
    ),
    options.gzipLevel ?? 6,
  );
}

export interface WarcinfoContent {
  /** `software` (section 6.2): product and version, e.g. `Petrel/0.1.0`. */
  readonly software: string;
  /** `operator`: who ran the crawl (the --contact given to fetchers), or null. */
  readonly operator: string | null;
  /** `http-header-user-agent`, or null when the fetchers' User-Agent is not known here. */
  readonly userAgent: string | null;
  /** The crawl's settings, written as one JSON line in the `petrel-crawl-settings` field. */
  readonly settings: Readonly<Record<string, unknown>>;
}

/** The `warcinfo` record opening a file (section 6.2, application/warc-fields). */
export function buildWarcinfoRecord(info: WarcinfoContent, file: { filename: string; date: number }, options: { newId?: () => string } = {}): { record: Buffer; recordId: string } {
  const fields: [string, string | null][] = [
    ['software', info.software],
    ['format', 'WARC File Format 1.1'],
    ['conformsTo', 'http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
    ['robots', 'classic'],
    ['operator', info.operator],
    ['http-header-user-agent', info.userAgent],
    ['petrel-crawl-settings', JSON.stringify(info.settings)],
  ];
  let text = '';
  for (const [name, value] of fields) if (value !== null) text += `${name}: ${value.replace(/[\r\n]+/g, ' ')}\r\n`;
  const recordId = (options.newId ?? newRecordId)();
  const record = gzipMember(
    recordParts({ type: 'warcinfo', recordId, date: file.date, filename: file.filename, contentType: 'application/warc-fields' }, [Buffer.from(text, 'utf8')]),
    6,
  );
  return { record, recordId };
}

function invalid(message: string): never {
  throw new WarcError('WARC_EXCHANGE_INVALID', message);
}

function checkUrl(url: string): string {
  if (url.length > MAX_URL_CHARS || !/^https?:\/\/[\x21-\x7e]+$/i.test(url)) invalid(`not a printable absolute http(s) URL of at most ${MAX_URL_CHARS} characters: ${JSON.stringify(url.slice(0, 200))}`);
  return url;
}

function checkHead(head: Uint8Array, which: string): void {
  if (head.length > MAX_HEAD_BYTES) invalid(`${which} head of ${head.length} bytes exceeds ${MAX_HEAD_BYTES}`);
  if (headEnd(head) !== head.length) invalid(`${which} head must end with its empty line (CRLF CRLF) and hold nothing after it`);
}

function limitBody(body: readonly Uint8Array[], max: number): { body: Uint8Array[]; cut: boolean } {
  if (!Number.isInteger(max) || max < 0) throw new Error(`maxBodyBytes ${max} is not a byte count`);
  const kept: Uint8Array[] = [];
  let size = 0;
  for (const part of body) {
    if (size + part.length > max) {
      if (max > size) kept.push(part.subarray(0, max - size));
      return { body: kept, cut: true };
    }
    kept.push(part);
    size += part.length;
  }
  return { body: kept, cut: false };
}

const TRANSFER_CODING_FIELD = /(^|\r\n)(transfer-encoding[ \t]*:)/gi;

/** Renames Transfer-Encoding field lines to X-Petrel-Orig-Transfer-Encoding (the value stays, for the record). */
function withoutTransferCoding(head: Uint8Array): Uint8Array {
  const text = Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('latin1');
  const renamed = text.replace(TRANSFER_CODING_FIELD, '$1X-Petrel-Orig-$2');
  return renamed === text ? head : Buffer.from(renamed, 'latin1');
}
