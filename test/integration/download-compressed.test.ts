/**
 * Compressed bodies through `download`, against a raw server on 127.0.0.1 that writes exactly the bytes
 * given (its own framing, `Connection: close` and the FIN right after the body):
 * - a large gzip body whose server closes the connection at once: undici 7 threw an uncatchable
 *   AssertionError when that FIN met a parser paused for the inflater (nodejs/undici#5360), which killed
 *   the fetcher on every try of such a page. The download is whole now.
 * - a body whose decoding passes the limit after the whole wire came: the page is cut, the exchange
 *   (the WARC record) is not (WARC 1.1 section 5.13: WARC-Truncated is for a block that was cut).
 * - a compressed body larger than the limit on the wire: read up to the limit, then cut, and what was
 *   inflated of it is the body.
 */
import { createServer, type Server } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { download, type DownloadOptions } from '../../fetcher/download.js';

const OPTIONS: DownloadOptions = { userAgent: 'Petrel test', maxBodyBytes: 8 * 1024 * 1024, connectTimeoutMs: 5_000, headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000, totalTimeoutMs: 20_000 };

/** path -> [gzip body, connection: close] */
const bodies = new Map<string, Buffer>();
let server: Server;
let origin: string;
let agent: Agent;

beforeAll(async () => {
  const prose = Buffer.from(Array.from({ length: 60_000 }, (_, i) => `<p>paragraph ${i} of a long page, with words that repeat</p>\n`).join(''));
  bodies.set('/large.html', gzipSync(prose));
  bodies.set('/small.html', gzipSync(prose.subarray(0, 60_000)));
  bodies.set('/dense.html', gzipSync(Buffer.from(randomBytes(400_000).toString('base64'))));
  server = createServer((socket) => {
    socket.once('data', (request) => {
      const path = request.toString('latin1').split(' ')[1]!;
      const body = bodies.get(path)!;
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-encoding: gzip\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`);
      socket.write(body);
      socket.end();
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  agent = new Agent();
});

afterAll(async () => {
  await agent.close();
  await new Promise((resolve) => server.close(resolve));
});

const get = (path: string, maxBodyBytes?: number) => download(agent, OPTIONS, { url: `${origin}${path}`, wantBody: () => true, keepExchange: true, ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }) });

describe('download of a compressed body', () => {
  it('is whole when the server closes the connection right after a large gzip body', async () => {
    const results = await Promise.all([get('/large.html'), get('/large.html'), get('/large.html')]);
    for (const result of results) {
      if (!result.ok) throw new Error(`${result.code}: ${result.message}`);
      expect(result.body.length).toBeGreaterThan(3_000_000);
      expect(result.body.toString('latin1').endsWith('<p>paragraph 59999 of a long page, with words that repeat</p>\n')).toBe(true);
      expect(result.truncated).toBe(false);
      expect(Buffer.concat(result.exchange!.body).equals(bodies.get('/large.html')!)).toBe(true);
      expect(result.exchange!.truncated).toBe(false);
    }
  });

  it('cuts the page, not the stored exchange, when decoding passes the limit after the whole wire came', async () => {
    const result = await get('/small.html', 50_000);
    if (!result.ok) throw new Error(`${result.code}: ${result.message}`);
    expect(bodies.get('/small.html')!.length).toBeLessThan(50_000);
    expect(result.truncated).toBe(true);
    expect(result.body.length).toBe(50_000);
    expect(Buffer.concat(result.exchange!.body).equals(bodies.get('/small.html')!)).toBe(true);
    expect(result.exchange!.truncated).toBe(false);
  });

  it('reads a compressed body larger than the limit up to the limit, and keeps what was inflated of it', async () => {
    const limit = 100_000;
    const result = await get('/dense.html', limit);
    if (!result.ok) throw new Error(`${result.code}: ${result.message}`);
    expect(bodies.get('/dense.html')!.length).toBeGreaterThan(2 * limit);
    expect(result.truncated).toBe(true);
    expect(result.body.length).toBeGreaterThan(0);
    expect(result.body.length).toBeLessThanOrEqual(limit);
    const stored = Buffer.concat(result.exchange!.body);
    expect(stored.length).toBe(limit);
    expect(stored.equals(bodies.get('/dense.html')!.subarray(0, limit))).toBe(true);
    expect(result.exchange!.truncated).toBe(true);
  });
});
