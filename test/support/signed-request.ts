/**
 * Requests to the fetcher API signed as a fetcher signs them (shared/request-signing.ts), for
 * supertest against an app or a base URL. Each call signs anew (fresh nonce, current time) unless
 * the test fixes `nonce` or `now` to build a replay or a stale request.
 */
import request from 'supertest';
import { signRequest } from '../../shared/request-signing.js';

type Target = Parameters<typeof request>[0];

export interface SigningOptions {
  readonly secret: string;
  /** Default: the body's fetcherId, else `test-fetcher`. */
  readonly fetcherId?: string;
  /** ms since epoch (default: now). */
  readonly now?: number;
  readonly nonce?: string;
  /** Default application/json. */
  readonly contentType?: string;
}

/** The signature headers for `body` (bytes exactly as they will be sent). */
export function signatureFor(method: 'GET' | 'POST', path: string, body: Uint8Array, options: SigningOptions): Record<string, string> {
  return signRequest({ secret: options.secret, method, path, body, fetcherId: options.fetcherId ?? 'test-fetcher', now: options.now ?? Date.now(), nonce: options.nonce });
}

/** POSTs `body` (an object is sent as JSON; a string as is), signed. */
export function signedPost(target: Target, path: string, body: unknown, options: SigningOptions): request.Test {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const fetcherId = options.fetcherId ?? fetcherIdOf(body) ?? 'test-fetcher';
  const headers = signatureFor('POST', path, Buffer.from(text), { ...options, fetcherId });
  return request(target).post(path).set(headers).set('Content-Type', options.contentType ?? 'application/json').send(text);
}

export function signedGet(target: Target, path: string, options: SigningOptions): request.Test {
  return request(target).get(path).set(signatureFor('GET', path, new Uint8Array(0), options));
}

function fetcherIdOf(body: unknown): string | null {
  if (typeof body !== 'object' || body === null || !('fetcherId' in body)) return null;
  const id = (body as { fetcherId: unknown }).fetcherId;
  return typeof id === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(id) ? id : null;
}
