/**
 * Resource -> HTTP response: status, headers and body bytes. Responses are deterministic: the body
 * depends only on the URL, the options and the generation, the ETag is a hash of the body, Last-Modified
 * is a fixed date (a later fixed one for pages a generation changed, see `generations.ts`).
 * Only 200 responses carry validators and freshness headers, since only they can be revalidated.
 */
import { createHash } from 'node:crypto';
import type { Validators } from './conditional.js';
import { renderHtml } from './html.js';
import type { Resource } from './resource.js';

/** RFC 9111 freshness, per host: fresh for an hour, stale at once, or stale through an old Expires. */
export type CachePolicy = { kind: 'max-age'; seconds: number } | { kind: 'expires-in-past' };

/** Every 200 response of generation 0 claims this modification date (IMF-fixdate, RFC 9110 §5.6.7). */
export const LAST_MODIFIED = 'Mon, 01 Jan 2024 00:00:00 GMT';
const EXPIRED = 'Sat, 01 Jan 2000 00:00:00 GMT';

export const HTML_TYPE = 'text/html; charset=utf-8';
const REDIRECT_TYPE = 'text/plain; charset=utf-8';

export interface PreparedResponse {
  status: number;
  /** Everything but Date and Connection, which node adds. Includes Content-Length. */
  headers: Record<string, string>;
  body: Buffer;
  /** Present on 200 responses only. */
  validators: Validators | null;
  /** ms to wait before answering. */
  delayMs: number;
}

export function contentTypeOf(resource: Resource): string {
  switch (resource.kind) {
    case 'html':
      return HTML_TYPE;
    case 'redirect':
      return REDIRECT_TYPE;
    case 'file':
      return resource.contentType;
  }
}

export function prepareResponse(resource: Resource, cache: CachePolicy): PreparedResponse {
  const headers: Record<string, string> = { 'Content-Type': contentTypeOf(resource) };
  let body: Buffer;
  let delayMs = 0;
  let lastModified = LAST_MODIFIED;
  switch (resource.kind) {
    case 'html':
      body = Buffer.from(renderHtml(resource.doc), 'utf8');
      Object.assign(headers, resource.headers);
      delayMs = resource.delayMs;
      lastModified = resource.lastModified;
      break;
    case 'redirect':
      // No link in the body: crawlers follow Location, never the body of a redirect.
      body = Buffer.from(`Redirecting to ${resource.location}\n`, 'utf8');
      headers['Location'] = resource.location;
      break;
    case 'file':
      body = resource.body;
      break;
  }
  headers['Content-Length'] = String(body.length);
  let validators: Validators | null = null;
  if (resource.status === 200) {
    validators = { etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, lastModified };
    Object.assign(headers, cacheHeaders(validators, cache));
  }
  return { status: resource.status, headers, body, validators, delayMs };
}

/**
 * The headers a 304 must repeat from the 200 it stands for (RFC 9110 §15.4.5): ETag, Cache-Control,
 * Expires; plus Last-Modified, which guides cache updates.
 */
export function cacheHeaders(validators: Validators, cache: CachePolicy): Record<string, string> {
  const headers: Record<string, string> = { ETag: validators.etag, 'Last-Modified': validators.lastModified };
  if (cache.kind === 'max-age') headers['Cache-Control'] = `max-age=${cache.seconds}`;
  else headers['Expires'] = EXPIRED;
  return headers;
}
