/**
 * A WARC/1.1 record as bytes (ISO 28500:2017; the text of the standard is at
 * iipc.github.io/warc-specifications): the version line, named fields, an empty line, the block, and
 * two CRLFs (section 4). Fields are written in a fixed order; values never contain CR or LF (they are
 * checked: a value from the web that did is refused, not folded).
 *
 * Digests are SHA-1 in RFC 4648 base32 with the `sha1:` label, the form Heritrix, wget, warcio and
 * pywb write and read (section 5.8/5.9 leave the algorithm open).
 */
import { createHash, randomUUID } from 'node:crypto';
import { WarcError } from './errors.js';

export const WARC_VERSION = 'WARC/1.1';

export type WarcRecordType = 'warcinfo' | 'request' | 'response' | 'revisit';

/** The two revisit profiles of WARC 1.1 section 6.7. */
export const REVISIT_PROFILES = {
  /** 6.7.2: the payload is byte-identical (same payload digest) to an earlier record's. */
  'identical-payload-digest': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
  /** 6.7.3: the server said it did not change (HTTP 304), relative to the record it revalidated. */
  'server-not-modified': 'http://netpreserve.org/warc/1.1/revisit/server-not-modified',
} as const;
export type RevisitProfile = keyof typeof REVISIT_PROFILES;

/** WARC-Truncated reasons (section 5.13). */
export const TRUNCATION_REASONS = ['length', 'time', 'disconnect', 'unspecified'] as const;
export type WarcTruncation = (typeof TRUNCATION_REASONS)[number];

const RECORD_ID = /^<urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}>$/;
const CRLF = Buffer.from('\r\n');
const END = Buffer.from('\r\n\r\n');

/** A new WARC-Record-ID: a random (version 4) UUID URN in angle brackets, as section 5.2's examples. */
export function newRecordId(): string {
  return `<urn:uuid:${randomUUID()}>`;
}

export function isRecordId(value: string): boolean {
  return RECORD_ID.test(value);
}

/** The 16 bytes of a record id made by newRecordId (for fixed-size storage), and back. */
export function recordIdBytes(id: string): Buffer {
  if (!isRecordId(id)) throw new Error(`not a Petrel WARC-Record-ID: ${JSON.stringify(id)}`);
  return Buffer.from(id.slice(10, -1).replaceAll('-', ''), 'hex');
}

export function recordIdFromBytes(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, 16).toString('hex');
  return `<urn:uuid:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}>`;
}

/**
 * WARC-Date of ms since epoch: W3C ISO 8601 in UTC with milliseconds, which WARC 1.1 section 5.4
 * allows ("a decimal fraction of a second ... minimum of 1 digit and a maximum of 9") and asks for
 * ("as much precision as is accurately known").
 */
export function warcDate(ms: number): string {
  if (!Number.isFinite(ms)) throw new Error(`WARC-Date of a time that is not finite: ${ms}`);
  return new Date(ms).toISOString();
}

/** 14-digit UTC timestamp YYYYMMDDhhmmss, as CDX indexes and file names use. */
export function timestamp14(ms: number): string {
  return warcDate(ms).replace(/[-:T]/g, '').slice(0, 14);
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32, no padding (a SHA-1, 160 bits, needs none). */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** `sha1:` + base32 of the SHA-1 of the parts, concatenated. */
export function sha1Digest(parts: readonly Uint8Array[]): string {
  const hash = createHash('sha1');
  for (const part of parts) hash.update(part);
  return `sha1:${base32(hash.digest())}`;
}

export interface RecordFields {
  readonly type: WarcRecordType;
  readonly recordId: string;
  /** ms since epoch. */
  readonly date: number;
  readonly targetUri?: string;
  readonly ipAddress?: string | null;
  readonly concurrentTo?: string;
  readonly refersTo?: string;
  readonly refersToTargetUri?: string;
  /** ms since epoch. */
  readonly refersToDate?: number;
  readonly profile?: RevisitProfile;
  readonly filename?: string;
  readonly contentType: string;
  /** Digest of the block, computed here when not given. */
  readonly blockDigest?: string;
  readonly payloadDigest?: string;
  readonly truncated?: WarcTruncation | null;
}

/** Where the block begins in what `recordParts` returns (after the header and its closing CRLF). */
export const RECORD_BLOCK_START = 2;

/**
 * The record's bytes, uncompressed, as a list of parts (the block parts are not copied):
 * header, CRLF, block..., CRLF CRLF (the block from RECORD_BLOCK_START). Content-Length is the block's length.
 */
export function recordParts(fields: RecordFields, block: readonly Uint8Array[]): Uint8Array[] {
  let length = 0;
  for (const part of block) length += part.length;
  const lines: [string, string][] = [
    ['WARC-Type', fields.type],
    ['WARC-Record-ID', fields.recordId],
    ['WARC-Date', warcDate(fields.date)],
  ];
  const add = (name: string, value: string | null | undefined): void => {
    if (value !== undefined && value !== null) lines.push([name, value]);
  };
  add('WARC-Filename', fields.filename);
  add('WARC-Target-URI', fields.targetUri);
  add('WARC-IP-Address', fields.ipAddress);
  add('WARC-Concurrent-To', fields.concurrentTo);
  add('WARC-Profile', fields.profile === undefined ? undefined : REVISIT_PROFILES[fields.profile]);
  add('WARC-Refers-To', fields.refersTo);
  add('WARC-Refers-To-Target-URI', fields.refersToTargetUri);
  add('WARC-Refers-To-Date', fields.refersToDate === undefined ? undefined : warcDate(fields.refersToDate));
  add('Content-Type', fields.contentType);
  add('WARC-Block-Digest', fields.blockDigest ?? sha1Digest(block));
  add('WARC-Payload-Digest', fields.payloadDigest);
  add('WARC-Truncated', fields.truncated);
  add('Content-Length', String(length));
  let header = `${WARC_VERSION}\r\n`;
  for (const [name, value] of lines) {
    if (/[\r\n]/.test(value)) throw new WarcError('WARC_EXCHANGE_INVALID', `${name} would contain a line break: ${JSON.stringify(value.slice(0, 200))}`);
    header += `${name}: ${value}\r\n`;
  }
  return [Buffer.from(header, 'utf8'), CRLF, ...block, END];
}
