/**
 * `petrel crawl` keeps the settings of its local fetchers in the data directory (fetchers.json), so the
 * next run on it reaches what the first reached: a crawl that needed --allow-private-addresses and
 * --resolve, run again without them (as its closing lines say), recorded the pages of the hosts that
 * are not seeds blocked-address or dns-failure, gone, and took them out of the search index. An option
 * given again wins; --no-allow-private-addresses and --resolve none undo saved ones.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

describe('the local fetchers\' settings of a data directory', () => {
  let seedHost: Server;
  let other: Server;
  const otherRequests: string[] = [];
  let seedOrigin: string;
  let otherPort: number;

  beforeAll(async () => {
    assertBuilt();
    other = createServer((request, response) => {
      otherRequests.push(request.url ?? '');
      if (request.url === '/robots.txt') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>intranet ${request.url}</title>`);
    });
    await new Promise<void>((done) => other.listen(0, '127.0.63.2', done));
    otherPort = (other.address() as AddressInfo).port;
    // Each page of the seed host links one page of the intranet host, by a name only --resolve knows.
    seedHost = createServer((request, response) => {
      const page = /^\/(\w+)\.html$/.exec(request.url ?? '')?.[1];
      if (page === undefined) return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>${page}</title><a href="http://intranet.test:${otherPort}/${page}">intranet</a>`);
    });
    await new Promise<void>((done) => seedHost.listen(0, '127.0.63.1', done));
    seedOrigin = `http://127.0.63.1:${(seedHost.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await Promise.all([seedHost, other].map((server) => new Promise((done) => server?.close(done))));
  });

  it('are saved by a run and used by the next unless given again; the undo options forget them', async () => {
    const data = join(tempDir('saved-fetchers'), 'data');
    const crawl = (page: string, ...extra: string[]) =>
      runPetrel(['crawl', '--data', data, '--seed', `${seedOrigin}/${page}.html`, '--scope', 'any', '--max-depth', '1', '--delay-ms', '0', '--fetchers', '1', '--no-progress', ...extra], 60_000);

    const first = await crawl('one', '--allow-private-addresses', '--resolve', 'intranet.test:127.0.63.2', '--concurrency', '4');
    expect(first.code, first.stderr).toBe(0);
    expect(otherRequests).toContain('/one');
    expect(JSON.parse(readFileSync(join(data, 'fetchers.json'), 'utf8'))).toMatchObject({
      format: 1,
      settings: { allowPrivateAddresses: true, resolve: ['intranet.test:127.0.63.2'], concurrency: 4 },
    });

    // Run again without them: the intranet page of the new seed is reached all the same.
    const second = await crawl('two');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toContain('petrel crawl: fetchers go on with --concurrency 4 --allow-private-addresses --resolve intranet.test:127.0.63.2 (saved in');
    expect(otherRequests).toContain('/two');

    // Undone: the intranet host is not reached (no address for its name, and it is not a seed's host).
    // (The intranet name has no address now: its pages known from before fail, and the crawl need not wait to retry them.)
    const third = await crawl('three', '--no-allow-private-addresses', '--resolve', 'none', '--robots-attempts', '1', '--max-retries', '0', '--retry-base-ms', '100ms');
    expect(third.code, third.stderr).toBe(0);
    expect(third.stderr).not.toContain('fetchers go on with --allow-private-addresses');
    expect(otherRequests).not.toContain('/three');
    expect(JSON.parse(readFileSync(join(data, 'fetchers.json'), 'utf8')).settings).toMatchObject({ allowPrivateAddresses: false, resolve: [], concurrency: 4 });

    // A damaged file is named, and nothing runs.
    writeFileSync(join(data, 'fetchers.json'), '{"format":1,"settings":{"concurrency":0}}\n');
    const refused = await crawl('four');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^petrel crawl: the saved fetcher settings .*fetchers\.json are not valid \(concurrency: a whole number from 1 wanted\): fix or remove the file/);
  }, 200_000);
});
