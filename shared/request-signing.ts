/**
 * Signed requests for the fetcher API and the status routes: pure functions both sides use, the
 * fetcher (and `petrel crawl`'s progress) to sign (fetcher/queue-client.ts) and the queue server to
 * verify (queue-server/api/request-auth.ts).
 *
 * The scheme, version 2. The signature covers the request line and the header fields that say how
 * the body is to be read, among them a digest of the body (RFC 9530 section 2, `Content-Digest`), so
 * the queue server can authenticate a request from its header section alone, before it reads a byte
 * of the body, and then check the body against the digest while it streams in. This is the shape of
 * RFC 9421 (HTTP Message Signatures): a signature over chosen components, the body covered through
 * its Content-Digest, never directly. We keep RFC 9421's idea, not its wire syntax (Signature-Input,
 * structured fields): both ends are Petrel, and a fixed list of lines leaves nothing to negotiate.
 *
 * Every request carries:
 *
 *   X-Petrel-Timestamp   ms since epoch on the sender's clock, decimal
 *   X-Petrel-Nonce       16 random bytes, base64url (22 characters), new for every attempt
 *   X-Petrel-Fetcher-Id  the sender's fetcher id (the `fetcherId` of its bodies)
 *   X-Petrel-Instance    the queue server instance the request is meant for (see below)
 *   X-Petrel-Key-Id      optional: which secret signed (keyIdOf), so a wrong secret is named as such
 *   X-Petrel-Signature   base64url(HMAC-SHA-256(secret, string to sign)), 43 characters
 *   Content-Digest       with a body: `sha-256=:<base64 of the SHA-256 of the body bytes as sent>:`
 *
 * and the string to sign is eleven lines joined by LF (no field can hold an LF: each is checked):
 *
 *   PETREL-HMAC-SHA256-2        the scheme, so a signature can never be taken for another version's
 *   kq1...                      X-Petrel-Instance
 *   POST                        the method, upper case
 *   /api/v1/claim               the request target exactly as sent: path and query
 *   application/json            Content-Type as sent (empty without one)
 *   gzip                        Content-Encoding as sent (empty without one)
 *   1234                        Content-Length (0 without a body)
 *   sha-256=:X48E9q...=:        Content-Digest as sent (empty without a body): over the bytes as sent,
 *                               gzip-compressed when sent so (RFC 9530's content, not representation)
 *   1700000000000               the timestamp header
 *   Zq3...                      the nonce header
 *   fetcher-1-ab12cd34          the fetcher id header
 *
 * The secret is the content of `fetcher.token`; it never crosses the wire. The queue server accepts a
 * request only if the signature is right (compared in constant time), the instance is its own, the
 * timestamp is within MAX_CLOCK_SKEW_MS of its own clock, it has not seen the nonce before, and the
 * body has the signed length and digest. So a captured request can be neither altered (method,
 * target, body, how the body is encoded and sender are signed) nor replayed: within one queue server
 * process its nonce is remembered until its timestamp is stale; after a restart its instance is not
 * the new process's.
 *
 * Why an instance id rather than "refuse timestamps older than the process start": nonces are
 * remembered in memory only, so after a restart the timestamp window alone would let a request
 * captured in the last five minutes in again. A start-time cut-off closes that only for fetchers
 * whose clock is not ahead of the queue server's (one 3 minutes fast leaves its last 3 minutes of
 * requests replayable), and refuses every fetcher whose clock is behind until its clock passes the
 * start. The instance (128 random bits drawn at start, sent in the clear on every answer) depends on
 * no clock: a request signed for another instance is refused, and a fetcher that meets a new
 * instance (401 unknown-instance, which names it) signs its next attempt for it.
 *
 * Why not a bearer token: a bearer token is the secret itself, sent with every request; whoever reads
 * one request (a proxy log, a debugging dump, a network without TLS) holds the fleet's key forever.
 * Why not Yioop's scheme (an MD5 of the secret and the current hour, sent in the query string): that
 * token is valid for an hour for any request, lands in access logs, does not cover the body, and MD5
 * is no MAC; anyone who sees one request may send anything for the rest of the hour. Here a captured
 * request is worth exactly that one request, once, within five minutes, to the same process.
 *
 * This file reads no clock: `now` and the nonce are parameters (newNonce draws a fresh one).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const SIGNATURE_SCHEME = 'PETREL-HMAC-SHA256-2';

/** Header names, lower case as Node presents them. */
export const SIGNATURE_HEADERS = {
  timestamp: 'x-petrel-timestamp',
  nonce: 'x-petrel-nonce',
  fetcherId: 'x-petrel-fetcher-id',
  instance: 'x-petrel-instance',
  keyId: 'x-petrel-key-id',
  signature: 'x-petrel-signature',
  contentDigest: 'content-digest',
} as const;

/** A request whose timestamp is further than this from the queue server's clock is refused, ms. */
export const MAX_CLOCK_SKEW_MS = 5 * 60 * 1000;

const TIMESTAMP = /^\d{1,16}$/;
const NONCE = /^[A-Za-z0-9_-]{22}$/;
const INSTANCE = /^[A-Za-z0-9_-]{22}$/;
const FETCHER_ID = /^[A-Za-z0-9_.:-]{1,64}$/;
const KEY_ID = /^[0-9a-f]{16}$/;
const SIGNATURE = /^[A-Za-z0-9_-]{43}$/;
const METHOD = /^[A-Z]{1,16}$/;
/** A request target: printable ASCII without spaces (so no LF either), starting with a slash. */
const PATH = /^\/[\x21-\x7e]{0,4095}$/;
/** Content-Type and Content-Encoding as signed: printable ASCII (spaces allowed), bounded. */
const FIELD_VALUE = /^[\x20-\x7e]{0,256}$/;
/**
 * The one Content-Digest we accept: a single sha-256 member whose value is an RFC 8941 byte sequence
 * (standard base64 between colons; 32 bytes are 43 characters and one `=`). RFC 9530 allows a list of
 * algorithms; a sender that holds our secret has no reason to send another.
 */
const CONTENT_DIGEST = /^sha-256=:[A-Za-z0-9+/]{43}=:$/;

/** What the signature covers. */
export interface SignedParts {
  readonly instance: string;
  readonly method: string;
  /** Path and query, exactly as sent. */
  readonly path: string;
  /** Content-Type as sent, '' without one. */
  readonly contentType: string;
  /** Content-Encoding as sent, '' without one. */
  readonly contentEncoding: string;
  /** Body bytes as sent. */
  readonly contentLength: number;
  /** The Content-Digest field as sent, '' without a body. */
  readonly contentDigest: string;
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
  /** null when the sender does not know the instance yet (it learns it from the refusal). */
  readonly instance: string | null;
  readonly keyId: string | null;
  readonly signature: string;
  /** The Content-Digest field, '' when absent. */
  readonly contentDigest: string;
}

/** The Content-Digest field value for these body bytes (RFC 9530 section 2, sha-256). */
export function contentDigestOf(body: Uint8Array): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}

/** The SHA-256 a well-formed Content-Digest field declares, or null. */
export function declaredSha256(contentDigest: string): Buffer | null {
  if (!CONTENT_DIGEST.test(contentDigest)) return null;
  return Buffer.from(contentDigest.slice('sha-256=:'.length, -1), 'base64');
}

/** 128 random bits, base64url. */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** A queue server instance id: 128 random bits, base64url, drawn once per process. */
export function newInstanceId(): string {
  return randomBytes(16).toString('base64url');
}

export function isInstanceId(value: string): boolean {
  return INSTANCE.test(value);
}

/**
 * A public fingerprint of a secret: 16 hex digits of a domain-separated SHA-256 (reveals nothing of it).
 * Derived as scheme 1 derived it, so a key id names the same secret in every version, and a fetcher
 * of another version is told that, not that its secret is wrong.
 */
export function keyIdOf(secret: string): string {
  return createHash('sha256').update(`PETREL-HMAC-SHA256-1 key id\n${secret}`).digest('hex').slice(0, 16);
}

export function stringToSign(parts: SignedParts): string {
  if (!INSTANCE.test(parts.instance)) throw new Error('instance must be 22 base64url characters');
  if (!METHOD.test(parts.method)) throw new Error(`cannot sign method ${JSON.stringify(parts.method)}`);
  if (!PATH.test(parts.path)) throw new Error(`cannot sign request target ${JSON.stringify(parts.path.slice(0, 100))}`);
  if (!FIELD_VALUE.test(parts.contentType)) throw new Error('cannot sign this Content-Type');
  if (!FIELD_VALUE.test(parts.contentEncoding)) throw new Error('cannot sign this Content-Encoding');
  if (!Number.isSafeInteger(parts.contentLength) || parts.contentLength < 0) throw new Error(`bad content length ${parts.contentLength}`);
  if (parts.contentDigest !== '' && !CONTENT_DIGEST.test(parts.contentDigest)) throw new Error('content digest must be sha-256=:base64:');
  if (!Number.isSafeInteger(parts.timestamp) || parts.timestamp < 0) throw new Error(`bad timestamp ${parts.timestamp}`);
  if (!NONCE.test(parts.nonce)) throw new Error('nonce must be 22 base64url characters');
  if (!FETCHER_ID.test(parts.fetcherId)) throw new Error(`cannot sign fetcher id ${JSON.stringify(parts.fetcherId)}`);
  return [
    SIGNATURE_SCHEME,
    parts.instance,
    parts.method,
    parts.path,
    parts.contentType,
    parts.contentEncoding,
    String(parts.contentLength),
    parts.contentDigest,
    String(parts.timestamp),
    parts.nonce,
    parts.fetcherId,
  ].join('\n');
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
  /** The queue server instance to sign for (from its X-Petrel-Instance answer header). */
  readonly instance: string;
  readonly method: string;
  readonly path: string;
  /** The body bytes exactly as they will be sent; none for a GET. */
  readonly body?: Uint8Array;
  /** Sent (and signed) as Content-Type with a body. */
  readonly contentType?: string;
  /** Sent (and signed) as Content-Encoding, e.g. gzip. */
  readonly contentEncoding?: string;
  readonly fetcherId: string;
  /** ms since epoch */
  readonly now: number;
  /** Default: a fresh one. */
  readonly nonce?: string;
}

/**
 * The headers that sign one request (send each attempt with new ones): the X-Petrel-* fields, and
 * with a body Content-Digest, Content-Type and Content-Encoding as signed. The body must go out with
 * `Content-Length: body.length` (every HTTP client sends that for a buffer), not chunked.
 */
export function signRequest(options: SignOptions): Record<string, string> {
  const body = options.body;
  const parts: SignedParts = {
    instance: options.instance,
    method: options.method,
    path: options.path,
    contentType: options.contentType ?? '',
    contentEncoding: options.contentEncoding ?? '',
    contentLength: body?.length ?? 0,
    contentDigest: body === undefined ? '' : contentDigestOf(body),
    timestamp: options.now,
    nonce: options.nonce ?? newNonce(),
    fetcherId: options.fetcherId,
  };
  const headers: Record<string, string> = {
    [SIGNATURE_HEADERS.timestamp]: String(parts.timestamp),
    [SIGNATURE_HEADERS.nonce]: parts.nonce,
    [SIGNATURE_HEADERS.fetcherId]: parts.fetcherId,
    [SIGNATURE_HEADERS.instance]: parts.instance,
    [SIGNATURE_HEADERS.keyId]: keyIdOf(options.secret),
    [SIGNATURE_HEADERS.signature]: computeSignature(options.secret, parts),
  };
  if (parts.contentDigest !== '') headers[SIGNATURE_HEADERS.contentDigest] = parts.contentDigest;
  if (parts.contentType !== '') headers['content-type'] = parts.contentType;
  if (parts.contentEncoding !== '') headers['content-encoding'] = parts.contentEncoding;
  return headers;
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
  const instance = one(SIGNATURE_HEADERS.instance);
  const keyId = one(SIGNATURE_HEADERS.keyId);
  const signature = one(SIGNATURE_HEADERS.signature);
  const contentDigest = one(SIGNATURE_HEADERS.contentDigest);
  if (signature === undefined) return { problem: 'unsigned request: this route needs X-Petrel-Signature (a bearer token is not accepted here; update the fetcher)' };
  if (!SIGNATURE.test(signature)) return { problem: 'X-Petrel-Signature must be 43 base64url characters' };
  if (timestamp === undefined || !TIMESTAMP.test(timestamp)) return { problem: 'X-Petrel-Timestamp must be ms since epoch' };
  if (nonce === undefined || !NONCE.test(nonce)) return { problem: 'X-Petrel-Nonce must be 22 base64url characters (128 random bits)' };
  if (fetcherId === undefined || !FETCHER_ID.test(fetcherId)) return { problem: 'X-Petrel-Fetcher-Id must be 1-64 letters, digits, _ . : -' };
  if (instance !== undefined && !INSTANCE.test(instance)) return { problem: 'X-Petrel-Instance must be 22 base64url characters' };
  if (keyId !== undefined && !KEY_ID.test(keyId)) return { problem: 'X-Petrel-Key-Id must be 16 hex digits' };
  if (contentDigest !== undefined && !CONTENT_DIGEST.test(contentDigest)) return { problem: 'Content-Digest must be one sha-256 member, sha-256=:<base64>: (RFC 9530)' };
  return { timestamp: Number(timestamp), nonce, fetcherId, instance: instance ?? null, keyId: keyId ?? null, signature, contentDigest: contentDigest ?? '' };
}

/** The request target a server can sign-check: printable, no spaces, starting with a slash. */
export function isSignablePath(path: string): boolean {
  return PATH.test(path);
}

/** A Content-Type or Content-Encoding value a signature can cover. */
export function isSignableFieldValue(value: string): boolean {
  return FIELD_VALUE.test(value);
}

export function isFetcherId(id: string): boolean {
  return FETCHER_ID.test(id);
}
