/**
 * URLs up to the 2,048 characters Petrel admits are queued, fetched and recorded like any: the
 * frontier's store (4 KiB pages, values of at most 1,010 bytes) refused a queued URL past about 990
 * characters, every group commit failed from then on, every results post got 500, and a one-shot
 * crawl never ended. With a frontier memory bound of a few URLs, the long ones wait on disk and are
 * read back (their text from the crawl database). Real processes, a real server on loopback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

/** A path of `length` characters under /long/. */
const longPath = (n: number, length: number): string => `/long/${n}-${'a'.repeat(length - `/long/${n}-`.length)}`;

describe('a site with very long URLs', () => {
  let server: Server;
  const requests: string[] = [];
  // The long ones last: past the frontier's memory bound, they wait on disk.
  const paths = [...Array.from({ length: 12 }, (_, i) => `/short/${i}`), longPath(1, 1100), longPath(2, 1500), longPath(3, 1990)];

  beforeAll(async () => {
    assertBuilt();
    server = createServer((request, response) => {
      requests.push(request.url ?? '');
      if (request.url === '/robots.txt') return void response.writeHead(404).end();
      if (request.url === '/') return void response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>home</title>${paths.map((p) => `<a href="${p}">x</a>`).join('\n')}`);
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>page</title>`);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.66.1', done));
  });

  afterAll(async () => {
    await new Promise((done) => server?.close(done));
  });

  it('fetches every one and ends, its queues on disk included', async () => {
    const origin = `http://127.0.66.1:${(server.address() as AddressInfo).port}`;
    const data = join(tempDir('long-urls'), 'data');
    const run = await runPetrel(['crawl', '--data', data, '--seed', `${origin}/`, '--delay-ms', '0', '--fetchers', '1', '--frontier-memory-urls', '4', '--no-progress'], 90_000);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    expect(run.stderr).toMatch(/done: 16 pages fetched, 0 not modified, 0 errors/);
    // No group commit failed on the way (each would have answered a results post 500).
    expect(run.stderr).not.toMatch(/internal|500/);
    for (const path of paths) expect(requests, path.slice(0, 20)).toContain(path);
    expect(requests.filter((path) => path !== '/robots.txt' && path !== '/sitemap.xml').length).toBe(16);
  }, 100_000);
});
