/**
 * Signed requests for the fetcher API: pure functions both sides use, the fetcher to sign
 * (fetcher/queue-client.ts) and the queue server to verify (queue-server/api/request-auth.ts).
 *
 * The scheme, version 1. Every request carries five headers:
 *
 *   X-Petrel-Timestamp   ms since epoch on the sender's clock, decimal
 *   X-Petrel-Nonce       16 random bytes, base64url (22 characters), new for every attempt
 *   X-Petrel-Fetcher-Id  the sender's fetcher id (the `fetcherId` of its bodies)
 *   X-Petrel-Key-Id      optional: which secret signed (keyIdOf), so a wrong secret is named as such
 *   X-Petrel-Signature   base64url(HMAC-SHA-256(secret, string to sign)), 43 characters
 *
 * and the string to sign is seven lines joined by LF (no field can hold an LF: each is checked):
 *
 *   PETREL-HMAC-SHA256-1        the scheme, so a signature can never be taken for another version's
 *   POST                        the method, upper case
 *   /api/v1/claim               the request target exactly as sent: path and query
 *   9f86d0...                   hex SHA-256 of the body bytes exactly as sent (gzip-compressed when
 *                               sent so; the empty body's digest for a GET)
 *   1700000000000               the timestamp header
 *   Zq3...                      the nonce header
 *   fetcher-1-ab12cd34          the fetcher id header
 *
 * The secret is the content of `fetcher.token`; it never crosses the wire. The queue server accepts a
 * request only if the signature is right (compared in constant time), the timestamp is within
 * MAX_CLOCK_SKEW_MS of its own clock, and it has not seen the nonce before within that window. So a
 * captured request can be neither altered (method, path, body and sender are signed) nor replayed
 * (its nonce is remembered until its timestamp is stale, after which the timestamp refuses it).
 *
 * Why not a bearer token: a bearer token is the secret itself, sent with every request; whoever reads
 * one request (a proxy log, a debugging dump, a network without TLS) holds the fleet's key forever.
 * Why not Yioop's scheme (an MD5 of the secret and the current hour, sent in the query string): that
 * token is valid for an hour for any request, lands in access logs, does not cover the body, and MD5
 * is no MAC; anyone who sees one request may send anything for the rest of the hour. Here a captured
 * request is worth exactly that one request, once, within five minutes.
 *
 * This file reads no clock: `now` and the nonce are parameters (newNonce draws a fresh one).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_SCHEME = 'PETREL-HMAC-SHA256-1';

/** Header names, lower case as Node presents them. */
export const SIGNATURE_HEADERS = {
  timestamp: 'x-petrel-timestamp',
  nonce: 'x-petrel-nonce',
  fetcherId: 'x-petrel-fetcher-id',
  keyId: 'x-petrel-key-id',
  signature: 'x-petrel-signature',
} as const;

/** A request whose timestamp is further than this from the queue server's clock is refused, ms. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const TIMESTAMP = /^\d{1,16}$/;
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const FETCHER_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const KEY_ID = /^[0-9a-f]{16}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;
const METHOD = /^[A-Z]{1,16}$/;
/** A request target: printable ASCII without spaces (so no LF either), starting with a slash. */
const PATH = /^\/[\x21-\x7e]{0,4095}$/;

/** What the signature covers. */
export interface SignedParts {
  readonly method: string;
  /** Path and query, exactly as sent. */
  readonly path: string;
  /** Hex SHA-256 of the body bytes as sent. */
  readonly bodyDigest: string;
  /** ms since epoch, sender's clock */
  readonly timestamp: number;
  readonly nonce: string;
  readonly fetcherId: string;
}

/** The signature headers of a request, checked for shape (not yet for truth). */
export interface SignatureHeaders {
  readonly timestamp: number;
  readonly nonce: string;
  readonly fetcherId: string;
  readonly keyId: string | null;
  readonly signature: string;
}

export function bodyDigest(body: Uint8Array): string {
  return createHash('sha256').update(body).digest('hex');
}

/** 128 random bits, base64url. */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** A public fingerprint of a secret: 16 hex digits of a domain-separated SHA-256 (reveals nothing of it). */
export function keyIdOf(secret: string): string {
  return createHash('sha256').update(`${SIGNATURE_SCHEME} key id\n${secret}`).digest('hex').slice(0, 16);
}

export function stringToSign(parts: SignedParts): string {
  if (!METHOD.test(parts.method)) throw new Error(`cannot sign method ${JSON.stringify(parts.method)}`);
  if (!PATH.test(parts.path)) throw new Error(`cannot sign request target ${JSON.stringify(parts.path.slice(0, 100))}`);
  if (!/^[0-9a-f]{64}$/.test(parts.bodyDigest)) throw new Error('body digest must be 64 hex digits');
  if (!Number.isSafeInteger(parts.timestamp) || parts.timestamp < 0) throw new Error(`bad timestamp ${parts.timestamp}`);
  if (!NONCE.test(parts.nonce)) throw new Error('nonce must be 22 base64url characters');
  if (!FETCHER_ID.test(parts.fetcherId)) throw new Error(`cannot sign fetcher id ${JSON.stringify(parts.fetcherId)}`);
  return [SIGNATURE_SCHEME, parts.method, parts.path, parts.bodyDigest, String(parts.timestamp), parts.nonce, parts.fetcherId].join('\n');
}

function mac(secret: string, parts: SignedParts): Buffer {
  return createHmac('sha256', secret).update(stringToSign(parts)).digest();
}

export function computeSignature(secret: string, parts: SignedParts): string {
  return mac(secret, parts).toString('base64url');
}

/** True when `presented` is the signature of `parts` under `secret`; constant time in the signature. */
export function signatureMatches(secret: string, parts: SignedParts, presented: string): boolean {
  if (!SIGNATURE.test(presented)) return false;
  const expected = mac(secret, parts);
  const given = Buffer.from(presented, 'base64url');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export interface SignOptions {
  readonly secret: string;
  readonly method: string;
  readonly path: string;
  /** The body bytes exactly as they will be sent; empty for none. */
  readonly body: Uint8Array;
  readonly fetcherId: string;
  /** ms since epoch */
  readonly now: number;
  /** Default: a fresh one. */
  readonly nonce?: string;
}

/** The headers that sign one request (send each attempt with new ones). */
export function signRequest(options: SignOptions): Record<string, string> {
  const parts: SignedParts = {
    method: options.method,
    path: options.path,
    bodyDigest: bodyDigest(options.body),
    timestamp: options.now,
    nonce: options.nonce ?? newNonce(),
    fetcherId: options.fetcherId,
  };
  return {
    [SIGNATURE_HEADERS.timestamp]: String(parts.timestamp),
    [SIGNATURE_HEADERS.nonce]: parts.nonce,
    [SIGNATURE_HEADERS.fetcherId]: parts.fetcherId,
    [SIGNATURE_HEADERS.keyId]: keyIdOf(options.secret),
    [SIGNATURE_HEADERS.signature]: computeSignature(options.secret, parts),
  };
}

/** True when a request carries any signature header (it then must be a valid signed request). */
export function hasSignatureHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  return headers[SIGNATURE_HEADERS.signature] !== undefined || headers[SIGNATURE_HEADERS.timestamp] !== undefined;
}

/** The signature headers, or a one-line reason why they are missing or malformed. */
export function readSignatureHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): SignatureHeaders | { readonly problem: string } {
  const one = (name: string): string | undefined => {
    const value = headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const timestamp = one(SIGNATURE_HEADERS.timestamp);
  const nonce = one(SIGNATURE_HEADERS.nonce);
  const fetcherId = one(SIGNATURE_HEADERS.fetcherId);
  const keyId = one(SIGNATURE_HEADERS.keyId);
  const signature = one(SIGNATURE_HEADERS.signature);
  if (signature === undefined) return { problem: 'unsigned request: the fetcher API needs X-Petrel-Signature (a bearer token is not accepted here; update the fetcher)' };
  if (!SIGNATURE.test(signature)) return { problem: 'X-Petrel-Signature must be 43 base64url characters' };
  if (timestamp === undefined || !TIMESTAMP.test(timestamp)) return { problem: 'X-Petrel-Timestamp must be ms since epoch' };
  if (nonce === undefined || !NONCE.test(nonce)) return { problem: 'X-Petrel-Nonce must be 22 base64url characters (128 random bits)' };
  if (fetcherId === undefined || !FETCHER_ID.test(fetcherId)) return { problem: 'X-Petrel-Fetcher-Id must be 1-64 letters, digits, _ . : -' };
  if (keyId !== undefined && !KEY_ID.test(keyId)) return { problem: 'X-Petrel-Key-Id must be 16 hex digits' };
  return { timestamp: Number(timestamp), nonce, fetcherId, keyId: keyId ?? null, signature };
}

/** The request target a server can sign-check: printable, no spaces, starting with a slash. */
export function isSignablePath(path: string): boolean {
  return PATH.test(path);
}

export function isFetcherId(id: string): boolean {
  return FETCHER_ID.test(id);
}
