/**
 * Verifying signed requests (the scheme: shared/request-signing.ts) on the fetcher API and the status
 * routes, as express middleware. A POST to a fetcher route passes these steps, in order; the first
 * that fails answers, and nothing of the crawl has changed by then. Steps 1-8 read headers only: a
 * request without the secret is refused before a byte of its body is read, and its connection is
 * closed after the answer, so whatever it sends after its headers is discarded, never buffered.
 *
 *   1. framing: Content-Length given, no Transfer-Encoding     411 length-required
 *   2. declared size within the route's limit                   413 body-too-large (the route's limit)
 *   3. signature headers present and well formed                 401 bad-signature
 *   4. timestamp within MAX_CLOCK_SKEW_MS of our clock           401 stale-timestamp (+ serverTime, skewMs)
 *   5. key id, when sent, names our secret                       401 unknown-key
 *   6. signed for this process (X-Petrel-Instance)               401 unknown-instance (+ instance)
 *   7. nonce not seen before (cheap early look)                  401 replayed-nonce
 *   8. HMAC over instance, method, target, Content-Type,        401 bad-signature
 *      Content-Encoding, Content-Length, Content-Digest,
 *      timestamp, nonce, fetcher id, in constant time
 *   9. reserve the declared bytes in the body budget             503 busy (+ Retry-After)
 *  10. remember the nonce (atomic check-and-set)                 401 replayed-nonce, 503 nonce-memory-full
 *  11. read the body, hashing it as it streams in; its SHA-256   401 bad-digest
 *      is the signed Content-Digest's
 *  12. decode: Content-Type JSON, UTF-8, Content-Encoding        415 unsupported-*, 400 bad-request,
 *      inflated up to the route's limit (inflated bytes join        413 body-too-large, 503 busy
 *      the reservation), shape within bounded-json.ts's bounds,     413 json-too-complex
 *      strict JSON; then req.body                                   400 invalid-json
 *      (a route that takes a binary frame, Content-Type its
 *      frameType: inflated the same way, then req.body is a
 *      FrameBody the route decodes, results-body.ts)
 *  13. the body's fetcherId, if well formed, is the signed one   400 fetcher-id-mismatch
 *      (a frame's: checked by the route once decoded)
 *
 * A nonce is remembered only for a request whose signature is right (step 10 after 8), so nobody
 * without the secret can fill the nonce memory or burn a fetcher's nonces. The reservation of step 9
 * is released when the answer has gone out.
 *
 * The status routes take a signed GET the same way (steps 3-8 and 10, no body allowed); fetchers and
 * `petrel crawl`'s progress use it. A bearer token there is the admin token only (app.ts).
 */
import { createHash } from 'node:crypto';
import { createGunzip, createInflate } from 'node:zlib';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  declaredSha256,
  isFetcherId,
  isSignableFieldValue,
  isSignablePath,
  keyIdOf,
  MAX_CLOCK_SKEW_MS,
  readSignatureHeaders,
  SIGNATURE_HEADERS,
  SIGNATURE_SCHEME,
  signatureMatches,
  type SignatureHeaders,
} from '../../shared/request-signing.js';
import { systemClock } from '../crawl/crawl-service.js';
import { HttpError } from './http-errors.js';
import { DEFAULT_NONCE_CAPACITY, NonceMemory } from '../auth/nonce-memory.js';
import { BodyBudget, type Reservation } from './body-budget.js';
import { checkJsonShape, JSON_BOUNDS, type JsonBounds } from './bounded-json.js';

export interface RequestAuthOptions {
  /** The shared secret: the content of fetcher.token. */
  readonly secret: string;
  /** This process's instance id (newInstanceId), sent on every answer; a request signed for another is refused. */
  readonly instance: string;
  /** ms since epoch (the system clock by default). */
  readonly clock?: () => number;
  /** Default: a memory of DEFAULT_NONCE_CAPACITY nonces over MAX_CLOCK_SKEW_MS. */
  readonly nonces?: NonceMemory;
  /** Body bytes held at once across all requests (default DEFAULT_BODY_BYTES_IN_FLIGHT). */
  readonly budget?: BodyBudget;
  /** Default JSON_BOUNDS. */
  readonly jsonBounds?: JsonBounds;
}

/** What a verified request carries on to its handler. */
export type SignedRequest = Request & { signedFetcherId?: string };

/** Seconds a fetcher is told to wait when the body budget is full (it retries then, signing anew). */
const BUSY_RETRY_AFTER_S = 1;

export class RequestAuth {
  readonly #secret: string;
  readonly #keyId: string;
  readonly #instance: string;
  readonly #clock: () => number;
  readonly #nonces: NonceMemory;
  readonly #budget: BodyBudget;
  readonly #jsonBounds: JsonBounds;

  constructor(options: RequestAuthOptions) {
    this.#secret = options.secret;
    this.#keyId = keyIdOf(options.secret);
    this.#instance = options.instance;
    this.#clock = options.clock ?? systemClock;
    this.#nonces = options.nonces ?? new NonceMemory({ windowMs: MAX_CLOCK_SKEW_MS, capacity: DEFAULT_NONCE_CAPACITY });
    this.#budget = options.budget ?? new BodyBudget();
    this.#jsonBounds = options.jsonBounds ?? JSON_BOUNDS;
  }

  get budget(): BodyBudget {
    return this.#budget;
  }

  /**
   * Middleware for a signed POST with a JSON body of at most `maxBodyBytes` (on the wire and inflated):
   * on success `req.body` is the parsed JSON, or, for a body of Content-Type `frameType` where the route
   * takes one, a FrameBody.
   */
  signedJson(maxBodyBytes: number, options: { readonly frameType?: string } = {}): RequestHandler {
    const frameType = options.frameType ?? null;
    return (req: SignedRequest, res: Response, next: NextFunction) => {
      this.#signedJson(req, res, maxBodyBytes, frameType).then(() => next(), next);
    };
  }

  /** Middleware for a signed request without a body (a GET). */
  readonly signedNoBody: RequestHandler = (req: SignedRequest, res: Response, next: NextFunction) => {
    try {
      const length = req.headers['content-length'];
      if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) {
        throw refuseUnread(res, new HttpError(400, 'bad-request', `a signed ${req.method} carries no body`));
      }
      const headers = this.#checkHeaders(req, res, 0);
      this.#remember(headers);
      req.signedFetcherId = headers.fetcherId;
      next();
    } catch (error) {
      next(error);
    }
  };

  async #signedJson(req: SignedRequest, res: Response, maxBodyBytes: number, frameType: string | null): Promise<void> {
    // Steps 1-2: the framing tells how many bytes will follow; nothing is read without knowing it.
    const declared = req.headers['content-length'];
    if (req.headers['transfer-encoding'] !== undefined || declared === undefined || !/^\d{1,16}$/.test(declared)) {
      throw refuseUnread(res, new HttpError(411, 'length-required', 'a signed POST states its Content-Length (and is not chunked): the length is signed'));
    }
    const length = Number(declared);
    if (length > maxBodyBytes) throw refuseUnread(res, tooLarge(maxBodyBytes));
    // Steps 3-8: who sent it, from headers alone.
    const headers = this.#checkHeaders(req, res, length);
    if (headers.contentDigest === '') throw refuseUnread(res, new HttpError(401, 'bad-digest', 'a signed POST carries Content-Digest: sha-256=:<base64>: (RFC 9530) over its body'));
    // Step 9: room for the body, before reading it.
    const reservation = this.#budget.reserve(length);
    if (reservation === null) throw refuseUnread(res, busy(this.#budget.capacity));
    res.once('close', () => reservation.release());
    // Step 10.
    this.#remember(headers);
    // Step 11: the body, checked against the digest the signature covers.
    const raw = await readDigestedBody(req, length);
    const expected = declaredSha256(headers.contentDigest)!;
    if (!raw.sha256.equals(expected)) {
      throw new HttpError(401, 'bad-digest', 'the body does not match its signed Content-Digest (altered or cut in flight)');
    }
    // Step 12.
    const body = await this.#decode(req, raw.bytes, maxBodyBytes, reservation, frameType);
    // Step 13. A malformed fetcherId is left to the protocol schema (400 invalid-body naming the field).
    const bodyFetcherId = typeof body === 'object' && body !== null && 'fetcherId' in body ? body.fetcherId : undefined;
    if (typeof bodyFetcherId === 'string' && isFetcherId(bodyFetcherId) && bodyFetcherId !== headers.fetcherId) {
      throw new HttpError(400, 'fetcher-id-mismatch', 'the body\'s fetcherId differs from the signed X-Petrel-Fetcher-Id');
    }
    req.body = body;
    req.signedFetcherId = headers.fetcherId;
  }

  /** Steps 3-8: everything that needs no body. Every refusal here closes the connection after the answer. */
  #checkHeaders(req: Request, res: Response, contentLength: number): SignatureHeaders {
    const headers = readSignatureHeaders(req.headers);
    if ('problem' in headers) throw refuseUnread(res, new HttpError(401, 'bad-signature', headers.problem));
    const now = this.#clock();
    const skewMs = headers.timestamp - now;
    if (Math.abs(skewMs) > MAX_CLOCK_SKEW_MS) {
      const seconds = Math.round(Math.abs(skewMs) / 1000);
      throw refuseUnread(res, new HttpError(
        401,
        'stale-timestamp',
        `request timestamp is ${seconds} s ${skewMs < 0 ? 'behind' : 'ahead of'} the queue server's clock (at most ${MAX_CLOCK_SKEW_MS / 1000} s allowed): ` +
          'set the fetcher machine\'s clock (NTP); a captured request is refused this way too',
        { details: { serverTime: now, skewMs } },
      ));
    }
    if (headers.keyId !== null && headers.keyId !== this.#keyId) {
      throw refuseUnread(res, new HttpError(401, 'unknown-key', `signed with another secret (key id ${headers.keyId}): give the fetcher this queue server's <data>/fetcher.token`));
    }
    if (headers.instance !== this.#instance) {
      const why = headers.instance === null
        ? `signed without X-Petrel-Instance (a fetcher older than signing scheme ${SIGNATURE_SCHEME} must be updated)`
        : 'signed for another queue server process (it restarted, or this is a replay)';
      throw refuseUnread(res, new HttpError(401, 'unknown-instance', `${why}: sign again for instance ${this.#instance}`, { details: { instance: this.#instance } }));
    }
    if (this.#nonces.seen(headers.nonce, headers.timestamp)) throw refuseUnread(res, replayed());
    const path = req.originalUrl;
    const contentType = req.headers['content-type'] ?? '';
    const contentEncoding = req.headers['content-encoding'] ?? '';
    const parts = {
      instance: this.#instance,
      method: req.method,
      path,
      contentType,
      contentEncoding,
      contentLength,
      contentDigest: headers.contentDigest,
      timestamp: headers.timestamp,
      nonce: headers.nonce,
      fetcherId: headers.fetcherId,
    };
    const signable = isSignablePath(path) && isSignableFieldValue(contentType) && isSignableFieldValue(contentEncoding);
    if (!signable || !signatureMatches(this.#secret, parts, headers.signature)) {
      throw refuseUnread(res, new HttpError(
        401,
        'bad-signature',
        'signature does not match the request (method, target, Content-Type, Content-Encoding, Content-Length, Content-Digest, timestamp, nonce, fetcher id, instance) under this queue server\'s fetcher.token',
      ));
    }
    return headers;
  }

  /** Step 10. */
  #remember(headers: SignatureHeaders): void {
    const verdict = this.#nonces.remember(headers.nonce, headers.timestamp, this.#clock());
    if (verdict === 'replayed') throw replayed();
    if (verdict === 'full') {
      throw new HttpError(503, 'nonce-memory-full', `more than ${this.#nonces.capacity} signed requests within ${(2 * MAX_CLOCK_SKEW_MS) / 60_000} minutes: try again shortly`, {
        headers: { 'Retry-After': '30' },
      });
    }
  }

  /** Step 12: the body as JSON (or, where the route takes them, a binary frame), after the signature and digest checks. */
  async #decode(req: Request, raw: Buffer, maxBodyBytes: number, reservation: Reservation, frameType: string | null): Promise<unknown> {
    const isFrame = frameType !== null && raw.length > 0 && req.is(frameType) === frameType;
    if (!isFrame && (raw.length === 0 || req.is('application/json') !== 'application/json')) {
      throw new HttpError(400, 'bad-request', `expected a JSON object body with Content-Type: application/json${frameType === null ? '' : ` (or a frame, ${frameType})`}`);
    }
    const charset = /charset=([^;\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (!isFrame && charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') throw new HttpError(415, 'unsupported-charset', `JSON bodies are UTF-8, not ${charset.slice(0, 40)}`);
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    let bytes: Buffer;
    if (encoding === 'identity') bytes = raw;
    else if (encoding === 'gzip' || encoding === 'deflate') bytes = await inflateBounded(raw, encoding, maxBodyBytes, reservation, this.#budget.capacity);
    else throw new HttpError(415, 'unsupported-encoding', `Content-Encoding ${encoding.slice(0, 40)} is not supported (gzip, deflate, identity)`);
    if (isFrame) return new FrameBody(bytes, this.#jsonBounds);
    return parseBoundedJson(bytes, this.#jsonBounds).value;
  }
}

/**
 * A body in a route's binary frame form (Content-Type its `frameType`), verified but not decoded: the
 * route decodes it (queue-server/api/results-body.ts) and checks its fetcherId against the signed one
 * (step 13) then.
 */
export class FrameBody {
  readonly bytes: Buffer;
  readonly jsonBounds: JsonBounds;
  constructor(bytes: Buffer, jsonBounds: JsonBounds) {
    this.bytes = bytes;
    this.jsonBounds = jsonBounds;
  }
}

/**
 * JSON bytes parsed within `bounds` (bounded-json.ts), strict as express.json({ strict: true }) is:
 * UTF-8, an object or an array. Returns the value and how many values and keys it holds.
 */
export function parseBoundedJson(bytes: Uint8Array, bounds: JsonBounds): { value: unknown; tokens: number } {
  const shape = checkJsonShape(bytes, bounds);
  if (!shape.ok) throw new HttpError(413, 'json-too-complex', `request body holds ${shape.problem} (at most ${bounds.maxDepth} levels and ${bounds.maxTokens} values and keys)`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new HttpError(400, 'invalid-json', 'request body is not valid UTF-8');
  }
  // Strict JSON, as express.json({ strict: true }): an object or an array, never a bare value.
  if (!/^[\s]*[[{]/.test(text)) throw new HttpError(400, 'invalid-json', 'request body is not a JSON object or array');
  try {
    return { value: JSON.parse(text) as unknown, tokens: shape.tokens };
  } catch {
    throw new HttpError(400, 'invalid-json', 'request body is not valid JSON');
  }
}

/** Marks the answer to a request whose body was not read: the connection closes after it, so the rest of the body is discarded. */
function refuseUnread(res: Response, error: HttpError): HttpError {
  res.set('Connection', 'close');
  return error;
}

function replayed(): HttpError {
  return new HttpError(401, 'replayed-nonce', 'this nonce was used before: a request is accepted once (sign every attempt anew)');
}

export function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body-too-large', `request body larger than ${limit} bytes, this route's limit`);
}

function busy(capacity: number): HttpError {
  return new HttpError(503, 'busy', `the queue server holds ${capacity} bytes of request bodies already: try again in ${BUSY_RETRY_AFTER_S} s`, {
    headers: { 'Retry-After': String(BUSY_RETRY_AFTER_S) },
  });
}

/**
 * The body bytes exactly as sent (Node's parser delivers exactly Content-Length of them, or an
 * error when the connection ends early), with their SHA-256 computed as they arrive.
 */
function readDigestedBody(req: Request, length: number): Promise<{ bytes: Buffer; sha256: Buffer }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    const bytes = Buffer.allocUnsafe(length);
    let received = 0;
    const done = (error: Error | null) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (error === null) resolve({ bytes: bytes.subarray(0, received), sha256: hash.digest() });
      else reject(error);
    };
    const onData = (chunk: Buffer) => {
      if (received + chunk.length > length) return done(new HttpError(400, 'bad-request', 'request body longer than its Content-Length'));
      chunk.copy(bytes, received);
      received += chunk.length;
      hash.update(chunk);
    };
    const onEnd = () => done(received === length ? null : new HttpError(400, 'bad-request', 'request body shorter than its Content-Length'));
    const onError = (error: Error) => done(new HttpError(400, 'bad-request', `request body not received: ${error.message.slice(0, 100)}`));
    // 'close' before 'end': the connection went away mid-body (nothing else may fire then).
    const onClose = () => done(new HttpError(400, 'bad-request', 'request body not received: the connection closed'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/** Inflates a verified body, at most `limit` bytes; every inflated byte joins the request's reservation first. */
function inflateBounded(raw: Buffer, encoding: 'gzip' | 'deflate', limit: number, reservation: Reservation, capacity: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const inflater = encoding === 'gzip' ? createGunzip({ chunkSize: 64 * 1024 }) : createInflate({ chunkSize: 64 * 1024 });
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const fail = (error: HttpError) => {
      if (settled) return;
      settled = true;
      inflater.destroy();
      reject(error);
    };
    inflater.on('data', (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > limit) return fail(tooLarge(limit));
      if (!reservation.grow(chunk.length)) return fail(busy(capacity));
      chunks.push(chunk);
    });
    inflater.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks, total));
    });
    inflater.on('error', (error) => fail(new HttpError(400, 'bad-request', `the ${encoding} body does not inflate: ${error.message.slice(0, 100)}`)));
    inflater.end(raw);
  });
}

/** The header that names this process's instance on every answer (fetchers sign for it). */
export const INSTANCE_HEADER = SIGNATURE_HEADERS.instance;
