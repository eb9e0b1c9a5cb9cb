/**
 * HTTP freshness of a response, after RFC 9111 (HTTP Caching). Pure: all times are passed in, ms
 * since epoch on the fetcher's clock.
 *
 *  - Storable: not when Cache-Control has `no-store` (section 5.2.2.5): nothing is kept, no validators.
 *  - Freshness lifetime (section 4.2.1): `max-age` when present (Expires is then ignored, section
 *    5.3); else Expires minus Date; an Expires that does not parse as an HTTP-date (such as "0")
 *    means already stale (section 5.3). Without either, the lifetime is 0: the crawler revalidates
 *    rather than guess (the heuristic of section 4.2.2 is allowed, not required).
 *  - `no-cache` (section 5.2.2.4): storable, but never fresh: every reuse is revalidated.
 *  - `must-revalidate` (section 5.2.2.2): recorded; a stale copy is always revalidated anyway.
 *  - Current age at receipt (section 4.2.3): corrected_initial_age = max(apparent_age,
 *    corrected_age_value), where apparent_age = max(0, response_time - date_value) and
 *    corrected_age_value = age_value + (response_time - request_time).
 * The queue server turns this into an absolute expiry on its own clock: receipt + lifetime - age, so
 * clock skew between fetcher and queue server does not move expiries.
 */
import type { CacheHeaders } from './protocol.js';

export interface Freshness {
  readonly storable: boolean;
  /** Freshness lifetime, ms (0: stale at once). */
  readonly lifetimeMs: number;
  /** Age of the response when it arrived, ms. */
  readonly ageMs: number;
  readonly noCache: boolean;
  readonly mustRevalidate: boolean;
}

export function parseCacheControl(value: string | null): Map<string, string | null> {
  const directives = new Map<string, string | null>();
  if (value === null) return directives;
  for (const part of value.split(',')) {
    const match = /^\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*(?:=\s*(?:"([^"]*)"|([^\s,]*)))?\s*$/.exec(part);
    if (match === null) continue;
    const name = match[1]!.toLowerCase();
    if (!directives.has(name)) directives.set(name, match[2] ?? match[3] ?? null);
  }
  return directives;
}

/** delta-seconds (RFC 9111 section 1.2.2): a non-negative integer; larger than 2^31 means 2^31. */
function deltaSeconds(value: string | null | undefined): number | null {
  if (value === null || value === undefined || !/^\d+$/.test(value)) return null;
  return Math.min(Number(value), 2 ** 31);
}

/** An HTTP-date (RFC 9110 section 5.6.7), or null. */
export function parseHttpDate(value: string | null): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  // Date.parse also accepts plain numbers and partial dates; HTTP dates always name a weekday or a month.
  if (!/[A-Za-z]{3}/.test(trimmed)) return null;
  const time = Date.parse(trimmed);
  return Number.isNaN(time) ? null : time;
}

export function freshnessOf(headers: CacheHeaders, requestTime: number, responseTime: number): Freshness {
  const directives = parseCacheControl(headers.cacheControl);
  const noStore = directives.has('no-store');
  const noCache = directives.has('no-cache');
  const mustRevalidate = directives.has('must-revalidate');

  const date = parseHttpDate(headers.date) ?? responseTime;
  const apparentAge = Math.max(0, responseTime - date);
  const ageValue = (deltaSeconds(headers.age?.trim()) ?? 0) * 1000;
  const correctedAgeValue = ageValue + Math.max(0, responseTime - requestTime);
  const ageMs = Math.max(apparentAge, correctedAgeValue);

  let lifetimeMs = 0;
  const maxAge = directives.has('max-age') ? deltaSeconds(directives.get('max-age')) : null;
  if (maxAge !== null) lifetimeMs = maxAge * 1000;
  else if (headers.expires !== null) {
    const expires = parseHttpDate(headers.expires);
    lifetimeMs = expires === null ? 0 : Math.max(0, expires - date);
  }
  if (noCache) lifetimeMs = 0;

  return { storable: !noStore, lifetimeMs, ageMs, noCache, mustRevalidate };
}
