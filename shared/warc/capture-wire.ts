/**
 * A Capture in a results post: JSON, bytes in base64. `captureWireSchema` is the validator the
 * protocol's result schema takes in (`capture: captureWireSchema.nullable()`), `captureToWire` what the
 * fetcher puts there, `captureFromWire` what the queue server gets back. The schema bounds every field;
 * the record members are checked for shape (one Petrel gzip member each, of the length it says) by the
 * queue server before they are appended (queue-server/warc/warc-archive.ts).
 */
import { z } from 'zod';
import type { Capture } from './exchange.js';
import { MAX_HEAD_BYTES } from './exchange.js';
import { TRUNCATION_REASONS, isRecordId } from './record.js';

/** Characters of base64 text of at most `bytes` bytes. */
const base64Chars = (bytes: number): number => Math.ceil(bytes / 3) * 4;
const BASE64_PATTERN = /^[A-Za-z0-9+/]*={0,2}$/;
/** Base64 text of at most `bytes` bytes. */
const base64 = (bytes: number) => z.string().max(base64Chars(bytes)).regex(BASE64_PATTERN, 'base64');

/** A record member is at most the 64 MiB a results post may hold (shared/protocol.ts LIMITS). */
export const MAX_MEMBER_BYTES = 64 * 1024 * 1024;
const recordId = z.string().refine(isRecordId, 'a <urn:uuid:...> record id');
const PAYLOAD_DIGEST_PATTERN = /^sha1:[A-Z2-7]{32}$/;
/** The bounds of the schema below, shared with the in-place check `isPlainCaptureWire`. */
const BOUNDS = { urlChars: 8192, ipChars: 64, mimeChars: 200, headChars: base64Chars(MAX_HEAD_BYTES), memberChars: base64Chars(MAX_MEMBER_BYTES) } as const;

export const captureWireSchema = z.object({
  url: z.string().min(1).max(BOUNDS.urlChars),
  date: z.number().finite().nonnegative(),
  ipAddress: z.string().max(BOUNDS.ipChars).nullable(),
  status: z.number().int().min(100).max(999),
  mime: z.string().max(BOUNDS.mimeChars).nullable(),
  payloadDigest: z.string().regex(PAYLOAD_DIGEST_PATTERN),
  payloadLength: z.number().int().nonnegative(),
  truncated: z.enum(TRUNCATION_REASONS).nullable(),
  requestId: recordId,
  responseId: recordId,
  responseHead: base64(MAX_HEAD_BYTES),
  requestRecord: base64(MAX_MEMBER_BYTES),
  responseRecord: base64(MAX_MEMBER_BYTES),
});
export type CaptureWire = z.infer<typeof captureWireSchema>;

const CAPTURE_KEYS = Object.keys(captureWireSchema.shape).length;
const TRUNCATIONS: ReadonlySet<unknown> = new Set(TRUNCATION_REASONS);

/**
 * The schema's verdict on a capture in JSON.parse's output, checked in place (no copy): true only for
 * values `captureWireSchema` accepts and returns unchanged (a plain object with exactly its keys, each
 * within the same bounds). The results fast path (shared/protocol.ts `isPlainResultsRequest`) calls it;
 * test/unit/protocol-fast-path.test.ts holds the two to each other.
 */
export function isPlainCaptureWire(c: unknown): boolean {
  if (typeof c !== 'object' || c === null || Object.getPrototypeOf(c) !== Object.prototype) return false;
  let keys = 0;
  for (const _ in c) keys++;
  if (keys !== CAPTURE_KEYS) return false;
  const v = c as Record<string, unknown>;
  const str = (x: unknown, max: number): x is string => typeof x === 'string' && x.length <= max;
  const nullableStr = (x: unknown, max: number): boolean => x === null || str(x, max);
  const int = (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x);
  // Canonical base64 (what Buffer's encoder writes, so every fetcher's) matches BASE64_PATTERN; testing
  // that it decodes and encodes back unchanged runs natively, where the regular expression cost a
  // queue server 0.1 ms a page. Anything else is left to the schema's pattern.
  const b64 = (x: unknown, max: number): boolean => str(x, max) && x.length % 4 === 0 && Buffer.from(x, 'base64').toString('base64') === x;
  if (!str(v.url, BOUNDS.urlChars) || v.url.length < 1) return false;
  if (typeof v.date !== 'number' || !Number.isFinite(v.date) || v.date < 0) return false;
  if (!nullableStr(v.ipAddress, BOUNDS.ipChars) || !nullableStr(v.mime, BOUNDS.mimeChars)) return false;
  if (!int(v.status) || v.status < 100 || v.status > 999) return false;
  if (typeof v.payloadDigest !== 'string' || !PAYLOAD_DIGEST_PATTERN.test(v.payloadDigest)) return false;
  if (!int(v.payloadLength) || v.payloadLength < 0) return false;
  if (v.truncated !== null && !TRUNCATIONS.has(v.truncated)) return false;
  if (typeof v.requestId !== 'string' || !isRecordId(v.requestId) || typeof v.responseId !== 'string' || !isRecordId(v.responseId)) return false;
  return b64(v.responseHead, BOUNDS.headChars) && b64(v.requestRecord, BOUNDS.memberChars) && b64(v.responseRecord, BOUNDS.memberChars);
}

/**
 * `isPlainCaptureWire` for a capture whose records are bytes (the binary results frame,
 * shared/results-frame.ts): the same bounds, the byte runs held to the base64 lengths the schema allows
 * (so a capture is accepted in one form exactly when its other form would be).
 */
export function isPlainCapture(c: Capture): boolean {
  const nullableStr = (x: string | null, max: number): boolean => x === null || x.length <= max;
  if (c.url.length < 1 || c.url.length > BOUNDS.urlChars) return false;
  if (!Number.isFinite(c.date) || c.date < 0) return false;
  if (!nullableStr(c.ipAddress, BOUNDS.ipChars) || !nullableStr(c.mime, BOUNDS.mimeChars)) return false;
  if (!Number.isSafeInteger(c.status) || c.status < 100 || c.status > 999) return false;
  if (!PAYLOAD_DIGEST_PATTERN.test(c.payloadDigest) || !Number.isSafeInteger(c.payloadLength) || c.payloadLength < 0) return false;
  if (c.truncated !== null && !TRUNCATIONS.has(c.truncated)) return false;
  if (!isRecordId(c.requestId) || !isRecordId(c.responseId)) return false;
  return base64Chars(c.responseHead.length) <= BOUNDS.headChars && base64Chars(c.requestRecord.length) <= BOUNDS.memberChars && base64Chars(c.responseRecord.length) <= BOUNDS.memberChars;
}

export function captureToWire(capture: Capture): CaptureWire {
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
  return {
    url: capture.url,
    date: capture.date,
    ipAddress: capture.ipAddress,
    status: capture.status,
    mime: capture.mime,
    payloadDigest: capture.payloadDigest,
    payloadLength: capture.payloadLength,
    truncated: capture.truncated,
    requestId: capture.requestId,
    responseId: capture.responseId,
    responseHead: b64(capture.responseHead),
    requestRecord: b64(capture.requestRecord),
    responseRecord: b64(capture.responseRecord),
  };
}

/** The capture of a validated wire form (captureWireSchema.parse first). */
export function captureFromWire(wire: CaptureWire): Capture {
  return {
    ...wire,
    responseHead: Buffer.from(wire.responseHead, 'base64'),
    requestRecord: Buffer.from(wire.requestRecord, 'base64'),
    responseRecord: Buffer.from(wire.responseRecord, 'base64'),
  };
}
