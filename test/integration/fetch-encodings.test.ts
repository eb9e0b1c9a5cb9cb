/**
 * Bodies whose bytes look odd but are what the headers say, and bodies that are not: through the real
 * `fetchItem` and a real undici Agent against a server on loopback.
 *
 *   - A UTF-16 page declared only in Content-Type (no byte order mark) is text: its NULs are half its
 *     characters. It was taken for binary and not parsed (no title, no links).
 *   - A malformed Brotli body is `bad-content-encoding` (not retried, not the host's fault); Node names
 *     some of Brotli's decoder errors ERR__ERROR_FORMAT_*, which were `network-error` (retried three
 *     times, and counted against the host).
 *   - A gzip page followed by a newline or other bytes after its member (a PHP page's closing `?>` line)
 *     is read, as browsers read it; Node's gunzip failed it as `bad-content-encoding`.
 *   - A redirect's Location with raw UTF-8 bytes leads where a browser goes (`/café` percent-encoded
 *     as UTF-8); undici's Latin-1 reading of the bytes made it `/cafÃ©`. Bytes that are not UTF-8 are
 *     kept as they came.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { brotliCompressSync, gzipSync } from 'node:zlib';
import type { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TrustedOrigins } from '../../fetcher/address-guard.js';
import { createCrawlAgent, type DownloadOptions } from '../../fetcher/download.js';
import { fetchItem, saysUtf16 } from '../../fetcher/fetch-item.js';

const OPTIONS: DownloadOptions = {
  userAgent: 'Petrel/0.1.0 (fetch-encodings test)',
  maxBodyBytes: 2 * 1024 * 1024,
  connectTimeoutMs: 2_000,
  headersTimeoutMs: 5_000,
  bodyTimeoutMs: 5_000,
  totalTimeoutMs: 5_000,
};

const PAGE = '<html><head><title>Zebra crossing</title></head><body><p>Stripes.</p><a href="/next.html">next</a></body></html>';

describe('bodies and their declared encodings', () => {
  let server: Server;
  let origin: string;
  let agent: Agent;

  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url === '/utf16le') return void response.writeHead(200, { 'content-type': 'text/html; charset=utf-16le' }).end(Buffer.from(PAGE, 'utf16le'));
      if (request.url === '/utf16be') {
        const le = Buffer.from(PAGE, 'utf16le');
        const be = Buffer.alloc(le.length);
        for (let i = 0; i < le.length; i += 2) [be[i], be[i + 1]] = [le[i + 1]!, le[i]!];
        return void response.writeHead(200, { 'content-type': 'text/html; charset="UTF-16BE"' }).end(be);
      }
      if (request.url === '/brotli-broken') {
        // A valid stream's first bytes, then garbage: the decoder fails on the format, not on a short body.
        const valid = brotliCompressSync(Buffer.from(PAGE.repeat(50)));
        return void response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' }).end(Buffer.concat([valid.subarray(0, 8), Buffer.alloc(64, 0xff)]));
      }
      if (request.url?.startsWith('/gzip-then-')) {
        const tail = request.url === '/gzip-then-newline' ? '\n' : '\n<!-- served in 3 ms -->\n';
        return void response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(Buffer.concat([gzipSync(PAGE), Buffer.from(tail)]));
      }
      // Node writes a header's characters as Latin-1 bytes: these are the UTF-8 bytes of the path, raw.
      if (request.url === '/moved-utf8') return void response.writeHead(301, { location: Buffer.from('/café/ü.html?q=日本', 'utf8').toString('latin1') }).end();
      if (request.url === '/moved-latin1') return void response.writeHead(301, { location: '/caf\u00e9.html' }).end();
      response.writeHead(404).end();
    });
    await new Promise<void>((done) => server.listen(0, '127.0.67.1', done));
    origin = `http://127.0.67.1:${(server.address() as AddressInfo).port}`;
    const trustedOrigins = new TrustedOrigins();
    trustedOrigins.hold(origin);
    agent = createCrawlAgent({ ...OPTIONS, connectionsPerOrigin: 4, addressPolicy: { allowAll: false, trustedOrigins, resolve: new Map() } });
  });

  afterAll(async () => {
    await agent?.close();
    await new Promise((done) => server?.close(done));
  });

  const fetchPath = (path: string) => fetchItem({ dispatcher: agent, download: OPTIONS }, 0, { i: 0, url: `${origin}${path}`, kind: 'page', depth: 0, validators: null });

  it('parses a UTF-16 page its Content-Type declares, without a byte order mark', async () => {
    for (const path of ['/utf16le', '/utf16be']) {
      const result = await fetchPath(path);
      expect(result.status, path).toBe(200);
      expect(result.page?.title, path).toBe('Zebra crossing');
      expect(result.links, path).toEqual([`${origin}/next.html`]);
    }
    expect([saysUtf16('text/html; charset=utf-16'), saysUtf16('text/html;charset="UTF-16LE"'), saysUtf16('text/html; charset=utf-8'), saysUtf16('text/html; charset=utf-160'), saysUtf16(null)]).toEqual([true, true, false, false, false]);
  });

  it('reads a gzip page followed by bytes after its member', async () => {
    for (const path of ['/gzip-then-newline', '/gzip-then-text']) {
      const result = await fetchPath(path);
      expect({ status: result.status, code: result.error?.code ?? null, title: result.page?.title }, path).toEqual({ status: 200, code: null, title: 'Zebra crossing' });
    }
  });

  it('follows a Location of raw UTF-8 bytes where a browser goes, and keeps bytes that are no UTF-8', async () => {
    expect((await fetchPath('/moved-utf8')).redirectTo).toBe(`${origin}/caf%C3%A9/%C3%BC.html?q=%E6%97%A5%E6%9C%AC`);
    expect((await fetchPath('/moved-latin1')).redirectTo).toBe(`${origin}/caf%C3%A9.html`);
  });

  it('calls a malformed Brotli body bad-content-encoding', async () => {
    const result = await fetchPath('/brotli-broken');
    expect({ status: result.status, code: result.error?.code }).toEqual({ status: null, code: 'bad-content-encoding' });
  });
});
