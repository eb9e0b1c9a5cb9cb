/**
 * The cache record codec (queue-server/cache/cache-record.ts): every field survives a round trip, an
 * oversized header value is dropped rather than failing the write, the largest record fits a 4 KiB
 * B-Tree's value limit, and damaged bytes are rejected.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTree, maxValueBytes } from '../../queue-server/btree/index.js';
import { decodeCacheRecord, encodeCacheRecord, MAX_FIELD_BYTES, type CacheRecord } from '../../queue-server/cache/cache-record.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`cache-record fast-check seed ${seed} (set FC_SEED to replay)`);

const T = Date.UTC(2026, 0, 15, 12, 0, 0);

function record(fields: Partial<CacheRecord> = {}): CacheRecord {
  return {
    etag: '"v1-abc"',
    lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT',
    cacheControl: 'max-age=600, must-revalidate',
    expires: 'Thu, 15 Jan 2026 13:00:00 GMT',
    freshUntil: T + 600_000,
    date: T - 5_000,
    storedAt: T,
    bodyBytes: 12_345,
    ...fields,
  };
}

function roundTrip(r: CacheRecord): CacheRecord {
  return decodeCacheRecord(encodeCacheRecord(r));
}

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

describe('cache record round trip', () => {
  it('keeps every field of a record with a Date', () => {
    const r = record();
    expect(roundTrip(r)).toEqual(r);
  });

  it('keeps a record without a Date as date null', () => {
    const r = record({ date: null });
    expect(roundTrip(r)).toEqual(r);
  });

  it('keeps a Date of exactly the epoch (0) apart from a missing Date', () => {
    expect(roundTrip(record({ date: 0 })).date).toBe(0);
  });

  it('keeps null header fields null', () => {
    const r = record({ etag: null, lastModified: null, cacheControl: null, expires: null });
    expect(roundTrip(r)).toEqual(r);
  });

  it('keeps each header field independently when the others are null', () => {
    const fields = ['etag', 'lastModified', 'cacheControl', 'expires'] as const;
    for (const name of fields) {
      const r = record({ etag: null, lastModified: null, cacheControl: null, expires: null, [name]: `"only-${name}"` });
      expect(roundTrip(r)).toEqual(r);
    }
  });

  it('keeps a unicode ETag and a weak ETag byte for byte', () => {
    for (const etag of ['"é-🦜-日本"', 'W/"x"', 'W/"ünïcödé"']) {
      expect(roundTrip(record({ etag })).etag).toBe(etag);
    }
  });

  it('keeps fractional and far-future times exactly (f64)', () => {
    const r = record({ freshUntil: T + 0.25, storedAt: 8.64e15, date: -1 });
    expect(roundTrip(r)).toEqual(r);
  });

  it('keeps bodyBytes up to 2^32 - 1 and clamps larger counts to it', () => {
    expect(roundTrip(record({ bodyBytes: 0 })).bodyBytes).toBe(0);
    expect(roundTrip(record({ bodyBytes: 0xffffffff })).bodyBytes).toBe(0xffffffff);
    expect(roundTrip(record({ bodyBytes: 2 ** 40 })).bodyBytes).toBe(0xffffffff);
  });
});

describe('oversized header values', () => {
  it(`keeps a field of exactly MAX_FIELD_BYTES (${MAX_FIELD_BYTES}) bytes`, () => {
    const etag = `"${'a'.repeat(MAX_FIELD_BYTES - 2)}"`;
    expect(roundTrip(record({ etag })).etag).toBe(etag);
  });

  it('drops a field one byte longer than MAX_FIELD_BYTES and keeps the others', () => {
    const long = `"${'a'.repeat(MAX_FIELD_BYTES - 1)}"`;
    const r = record({ lastModified: long });
    const decoded = roundTrip(r);
    expect(decoded).toEqual({ ...r, lastModified: null });
  });

  it('measures the limit in UTF-8 bytes, not characters', () => {
    // '€' is 3 bytes in UTF-8: 80 of them are exactly the limit, 81 are over it.
    const fits = '€'.repeat(MAX_FIELD_BYTES / 3);
    const over = '€'.repeat(MAX_FIELD_BYTES / 3 + 1);
    expect(utf8Bytes(fits)).toBe(MAX_FIELD_BYTES);
    expect(roundTrip(record({ etag: fits })).etag).toBe(fits);
    expect(roundTrip(record({ etag: over })).etag).toBeNull();
  });

  it('drops every oversized field of one record without failing the encode', () => {
    const huge = 'x'.repeat(1024);
    const r = record({ etag: huge, lastModified: huge, cacheControl: huge, expires: huge });
    expect(roundTrip(r)).toEqual({ ...r, etag: null, lastModified: null, cacheControl: null, expires: null });
  });

  it('encodes the largest allowed record within the value limit of a 4 KiB B-Tree page', () => {
    const max = 'm'.repeat(MAX_FIELD_BYTES);
    const largest = record({ etag: max, lastModified: max, cacheControl: max, expires: max });
    const bytes = encodeCacheRecord(largest);
    expect(bytes.length).toBeLessThanOrEqual(maxValueBytes(4096));
    // Oversized input must not make the record larger than the largest allowed one.
    const over = 'o'.repeat(4096);
    expect(encodeCacheRecord(record({ etag: over, lastModified: over, cacheControl: over, expires: over })).length).toBeLessThan(
      bytes.length,
    );
  });

  it('stores the largest allowed record in a real 4 KiB B-Tree', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-cache-record-'));
    try {
      const file = path.join(dir, 'cache.btree');
      const max = 'é'.repeat(MAX_FIELD_BYTES / 2);
      const largest = record({ etag: max, lastModified: max, cacheControl: max, expires: max });
      const tree = BTree.open(file, { pageSize: 4096 });
      tree.write((batch) => {
        for (let i = 0; i < 20; i++) batch.put(Buffer.from([0, 0, 0, 0, 0, 0, 0, i]), encodeCacheRecord(largest));
      });
      tree.close();
      const reopened = BTree.open(file);
      const stored = reopened.get(Buffer.from([0, 0, 0, 0, 0, 0, 0, 7]));
      expect(stored).not.toBeNull();
      expect(decodeCacheRecord(stored!)).toEqual(largest);
      expect(reopened.stats().keys).toBe(20);
      const report = reopened.check();
      expect(report.faults).toEqual([]);
      expect(report.ok).toBe(true);
      reopened.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('decoding damaged bytes', () => {
  it('rejects every proper prefix of an encoded record', () => {
    const bytes = encodeCacheRecord(record());
    for (let length = 0; length < bytes.length; length++) {
      expect(() => decodeCacheRecord(bytes.subarray(0, length)), `prefix of ${length} bytes`).toThrow(Error);
    }
  });

  it('rejects a header shorter than 40 bytes even when the record has no fields', () => {
    const bytes = encodeCacheRecord(record({ etag: null, lastModified: null, cacheControl: null, expires: null }));
    expect(bytes.length).toBe(40);
    expect(() => decodeCacheRecord(bytes.subarray(0, 39))).toThrow(/not version/);
  });

  it('rejects version 0', () => {
    const bytes = Buffer.from(encodeCacheRecord(record()));
    bytes[0] = 0;
    expect(() => decodeCacheRecord(bytes)).toThrow(/not version/);
  });

  it('rejects a field length that runs past the end', () => {
    const bytes = Buffer.from(encodeCacheRecord(record()));
    bytes.writeUInt16LE(0xffff, 8); // expires length
    expect(() => decodeCacheRecord(bytes)).toThrow(/past its end/);
  });

  it('decodes a record that sits at an offset inside a larger buffer', () => {
    const r = record();
    const encoded = encodeCacheRecord(r);
    const backing = new Uint8Array(encoded.length + 13);
    backing.set(encoded, 7);
    expect(decodeCacheRecord(backing.subarray(7, 7 + encoded.length))).toEqual(r);
  });
});

describe('cache record properties', () => {
  // Non-empty strings of whole graphemes (no lone surrogates, which UTF-8 cannot carry). Short ones,
  // long ones (often over MAX_FIELD_BYTES in UTF-8) and ASCII runs around the limit, so that the drop
  // rule and its boundary are exercised as often as the plain round trip.
  const text = fc.oneof(
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60, size: 'max' }),
    fc.string({ unit: 'grapheme', minLength: 60, maxLength: 160, size: 'max' }),
    fc.integer({ min: MAX_FIELD_BYTES - 20, max: MAX_FIELD_BYTES + 20 }).map((n) => 'a'.repeat(n)),
  );
  const field = fc.option(text, { nil: null });
  const arbRecord = fc.record({
    etag: field,
    lastModified: field,
    cacheControl: field,
    expires: field,
    freshUntil: fc.double(),
    date: fc.option(fc.double(), { nil: null }),
    storedAt: fc.double(),
    bodyBytes: fc.nat({ max: 0xffffffff }),
  });

  it('decodes what it encodes, with oversized fields dropped to null', () => {
    fc.assert(
      fc.property(arbRecord, (r) => {
        const keep = (value: string | null): string | null =>
          value === null || utf8Bytes(value) > MAX_FIELD_BYTES ? null : value;
        const expected: CacheRecord = {
          ...r,
          etag: keep(r.etag),
          lastModified: keep(r.lastModified),
          cacheControl: keep(r.cacheControl),
          expires: keep(r.expires),
        };
        const bytes = encodeCacheRecord(r);
        expect(bytes.length).toBeLessThanOrEqual(maxValueBytes(4096));
        expect(decodeCacheRecord(bytes)).toEqual(expected);
      }),
      { seed, numRuns: 300 },
    );
  });
});
