/**
 * Hosts that tell the crawler to come back later, each a real HTTP server on its own loopback address,
 * logging every request with its time. What a site operator expects (RFC 9110 section 10.2.3, RFC 6585
 * section 4), and what Petrel did before:
 *
 *   - a 429 with Retry-After holds the whole host back for the wait, the rest of the fetcher's slot
 *     included (it went on asking the slot's other URLs at full pace);
 *   - a Retry-After that asks for no wait ("0", a date already past) is an ordinary failure, and the
 *     host is given up like any failing one (it exempted the host: 9 requests per URL, without bound);
 *   - a 429 without Retry-After counts against its host (it never slowed the host down);
 *   - a Retry-After longer than a one-shot crawl waits gives the host up at once, saying why (it gave
 *     the URL up and asked the host's other URLs as usual);
 *   - a robots.txt answering 503 with Retry-After is not asked again before the wait (only the retry
 *     time counted).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOST_GIVE_UP_FAILURES, type HostHealth } from '../../queue-server/frontier/host-backoff.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

const PAGES = 8;
const pagePaths = Array.from({ length: PAGES }, (_, i) => `/p${i + 1}`);

interface Logged {
  readonly path: string;
  readonly at: number;
  readonly status: number;
}

type Answer = { status: number; headers?: Record<string, string>; body?: string };

/** One host: `answer` decides each request after the site's index (which links every page); the log keeps every request. */
async function host(address: string, answer: (path: string, nth: number) => Answer | null): Promise<{ origin: string; log: Logged[]; server: Server }> {
  const log: Logged[] = [];
  const asked = new Map<string, number>();
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    const nth = (asked.get(path) ?? 0) + 1;
    asked.set(path, nth);
    const given =
      answer(path, nth) ??
      (path === '/'
        ? { status: 200, headers: { 'content-type': 'text/html' }, body: `<title>index</title>${pagePaths.map((p) => `<a href="${p}">${p}</a>`).join(' ')}` }
        : pagePaths.includes(path)
          ? { status: 200, headers: { 'content-type': 'text/html' }, body: `<title>${path}</title><p>page ${path}</p>` }
          : { status: 404 });
    log.push({ path, at: Date.now(), status: given.status });
    response.writeHead(given.status, given.headers).end(given.body ?? '');
  });
  await new Promise<void>((done) => server.listen(0, address, done));
  return { origin: `http://${address}:${(server.address() as AddressInfo).port}`, log, server };
}

const pageRequests = (log: Logged[]): Logged[] => log.filter((entry) => pagePaths.includes(entry.path));

describe('hosts that say to come back later', () => {
  const hosts: Array<Awaited<ReturnType<typeof host>>> = [];
  let waitThree: Awaited<ReturnType<typeof host>>;
  let stalePast: Awaited<ReturnType<typeof host>>;
  let bare429: Awaited<ReturnType<typeof host>>;
  let hourLong: Awaited<ReturnType<typeof host>>;
  let robotsWait: Awaited<ReturnType<typeof host>>;
  let summary: { backedOffHosts: HostHealth[]; pagesFetched: number };
  let stderr: string;
  let code: number | null;

  beforeAll(async () => {
    assertBuilt();
    // /p1 answers its first request 429 with Retry-After: 3; every other request is answered.
    waitThree = await host('127.0.61.1', (path, nth) => (path === '/p1' && nth === 1 ? { status: 429, headers: { 'retry-after': '3' } } : null));
    // Every page: 503 with a Retry-After date long past (a maintenance page with a stale header).
    stalePast = await host('127.0.61.2', (path) => (pagePaths.includes(path) ? { status: 503, headers: { 'retry-after': 'Wed, 21 Oct 2015 07:28:00 GMT' } } : null));
    // Every page: 429 without Retry-After.
    bare429 = await host('127.0.61.3', (path) => (pagePaths.includes(path) ? { status: 429 } : null));
    // Every page: 429 asking for an hour.
    hourLong = await host('127.0.61.4', (path) => (pagePaths.includes(path) ? { status: 429, headers: { 'retry-after': '3600' } } : null));
    // robots.txt: its first request 503 with Retry-After: 3, then none (404: no rules).
    robotsWait = await host('127.0.61.5', (path, nth) => (path === '/robots.txt' && nth === 1 ? { status: 503, headers: { 'retry-after': '3' } } : null));
    hosts.push(waitThree, stalePast, bare429, hourLong, robotsWait);
    const dir = tempDir('host-says-wait');
    const summaryFile = join(dir, 'summary.json');
    const run = await runPetrel(
      [
        'crawl', ...hosts.flatMap((h) => ['--seed', `${h.origin}/`]), '--data', join(dir, 'data'), '--delay-ms', '0', '--retry-base-ms', '100',
        '--robots-retry-ms', '500', '--fetchers', '1', '--summary-json', summaryFile, '--no-progress',
      ],
      120_000,
    );
    code = run.code;
    stderr = run.stderr;
    summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as typeof summary;
  }, 130_000);

  afterAll(async () => {
    await Promise.all(hosts.map((h) => new Promise((done) => h.server.close(done))));
  });

  it('ends by itself', () => {
    expect(code, stderr.slice(-2000)).toBe(0);
  });

  it('asks nothing of a host for the Retry-After of its 429, the rest of the slot included, and fetches its pages afterwards', () => {
    const log = waitThree.log;
    const refused = log.findIndex((entry) => entry.status === 429);
    expect(refused).toBeGreaterThanOrEqual(0);
    const after = log.slice(refused + 1);
    expect(after.length).toBeGreaterThan(0);
    // The queue server's clock and the server's are this machine's: a few ms of rounding at most.
    expect(after[0]!.at - log[refused]!.at, JSON.stringify(log)).toBeGreaterThanOrEqual(3000 - 20);
    expect(new Set(pageRequests(log).filter((entry) => entry.status === 200).map((entry) => entry.path))).toEqual(new Set(pagePaths));
  });

  it('gives a host whose pages answer 503 with a Retry-After already past up like any failing host', () => {
    expect(pageRequests(stalePast.log).length).toBe(HOST_GIVE_UP_FAILURES);
    expect(summary.backedOffHosts.find((h) => h.origin === stalePast.origin)).toMatchObject({ gaveUp: true, code: 'http-503', failuresInRow: HOST_GIVE_UP_FAILURES, waitAskedMs: null });
  });

  it('counts a 429 without Retry-After against its host', () => {
    expect(pageRequests(bare429.log).length).toBe(HOST_GIVE_UP_FAILURES);
    expect(summary.backedOffHosts.find((h) => h.origin === bare429.origin)).toMatchObject({ gaveUp: true, code: 'http-429' });
  });

  it('gives a host up at once when its Retry-After is longer than a one-shot crawl waits, and says why', () => {
    expect(pageRequests(hourLong.log).length).toBe(1);
    expect(summary.backedOffHosts.find((h) => h.origin === hourLong.origin)).toMatchObject({ gaveUp: true, code: 'http-429', waitAskedMs: 3_600_000, givenUpUrls: PAGES - 1 });
    expect(stderr).toContain(`gave up on:      ${hourLong.origin} (http-429 with Retry-After 1h 00min, longer than a one-shot crawl waits): ${PAGES - 1} URLs recorded host-failing`);
  });

  it('does not ask a robots.txt again before the Retry-After of its 503', () => {
    const robots = robotsWait.log.filter((entry) => entry.path === '/robots.txt');
    expect(robots.length).toBe(2);
    expect(robots[1]!.at - robots[0]!.at).toBeGreaterThanOrEqual(3000 - 20);
    expect(pageRequests(robotsWait.log).filter((entry) => entry.status === 200).length).toBe(PAGES);
  });
});
