/**
 * A site that is down at the first `petrel crawl` is crawled by the next one, once it is up: its seed
 * was recorded robots_denied (robots.txt unreachable) for the rare recheck of a URL robots.txt forbids
 * (90 days), so every run after it fetched nothing and said "done: 0 pages fetched, 0 errors".
 * Real processes, a real server on loopback that starts between the two runs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

describe('a site down at the first crawl', () => {
  let server: Server | null = null;

  afterAll(async () => {
    await new Promise((done) => (server === null ? done(undefined) : server.close(done)));
  });

  it('is crawled when the crawl is run again after it came up', async () => {
    assertBuilt();
    // A port nothing listens on yet: taken and given back.
    const probe = createServer();
    await new Promise<void>((done) => probe.listen(0, '127.0.65.1', done));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((done) => probe.close(done));
    const seed = `http://127.0.65.1:${port}/`;
    const data = join(tempDir('site-down'), 'data');
    const crawl = (...extra: string[]) => runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--fetchers', '1', '--robots-retry-ms', '100ms', '--robots-attempts', '2', '--no-progress', ...extra], 60_000);

    const down = await crawl('--seed', seed);
    expect(down.code, down.stderr).toBe(3);
    expect(down.stderr).toContain('robots-unreachable');

    const requests: string[] = [];
    server = createServer((request, response) => {
      requests.push(request.url ?? '');
      if (request.url === '/robots.txt') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html' }).end(request.url === '/' ? '<title>up</title><a href="/next.html">next</a>' : '<title>next</title>');
    });
    await new Promise<void>((done) => server!.listen(port, '127.0.65.1', done));

    // As its closing lines say: the same command again, without the seed.
    const up = await crawl();
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).toMatch(/done: 2 pages fetched/);
    expect(requests).toEqual(expect.arrayContaining(['/robots.txt', '/', '/next.html']));
  }, 150_000);
});
