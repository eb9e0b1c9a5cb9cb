/**
 * Requests to the fetcher API signed as a fetcher signs them (shared/request-signing.ts), for
 * supertest against an app or a base URL. Each call signs anew (fresh nonce, current time) unless
 * the test fixes `nonce` or `now` to build a replay or a stale request. The queue server instance to
 * sign for comes from `instanceOf` (its X-Petrel-Instance answer header) or from the app's options.
 */
import request from 'supertest';
import { SIGNATURE_HEADERS, signRequest } from '../../shared/request-signing.js';

type Target = Parameters<typeof request>[0];

export interface SigningOptions {
  readonly secret: string;
  /** The queue server instance (instanceOf). */
  readonly instance: string;
  /** Default: the body's fetcherId, else `test-fetcher`. */
  readonly fetcherId?: string;
  /** ms since epoch (default: now). */
  readonly now?: number;
  readonly nonce?: string;
  /** Default application/json for a POST. */
  readonly contentType?: string;
  readonly contentEncoding?: string;
}

/** The instance a queue server names on every answer (read from GET /healthz). */
export async function instanceOf(target: Target): Promise<string> {
  const res = await request(target).get('/healthz').expect(200);
  const instance = res.headers[SIGNATURE_HEADERS.instance];
  if (typeof instance !== 'string') throw new Error('the queue server names no X-Petrel-Instance');
  return instance;
}

/**
 * The signing headers for a request (bytes exactly as they will be sent; none for a GET), with the
 * Content-Type, Content-Encoding and Content-Digest they sign.
 */
export function signatureFor(method: 'GET' | 'POST', path: string, body: Uint8Array | undefined, options: SigningOptions): Record<string, string> {
  return signRequest({
    secret: options.secret,
    instance: options.instance,
    method,
    path,
    body,
    contentType: body === undefined ? options.contentType : (options.contentType ?? 'application/json'),
    contentEncoding: options.contentEncoding,
    fetcherId: options.fetcherId ?? 'test-fetcher',
    now: options.now ?? Date.now(),
    nonce: options.nonce,
  });
}

/** POSTs `body` (an object is sent as JSON; a string as is), signed. */
export function signedPost(target: Target, path: string, body: unknown, options: SigningOptions): request.Test {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const fetcherId = options.fetcherId ?? fetcherIdOf(body) ?? 'test-fetcher';
  const headers = signatureFor('POST', path, Buffer.from(text), { ...options, fetcherId });
  return request(target).post(path).set(headers).send(text);
}

export function signedGet(target: Target, path: string, options: SigningOptions): request.Test {
  return request(target).get(path).set(signatureFor('GET', path, undefined, options));
}

function fetcherIdOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || !('fetcherId' in body)) return null;
  const id = (body as { fetcherId: unknown }).fetcherId;
  return typeof id === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(id) ? id : null;
}
