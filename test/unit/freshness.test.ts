/**
 * HTTP freshness after RFC 9111: lifetime (section 4.2.1, 5.2.2.1, 5.3), age at receipt (section 4.2.3),
 * storability (no-store, section 5.2.2.5), no-cache (section 5.2.2.4), and the HTTP-date formats of
 * RFC 9110 section 5.6.7. All times are handed in; nothing here reads the clock.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { freshnessOf, parseCacheControl, parseHttpDate } from '../../shared/freshness.js';
import type { CacheHeaders } from '../../shared/protocol.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`freshness fast-check seed ${seed} (set FC_SEED to replay)`);

/** Request sent at 12:00:00 UTC, whole seconds so that IMF-fixdate strings are exact. */
const REQUEST = Date.UTC(2026, 0, 15, 12, 0, 0);
/** Response received 2 s later. */
const RESPONSE = REQUEST + 2_000;

/** IMF-fixdate (RFC 9110 section 5.6.7) of a time, ms since epoch. */
function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function headers(fields: Partial<CacheHeaders>): CacheHeaders {
  return { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null, ...fields };
}

describe('freshness lifetime (RFC 9111 section 4.2.1)', () => {
  it('takes max-age over Expires when both are present (section 5.3)', () => {
    const f = freshnessOf(
      headers({ cacheControl: 'max-age=60', date: httpDate(RESPONSE), expires: httpDate(RESPONSE + 3_600_000) }),
      REQUEST,
      RESPONSE,
    );
    expect(f.lifetimeMs).toBe(60_000);
  });

  it('takes max-age over an Expires that lies in the past', () => {
    const f = freshnessOf(
      headers({ cacheControl: 'max-age=60', date: httpDate(RESPONSE), expires: httpDate(RESPONSE - 3_600_000) }),
      REQUEST,
      RESPONSE,
    );
    expect(f.lifetimeMs).toBe(60_000);
  });

  it('uses Expires minus Date when there is no max-age', () => {
    const date = RESPONSE - 10_000;
    const f = freshnessOf(headers({ date: httpDate(date), expires: httpDate(date + 120_000) }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(120_000);
  });

  it('treats an Expires at or before Date as stale, never as a negative lifetime', () => {
    const f = freshnessOf(
      headers({ date: httpDate(RESPONSE), expires: httpDate(RESPONSE - 60_000) }),
      REQUEST,
      RESPONSE,
    );
    expect(f.lifetimeMs).toBe(0);
  });

  it.each(['0', '-1', 'garbage', '', 'now', '1768478400'])(
    'treats the invalid Expires %j as already expired (lifetime 0) but still storable',
    (expires) => {
      const f = freshnessOf(headers({ date: httpDate(RESPONSE), expires }), REQUEST, RESPONSE);
      expect(f.lifetimeMs).toBe(0);
      expect(f.storable).toBe(true);
    },
  );

  it('measures Expires from the response time when Date is missing', () => {
    const f = freshnessOf(headers({ expires: httpDate(RESPONSE + 30_000) }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(30_000);
  });

  it('measures Expires from the response time when Date is not an HTTP-date', () => {
    const f = freshnessOf(headers({ date: 'yesterday-ish', expires: httpDate(RESPONSE + 30_000) }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(30_000);
  });

  it('gives lifetime 0 without max-age or Expires (no heuristic freshness)', () => {
    const f = freshnessOf(
      headers({ date: httpDate(RESPONSE), lastModified: httpDate(RESPONSE - 86_400_000), cacheControl: 'public' }),
      REQUEST,
      RESPONSE,
    );
    expect(f.lifetimeMs).toBe(0);
    expect(f.storable).toBe(true);
  });

  it('caps a huge max-age at 2^31 seconds (section 1.2.2)', () => {
    expect(freshnessOf(headers({ cacheControl: 'max-age=99999999999' }), REQUEST, RESPONSE).lifetimeMs).toBe(2 ** 31 * 1000);
    expect(freshnessOf(headers({ cacheControl: 'max-age=2147483648' }), REQUEST, RESPONSE).lifetimeMs).toBe(2 ** 31 * 1000);
    expect(freshnessOf(headers({ cacheControl: `max-age=${'9'.repeat(400)}` }), REQUEST, RESPONSE).lifetimeMs).toBe(
      2 ** 31 * 1000,
    );
    expect(freshnessOf(headers({ cacheControl: 'max-age=2147483647' }), REQUEST, RESPONSE).lifetimeMs).toBe(
      2147483647 * 1000,
    );
  });

  it('ignores a max-age that is not delta-seconds and falls back to Expires', () => {
    const f = freshnessOf(
      headers({ cacheControl: 'max-age=-5', date: httpDate(RESPONSE), expires: httpDate(RESPONSE + 90_000) }),
      REQUEST,
      RESPONSE,
    );
    expect(f.lifetimeMs).toBe(90_000);
  });
});

describe('Cache-Control directives', () => {
  it('marks a no-store response as not storable (section 5.2.2.5)', () => {
    const f = freshnessOf(headers({ cacheControl: 'no-store, max-age=600' }), REQUEST, RESPONSE);
    expect(f.storable).toBe(false);
  });

  it('keeps a no-cache response storable but never fresh (section 5.2.2.4)', () => {
    const f = freshnessOf(
      headers({ cacheControl: 'max-age=600, no-cache', expires: httpDate(RESPONSE + 600_000) }),
      REQUEST,
      RESPONSE,
    );
    expect(f.storable).toBe(true);
    expect(f.noCache).toBe(true);
    expect(f.lifetimeMs).toBe(0);
  });

  it('treats a qualified no-cache="Set-Cookie" as unqualified no-cache', () => {
    const f = freshnessOf(headers({ cacheControl: 'no-cache="Set-Cookie", max-age=600' }), REQUEST, RESPONSE);
    expect(f.noCache).toBe(true);
    expect(f.lifetimeMs).toBe(0);
  });

  it('reports must-revalidate without changing the lifetime (section 5.2.2.2)', () => {
    const f = freshnessOf(headers({ cacheControl: 'max-age=60, must-revalidate' }), REQUEST, RESPONSE);
    expect(f.mustRevalidate).toBe(true);
    expect(f.lifetimeMs).toBe(60_000);
    expect(freshnessOf(headers({ cacheControl: 'max-age=60' }), REQUEST, RESPONSE).mustRevalidate).toBe(false);
  });

  it('uses the first of duplicate directives (section 4.2.1)', () => {
    expect(freshnessOf(headers({ cacheControl: 'max-age=10, max-age=100' }), REQUEST, RESPONSE).lifetimeMs).toBe(10_000);
    expect(freshnessOf(headers({ cacheControl: 'max-age=100, max-age=10' }), REQUEST, RESPONSE).lifetimeMs).toBe(100_000);
  });

  it('accepts a quoted max-age value', () => {
    expect(freshnessOf(headers({ cacheControl: 'max-age="60"' }), REQUEST, RESPONSE).lifetimeMs).toBe(60_000);
  });

  it('matches directive names case-insensitively', () => {
    const f = freshnessOf(headers({ cacheControl: 'MAX-AGE=60, Must-Revalidate' }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(60_000);
    expect(f.mustRevalidate).toBe(true);
    expect(freshnessOf(headers({ cacheControl: 'No-Store' }), REQUEST, RESPONSE).storable).toBe(false);
    expect(freshnessOf(headers({ cacheControl: 'max-age=60, NO-CACHE' }), REQUEST, RESPONSE).lifetimeMs).toBe(0);
  });

  it('tolerates whitespace around directives and values', () => {
    const f = freshnessOf(headers({ cacheControl: '  max-age = 60 ,\tmust-revalidate  ,  ' }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(60_000);
    expect(f.mustRevalidate).toBe(true);
  });

  it('parses directives into lower-case names with unquoted values', () => {
    expect([...parseCacheControl('Public, MAX-AGE="60", s-maxage=5, no-cache')]).toEqual([
      ['public', null],
      ['max-age', '60'],
      ['s-maxage', '5'],
      ['no-cache', null],
    ]);
    expect(parseCacheControl(null).size).toBe(0);
  });
});

describe('age at receipt (RFC 9111 section 4.2.3)', () => {
  it('adds the response delay to the Age header (corrected_age_value)', () => {
    // apparent_age = 5 s; corrected_age_value = 100 s + 2 s delay = 102 s; the larger wins.
    const f = freshnessOf(headers({ date: httpDate(RESPONSE - 5_000), age: '100' }), REQUEST, RESPONSE);
    expect(f.ageMs).toBe(102_000);
  });

  it('uses the apparent age when Date lies further back than Age says', () => {
    // apparent_age = 300 s; corrected_age_value = 10 s + 2 s = 12 s.
    const f = freshnessOf(headers({ date: httpDate(RESPONSE - 300_000), age: '10' }), REQUEST, RESPONSE);
    expect(f.ageMs).toBe(300_000);
  });

  it('counts only the response delay without Date or Age', () => {
    expect(freshnessOf(headers({}), REQUEST, RESPONSE).ageMs).toBe(2_000);
  });

  it('does not let a Date in the future (clock skew) make the age negative', () => {
    const f = freshnessOf(headers({ date: httpDate(RESPONSE + 3_600_000) }), REQUEST, RESPONSE);
    expect(f.ageMs).toBe(2_000);
  });

  it('ignores an Age that is not delta-seconds', () => {
    expect(freshnessOf(headers({ age: '-30' }), REQUEST, RESPONSE).ageMs).toBe(2_000);
    expect(freshnessOf(headers({ age: 'soon' }), REQUEST, RESPONSE).ageMs).toBe(2_000);
    expect(freshnessOf(headers({ age: ' 30 ' }), REQUEST, RESPONSE).ageMs).toBe(32_000);
  });

  it('does not change the lifetime: age is subtracted by the caller', () => {
    const f = freshnessOf(headers({ cacheControl: 'max-age=60', age: '50' }), REQUEST, RESPONSE);
    expect(f.lifetimeMs).toBe(60_000);
    expect(f.ageMs).toBe(52_000);
  });
});

describe('parseHttpDate (RFC 9110 section 5.6.7)', () => {
  const instant = Date.UTC(1994, 10, 6, 8, 49, 37);

  it('accepts the IMF-fixdate format', () => {
    expect(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT')).toBe(instant);
  });

  it('accepts the obsolete RFC 850 format', () => {
    expect(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT')).toBe(instant);
  });

  it('accepts the asctime format', () => {
    // asctime carries no zone and means UTC. The exact instant is not pinned here: Date.parse reads
    // this form as local time, so the value depends on the process's TZ (see the test report).
    const parsed = parseHttpDate('Sun Nov  6 08:49:37 1994');
    expect(parsed).not.toBeNull();
    expect(Math.abs(parsed! - instant)).toBeLessThanOrEqual(14 * 3_600_000);
  });

  it('accepts surrounding whitespace', () => {
    expect(parseHttpDate('  Sun, 06 Nov 1994 08:49:37 GMT \t')).toBe(instant);
  });

  it.each(['0', '-1', '1994', '784111777', '784111777000', '', '   ', 'garbage', 'Sun'])('rejects %j', (value) => {
    expect(parseHttpDate(value)).toBeNull();
  });

  it('returns null for a missing header', () => {
    expect(parseHttpDate(null)).toBeNull();
  });
});

describe('freshness properties', () => {
  const directive = fc.constantFrom(
    'max-age=0',
    'max-age=60',
    'max-age="120"',
    'max-age=99999999999',
    'max-age=-1',
    'MAX-AGE=30',
    'no-store',
    'No-Store',
    'no-cache',
    'must-revalidate',
    'public',
    'private',
    's-maxage=10',
    'garbage=="',
    '',
  );
  const cacheControl = fc.option(
    fc.array(directive, { maxLength: 5 }).map((parts) => parts.join(', ')),
    { nil: null },
  );
  const offsetDate = fc.integer({ min: -86_400, max: 86_400 }).map((s) => httpDate(RESPONSE + s * 1000));
  const dateValue = fc.option(fc.oneof(offsetDate, fc.constantFrom('0', '-1', 'garbage', '')), { nil: null });
  const ageValue = fc.option(
    fc.oneof(fc.nat({ max: 1_000_000 }).map(String), fc.constantFrom('-5', 'x', '99999999999999')),
    { nil: null },
  );
  const arbHeaders = fc.record({
    etag: fc.constant(null),
    lastModified: fc.constant(null),
    date: dateValue,
    age: ageValue,
    expires: dateValue,
    cacheControl,
  });
  const times = fc
    .tuple(fc.integer({ min: 0, max: 2 ** 41 }), fc.nat({ max: 600_000 }))
    .map(([request, delay]) => ({ request, response: request + delay }));

  it('never yields a negative or non-finite lifetime or age', () => {
    fc.assert(
      fc.property(arbHeaders, times, (h, t) => {
        const f = freshnessOf(h, t.request, t.response);
        expect(Number.isFinite(f.lifetimeMs)).toBe(true);
        expect(f.lifetimeMs).toBeGreaterThanOrEqual(0);
        expect(Number.isFinite(f.ageMs)).toBe(true);
        expect(f.ageMs).toBeGreaterThanOrEqual(0);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('never calls a response with no-store storable', () => {
    fc.assert(
      fc.property(arbHeaders, times, (h, t) => {
        const hasNoStore = (h.cacheControl ?? '').split(',').some((part) => part.trim().toLowerCase() === 'no-store');
        expect(freshnessOf(h, t.request, t.response).storable).toBe(!hasNoStore);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('never lets adding no-cache increase the lifetime', () => {
    fc.assert(
      fc.property(arbHeaders, times, (h, t) => {
        const before = freshnessOf(h, t.request, t.response);
        const withNoCache = { ...h, cacheControl: h.cacheControl === null ? 'no-cache' : `${h.cacheControl}, no-cache` };
        const after = freshnessOf(withNoCache, t.request, t.response);
        expect(after.lifetimeMs).toBeLessThanOrEqual(before.lifetimeMs);
        expect(after.lifetimeMs).toBe(0);
        expect(after.storable).toBe(before.storable);
      }),
      { seed, numRuns: 500 },
    );
  });
});
