/**
 * The crawl database record codec (queue-server/crawldb/record.ts): exact round trips, nulls, the size
 * limit of a B-Tree value at 16 KiB pages, and refusal of bytes it cannot trust.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import {
  CRAWL_STATUSES,
  CrawlDbRecordError,
  decodeCrawlDbRecord,
  encodeCrawlDbRecord,
  MAX_CRAWLDB_RECORD_BYTES,
  newCrawlDbRecord,
  type CrawlDbRecord,
} from '../../queue-server/crawldb/record.js';
import { warcFileName, type CaptureLocation } from '../../queue-server/warc/location.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`crawldb-record fast-check seed ${seed} (set FC_SEED to replay)`);

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
/** 104-byte fixed header (see the layout in record.ts); 160 with a WARC capture. */
const HEADER = 104;
const HEADER_WITH_WARC = 160;
const MAX_URL = 2048;

const hex16 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((value) => value.toString(16).padStart(16, '0'));
const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
const time = fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), finite);

const uuid = fc.uuid({ version: 4 });
const locationArb: fc.Arbitrary<CaptureLocation> = fc
  .record({
    createdAt: fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2999, 0, 1) }),
    serial: fc.integer({ min: 0, max: 0xffffffff }),
    offset: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
    requestLength: fc.integer({ min: 0, max: 0xffff }),
    extra: fc.integer({ min: 0, max: 0xffffffff - 0xffff }),
    kind: fc.constantFrom('response' as const, 'revisit' as const),
    date: time,
    id: uuid,
  })
  .map(({ createdAt, serial, offset, requestLength, extra, kind, date, id }) => ({
    file: warcFileName({ createdAt, serial }),
    offset,
    length: requestLength + extra,
    requestLength,
    kind,
    date,
    recordId: `<urn:uuid:${id}>`,
  }));

const recordArb: fc.Arbitrary<CrawlDbRecord> = fc.record({
  url: fc.oneof(fc.string({ maxLength: MAX_URL, size: 'max' }), fc.webUrl().filter((url) => url.length <= MAX_URL)),
  status: fc.constantFrom(...CRAWL_STATUSES),
  depth: fc.integer({ min: 0, max: 0xffffffff }),
  score: finite,
  firstFetchAt: fc.option(time),
  lastFetchAt: fc.option(time),
  modifiedAt: fc.option(time),
  fetchIntervalMs: time,
  nextFetchAt: time,
  retries: fc.integer({ min: 0, max: 0xffffffff }),
  lastHttpStatus: fc.option(fc.integer({ min: 0, max: 0xffff })),
  signature: fc.option(hex16),
  simhash: fc.option(hex16),
  duplicateOf: fc.option(hex16),
  redirectTo: fc.option(hex16),
  errorCode: fc.option(fc.oneof(fc.constantFrom('', 'timeout', 'http-503', 'robots-disallowed'), fc.string({ unit: 'grapheme', maxLength: 100, size: 'max' }))),
  warc: fc.option(locationArb),
});

function allNulls(url = 'https://example.com/'): CrawlDbRecord {
  return {
    url,
    status: 'unfetched',
    depth: 0,
    score: 0,
    firstFetchAt: null,
    lastFetchAt: null,
    modifiedAt: null,
    fetchIntervalMs: 0,
    nextFetchAt: 0,
    retries: 0,
    lastHttpStatus: null,
    signature: null,
    simhash: null,
    duplicateOf: null,
    redirectTo: null,
    errorCode: null,
    warc: null,
  };
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (err) {
    return err instanceof CrawlDbRecordError ? err.code : `not a CrawlDbRecordError: ${String(err)}`;
  }
  return undefined;
}

describe('crawl db record codec', () => {
  it('round-trips any record exactly, in 104 bytes (160 with a WARC capture) plus URL and error code', () => {
    fc.assert(
      fc.property(recordArb, (record) => {
        const bytes = encodeCrawlDbRecord(record);
        expect(bytes.length).toBe((record.warc === null ? HEADER : HEADER_WITH_WARC) + Buffer.byteLength(record.url) + Buffer.byteLength(record.errorCode ?? ''));
        expect(decodeCrawlDbRecord(bytes)).toEqual(record);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('round-trips a record whose nullable fields are all null, and tells null from zero and from ""', () => {
    const record = allNulls();
    expect(decodeCrawlDbRecord(encodeCrawlDbRecord(record))).toEqual(record);
    const zeros: CrawlDbRecord = { ...record, firstFetchAt: 0, lastFetchAt: 0, modifiedAt: 0, lastHttpStatus: 0, signature: '0000000000000000', errorCode: '' };
    expect(decodeCrawlDbRecord(encodeCrawlDbRecord(zeros))).toEqual(zeros);
  });

  it('stores a new record as unfetched, due now, at the initial interval', () => {
    const record = newCrawlDbRecord('https://example.com/a', 3, 0.125, NOW, DEFAULT_FETCH_SCHEDULE);
    expect(record).toMatchObject({ status: 'unfetched', depth: 3, score: 0.125, nextFetchAt: NOW, fetchIntervalMs: DEFAULT_FETCH_SCHEDULE.initialIntervalMs, retries: 0 });
    expect(decodeCrawlDbRecord(encodeCrawlDbRecord(record))).toEqual(record);
  });

  it('fits a 2,048-character URL with every field set and a long error code', () => {
    const url = `https://example.com/${'a'.repeat(MAX_URL - 'https://example.com/'.length)}`;
    expect(url.length).toBe(MAX_URL);
    const record: CrawlDbRecord = {
      ...allNulls(url),
      status: 'duplicate',
      firstFetchAt: NOW,
      lastFetchAt: NOW,
      modifiedAt: NOW,
      lastHttpStatus: 200,
      signature: 'ffffffffffffffff',
      simhash: '8000000000000001',
      duplicateOf: '0123456789abcdef',
      redirectTo: 'fedcba9876543210',
      errorCode: 'e'.repeat(MAX_CRAWLDB_RECORD_BYTES - HEADER - MAX_URL),
    };
    const bytes = encodeCrawlDbRecord(record);
    expect(bytes.length).toBe(MAX_CRAWLDB_RECORD_BYTES);
    expect(decodeCrawlDbRecord(bytes)).toEqual(record);
  });

  it('fits a 2,048-character URL with every field set, a WARC capture and a long error code', () => {
    const url = `https://example.com/${'a'.repeat(MAX_URL - 'https://example.com/'.length)}`;
    const warc: CaptureLocation = {
      file: warcFileName({ createdAt: NOW, serial: 12 }),
      offset: 2 ** 40 + 3,
      length: 70_000,
      requestLength: 400,
      kind: 'revisit',
      date: NOW + 0.5,
      recordId: '<urn:uuid:0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0>',
    };
    const record: CrawlDbRecord = { ...allNulls(url), status: 'fetched', lastHttpStatus: 200, signature: 'ffffffffffffffff', warc, errorCode: 'e'.repeat(MAX_CRAWLDB_RECORD_BYTES - HEADER_WITH_WARC - MAX_URL) };
    const bytes = encodeCrawlDbRecord(record);
    expect(bytes.length).toBe(MAX_CRAWLDB_RECORD_BYTES);
    expect(decodeCrawlDbRecord(bytes)).toEqual(record);
  });

  it('reads a record written before the WARC capture field existed as having none, byte for byte the old layout', () => {
    const record = { ...allNulls('https://example.com/old'), status: 'fetched' as const, lastHttpStatus: 200 };
    const bytes = Buffer.from(encodeCrawlDbRecord(record));
    // The old layout: 104-byte header, flag bit 9 clear, the URL right after.
    expect(bytes.readUInt16LE(4)).toBe(HEADER);
    expect(bytes.readUInt16LE(2) & (1 << 9)).toBe(0);
    expect(bytes.toString('utf8', HEADER)).toBe('https://example.com/old');
    expect(decodeCrawlDbRecord(bytes).warc).toBeNull();
  });

  it('refuses a record whose WARC flag is set without room for the capture, or whose capture does not decode (CRAWLDB_RECORD_CORRUPT)', () => {
    const bytes = Buffer.from(encodeCrawlDbRecord(allNulls('https://example.com/flag')));
    bytes.writeUInt16LE(bytes.readUInt16LE(2) | (1 << 9), 2);
    expect(codeOf(() => decodeCrawlDbRecord(bytes))).toBe('CRAWLDB_RECORD_CORRUPT');
    const warc: CaptureLocation = { file: warcFileName({ createdAt: NOW, serial: 1 }), offset: 0, length: 10, requestLength: 5, kind: 'response', date: NOW, recordId: '<urn:uuid:0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0>' };
    const withWarc = Buffer.from(encodeCrawlDbRecord({ ...allNulls('https://example.com/kind'), warc }));
    withWarc[HEADER + 28] = 7; // an unknown kind of capture record
    expect(codeOf(() => decodeCrawlDbRecord(withWarc))).toBe('CRAWLDB_RECORD_CORRUPT');
  });

  it('refuses a record one byte over the B-Tree value limit with CRAWLDB_RECORD_TOO_LARGE', () => {
    const limitUrl = 'h'.repeat(MAX_CRAWLDB_RECORD_BYTES - HEADER);
    expect(encodeCrawlDbRecord(allNulls(limitUrl)).length).toBe(MAX_CRAWLDB_RECORD_BYTES);
    expect(codeOf(() => encodeCrawlDbRecord(allNulls(`${limitUrl}h`)))).toBe('CRAWLDB_RECORD_TOO_LARGE');
    expect(codeOf(() => encodeCrawlDbRecord({ ...allNulls('https://example.com/'), errorCode: 'x'.repeat(4000) }))).toBe('CRAWLDB_RECORD_TOO_LARGE');
    let caught: unknown = null;
    try {
      encodeCrawlDbRecord(allNulls(`https://example.com/${'z'.repeat(5000)}`));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CrawlDbRecordError);
    expect((caught as CrawlDbRecordError).disposition).toBe('skip');
    expect((caught as CrawlDbRecordError).url).toMatch(/^https:\/\/example\.com\//);
  });

  it('treats a malformed record as a bug: bad hash, unknown status, negative depth, NaN time', () => {
    const bad: Partial<CrawlDbRecord>[] = [
      { signature: 'ABCDEFABCDEFABCD' },
      { simhash: '123' },
      { status: 'lost' as CrawlDbRecord['status'] },
      { depth: -1 },
      { retries: 1.5 },
      { nextFetchAt: Number.NaN },
      { lastHttpStatus: 70_000 },
    ];
    for (const fields of bad) {
      expect(() => encodeCrawlDbRecord({ ...allNulls(), ...fields })).toThrow(Error);
      expect(codeOf(() => encodeCrawlDbRecord({ ...allNulls(), ...fields }))).toMatch(/^not a CrawlDbRecordError/);
    }
  });

  it('refuses bytes cut short, with an unknown status or inconsistent lengths (CRAWLDB_RECORD_CORRUPT)', () => {
    const bytes = Buffer.from(encodeCrawlDbRecord({ ...allNulls(), errorCode: 'timeout' }));
    expect(codeOf(() => decodeCrawlDbRecord(new Uint8Array(0)))).toBe('CRAWLDB_RECORD_CORRUPT');
    expect(codeOf(() => decodeCrawlDbRecord(bytes.subarray(0, 50)))).toBe('CRAWLDB_RECORD_CORRUPT');
    expect(codeOf(() => decodeCrawlDbRecord(bytes.subarray(0, bytes.length - 1)))).toBe('CRAWLDB_RECORD_CORRUPT');
    const status = Buffer.from(bytes);
    status[1] = CRAWL_STATUSES.length;
    expect(codeOf(() => decodeCrawlDbRecord(status))).toBe('CRAWLDB_RECORD_CORRUPT');
  });

  it('refuses a layout version it does not know (CRAWLDB_RECORD_VERSION)', () => {
    const bytes = Buffer.from(encodeCrawlDbRecord(allNulls()));
    bytes[0] = 2;
    expect(codeOf(() => decodeCrawlDbRecord(bytes))).toBe('CRAWLDB_RECORD_VERSION');
  });

  it('reads a record written with a longer header (a compatible field added later) by skipping what it does not know', () => {
    const record: CrawlDbRecord = { ...allNulls('https://example.com/grown'), status: 'fetched', errorCode: 'http-500', signature: '00000000000000ff' };
    const v1 = Buffer.from(encodeCrawlDbRecord(record));
    const extra = 16;
    const grown = Buffer.alloc(v1.length + extra, 0xee);
    v1.copy(grown, 0, 0, HEADER);
    grown.writeUInt16LE(HEADER + extra, 4);
    grown.writeUInt16LE(grown.readUInt16LE(2) | 0x8000, 2); // an optional field this decoder does not know
    v1.copy(grown, HEADER + extra, HEADER);
    expect(decodeCrawlDbRecord(grown)).toEqual(record);
  });

  it('decodes from a view into a larger buffer (B-Tree values are slices of a page)', () => {
    const record = { ...allNulls('https://example.com/slice'), signature: '0123456789abcdef' };
    const bytes = encodeCrawlDbRecord(record);
    const page = new Uint8Array(bytes.length + 20);
    page.set(bytes, 7);
    expect(decodeCrawlDbRecord(page.subarray(7, 7 + bytes.length))).toEqual(record);
  });
});
