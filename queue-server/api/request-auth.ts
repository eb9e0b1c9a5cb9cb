/**
 * Verifying signed requests (the scheme: shared/request-signing.ts) on the fetcher API, as express
 * middleware. A POST to a fetcher route passes these steps, in order; the first that fails answers,
 * and nothing of the crawl has changed by then:
 *
 *   1. declared size: Content-Length beyond the limit        413 body-too-large (body never read)
 *   2. signature headers present and well formed             401 bad-signature
 *   3. timestamp within MAX_CLOCK_SKEW_MS of our clock       401 stale-timestamp (+ serverTime, skewMs)
 *   4. key id, when sent, names our secret                   401 unknown-key
 *   5. nonce not seen before (cheap early look)              401 replayed-nonce
 *   6. read the body bytes as sent, up to the limit          413 body-too-large
 *   7. HMAC over method, target, body digest, timestamp,     401 bad-signature
 *      nonce, fetcher id, compared in constant time
 *   8. remember the nonce (atomic check-and-set)             401 replayed-nonce, 503 nonce-memory-full
 *   9. decode: Content-Type JSON, Content-Encoding inflated   400 bad-request, 415 unsupported-encoding,
 *      up to the limit, strict JSON; then req.body              413 body-too-large, 400 invalid-json
 *  10. the body's fetcherId, if well formed, is the signed one  400 fetcher-id-mismatch
 *
 * The digest is over the bytes on the wire, before inflating: body-parser hands its `verify` callback
 * the inflated bytes, and refuses compressed bodies when told not to inflate, so the body is read
 * here. A nonce is remembered only for a request whose signature is right (step 8 after 7), so
 * nobody without the secret can fill the nonce memory or burn a fetcher's nonces.
 *
 * The status routes accept a signed GET the same way (steps 2-8 with an empty body), or a bearer
 * token (http-app.ts), which programs and `petrel crawl`'s progress use.
 */
import { promisify } from 'node:util';
import { gunzip, inflate } from 'node:zlib';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import {
  bodyDigest,
  isFetcherId,
  isSignablePath,
  keyIdOf,
  MAX_CLOCK_SKEW_MS,
  readSignatureHeaders,
  signatureMatches,
  type SignatureHeaders,
} from '../../shared/request-signing.js';
import { systemClock } from '../crawl/crawl-service.js';
import { HttpError } from './http-errors.js';
import { DEFAULT_NONCE_CAPACITY, NonceMemory } from '../auth/nonce-memory.js';

export interface RequestAuthOptions {
  /** The shared secret: the content of fetcher.token. */
  readonly secret: string;
  /** Largest body accepted, on the wire and once inflated, bytes. */
  readonly maxBodyBytes: number;
  /** ms since epoch (the system clock by default). */
  readonly clock?: () => number;
  /** Default: a memory of DEFAULT_NONCE_CAPACITY nonces over MAX_CLOCK_SKEW_MS. */
  readonly nonces?: NonceMemory;
}

/** What a verified request carries on to its handler. */
export type SignedRequest = Request & { signedFetcherId?: string };

const EMPTY = new Uint8Array(0);
const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);

export class RequestAuth {
  readonly #secret: string;
  readonly #keyId: string;
  readonly #maxBodyBytes: number;
  readonly #clock: () => number;
  readonly #nonces: NonceMemory;

  constructor(options: RequestAuthOptions) {
    this.#secret = options.secret;
    this.#keyId = keyIdOf(options.secret);
    this.#maxBodyBytes = options.maxBodyBytes;
    this.#clock = options.clock ?? systemClock;
    this.#nonces = options.nonces ?? new NonceMemory({ windowMs: MAX_CLOCK_SKEW_MS, capacity: DEFAULT_NONCE_CAPACITY });
  }

  /** Middleware for a signed POST with a JSON body: on success `req.body` is the parsed JSON. */
  readonly signedJson: RequestHandler = (req: SignedRequest, res: Response, next: NextFunction) => {
    this.#signedJson(req, res).then(() => next(), next);
  };

  /** Middleware for a signed request without a body (a GET). */
  readonly signedNoBody: RequestHandler = (req: SignedRequest, _res: Response, next: NextFunction) => {
    try {
      const headers = this.#checkHeaders(req);
      this.#verify(req, headers, EMPTY);
      req.signedFetcherId = headers.fetcherId;
      next();
    } catch (error) {
      next(error);
    }
  };

  async #signedJson(req: SignedRequest, res: Response): Promise<void> {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > this.#maxBodyBytes) {
      // The body is never read: close the connection after the answer instead of draining it.
      res.set('Connection', 'close');
      throw tooLarge(this.#maxBodyBytes);
    }
    const headers = this.#checkHeaders(req);
    const raw = await readRawBody(req, res, this.#maxBodyBytes);
    this.#verify(req, headers, raw);
    const body = await this.#decode(req, raw);
    // A malformed fetcherId is left to the protocol schema (400 invalid-body naming the field).
    const bodyFetcherId = typeof body === 'object' && body !== null && 'fetcherId' in body ? body.fetcherId : undefined;
    if (typeof bodyFetcherId === 'string' && isFetcherId(bodyFetcherId) && bodyFetcherId !== headers.fetcherId) {
      throw new HttpError(400, 'fetcher-id-mismatch', 'the body\'s fetcherId differs from the signed X-Petrel-Fetcher-Id');
    }
    req.body = body;
    req.signedFetcherId = headers.fetcherId;
  }

  /** Steps 2-5: everything that needs no body. */
  #checkHeaders(req: Request): SignatureHeaders {
    const headers = readSignatureHeaders(req.headers);
    if ('problem' in headers) throw new HttpError(401, 'bad-signature', headers.problem);
    const now = this.#clock();
    const skewMs = headers.timestamp - now;
    if (Math.abs(skewMs) > MAX_CLOCK_SKEW_MS) {
      const seconds = Math.round(Math.abs(skewMs) / 1000);
      throw new HttpError(
        401,
        'stale-timestamp',
        `request timestamp is ${seconds} s ${skewMs < 0 ? 'behind' : 'ahead of'} the queue server's clock (at most ${MAX_CLOCK_SKEW_MS / 1000} s allowed): ` +
          'set the fetcher machine\'s clock (NTP); a captured request is refused this way too',
        { details: { serverTime: now, skewMs } },
      );
    }
    if (headers.keyId !== null && headers.keyId !== this.#keyId) {
      throw new HttpError(401, 'unknown-key', `signed with another secret (key id ${headers.keyId}): give the fetcher this queue server's <data>/fetcher.token`);
    }
    if (this.#nonces.seen(headers.nonce, headers.timestamp)) throw replayed();
    return headers;
  }

  /** Steps 7-8: the signature over the body as sent, then the nonce. */
  #verify(req: Request, headers: SignatureHeaders, body: Uint8Array): void {
    const path = req.originalUrl;
    const parts = { method: req.method, path, bodyDigest: bodyDigest(body), timestamp: headers.timestamp, nonce: headers.nonce, fetcherId: headers.fetcherId };
    if (!isSignablePath(path) || !signatureMatches(this.#secret, parts, headers.signature)) {
      throw new HttpError(401, 'bad-signature', 'signature does not match the request (method, path, body, timestamp, nonce, fetcher id) under this queue server\'s fetcher.token');
    }
    const verdict = this.#nonces.remember(headers.nonce, headers.timestamp, this.#clock());
    if (verdict === 'replayed') throw replayed();
    if (verdict === 'full') {
      throw new HttpError(503, 'nonce-memory-full', `more than ${this.#nonces.capacity} signed requests within ${(2 * MAX_CLOCK_SKEW_MS) / 60_000} minutes: try again shortly`, {
        headers: { 'Retry-After': '30' },
      });
    }
  }

  /** Step 9: the body as JSON, after signature checks. */
  async #decode(req: Request, raw: Buffer): Promise<unknown> {
    if (raw.length === 0 || req.is('application/json') !== 'application/json') {
      throw new HttpError(400, 'bad-request', 'expected a JSON object body with Content-Type: application/json');
    }
    const charset = /charset=([^;\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') throw new HttpError(415, 'unsupported-charset', `JSON bodies are UTF-8, not ${charset.slice(0, 40)}`);
    const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
    let bytes: Buffer;
    try {
      if (encoding === 'identity') bytes = raw;
      else if (encoding === 'gzip') bytes = await gunzipAsync(raw, { maxOutputLength: this.#maxBodyBytes });
      else if (encoding === 'deflate') bytes = await inflateAsync(raw, { maxOutputLength: this.#maxBodyBytes });
      else throw new HttpError(415, 'unsupported-encoding', `Content-Encoding ${encoding.slice(0, 40)} is not supported (gzip, deflate, identity)`);
    } catch (error) {
      if (error instanceof HttpError) throw error;
      if ((error as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw tooLarge(this.#maxBodyBytes);
      throw new HttpError(400, 'bad-request', `the ${encoding} body does not inflate: ${(error as Error).message.slice(0, 100)}`);
    }
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      throw new HttpError(400, 'invalid-json', 'request body is not valid UTF-8');
    }
    // Strict JSON, as express.json({ strict: true }): an object or an array, never a bare value.
    if (!/^[\s]*[[{]/.test(text)) throw new HttpError(400, 'invalid-json', 'request body is not a JSON object or array');
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new HttpError(400, 'invalid-json', 'request body is not valid JSON');
    }
  }
}

function replayed(): HttpError {
  return new HttpError(401, 'replayed-nonce', 'this nonce was used before: a request is accepted once (sign every attempt anew)');
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body-too-large', `request body larger than ${limit} bytes`);
}

/**
 * The body bytes exactly as sent, at most `limit` of them. Beyond the limit the rest is not read: the
 * answer carries `Connection: close` (destroying the request here would lose the answer).
 */
function readRawBody(req: Request, res: Response, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    const done = (error: Error | null) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (error === null) resolve(Buffer.concat(chunks, length));
      else reject(error);
    };
    const onData = (chunk: Buffer) => {
      length += chunk.length;
      if (length <= limit) return void chunks.push(chunk);
      req.pause();
      res.set('Connection', 'close');
      done(tooLarge(limit));
    };
    const onEnd = () => done(null);
    const onError = (error: Error) => done(new HttpError(400, 'bad-request', `request body not received: ${error.message.slice(0, 100)}`));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}
