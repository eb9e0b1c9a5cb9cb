/**
 * `petrel crawl` end to end: a queue server and two fetcher processes crawl the test web over real
 * HTTP on loopback; the test web's request log is the ground truth.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir, type Finished } from '../support/petrel-process.js';
import { countBy, pageRequests, politenessViolations, urlOf } from '../support/request-log.js';

const DELAY_MS = 100;
const MAX_DEPTH = 5;

describe('petrel crawl over the test web with two fetcher processes', () => {
  let web: TestWeb;
  let dataDir: string;
  let run: Finished;
  let summary: Record<string, unknown> & { byStatus: Record<string, number> };
  let log: RequestLogEntry[];

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 20, hosts: 3, slowMs: 300, crawlDelaySeconds: 1 });
    dataDir = tempDir('e2e');
    const summaryFile = join(dataDir, 'summary.json');
    const seeds = web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`]);
    run = await runPetrel([
      'crawl', ...seeds, '--data', join(dataDir, 'data'), '--fetchers', '2', '--scope', 'host',
      '--max-depth', String(MAX_DEPTH), '--delay-ms', String(DELAY_MS), '--host-concurrency', '1',
      '--robots-retry-ms', '200', '--robots-attempts', '2', '--max-retries', '0', '--summary-json', summaryFile, '--no-progress',
    ]);
    summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
    log = [...web.log];
  }, 120_000);

  afterAll(async () => {
    await web?.close();
  });

  const expectedUrls = () => {
    const hosts = new Set(web.origins);
    return web.model.reachable({ seeds: web.origins.map((origin) => `${origin}/index.html`), inScope: (url) => hosts.has(new URL(url).origin), maxDepth: MAX_DEPTH });
  };

  it('exits 0 and prints the summary', () => {
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(summary);
    for (const key of ['pagesFetched', 'notModified', 'skippedFresh', 'robotsDenied', 'errors', 'requests', 'byStatus', 'urlsDiscovered', 'bytesDownloaded', 'elapsedMs', 'pagesPerSecond']) {
      expect(summary).toHaveProperty(key);
    }
  });

  it('requests every reachable allowed URL exactly once, and nothing else', () => {
    const requested = countBy(pageRequests(log), urlOf);
    const expected = [...expectedUrls().keys()].sort();
    expect([...requested.keys()].sort()).toEqual(expected);
    // The one exception: a 503 with Retry-After is retried after the wait (a few times), not given up.
    const retriedAfter = new Set(pageRequests(log).filter((entry) => entry.status === 503).map(urlOf));
    const repeated = [...requested].filter(([url, count]) => count > 1 && !retriedAfter.has(url));
    expect(repeated).toEqual([]);
    for (const url of retriedAfter) expect(requested.get(url)).toBe(6);
  });

  it('never requests a URL that robots.txt disallows, nor any URL of a host whose robots.txt fails', () => {
    const disallowed = pageRequests(log).filter((entry) => !web.model.robotsAllows(urlOf(entry)));
    expect(disallowed.map(urlOf)).toEqual([]);
    const robots500 = new URL(web.hostByRole.robots500).host;
    // Unreachable robots.txt: asked --robots-attempts times, --robots-retry-ms apart, then the host is given up.
    const asked = log.filter((entry) => entry.host === robots500);
    expect(asked.map((entry) => entry.path)).toEqual(['/robots.txt', '/robots.txt']);
    expect(asked[1]!.start - asked[0]!.end).toBeGreaterThanOrEqual(200);
  });

  it('obeys X-Robots-Tag as it obeys meta robots: none is noindex and nofollow, another bot\'s directives are ignored', async () => {
    const main = web.hostByRole.main;
    const requested = new Set(log.filter((entry) => entry.host === new URL(main).host).map((entry) => entry.path));
    expect(requested.has('/meta/x-robots-none.html')).toBe(true);
    expect(requested.has('/meta/behind-x-robots.html')).toBe(false);
    expect(requested.has('/meta/x-robots-other-bot.html')).toBe(true);
    expect(requested.has('/meta/behind-other-bot.html')).toBe(true);
    const exported = await runPetrel(['export', '--data', join(dataDir, 'data')]);
    const records = new Map(exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; noindex: boolean; excerpt: string | null; outlinkCount: number }).map((r) => [r.url, r]));
    expect(records.get(`${main}/meta/x-robots-none.html`)).toMatchObject({ noindex: true, excerpt: null, outlinkCount: 0 });
    expect(records.get(`${main}/meta/x-robots-other-bot.html`)).toMatchObject({ noindex: false });
  });

  it('asks each host for robots.txt before anything else, once', () => {
    for (const origin of web.origins.filter((origin) => origin !== web.hostByRole.robots500)) {
      const host = new URL(origin).host;
      const requests = log.filter((entry) => entry.host === host);
      expect(requests[0]?.path, origin).toBe('/robots.txt');
      expect(requests.filter((entry) => entry.path === '/robots.txt')).toHaveLength(1);
    }
  });

  it('is polite: one request at a time per host, the delay between them, Crawl-delay where robots.txt sets it', () => {
    const crawlDelayHost = new URL(web.hostByRole.crawlDelay).host;
    // Gaps run from when the web server handed a response to its socket (not from the 'finish' event,
    // which a busy event loop on a loaded two-core machine stamped up to 100 ms late, so that gaps looked
    // that much shorter than they were) to the next request's arrival. The fetcher waits delay + 2 ms
    // after it has the whole response; the allowance covers timer and clock granularity.
    const MEASUREMENT_LAG_MS = 10;
    const violations = politenessViolations(log, (host) => (host === crawlDelayHost ? 1000 : DELAY_MS) - MEASUREMENT_LAG_MS);
    expect(violations).toEqual([]);
  });

  it('counts in the summary what the web servers saw', () => {
    expect(summary.requests).toBe(log.length);
    const byStatus = Object.fromEntries([...countBy(log, (entry) => String(entry.status))].sort());
    expect(summary.byStatus).toEqual(byStatus);
    const pages2xx = pageRequests(log).filter((entry) => entry.status >= 200 && entry.status < 300);
    expect(summary.pagesFetched).toBe(pages2xx.length);
    // URLs not requested: those robots.txt disallows, and the seed of the host whose robots.txt always fails,
    // which is an error (robots-unreachable), not a refusal.
    const errorsByCode = summary.errorsByCode as Record<string, number>;
    expect(errorsByCode['robots-unreachable']).toBe(1);
    expect(summary.urlsDiscovered).toBe(expectedUrls().size + (summary.robotsDenied as number) + errorsByCode['robots-unreachable']!);
    expect(summary.skippedFresh).toBe(0);
  });

  it('exports one record per requested page', async () => {
    const exported = await runPetrel(['export', '--data', join(dataDir, 'data')]);
    expect(exported.code, exported.stderr).toBe(0);
    const records = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: number | null; signature: string | null; title: string | null });
    // The latest record of each requested URL (a URL retried after a 503 has one record).
    expect(records.map((record) => record.url).sort()).toEqual([...new Set(pageRequests(log).map(urlOf))].sort());
    const index = records.find((record) => record.url === web.seeds[0]);
    expect(index?.status).toBe(200);
    expect(index?.signature).toMatch(/^[0-9a-f]{16}$/);
    expect(index?.title).toBeTruthy();
  });
});
