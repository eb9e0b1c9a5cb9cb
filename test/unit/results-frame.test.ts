/**
 * The binary results frame (shared/results-frame.ts) as the queue server reads it (api/results-body.ts,
 * the code the results route runs): a frame decodes to exactly the request it was made of; it is
 * accepted exactly when the same request posted as JSON would be (the bounds are the protocol's, one
 * place); and a truncated, altered or hostile frame is refused with a stable code, never with an
 * exception of another kind and never after allocating what its lengths claim. Property tests print
 * their seed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildIndexData, type IndexData } from '../../shared/index-data.js';
import { PROTOCOL_VERSION, resultsRequestSchema, resultsToJson, type ItemResult, type ResultsRequest } from '../../shared/protocol.js';
import { ByteWriter } from '../../shared/byte-codec.js';
import { encodeResultsFrame } from '../../shared/results-frame.js';
import { buildCapture, type Capture } from '../../shared/warc/exchange.js';
import { HttpError } from '../../queue-server/api/http-errors.js';
import { JSON_BOUNDS, type JsonBounds } from '../../queue-server/api/bounded-json.js';
import { FrameBody } from '../../queue-server/api/request-auth.js';
import { readResultsBody } from '../../queue-server/api/results-body.js';
import { exchangeOf } from '../support/warc-exchange.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`results-frame fast-check seed ${seed} (set FC_SEED to replay)`);

const FETCHER = 'fetcher-1';

function pageResult(i: number, extra: Partial<ItemResult> = {}): ItemResult {
  return {
    slot: 0,
    i,
    url: `http://127.0.0.2:8080/docs/${i}.html`,
    fetchedAt: 1_764_000_000_000 + i,
    durationMs: 12,
    status: 200,
    error: null,
    contentType: 'text/html; charset=utf-8',
    bytes: 14_000,
    wireBytes: 4_200,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: { etag: '"abc"', lastModified: null, date: 'Tue, 02 Dec 2026 10:00:01 GMT', age: null, expires: null, cacheControl: 'max-age=60' },
    signature: '0123456789abcdef',
    page: { title: 'Title', description: null, language: 'en', excerpt: 'Some text.', canonical: null, noindex: false, nofollow: false, outlinks: 2, simhash: 'fedcba9876543210' },
    links: ['http://127.0.0.2:8080/a.html', 'http://127.0.0.2:8080/b.html'],
    robotsTxt: null,
    capture: null,
    sitemap: null,
    address: '127.0.0.2',
    index: null,
    ...extra,
  };
}

function captureOf(url: string, body: string, options: { truncated?: boolean } = {}): Capture {
  return buildCapture(exchangeOf({ url, body, startedAt: 1_764_000_000_000 }), { maxBodyBytes: options.truncated === true ? 8 : 64 * 1024 });
}

function indexOf(title: string, body: string, anchors: { url: string; text: string }[] = []): IndexData {
  return buildIndexData({ title, headings: ['Grey heron', 'Feeding'], bodyText: body, language: 'en', anchors });
}

function request(results: ItemResult[]): ResultsRequest {
  return { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER, scheduleId: 'abc123:7', results };
}

function realistic(): ResultsRequest {
  return request([
    pageResult(0, {
      capture: captureOf('http://127.0.0.2:8080/docs/0.html', '<html><title>Herons</title>The grey heron waits. Ünïcödé 鷺 🐦</html>'),
      index: indexOf('Herons of the marsh', 'The grey heron waits in the reeds. Herons eat fish; the heron waits. 鷺は待つ 🐦', [
        { url: 'http://127.0.0.2:8080/a.html', text: 'egrets' },
        { url: 'http://127.0.0.2:8080/b.html', text: 'the bittern page' },
      ]),
    }),
    pageResult(1, { status: null, error: { code: 'timeout', message: 'no answer in 30000 ms' }, contentType: null, page: null, links: [], signature: null }),
    pageResult(2, { status: 404, page: null, links: [], capture: captureOf('http://127.0.0.2:8080/robots.txt', 'not here', { truncated: true }) }),
    pageResult(3, { index: indexOf('Only index', 'words words words') }),
  ]);
}

function decode(frame: Buffer, bounds: JsonBounds = JSON_BOUNDS, fetcherId: string | undefined = FETCHER): ResultsRequest {
  return readResultsBody(new FrameBody(frame, bounds), fetcherId);
}

/** The refusal of a frame: the HTTP error's code and, for a frame error, its frame code. */
function refusal(frame: Buffer, bounds: JsonBounds = JSON_BOUNDS): { code: string; frameCode?: unknown } | null {
  try {
    decode(frame, bounds);
    return null;
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    expect(error.status === 400 || error.status === 413).toBe(true);
    return { code: error.code, frameCode: error.extras.details?.frameCode };
  }
}

/** Whether the JSON form of a request is what the protocol schema accepts (what a JSON post of it would get). */
function jsonAccepts(req: ResultsRequest): boolean {
  return resultsRequestSchema.safeParse(JSON.parse(JSON.stringify(resultsToJson(req)))).success;
}

const FRAME_CODES = ['FRAME_BAD_MAGIC', 'FRAME_VERSION', 'FRAME_TRUNCATED', 'FRAME_TRAILING_BYTES', 'FRAME_BAD_VARINT', 'FRAME_BAD_UTF8', 'FRAME_BAD_VALUE', 'FRAME_TOO_COMPLEX', 'FRAME_MISMATCH'];
const HTTP_CODES = ['invalid-frame', 'invalid-body', 'invalid-json', 'json-too-complex', 'bad-request', 'fetcher-id-mismatch'];

describe('results frame', () => {
  it('decodes to exactly the request it was made of: captures as bytes, index data as built', () => {
    const original = realistic();
    const decoded = decode(encodeResultsFrame(original));
    expect(decoded).toEqual(original);
    expect(Buffer.isBuffer(decoded.results[0]!.capture!.responseRecord)).toBe(true);
  });

  it('is smaller than the JSON post of the same results', () => {
    const original = realistic();
    expect(encodeResultsFrame(original).length).toBeLessThan(Buffer.byteLength(JSON.stringify(resultsToJson(original))));
  });

  it('round-trips any results a fetcher builds', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 300, size: 'max' });
    const resultArb = fc.record({
      title: text,
      body: text,
      anchors: fc.array(fc.record({ url: fc.webUrl(), text }), { maxLength: 6 }),
      withCapture: fc.boolean(),
      withIndex: fc.boolean(),
      status: fc.integer({ min: 100, max: 999 }),
      date: fc.oneof(fc.integer({ min: 0, max: 2 ** 45 }), fc.double({ min: 0, max: 2 ** 45, noNaN: true })),
    });
    fc.assert(
      fc.property(fc.array(resultArb, { maxLength: 6 }), (specs) => {
        const results = specs.map((s, i) => {
          const capture = s.withCapture ? { ...captureOf(`http://127.0.0.2:8080/p/${i}`, s.body), status: s.status, date: s.date } : null;
          return pageResult(i, { capture, index: s.withIndex ? indexOf(s.title, s.body, s.anchors.map((a) => ({ url: a.url.slice(0, 2048), text: a.text }))) : null });
        });
        const original = request(results);
        expect(decode(encodeResultsFrame(original))).toEqual(original);
      }),
      { seed, numRuns: 150 },
    );
  });

  it('accepts a request exactly when its JSON post would be accepted (the same bounds)', () => {
    // Values a fetcher's types allow, at and past the bounds of shared/protocol.ts, index-data.ts and capture-wire.ts.
    const base = realistic();
    const idx = base.results[0]!.index!;
    const cap = base.results[0]!.capture!;
    const changes: Array<(r: ItemResult) => ItemResult> = [
      (r) => ({ ...r, index: { ...idx, title: 'a'.repeat(512) } }),
      (r) => ({ ...r, index: { ...idx, title: 'a'.repeat(513) } }),
      (r) => ({ ...r, index: { ...idx, language: 'x'.repeat(36) } }),
      (r) => ({ ...r, index: { ...idx, stemmer: 'klingon' } }),
      (r) => ({ ...r, index: { ...idx, text: '\u00e9'.repeat(8192) } }),
      (r) => ({ ...r, index: { ...idx, text: '\u00e9'.repeat(8193) } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['heron', 1, [0]], ['heron', 1, [1]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['a'.repeat(64), 1, [0]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['a'.repeat(65), 1, [0]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['', 1, [0]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['heron', 2, [3, 0]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['heron', 1, [127]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['heron', 1, [128]]] } } }),
      (r) => ({ ...r, index: { ...idx, fields: { ...idx.fields, title: [['heron', 129, Array.from({ length: 129 }, (_, k) => (k === 0 ? 0 : 1))]] } } }),
      (r) => ({ ...r, index: { ...idx, anchors: [{ url: 'http://x/', terms: Array.from({ length: 32 }, () => 'egret') }] } }),
      (r) => ({ ...r, index: { ...idx, anchors: [{ url: 'http://x/', terms: Array.from({ length: 33 }, () => 'egret') }] } }),
      (r) => ({ ...r, index: { ...idx, anchors: [{ url: 'http://x/', terms: [] }] } }),
      (r) => ({ ...r, index: { ...idx, anchors: [{ url: '', terms: ['egret'] }] } }),
      (r) => ({ ...r, index: { ...idx, anchors: [{ url: 'h'.repeat(2049), terms: ['egret'] }] } }),
      (r) => ({ ...r, capture: { ...cap, status: 99 } }),
      (r) => ({ ...r, capture: { ...cap, status: 1000 } }),
      (r) => ({ ...r, capture: { ...cap, url: 'h'.repeat(8192) } }),
      (r) => ({ ...r, capture: { ...cap, url: 'h'.repeat(8193) } }),
      (r) => ({ ...r, capture: { ...cap, url: '' } }),
      (r) => ({ ...r, capture: { ...cap, ipAddress: '1'.repeat(65) } }),
      (r) => ({ ...r, capture: { ...cap, mime: 'm'.repeat(201) } }),
      (r) => ({ ...r, capture: { ...cap, payloadDigest: 'sha1:abcdefghijklmnopqrstuvwxyz234567' } }),
      (r) => ({ ...r, capture: { ...cap, date: 2.5 } }),
      (r) => ({ ...r, capture: { ...cap, responseHead: Buffer.alloc(72 * 1024) } }),
      (r) => ({ ...r, capture: { ...cap, responseHead: Buffer.alloc(72 * 1024 + 1) } }),
    ];
    fc.assert(
      fc.property(fc.subarray(changes.map((_, k) => k), { minLength: 1, maxLength: 3 }), (picked) => {
        let result = base.results[0]!;
        for (const k of picked) result = changes[k]!(result);
        const candidate = request([result, base.results[1]!]);
        let frame: Buffer;
        try {
          frame = encodeResultsFrame(candidate);
        } catch {
          // Nothing to send (the encoder refuses what it cannot write); the JSON path must refuse it too.
          expect(jsonAccepts(candidate)).toBe(false);
          return;
        }
        const verdict = refusal(frame);
        expect(verdict === null).toBe(jsonAccepts(candidate));
        if (verdict === null) expect(decode(frame)).toEqual(candidate);
      }),
      { seed, numRuns: 300 },
    );
  });

  it('refuses every truncation of a frame with a stable code', () => {
    const frame = encodeResultsFrame(realistic());
    for (let length = 0; length < frame.length; length++) {
      const verdict = refusal(frame.subarray(0, length));
      expect(verdict, `truncated to ${length} of ${frame.length} bytes`).not.toBeNull();
      expect(HTTP_CODES).toContain(verdict!.code);
      if (verdict!.code === 'invalid-frame') expect(FRAME_CODES).toContain(verdict!.frameCode);
    }
  });

  it('refuses altered frames with a stable code, and accepts only what the JSON schema would', () => {
    const frame = encodeResultsFrame(realistic());
    const edit = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat({ max: frame.length - 1 }), byte: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('insert' as const), at: fc.nat({ max: frame.length }), bytes: fc.uint8Array({ minLength: 1, maxLength: 9 }) }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat({ max: frame.length - 1 }), count: fc.integer({ min: 1, max: 9 }) }),
    );
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => {
        let bytes = Buffer.from(frame);
        for (const e of edits) {
          const at = Math.min(e.at, bytes.length);
          if (e.kind === 'set' && at < bytes.length) bytes[at] = e.byte;
          else if (e.kind === 'insert') bytes = Buffer.concat([bytes.subarray(0, at), e.bytes, bytes.subarray(at)]);
          else if (e.kind === 'delete') bytes = Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + e.count)]);
        }
        let decoded: ResultsRequest;
        try {
          decoded = decode(bytes);
        } catch (error) {
          // Only the route's own refusals, each with a known code.
          expect(error).toBeInstanceOf(HttpError);
          const e = error as HttpError;
          expect(HTTP_CODES).toContain(e.code);
          if (e.code === 'invalid-frame') expect(FRAME_CODES).toContain(e.extras.details?.frameCode);
          return;
        }
        expect(jsonAccepts(decoded)).toBe(true);
      }),
      { seed, numRuns: 1500 },
    );
  });

  describe('hostile frames', () => {
    /** A frame with the given JSON part and raw parts bytes (written by hand, as an attacker would). */
    function handmade(json: unknown, parts: (w: ByteWriter) => void, version = 1): Buffer {
      const w = new ByteWriter();
      w.raw(Buffer.from('PTRF'));
      w.u8(version);
      const text = JSON.stringify(json);
      w.varint(Buffer.byteLength(text));
      w.utf8(text);
      parts(w);
      return Buffer.from(w.finish());
    }
    const oneResult = { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER, scheduleId: 's:1', results: [pageResult(0)] };
    /** The parts of one result with index data whose structure `body` writes after an empty text. */
    const indexParts = (names: string, body: (w: ByteWriter) => void) => (w: ByteWriter) => {
      w.varint(1);
      w.u8(2);
      w.string('');
      w.string(names);
      body(w);
    };

    it.each([
      ['no magic', Buffer.from('{"protocolVersion":1}'), 'FRAME_BAD_MAGIC'],
      ['a later version', handmade(oneResult, (w) => w.varint(1), 2), 'FRAME_VERSION'],
      ['a JSON length past the end', Buffer.concat([Buffer.from('PTRF\x01'), Buffer.from([0xff, 0xff, 0xff, 0x7f])]), 'FRAME_TRUNCATED'],
      ['parts for more results than the JSON has', handmade(oneResult, (w) => { w.varint(2); w.u8(0); w.u8(0); }), 'FRAME_MISMATCH'],
      ['unknown part bits', handmade(oneResult, (w) => { w.varint(1); w.u8(4); }), 'FRAME_BAD_VALUE'],
      ['bytes after the last result', handmade(oneResult, (w) => { w.varint(1); w.u8(0); w.u8(0); }), 'FRAME_TRAILING_BYTES'],
      ['a varint of 9 bytes', handmade(oneResult, (w) => w.raw(Buffer.from([0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]))), 'FRAME_BAD_VARINT'],
      ['a varint in a longer form than needed', handmade(oneResult, (w) => w.raw(Buffer.from([0x81, 0x00, 0x00]))), 'FRAME_BAD_VARINT'],
      ['a capture claiming a 2^40-byte record', handmade(oneResult, (w) => {
        w.varint(1); w.u8(1); w.string('http://x/'); w.f64(1); w.u8(0); w.varint(200); w.u8(0); w.string('sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'); w.varint(0); w.u8(0);
        w.raw(Buffer.alloc(32)); w.varint(0); w.varint(2 ** 40);
      }), 'FRAME_BAD_VALUE'],
      ['a record longer than the frame', handmade(oneResult, (w) => {
        w.varint(1); w.u8(1); w.string('http://x/'); w.f64(1); w.u8(0); w.varint(200); w.u8(0); w.string('sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'); w.varint(0); w.u8(0);
        w.raw(Buffer.alloc(32)); w.varint(0); w.varint(10_000_000);
      }), 'FRAME_TRUNCATED'],
      ['a field claiming 2^50 entries', handmade(oneResult, indexParts('english', (w) => { w.varint(7); w.u8(0); w.u8(0); w.varint(2 ** 50); })), 'FRAME_BAD_VALUE'],
      ['a body field claiming more entries than bytes left', handmade(oneResult, indexParts('english', (w) => { w.varint(7); w.u8(0); w.u8(0); w.varint(0); w.varint(0); w.varint(16_000); })), 'FRAME_TRUNCATED'],
      ['a term running past its names', handmade(oneResult, indexParts('englishheron', (w) => { w.varint(7); w.u8(0); w.u8(0); w.varint(1); w.varint(50); w.varint(1); w.varint(0); })), 'FRAME_MISMATCH'],
      ['names left over', handmade(oneResult, indexParts('englishheron', (w) => { w.varint(7); w.u8(0); w.u8(0); w.varint(0); w.varint(0); w.varint(0); w.varint(0); })), 'FRAME_MISMATCH'],
      ['names that are not UTF-8', handmade(oneResult, (w) => { w.varint(1); w.u8(2); w.string(''); w.varint(3); w.raw(Buffer.from([0x65, 0xc3, 0x28])); }), 'FRAME_BAD_UTF8'],
      ['a term listed twice', handmade(oneResult, indexParts('englishheronheron', (w) => { w.varint(7); w.u8(0); w.u8(0); w.varint(2); w.varint(5); w.varint(1); w.varint(0); w.varint(5); w.varint(1); w.varint(1); w.varint(0); w.varint(0); w.varint(0); })), 'FRAME_BAD_VALUE'],
    ])('refuses %s (%s)', (_name, frame, frameCode) => {
      expect(refusal(frame)).toEqual({ code: 'invalid-frame', frameCode });
    });

    it('refuses a JSON part that carries a capture or index data itself', () => {
      const withIndex = { ...oneResult, results: [pageResult(0, { index: indexOf('t', 'b') })] };
      expect(refusal(handmade(withIndex, (w) => { w.varint(1); w.u8(0); }))).toEqual({ code: 'invalid-frame', frameCode: 'FRAME_MISMATCH' });
    });

    it('checks the JSON part as a JSON post is checked', () => {
      expect(refusal(handmade({ ...oneResult, results: [{ ...pageResult(0), status: 42 }] }, (w) => { w.varint(1); w.u8(0); }))?.code).toBe('invalid-body');
      const deep = Buffer.concat([Buffer.from('PTRF\x01'), Buffer.from([40]), Buffer.from('['.repeat(20) + ']'.repeat(20))]);
      expect(refusal(deep)?.code).toBe('json-too-complex');
    });

    it('refuses a frame whose parts decode to more values than a JSON post may hold', () => {
      const frame = encodeResultsFrame(realistic());
      expect(refusal(frame, { maxDepth: JSON_BOUNDS.maxDepth, maxTokens: 400 })).toEqual({ code: 'invalid-frame', frameCode: 'FRAME_TOO_COMPLEX' });
    });

    it('refuses a frame whose fetcherId is not the signed one', () => {
      expect(() => decode(encodeResultsFrame(realistic()), JSON_BOUNDS, 'fetcher-2')).toThrow(expect.objectContaining({ code: 'fetcher-id-mismatch' }));
    });
  });
});
