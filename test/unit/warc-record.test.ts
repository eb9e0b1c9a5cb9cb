/**
 * WARC records built from real HTTP exchanges on loopback (shared/warc/), checked by webrecorder's
 * warcio: every record parses, every block and payload digest is recomputed from what warcio read,
 * each record is its own gzip member at the offset Petrel says, and the payload is the exact bytes the
 * server sent (content coding kept, chunked framing undone).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { captureFromWire, captureToWire, captureWireSchema } from '../../shared/warc/capture-wire.js';
import { WarcError } from '../../shared/warc/errors.js';
import { buildCapture, buildRevisitRecord, buildWarcinfoRecord, EMPTY_PAYLOAD_DIGEST, MAX_HEAD_BYTES, payloadIsCompressed, type Capture, type Exchange } from '../../shared/warc/exchange.js';
import { gzipMember, memberLength } from '../../shared/warc/gzip-member.js';
import { responseHead } from '../../shared/warc/http-head.js';
import { sha1Digest, warcDate } from '../../shared/warc/record.js';
import { checkWarcFile, fetchExchange, sha1Base32 } from '../support/warc-exchange.js';

const HTML = `<!doctype html><html><head><title>Page</title></head><body>${'<p>Some text of a page, repeated. </p>'.repeat(200)}</body></html>`;
const GZIPPED = gzipSync(Buffer.from(HTML));
/** A body whose first line reads as a chunk size: a reader that wrongly undid chunking again would mangle it. */
const CHUNK_LOOKALIKE = 'a\r\n0123456789\r\n0\r\n\r\n';

let server: Server;
let origin = '';

beforeAll(async () => {
  server = createServer((req, res) => {
    switch (req.url) {
      case '/page.html':
        res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', ETag: '"v1"', 'Content-Length': Buffer.byteLength(HTML) });
        res.end(HTML);
        return;
      case '/chunked.html':
        res.writeHead(200, { 'Content-Type': 'text/html' }); // no length: Node sends Transfer-Encoding: chunked
        res.write(CHUNK_LOOKALIKE);
        res.write(HTML.slice(0, 1000));
        res.end(HTML.slice(1000));
        return;
      case '/gzip.html':
        res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Encoding': 'gzip', 'Content-Length': GZIPPED.length });
        res.end(GZIPPED);
        return;
      case '/missing':
        res.writeHead(404, { 'Content-Type': 'text/plain' });
        res.end('not here\n');
        return;
      case '/moved':
        res.writeHead(301, { Location: '/page.html', 'Content-Length': 0 });
        res.end();
        return;
      case '/cached.html':
        if (req.headers['if-none-match'] === '"v1"') {
          res.writeHead(304, { ETag: '"v1"' });
          res.end();
          return;
        }
        res.writeHead(200, { 'Content-Type': 'text/html', ETag: '"v1"' });
        res.end(HTML);
        return;
      default:
        res.writeHead(500);
        res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const LIMIT = 2 * 1024 * 1024;

/** The members of captures in file order, as a WARC file. */
function fileOf(records: readonly Uint8Array[]): Buffer {
  return Buffer.concat(records);
}

describe('WARC records of real exchanges', () => {
  it('writes a request and a response record per exchange, one gzip member each, that warcio parses with every digest matching', async () => {
    const paths = ['/page.html', '/chunked.html', '/gzip.html', '/missing', '/moved'];
    const exchanges = await Promise.all(paths.map((path) => fetchExchange(origin + path)));
    const captures = exchanges.map((exchange) => buildCapture(exchange, { maxBodyBytes: LIMIT }));
    const members = captures.flatMap((capture) => [capture.requestRecord, capture.responseRecord]);
    const records = await checkWarcFile(fileOf(members));

    expect(records.map((record) => record.type)).toEqual(paths.flatMap(() => ['request', 'response']));
    let offset = 0;
    for (const [i, record] of records.entries()) {
      // warcio finds each record where Petrel's member lengths put it.
      expect(record.offset).toBe(offset);
      expect(record.length).toBe(members[i]!.length);
      expect(memberLength(members[i]!)).toBe(members[i]!.length);
      offset += members[i]!.length;
    }
    for (const [i, capture] of captures.entries()) {
      const request = records[2 * i]!;
      const response = records[2 * i + 1]!;
      const exchange = exchanges[i]!;
      for (const record of [request, response]) {
        expect(record.headers.get('WARC-Target-URI')).toBe(origin + paths[i]);
        expect(record.headers.get('WARC-IP-Address')).toBe('127.0.0.1');
        expect(record.headers.get('WARC-Date')).toBe(warcDate(exchange.startedAt));
      }
      expect(request.headers.get('WARC-Record-ID')).toBe(capture.requestId);
      expect(response.headers.get('WARC-Record-ID')).toBe(capture.responseId);
      expect(request.headers.get('WARC-Concurrent-To')).toBe(capture.responseId);
      expect(request.block).toEqual(Buffer.from(exchange.requestHead));
      expect(request.record.httpHeaders?.method).toBe('GET');
      expect(response.httpStatus).toBe(exchange.status);
      expect(capture.status).toBe(exchange.status);
      expect(response.headers.get('WARC-Payload-Digest')).toBe(capture.payloadDigest);
      expect(response.headers.has('WARC-Truncated')).toBe(false);
    }
    const [page, chunked, gzip, missing, moved] = records.filter((record) => record.type === 'response');
    expect(page!.payload).toEqual(Buffer.from(HTML));
    // Chunked framing is undone, and the head no longer claims it, so readers leave the body alone.
    expect(chunked!.payload).toEqual(Buffer.from(CHUNK_LOOKALIKE + HTML));
    expect(chunked!.block.toString('latin1')).toContain('\r\nX-Petrel-Orig-Transfer-Encoding: chunked\r\n');
    expect(chunked!.record.httpHeaders?.headers.get('Transfer-Encoding') ?? null).toBeNull();
    expect(await chunked!.record.contentText()).toBe(CHUNK_LOOKALIKE + HTML);
    // Content coding is kept: the stored payload is the gzip bytes the server sent; warcio decodes them.
    expect(gzip!.payload).toEqual(GZIPPED);
    expect(await gzip!.record.contentText()).toBe(HTML);
    // ... and stored in the member as they came (not deflated again), so they appear there verbatim.
    expect(Buffer.from(captures[2]!.responseRecord).includes(GZIPPED)).toBe(true);
    expect(Buffer.from(captures[0]!.responseRecord).includes(Buffer.from(HTML.slice(0, 200)))).toBe(false);
    expect(missing!.httpStatus).toBe(404);
    expect(missing!.payload!.toString()).toBe('not here\n');
    expect(moved!.httpStatus).toBe(301);
    expect(moved!.payload!.length).toBe(0);
    expect(captures.map((capture) => capture.mime)).toEqual(['text/html', 'text/html', 'text/html', 'text/plain', null]);
  });

  it('cuts a body over the limit and marks the response WARC-Truncated: length, digesting what is stored', async () => {
    const exchange = await fetchExchange(`${origin}/page.html`);
    const capture = buildCapture(exchange, { maxBodyBytes: 1000 });
    const [, response] = await checkWarcFile(fileOf([capture.requestRecord, capture.responseRecord]));
    expect(response!.headers.get('WARC-Truncated')).toBe('length');
    expect(response!.payload).toEqual(Buffer.from(HTML).subarray(0, 1000));
    expect(capture).toMatchObject({ truncated: 'length', payloadLength: 1000, payloadDigest: sha1Base32(Buffer.from(HTML).subarray(0, 1000)) });
    // The fetcher's own cut (it stopped reading) is kept as its reason.
    const cut = await fetchExchange(`${origin}/page.html`, { maxBytes: 500 });
    expect(buildCapture(cut, { maxBodyBytes: LIMIT }).truncated).toBe('length');
  });

  it('rebuilds a response head byte for byte from the raw header pairs the HTTP client hands over', async () => {
    const { port } = server.address() as AddressInfo;
    const raw = await new Promise<Buffer>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /page.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n'));
      const chunks: Buffer[] = [];
      socket.on('data', (chunk) => chunks.push(chunk));
      socket.on('end', () => resolve(Buffer.concat(chunks)));
      socket.on('error', reject);
    });
    const wireHead = raw.subarray(0, raw.indexOf('\r\n\r\n') + 4);
    const exchange = await fetchExchange(`${origin}/page.html`, { headers: { connection: 'close' } });
    // Same server, same route: only the Date field's value may differ between the two answers.
    const withoutDate = (head: Uint8Array) => Buffer.from(head).toString('latin1').replace(/\r\nDate: [^\r]*/, '');
    expect(withoutDate(exchange.responseHead)).toBe(withoutDate(wireHead));
    expect(responseHead({ status: 204, statusText: 'No Content', rawHeaders: [Buffer.from('X-A'), Buffer.from(' b ')] }).toString()).toBe('HTTP/1.1 204 No Content\r\nX-A:  b \r\n\r\n');
  });

  it('refuses an exchange that breaks its contract with WARC_EXCHANGE_INVALID', async () => {
    const good = await fetchExchange(`${origin}/page.html`);
    const bad: Partial<Exchange>[] = [
      { url: 'http://127.0.0.1/a page' },
      { url: 'ftp://127.0.0.1/' },
      { ipAddress: 'localhost' },
      { startedAt: Number.NaN },
      { responseHead: Buffer.from('HTTP/1.1 200 OK\r\nA: b\r\n') },
      { responseHead: Buffer.from('HTTP/1.1 200 OK\r\n\r\nbody') },
      { responseHead: Buffer.from('200 OK\r\n\r\n') },
      { requestHead: Buffer.from(`GET / HTTP/1.1\r\nX: ${'x'.repeat(MAX_HEAD_BYTES)}\r\n\r\n`) },
    ];
    for (const fields of bad) {
      let caught: unknown = null;
      try {
        buildCapture({ ...good, ...fields }, { maxBodyBytes: LIMIT });
      } catch (error) {
        caught = error;
      }
      expect(caught, JSON.stringify(Object.keys(fields))).toBeInstanceOf(WarcError);
      expect((caught as WarcError).code).toBe('WARC_EXCHANGE_INVALID');
      expect((caught as WarcError).disposition).toBe('skip');
    }
  });
});

describe('the request record of a GET', () => {
  it('states the payload digest of an empty payload, the SHA-1 of nothing', () => {
    expect(EMPTY_PAYLOAD_DIGEST).toBe(sha1Digest([]));
  });
});

describe('revisit and warcinfo records', () => {
  it('writes an identical-payload-digest revisit of the head only, with the original payload digest, WARC-Truncated and the 1.1 profile', async () => {
    const original = buildCapture(await fetchExchange(`${origin}/page.html`), { maxBodyBytes: LIMIT });
    const again = buildCapture(await fetchExchange(`${origin}/page.html`), { maxBodyBytes: LIMIT });
    expect(again.payloadDigest).toBe(original.payloadDigest);
    const revisit = buildRevisitRecord(again, { profile: 'identical-payload-digest', recordId: original.responseId, targetUri: original.url, date: original.date });
    // checkWarcFile finds the original by WARC-Refers-To and compares payload digests.
    const records = await checkWarcFile(fileOf([original.requestRecord, original.responseRecord, again.requestRecord, revisit]));
    const record = records[3]!;
    expect(record.type).toBe('revisit');
    expect(Object.fromEntries(record.headers)).toMatchObject({
      'WARC-Profile': 'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
      'WARC-Refers-To': original.responseId,
      'WARC-Refers-To-Target-URI': original.url,
      'WARC-Refers-To-Date': warcDate(original.date),
      'WARC-Record-ID': again.responseId,
      'WARC-Payload-Digest': original.payloadDigest,
      'WARC-Truncated': 'length',
    });
    expect(records[2]!.headers.get('WARC-Concurrent-To')).toBe(again.responseId);
    expect(record.block).toEqual(Buffer.from(again.responseHead));
    expect(record.httpStatus).toBe(200);
    expect(record.payload!.length).toBe(0);
  });

  it('writes a 304 as a server-not-modified revisit of the 304 response, with no payload digest', async () => {
    const first = buildCapture(await fetchExchange(`${origin}/cached.html`), { maxBodyBytes: LIMIT });
    const notModified = buildCapture(await fetchExchange(`${origin}/cached.html`, { headers: { 'if-none-match': '"v1"' } }), { maxBodyBytes: LIMIT });
    expect(notModified.status).toBe(304);
    const revisit = buildRevisitRecord(notModified, { profile: 'server-not-modified', recordId: first.responseId, targetUri: first.url, date: first.date });
    const records = await checkWarcFile(fileOf([first.requestRecord, first.responseRecord, notModified.requestRecord, revisit]));
    const record = records[3]!;
    expect(record.headers.get('WARC-Profile')).toBe('http://netpreserve.org/warc/1.1/revisit/server-not-modified');
    expect(record.headers.get('WARC-Refers-To')).toBe(first.responseId);
    expect(record.headers.get('WARC-Refers-To-Date')).toBe(warcDate(first.date));
    expect(record.headers.has('WARC-Payload-Digest')).toBe(false);
    expect(record.headers.has('WARC-Truncated')).toBe(false);
    expect(record.httpStatus).toBe(304);
    expect(records[2]!.block.toString('latin1')).toContain('\r\nif-none-match: "v1"\r\n');
  });

  it('opens a file with a warcinfo record naming the file, the software, the operator and the crawl settings', async () => {
    const { record, recordId } = buildWarcinfoRecord(
      { software: 'Petrel/0.1.0', operator: 'ops@example.org', userAgent: 'Petrel/0.1.0 (+ops@example.org)', settings: { scope: 'host', maxDepth: 3 } },
      { filename: 'petrel-20260601120000000-00001.warc.gz', date: Date.UTC(2026, 5, 1, 12) },
    );
    const [info] = await checkWarcFile(record);
    expect(info!.type).toBe('warcinfo');
    expect(info!.headers.get('WARC-Record-ID')).toBe(recordId);
    expect(info!.headers.get('WARC-Filename')).toBe('petrel-20260601120000000-00001.warc.gz');
    expect(info!.headers.get('Content-Type')).toBe('application/warc-fields');
    const text = info!.block.toString('utf8');
    expect(text).toContain('software: Petrel/0.1.0\r\n');
    expect(text).toContain('operator: ops@example.org\r\n');
    expect(text).toContain('format: WARC File Format 1.1\r\n');
    expect(text).toContain('petrel-crawl-settings: {"scope":"host","maxDepth":3}\r\n');
  });
});

describe('captures on the wire and gzip members', () => {
  it('carries a capture through JSON and the wire schema unchanged', async () => {
    const capture = buildCapture(await fetchExchange(`${origin}/gzip.html`), { maxBodyBytes: LIMIT });
    const back: Capture = captureFromWire(captureWireSchema.parse(JSON.parse(JSON.stringify(captureToWire(capture)))));
    expect({ ...back, responseHead: Buffer.from(back.responseHead) }).toEqual({ ...capture, responseHead: Buffer.from(capture.responseHead) });
    expect(captureWireSchema.safeParse({ ...captureToWire(capture), payloadDigest: 'md5:abc' }).success).toBe(false);
  });

  it('deflates the parts before storeFrom and stores the rest, in one member any gzip reader inflates', () => {
    const text = Buffer.from('WARC/1.1\r\nWARC-Type: response\r\n'.repeat(20));
    const noise = randomBytes(150_000);
    // An empty part whose backing store is materialized has no data pointer, and Node 20's crc32 then
    // answers 0 whatever the running value (zlib's crc32 of a NULL buffer): it must not reach it.
    const empty = Buffer.alloc(0);
    expect(empty.buffer.byteLength).toBe(0);
    // Parts that straddle the 65,535-byte stored blocks, an empty one among them.
    const cases: [Uint8Array[], number][] = [
      [[text, noise.subarray(0, 70_000), empty, noise.subarray(70_000)], 1],
      [[text, empty, text], 3],
      [[text, noise.subarray(0, 65_535), text], 1],
      [[text, text], 0],
      [[text], 1],
      [[text, Buffer.alloc(0)], 1],
      [[Buffer.alloc(0)], 0],
      [[], 0],
    ];
    for (const [parts, storeFrom] of cases) {
      const whole = Buffer.concat(parts);
      for (const member of [gzipMember(parts, 1, storeFrom), gzipMember(parts, 6, storeFrom)]) {
        expect(memberLength(member)).toBe(member.length);
        expect(gunzipSync(member)).toEqual(whole);
      }
    }
    // Stored bytes cost five bytes of framing per block, and the flush before them a few.
    const stored = gzipMember([text, noise], 1, 1).length - gzipMember([text], 1).length - (noise.length + 5 * Math.ceil(noise.length / 65_535));
    expect(stored).toBeGreaterThanOrEqual(0);
    expect(stored).toBeLessThanOrEqual(6);
    expect(() => gzipMember([text], 0)).toThrow(RangeError);
    expect(() => gzipMember([text], 1, 2)).toThrow(RangeError);
  });

  it('takes a body with a content coding or of a compressed media type as compressed already', () => {
    for (const coding of ['gzip', 'br', 'deflate', 'x-gzip', 'zstd', 'identity, gzip', 'GZIP']) expect(payloadIsCompressed(coding, 'text/html')).toBe(true);
    for (const coding of [null, '', 'identity', ' Identity ']) expect(payloadIsCompressed(coding, 'text/html')).toBe(false);
    for (const mime of ['image/png', 'image/jpeg', 'video/mp4', 'application/gzip', 'font/woff2', 'application/zip']) expect(payloadIsCompressed(null, mime)).toBe(true);
    for (const mime of [null, 'text/html', 'image/svg+xml', 'image/bmp', 'application/json', 'application/xml', 'audio/wav']) expect(payloadIsCompressed(null, mime)).toBe(false);
  });

  it('states each member length in the gzip header, which a cut or foreign member does not match', async () => {
    const capture = buildCapture(await fetchExchange(`${origin}/page.html`), { maxBodyBytes: LIMIT });
    const member = Buffer.from(capture.responseRecord);
    expect(memberLength(member)).toBe(member.length);
    expect(memberLength(member.subarray(0, 20))).toBeNull();
    expect(memberLength(gzipSync(Buffer.from('x')))).toBeNull();
    // Plain gzip readers read the concatenation as one stream of records.
    expect(gunzipSync(Buffer.concat([capture.requestRecord, capture.responseRecord])).toString('latin1')).toMatch(/^WARC\/1\.1\r\nWARC-Type: request\r\n[\s\S]*\r\n\r\nWARC\/1\.1\r\nWARC-Type: response\r\n/);
  });
});
