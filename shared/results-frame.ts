/**
 * The binary form of a results post (Content-Type RESULTS_FRAME_TYPE), beside the JSON form that
 * shared/protocol.ts defines. The two large parts of a result travel as bytes: its WARC records as their
 * raw gzip members (JSON needs base64, a third larger and a scan and a copy on each side), and its
 * search index data as varints without keys (in JSON about 12 KB a page, twice its stored text). The
 * rest of the post stays the JSON it is, checked as before. What a frame decodes to is the same
 * in-memory `ResultsRequest` a JSON post gives: `Capture` for the WARC writer, `IndexData` for the index.
 *
 * Layout, version 1 (varint: unsigned LEB128, shortest form; str: varint byte length + UTF-8;
 * nstr: varint 0 for null, else byte length + 1, + UTF-8; bytes: varint length + raw bytes):
 *
 *   "PTRF"  u8 version=1
 *   varint jsonBytes, JSON    the ResultsRequest with `capture: null` and `index: null` in every result
 *   varint results            as many as the JSON's results
 *   per result:
 *     u8 parts                bit 0: a capture follows, bit 1: index data follows; no other bits
 *     capture:  str url, f64 date (little-endian), nstr ipAddress, varint status, nstr mime,
 *               str payloadDigest, varint payloadLength, u8 truncated (0 null, else 1 + its index in
 *               TRUNCATION_REASONS), 16 bytes requestId, 16 bytes responseId (the UUIDs),
 *               bytes responseHead, bytes requestRecord, bytes responseRecord
 *     index:    str text, str names (the UTF-8 of every other string of the index data, one after
 *               another: stemmer, language, title, each field's terms, each anchor's URL and terms),
 *               then the lengths of those strings in UTF-16 code units (their sum is the names' length):
 *               varint stemmer, varint language (0 null, else length + 1), varint title (same),
 *               per field (title, heading, body): varint entries, per entry varint term length,
 *               varint frequency, min(frequency, positionsPerTerm) varint position deltas;
 *               varint anchors, per anchor varint URL length, varint terms, per term varint length
 *
 * One decoded string of names per page, sliced, costs far less than a decode per term.
 *
 * Bounds: every count is checked against the bytes left before anything is allocated for it, every
 * value counts against a budget of decoded values (the JSON path's bound on values and keys, so a frame
 * holds no more than a JSON post could), and each decoded capture and index data then passes the same
 * in-place checks as the JSON path (`isPlainCapture`, `isPlainIndexData`: the bounds of
 * shared/protocol.ts, shared/index-data.ts and shared/warc/capture-wire.ts, one place). A frame is
 * refused whole with a FrameError naming a stable code; the schema words what a value breaks.
 */
import { ByteReader, ByteWriter, FrameError } from './byte-codec.js';
import type { IndexData, TermEntry } from './index-data.js';
import { INDEX_LIMITS, indexDataSchema, PAGE_FIELDS } from './index-data.js';
import { describeZodError, isPlainIndexData, type ItemResult, type ResultsRequest, type ResultsRequestJson } from './protocol.js';
import { captureToWire, captureWireSchema, isPlainCapture, MAX_MEMBER_BYTES } from './warc/capture-wire.js';
import type { Capture } from './warc/exchange.js';
import { MAX_HEAD_BYTES } from './warc/exchange.js';
import { recordIdBytes, recordIdFromBytes, TRUNCATION_REASONS } from './warc/record.js';

export { FrameError, type FrameErrorCode } from './byte-codec.js';

/** The Content-Type of a results frame (signed like any other: shared/request-signing.ts). */
export const RESULTS_FRAME_TYPE = 'application/x-petrel-results';
/** The frame version this code writes and reads; a schedule names the version its queue server reads (0: JSON only). */
export const RESULTS_FRAME_VERSION = 1;

const MAGIC = Buffer.from('PTRF', 'latin1');
const CAPTURE_PART = 1;
const INDEX_PART = 2;
/** Upper bounds in bytes of strings bounded in characters (a UTF-16 code unit is at most 3 bytes of UTF-8). */
const utf8Bytes = (chars: number): number => chars * 3;
const CAPTURE_URL_CHARS = 8192;
const IP_CHARS = 64;
const MIME_CHARS = 200;
const DIGEST_CHARS = 64;
const FIELD_TOKENS: Readonly<Record<(typeof PAGE_FIELDS)[number], number>> = {
  title: INDEX_LIMITS.titleTokens,
  heading: INDEX_LIMITS.headingTokens,
  body: INDEX_LIMITS.bodyTokens,
};

// ---------------------------------------------------------------------------------------------- encode

/** Structure of one index data, written before its names; one writer reused (encoding is synchronous). */
const structure = new ByteWriter(16 * 1024);

/** The frame of a results post (the fetcher's side). The buffer is the frame's own. */
export function encodeResultsFrame(request: ResultsRequest): Buffer {
  const w = new ByteWriter(64 * 1024);
  w.raw(MAGIC);
  w.u8(RESULTS_FRAME_VERSION);
  const results = request.results;
  const stripped = new Array<unknown>(results.length);
  for (let i = 0; i < results.length; i++) stripped[i] = { ...results[i], capture: null, index: null };
  const json = JSON.stringify({ protocolVersion: request.protocolVersion, fetcherId: request.fetcherId, scheduleId: request.scheduleId, results: stripped });
  w.varint(Buffer.byteLength(json, 'utf8'));
  w.utf8(json);
  w.varint(results.length);
  for (const result of results) {
    const capture = result.capture ?? null;
    const index = result.index;
    w.u8((capture === null ? 0 : CAPTURE_PART) | (index === null ? 0 : INDEX_PART));
    if (capture !== null) writeCapture(w, capture);
    if (index !== null) writeIndex(w, index);
  }
  return w.finish();
}

function writeCapture(w: ByteWriter, c: Capture): void {
  w.string(c.url);
  w.f64(c.date);
  w.nullableString(c.ipAddress);
  w.varint(c.status);
  w.nullableString(c.mime);
  w.string(c.payloadDigest);
  w.varint(c.payloadLength);
  w.u8(c.truncated === null ? 0 : 1 + TRUNCATION_REASONS.indexOf(c.truncated));
  w.raw(recordIdBytes(c.requestId));
  w.raw(recordIdBytes(c.responseId));
  w.bytes(c.responseHead);
  w.bytes(c.requestRecord);
  w.bytes(c.responseRecord);
}

function writeIndex(w: ByteWriter, index: IndexData): void {
  w.string(index.text);
  const s = structure;
  s.reset();
  const names: string[] = [index.stemmer];
  s.varint(index.stemmer.length);
  for (const value of [index.language, index.title]) {
    if (value === null) s.u8(0);
    else {
      names.push(value);
      s.varint(value.length + 1);
    }
  }
  for (const field of PAGE_FIELDS) {
    const entries = index.fields[field];
    s.varint(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const [term, frequency, deltas] = entries[i]!;
      names.push(term);
      s.varint(term.length);
      s.varint(frequency);
      for (let k = 0; k < deltas.length; k++) s.varint(deltas[k]!);
    }
  }
  s.varint(index.anchors.length);
  for (const anchor of index.anchors) {
    names.push(anchor.url);
    s.varint(anchor.url.length);
    s.varint(anchor.terms.length);
    for (const term of anchor.terms) {
      names.push(term);
      s.varint(term.length);
    }
  }
  w.string(names.join(''));
  w.raw(s.finish());
}

// ---------------------------------------------------------------------------------------------- decode

/** Whether a body is a frame (its first bytes), before any other check. */
export function isResultsFrame(bytes: Uint8Array): boolean {
  return bytes.length >= MAGIC.length && Buffer.from(bytes.buffer, bytes.byteOffset, MAGIC.length).equals(MAGIC);
}

/** A frame opened: its JSON part (to be parsed and checked as a JSON post is) and where the rest starts. */
export interface OpenedFrame {
  readonly json: Buffer;
  readonly partsOffset: number;
}

/** Reads the frame's head and its JSON part's extent (step 1 of 2). */
export function openResultsFrame(bytes: Buffer): OpenedFrame {
  if (!isResultsFrame(bytes)) throw new FrameError('FRAME_BAD_MAGIC', `a results frame starts with "PTRF"`);
  const r = new ByteReader(bytes, MAGIC.length);
  const version = r.u8('the version');
  if (version !== RESULTS_FRAME_VERSION) throw new FrameError('FRAME_VERSION', `results frame version ${version}: this queue server reads version ${RESULTS_FRAME_VERSION} (and JSON)`);
  const length = r.varint('the JSON part\'s length');
  const json = r.raw(length, 'the JSON part');
  return { json, partsOffset: r.offset };
}

/**
 * Step 2 of 2: the captures and index data of a frame, put into the results of its JSON part (parsed
 * and checked against the protocol schema by the caller). `maxValues`: values the parts may decode (the
 * JSON path's budget of values and keys less what the JSON part used).
 */
export function attachResultsParts(bytes: Buffer, opened: OpenedFrame, json: ResultsRequestJson, maxValues: number): ResultsRequest {
  const r = new ByteReader(bytes, opened.partsOffset);
  const count = r.varint('the result count');
  if (count !== json.results.length) throw new FrameError('FRAME_MISMATCH', `the frame has parts for ${count} results, its JSON ${json.results.length}`);
  const budget = { left: maxValues };
  const results: ItemResult[] = new Array(count);
  for (let i = 0; i < count; i++) {
    const base = json.results[i]!;
    if ((base.capture ?? null) !== null || base.index !== null) throw new FrameError('FRAME_MISMATCH', `result ${i}: a frame's JSON part carries no capture and no index data (they are in its parts)`);
    const parts = r.u8('result parts');
    if ((parts & ~(CAPTURE_PART | INDEX_PART)) !== 0) throw new FrameError('FRAME_BAD_VALUE', `result ${i}: unknown parts 0x${parts.toString(16)}`);
    try {
      const capture = (parts & CAPTURE_PART) === 0 ? null : readCapture(r, budget);
      const index = (parts & INDEX_PART) === 0 ? null : readIndex(r, budget);
      results[i] = { ...base, capture, index };
    } catch (error) {
      // Labels are constants on the way (no string built per value read); the result is named here.
      if (error instanceof FrameError) throw new FrameError(error.code, `result ${i}: ${error.message}`);
      throw error;
    }
  }
  if (r.remaining !== 0) throw new FrameError('FRAME_TRAILING_BYTES', `${r.remaining} bytes after the last result`);
  return { protocolVersion: json.protocolVersion, fetcherId: json.fetcherId, scheduleId: json.scheduleId, results };
}

function spend(budget: { left: number }, values: number, what: string): void {
  budget.left -= values;
  if (budget.left < 0) throw new FrameError('FRAME_TOO_COMPLEX', `${what}: the frame decodes to more values than a results post may hold`);
}

function readCapture(r: ByteReader, budget: { left: number }): Capture {
  const what = 'capture';
  spend(budget, 14, what);
  const url = r.string(utf8Bytes(CAPTURE_URL_CHARS), 'capture url');
  const date = r.f64('capture date');
  const ipAddress = r.nullableString(utf8Bytes(IP_CHARS), 'capture ipAddress');
  const status = r.varint('capture status');
  const mime = r.nullableString(utf8Bytes(MIME_CHARS), 'capture mime');
  const payloadDigest = r.string(DIGEST_CHARS, 'capture payloadDigest');
  const payloadLength = r.varint('capture payloadLength');
  const t = r.u8('capture truncated');
  if (t > TRUNCATION_REASONS.length) throw new FrameError('FRAME_BAD_VALUE', `${what} truncated: unknown reason ${t}`);
  const requestId = recordIdFromBytes(r.raw(16, 'capture requestId'));
  const responseId = recordIdFromBytes(r.raw(16, 'capture responseId'));
  const responseHead = r.bytes(MAX_HEAD_BYTES, 'capture responseHead');
  const requestRecord = r.bytes(MAX_MEMBER_BYTES, 'capture requestRecord');
  const responseRecord = r.bytes(MAX_MEMBER_BYTES, 'capture responseRecord');
  const capture: Capture = { url, date, ipAddress, status, mime, payloadDigest, payloadLength, truncated: t === 0 ? null : TRUNCATION_REASONS[t - 1]!, requestId, responseId, responseHead, requestRecord, responseRecord };
  if (!isPlainCapture(capture)) {
    const parsed = captureWireSchema.safeParse(captureToWire(capture));
    throw new FrameError('FRAME_BAD_VALUE', `${what}: ${parsed.success ? 'out of bounds' : describeZodError(parsed.error)}`);
  }
  return capture;
}

function readIndex(r: ByteReader, budget: { left: number }): IndexData {
  const what = 'index data';
  const text = r.string(INDEX_LIMITS.storedTextBytes, 'index text');
  const namesLength = r.varint('index names');
  const names = r.utf8(namesLength, 'index names');
  let at = 0;
  const take = (length: number): string => {
    if (length > names.length - at) throw new FrameError('FRAME_MISMATCH', `${what}: string lengths run past its names`);
    const s = names.slice(at, at + length);
    at += length;
    return s;
  };
  const nullable = (length: number): string | null => (length === 0 ? null : take(length - 1));
  spend(budget, 8, what);
  const stemmer = take(r.varint('index stemmer'));
  const language = nullable(r.varint('index language'));
  const title = nullable(r.varint('index title'));
  const fields = {} as Record<(typeof PAGE_FIELDS)[number], TermEntry[]>;
  // The term lists are most of a page's index data: their varints are read inline, here, from the
  // frame's bytes (one-byte values, nearly all of them, without a call), with the reader's rules
  // (shortest form, at most 2^53 - 1, never past the end).
  const buf = r.buffer;
  const end = r.end;
  for (const field of PAGE_FIELDS) {
    // An entry is at least 3 bytes: a term length, a frequency and one position.
    const n = r.count('index field entries', FIELD_TOKENS[field], 3);
    spend(budget, 4 * n, what);
    let p = r.offset;
    const varint = (): number => {
      if (p >= end) throw new FrameError('FRAME_TRUNCATED', `frame ends inside the index ${field} terms at byte ${p}`);
      const first = buf[p]!;
      if (first < 0x80) {
        p++;
        return first;
      }
      r.seek(p);
      const value = r.varint(`index ${field} terms`);
      p = r.offset;
      return value;
    };
    const entries: TermEntry[] = [];
    for (let k = 0; k < n; k++) {
      const term = take(varint());
      const frequency = varint();
      const positions = Math.min(frequency, INDEX_LIMITS.positionsPerTerm);
      if (positions > end - p) throw new FrameError('FRAME_TRUNCATED', `index ${field}: ${positions} positions cannot fit in the ${end - p} bytes left`);
      spend(budget, positions, what);
      // Allocated at its size and filled (a quarter faster than growing it by push on the test web's pages).
      const deltas: number[] = new Array(positions);
      for (let q = 0; q < positions; q++) deltas[q] = varint();
      entries.push([term, frequency, deltas]);
    }
    r.seek(p);
    fields[field] = entries;
  }
  const anchorCount = r.count('index anchors', INDEX_LIMITS.anchors, 2);
  spend(budget, 3 * anchorCount, what);
  const anchors: IndexData['anchors'] = [];
  for (let k = 0; k < anchorCount; k++) {
    const url = take(r.varint('index anchor url'));
    const n = r.count('index anchor terms', INDEX_LIMITS.anchorTerms, 1);
    spend(budget, n, what);
    const terms: string[] = [];
    for (let t = 0; t < n; t++) terms.push(take(r.varint('index anchor term')));
    anchors.push({ url, terms });
  }
  if (at !== names.length) throw new FrameError('FRAME_MISMATCH', `${what}: ${names.length - at} characters of its names left over`);
  const index: IndexData = { language, stemmer, title, fields, text, anchors };
  if (!isPlainIndexData(index)) {
    const parsed = indexDataSchema.safeParse(index);
    throw new FrameError('FRAME_BAD_VALUE', `${what}: ${parsed.success ? 'out of bounds' : describeZodError(parsed.error)}`);
  }
  return index;
}
