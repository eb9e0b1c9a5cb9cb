/**
 * Cache page validation decisions, pure functions of a stored record, a fetch result and `now`
 * (ms since epoch, queue server clock). RFC 9111 for freshness (via shared/freshness.ts), RFC 9110
 * section 13.1 for the validators sent back.
 *
 *  - Cutting a schedule: a URL whose stored response is still fresh is not sent (it counts as
 *    skippedFresh); a stale one with validators is sent with them (If-None-Match with the ETag,
 *    If-Modified-Since with the Last-Modified, both verbatim); anything else is fetched plainly.
 *  - A 2xx replaces the record, a 304 updates it from the 304's own headers (RFC 9111 section 4.3.4:
 *    headers present in the 304 replace the stored ones; the rest stand), `no-store` removes it.
 */
import { freshnessOf, parseHttpDate } from '../../shared/freshness.js';
import type { CacheHeaders, ItemResult, Validators } from '../../shared/protocol.js';
import type { CacheRecord } from './cache-record.js';

export type CacheDecision =
  | { readonly kind: 'fresh'; readonly until: number; readonly savedBytes: number }
  | { readonly kind: 'revalidate'; readonly validators: Validators }
  | { readonly kind: 'fetch' };

export function cacheDecision(record: CacheRecord | null, now: number): CacheDecision {
  if (record === null) return { kind: 'fetch' };
  if (now < record.freshUntil) return { kind: 'fresh', until: record.freshUntil, savedBytes: record.bodyBytes };
  if (record.etag !== null || record.lastModified !== null) {
    return { kind: 'revalidate', validators: { etag: record.etag, lastModified: record.lastModified } };
  }
  return { kind: 'fetch' };
}

/** What to store after a full (2xx) response; null: store nothing (no-store). */
export function recordAfterFullResponse(result: ItemResult, now: number): CacheRecord | null {
  return recordFrom(result.cache, result, result.wireBytes, now);
}

/** What to store after a 304 to a conditional request, given what was stored. */
export function recordAfterNotModified(previous: CacheRecord | null, result: ItemResult, now: number): CacheRecord | null {
  const fresh = result.cache;
  const merged: CacheHeaders = {
    etag: fresh.etag ?? previous?.etag ?? null,
    lastModified: fresh.lastModified ?? previous?.lastModified ?? null,
    cacheControl: fresh.cacheControl ?? previous?.cacheControl ?? null,
    expires: fresh.expires ?? previous?.expires ?? null,
    date: fresh.date,
    age: fresh.age,
  };
  return recordFrom(merged, result, previous?.bodyBytes ?? 0, now);
}

function recordFrom(headers: CacheHeaders, result: ItemResult, bodyBytes: number, now: number): CacheRecord | null {
  const freshness = freshnessOf(headers, result.fetchedAt, result.fetchedAt + result.durationMs);
  if (!freshness.storable) return null;
  const date = parseHttpDate(headers.date, now);
  return {
    etag: headers.etag,
    lastModified: headers.lastModified,
    cacheControl: headers.cacheControl,
    expires: headers.expires,
    freshUntil: now + Math.max(0, freshness.lifetimeMs - freshness.ageMs),
    date,
    storedAt: now,
    bodyBytes,
  };
}
