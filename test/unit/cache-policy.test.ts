/**
 * Cache page validation decisions (queue-server/cache/cache-policy.ts): whether a stored response is fresh,
 * revalidated or refetched, and what is stored after a full response or a 304 (RFC 9111 sections 4.2,
 * 4.3.4; RFC 9110 section 13.1 for the validators sent back verbatim).
 */
import { describe, expect, it } from 'vitest';
import { cacheDecision, recordAfterFullResponse, recordAfterNotModified } from '../../queue-server/cache/cache-policy.js';
import type { CacheRecord } from '../../queue-server/cache/cache-record.js';
import type { CacheHeaders, ItemResult } from '../../shared/protocol.js';

/** Fetcher clock: request sent at FETCHED_AT, response complete DURATION later. Whole seconds. */
const FETCHED_AT = Date.UTC(2026, 0, 15, 12, 0, 0);
const DURATION = 2_000;
const RESPONSE_TIME = FETCHED_AT + DURATION;
/** Queue server clock, an hour ahead of the fetcher's: expiries must be counted from it. */
const NOW = FETCHED_AT + 3_600_000;

function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}

function cacheHeaders(fields: Partial<CacheHeaders> = {}): CacheHeaders {
  return { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null, ...fields };
}

function itemResult(fields: Partial<ItemResult> = {}): ItemResult {
  return {
    slot: 0,
    i: 0,
    url: 'http://example.test/page',
    fetchedAt: FETCHED_AT,
    durationMs: DURATION,
    status: 200,
    error: null,
    contentType: 'text/html; charset=utf-8',
    bytes: 5_000,
    wireBytes: 1_200,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: cacheHeaders(),
    signature: '0123456789abcdef',
    page: {
      title: 'Page',
      description: null,
      language: 'en',
      excerpt: 'Some text',
      canonical: null,
      noindex: false,
      nofollow: false,
      outlinks: 0,
      simhash: null,
    },
    links: [],
    robotsTxt: null,
    index: null,
    ...fields,
  };
}

/** A 304 to a conditional request: no body, no page data. */
function notModified(cache: Partial<CacheHeaders>): ItemResult {
  return itemResult({
    status: 304,
    contentType: null,
    bytes: 0,
    wireBytes: 0,
    signature: null,
    page: null,
    cache: cacheHeaders(cache),
  });
}

function storedRecord(fields: Partial<CacheRecord> = {}): CacheRecord {
  return {
    etag: '"v1"',
    lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT',
    cacheControl: 'max-age=600',
    expires: null,
    freshUntil: NOW - 1,
    date: FETCHED_AT - 86_400_000,
    storedAt: NOW - 86_400_000,
    bodyBytes: 9_876,
    ...fields,
  };
}

describe('cacheDecision', () => {
  it('fetches a URL with no stored record', () => {
    expect(cacheDecision(null, NOW)).toEqual({ kind: 'fetch' });
  });

  it('skips a fresh URL, reporting until when and the body bytes saved', () => {
    const record = storedRecord({ freshUntil: NOW + 60_000, bodyBytes: 4_321 });
    expect(cacheDecision(record, NOW)).toEqual({ kind: 'fresh', until: NOW + 60_000, savedBytes: 4_321 });
  });

  it('treats a record as stale from the instant freshUntil is reached (fresh only while lifetime > age)', () => {
    const record = storedRecord({ freshUntil: NOW });
    expect(cacheDecision(record, NOW - 1).kind).toBe('fresh');
    expect(cacheDecision(record, NOW).kind).toBe('revalidate');
  });

  it('revalidates a stale URL with both validators verbatim', () => {
    const record = storedRecord({ etag: '"abc-123"', lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT' });
    expect(cacheDecision(record, NOW)).toEqual({
      kind: 'revalidate',
      validators: { etag: '"abc-123"', lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT' },
    });
  });

  it('keeps a weak ETag exactly, W/ prefix and quotes included', () => {
    const record = storedRecord({ etag: 'W/"x"', lastModified: null });
    expect(cacheDecision(record, NOW)).toEqual({ kind: 'revalidate', validators: { etag: 'W/"x"', lastModified: null } });
  });

  it('revalidates with Last-Modified alone when there is no ETag', () => {
    const record = storedRecord({ etag: null, lastModified: 'Tue, 13 Jan 2026 00:00:00 GMT' });
    expect(cacheDecision(record, NOW)).toEqual({
      kind: 'revalidate',
      validators: { etag: null, lastModified: 'Tue, 13 Jan 2026 00:00:00 GMT' },
    });
  });

  it('refetches a stale URL that has no validators', () => {
    const record = storedRecord({ etag: null, lastModified: null });
    expect(cacheDecision(record, NOW)).toEqual({ kind: 'fetch' });
  });
});

describe('recordAfterFullResponse', () => {
  it('stores the validators and headers verbatim, the Date, now as storedAt, and wireBytes as bodyBytes', () => {
    const date = httpDate(RESPONSE_TIME);
    const cache = cacheHeaders({
      etag: 'W/"é1"',
      lastModified: 'Tue, 13 Jan 2026 00:00:00 GMT',
      cacheControl: 'max-age=600, must-revalidate',
      expires: httpDate(RESPONSE_TIME + 60_000),
      date,
    });
    const record = recordAfterFullResponse(itemResult({ cache, bytes: 5_000, wireBytes: 1_200 }), NOW);
    expect(record).toEqual({
      etag: 'W/"é1"',
      lastModified: 'Tue, 13 Jan 2026 00:00:00 GMT',
      cacheControl: 'max-age=600, must-revalidate',
      expires: httpDate(RESPONSE_TIME + 60_000),
      freshUntil: NOW + 600_000 - DURATION,
      date: RESPONSE_TIME,
      storedAt: NOW,
      bodyBytes: 1_200,
    });
  });

  it('sets freshUntil to now + lifetime - age, the age taken from Age plus the response delay', () => {
    // apparent_age = 5 s; corrected_age_value = 30 s + 2 s delay = 32 s; age = 32 s.
    const cache = cacheHeaders({ cacheControl: 'max-age=600', date: httpDate(RESPONSE_TIME - 5_000), age: '30' });
    const record = recordAfterFullResponse(itemResult({ cache }), NOW);
    expect(record?.freshUntil).toBe(NOW + 600_000 - 32_000);
  });

  it('sets freshUntil to now + lifetime - age, the age taken from an old Date', () => {
    // apparent_age = 100 s beats corrected_age_value = 0 + 2 s.
    const cache = cacheHeaders({ cacheControl: 'max-age=600', date: httpDate(RESPONSE_TIME - 100_000) });
    expect(recordAfterFullResponse(itemResult({ cache }), NOW)?.freshUntil).toBe(NOW + 500_000);
  });

  it('uses Expires minus Date when there is no max-age', () => {
    const date = RESPONSE_TIME;
    const cache = cacheHeaders({ date: httpDate(date), expires: httpDate(date + 300_000) });
    expect(recordAfterFullResponse(itemResult({ cache }), NOW)?.freshUntil).toBe(NOW + 300_000 - DURATION);
  });

  it('stores a response older than its lifetime as stale at once (freshUntil = now)', () => {
    const cache = cacheHeaders({ cacheControl: 'max-age=10', age: '60', etag: '"old"' });
    const record = recordAfterFullResponse(itemResult({ cache }), NOW);
    expect(record?.freshUntil).toBe(NOW);
    expect(cacheDecision(record, NOW)).toEqual({ kind: 'revalidate', validators: { etag: '"old"', lastModified: null } });
  });

  it('stores a no-cache response stale at once, to be revalidated on every use', () => {
    const cache = cacheHeaders({ cacheControl: 'no-cache, max-age=600', etag: '"nc"' });
    const record = recordAfterFullResponse(itemResult({ cache }), NOW);
    expect(record).not.toBeNull();
    expect(record?.freshUntil).toBe(NOW);
  });

  it('stores nothing for a no-store response', () => {
    const cache = cacheHeaders({ cacheControl: 'max-age=600, no-store', etag: '"ns"' });
    expect(recordAfterFullResponse(itemResult({ cache }), NOW)).toBeNull();
  });

  it('stores date null when the response has no Date', () => {
    const cache = cacheHeaders({ etag: '"d"' });
    expect(recordAfterFullResponse(itemResult({ cache }), NOW)?.date).toBeNull();
  });
});

describe('recordAfterNotModified (RFC 9111 section 4.3.4)', () => {
  const previous = storedRecord({
    etag: '"v1"',
    lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT',
    cacheControl: 'max-age=600',
    expires: 'Thu, 15 Jan 2026 11:00:00 GMT',
    bodyBytes: 9_876,
  });

  it('replaces the headers the 304 carries and keeps the ones it omits', () => {
    const record = recordAfterNotModified(
      previous,
      notModified({ etag: '"v2"', cacheControl: 'max-age=120', date: httpDate(RESPONSE_TIME) }),
      NOW,
    );
    expect(record).toMatchObject({
      etag: '"v2"',
      lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT',
      cacheControl: 'max-age=120',
      expires: 'Thu, 15 Jan 2026 11:00:00 GMT',
    });
  });

  it('replaces Last-Modified and Expires when the 304 carries them, keeping ETag and Cache-Control', () => {
    const record = recordAfterNotModified(
      previous,
      notModified({
        lastModified: 'Thu, 15 Jan 2026 09:00:00 GMT',
        expires: 'Fri, 16 Jan 2026 12:00:00 GMT',
        date: httpDate(RESPONSE_TIME),
      }),
      NOW,
    );
    expect(record).toMatchObject({
      etag: '"v1"',
      lastModified: 'Thu, 15 Jan 2026 09:00:00 GMT',
      cacheControl: 'max-age=600',
      expires: 'Fri, 16 Jan 2026 12:00:00 GMT',
    });
  });

  it('keeps the stored max-age when the 304 has no Cache-Control, counting age from the 304', () => {
    const record = recordAfterNotModified(previous, notModified({ date: httpDate(RESPONSE_TIME) }), NOW);
    expect(record?.freshUntil).toBe(NOW + 600_000 - DURATION);
    expect(record?.storedAt).toBe(NOW);
  });

  it('recomputes freshness from the new Cache-Control of the 304', () => {
    const record = recordAfterNotModified(
      previous,
      notModified({ cacheControl: 'max-age=60', date: httpDate(RESPONSE_TIME - 20_000) }),
      NOW,
    );
    expect(record?.freshUntil).toBe(NOW + 60_000 - 20_000);
  });

  it('recomputes freshness from a new Expires when the merged headers carry no max-age', () => {
    const old = storedRecord({ cacheControl: null, expires: 'Thu, 01 Jan 2026 00:00:00 GMT' });
    const record = recordAfterNotModified(
      old,
      notModified({ date: httpDate(RESPONSE_TIME), expires: httpDate(RESPONSE_TIME + 3_600_000) }),
      NOW,
    );
    expect(record?.freshUntil).toBe(NOW + 3_600_000 - DURATION);
  });

  it('leaves a record stale when the stored Expires has passed and the 304 brings no new lifetime', () => {
    const old = storedRecord({ cacheControl: null, expires: 'Thu, 01 Jan 2026 00:00:00 GMT' });
    const record = recordAfterNotModified(old, notModified({ date: httpDate(RESPONSE_TIME) }), NOW);
    expect(record?.freshUntil).toBe(NOW);
    expect(record?.expires).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
  });

  it('keeps bodyBytes of the previous full response, not the empty 304 body', () => {
    const result = { ...notModified({ date: httpDate(RESPONSE_TIME) }), wireBytes: 150 };
    expect(recordAfterNotModified(previous, result, NOW)?.bodyBytes).toBe(9_876);
  });

  it('stores nothing when the 304 carries no-store', () => {
    expect(recordAfterNotModified(previous, notModified({ cacheControl: 'no-store' }), NOW)).toBeNull();
  });

  it('stores nothing when the stored Cache-Control is no-store and the 304 does not replace it', () => {
    const old = storedRecord({ cacheControl: 'no-store' });
    expect(recordAfterNotModified(old, notModified({ etag: '"v9"' }), NOW)).toBeNull();
  });

  it('stores the 304 on its own, with bodyBytes 0, when nothing was stored before', () => {
    const record = recordAfterNotModified(null, notModified({ etag: '"lone"', cacheControl: 'max-age=30' }), NOW);
    expect(record).toMatchObject({ etag: '"lone"', cacheControl: 'max-age=30', bodyBytes: 0, freshUntil: NOW + 30_000 - DURATION });
  });
});
