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

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const IMF_FIXDATE = /^[A-Za-z]{3}, (\d{2}) ([A-Za-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const RFC850_DATE = /^[A-Za-z]{6,9}, (\d{2})-([A-Za-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/;
const ASCTIME_DATE = /^[A-Za-z]{3} ([A-Za-z]{3}) ( \d|\d{2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * An HTTP-date (RFC 9110 section 5.6.7) as ms since epoch, or null. The three forms a recipient must
 * accept: IMF-fixdate, the obsolete RFC 850 form and asctime, all in UTC (asctime names no zone and
 * still means UTC). A two-digit RFC 850 year more than 50 years after `now` is in the past century.
 * Anything else, such as "0" or "Never", is not a date (RFC 9111 section 5.3: an invalid Expires means
 * already expired).
 */
export function parseHttpDate(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const text = value.trim();
  let parts: { day: string; month: string; year: number; time: [string, string, string] };
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(text)) !== null) {
    parts = { day: match[1]!, month: match[2]!, year: Number(match[3]), time: [match[4]!, match[5]!, match[6]!] };
  } else if ((match = RFC850_DATE.exec(text)) !== null) {
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(match[3]);
    if (year > thisYear + 50) year -= 100;
    parts = { day: match[1]!, month: match[2]!, year, time: [match[4]!, match[5]!, match[6]!] };
  } else if ((match = ASCTIME_DATE.exec(text)) !== null) {
    parts = { day: match[2]!.trim(), month: match[1]!, year: Number(match[6]), time: [match[3]!, match[4]!, match[5]!] };
  } else return null;
  const month = MONTHS.indexOf(parts.month.toLowerCase());
  const [hour, minute, second] = parts.time.map(Number) as [number, number, number];
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return null;
  const time = Date.UTC(parts.year, month, Number(parts.day), hour, minute, second);
  // Date.UTC rolls over (Feb 30 becomes Mar 2): such a date is not a date.
  return new Date(time).getUTCDate() === Number(parts.day) ? time : null;
}

export function freshnessOf(headers: CacheHeaders, requestTime: number, responseTime: number): Freshness {
  const directives = parseCacheControl(headers.cacheControl);
  const noStore = directives.has('no-store');
  const noCache = directives.has('no-cache');
  const mustRevalidate = directives.has('must-revalidate');

  const date = parseHttpDate(headers.date, responseTime) ?? responseTime;
  const apparentAge = Math.max(0, responseTime - date);
  const ageValue = (deltaSeconds(headers.age?.trim()) ?? 0) * 1000;
  const correctedAgeValue = ageValue + Math.max(0, responseTime - requestTime);
  const ageMs = Math.max(apparentAge, correctedAgeValue);

  let lifetimeMs = 0;
  const maxAge = directives.has('max-age') ? deltaSeconds(directives.get('max-age')) : null;
  if (maxAge !== null) lifetimeMs = maxAge * 1000;
  else if (headers.expires !== null) {
    const expires = parseHttpDate(headers.expires, responseTime);
    lifetimeMs = expires === null ? 0 : Math.max(0, expires - date);
  }
  if (noCache) lifetimeMs = 0;

  return { storable: !noStore, lifetimeMs, ageMs, noCache, mustRevalidate };
}
