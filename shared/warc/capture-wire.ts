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

/** Base64 text of at most `bytes` bytes. */
const base64 = (bytes: number) =>
  z
    .string()
    .max(Math.ceil(bytes / 3) * 4)
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64');

/** A record member is at most the 64 MiB a results post may hold (shared/protocol.ts LIMITS). */
const MAX_MEMBER_BYTES = 64 * 1024 * 1024;
const recordId = z.string().refine(isRecordId, 'a <urn:uuid:...> record id');

export const captureWireSchema = z.object({
  url: z.string().min(1).max(8192),
  date: z.number().finite().nonnegative(),
  ipAddress: z.string().max(64).nullable(),
  status: z.number().int().min(100).max(999),
  mime: z.string().max(200).nullable(),
  payloadDigest: z.string().regex(/^sha1:[A-Z2-7]{32}$/),
  payloadLength: z.number().int().nonnegative(),
  truncated: z.enum(TRUNCATION_REASONS).nullable(),
  requestId: recordId,
  responseId: recordId,
  responseHead: base64(MAX_HEAD_BYTES),
  requestRecord: base64(MAX_MEMBER_BYTES),
  responseRecord: base64(MAX_MEMBER_BYTES),
});
export type CaptureWire = z.infer<typeof captureWireSchema>;

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
