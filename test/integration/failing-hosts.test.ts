/**
 * A one-shot crawl of URLs that never answer well, with real processes: a URL answering 429 with
 * Retry-After for ever, one answering 503 with Retry-After: 1 for ever (both on the hostile host), and
 * the hanging host, whose every page request times out. Each URL's requests stay within the stated
 * bound, the hanging host is backed off as a whole and then given up, and the crawl ends by itself,
 * saying what it gave up on. Counts come from the test web's request log; how long it takes is
 * measured, not asserted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANGING_PAGES } from '../../scripts/test-web/hostile/hanging.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { HOST_GIVE_UP_FAILURES, type HostHealth } from '../../queue-server/frontier/host-backoff.js';
import { MAX_REQUESTS_PER_URL, MAX_RETRY_AFTER_WAITS } from '../../queue-server/crawl/retry-after.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

interface Summary {
  requests: number;
  pagesFetched: number;
  errorsByCode: Record<string, number>;
  retriedLater: number;
  elapsedMs: number;
  backedOffHosts: HostHealth[];
  urlsByStatus: Record<string, number>;
}

const MAX_RETRIES = 3;

describe('a one-shot crawl of URLs and a host that keep failing', () => {
  let web: TestWeb;
  let summary: Summary;
  let code: number | null;
  let stderr: string;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 5 });
    const dir = tempDir('failing-hosts');
    const summaryFile = join(dir, 'summary.json');
    const seeds = [
      `${web.hostile.origin}/status/429-forever.html`,
      `${web.hostile.origin}/status/503-forever.html`,
      ...HANGING_PAGES.map((path) => `${web.hanging.origin}${path}`),
    ].flatMap((seed) => ['--seed', seed]);
    // 170 s only stops a hung crawl; the crawl's duration is printed by the last test, not asserted.
    const run = await runPetrel([
      'crawl', ...seeds, '--data', join(dir, 'data'), '--scope', 'host', '--delay-ms', '0', '--max-retries', String(MAX_RETRIES),
      '--retry-base-ms', '100', '--timeout-ms', '1000', '--summary-json', summaryFile, '--no-progress',
    ], 170_000);
    code = run.code;
    stderr = run.stderr;
    summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
  }, 180_000);

  afterAll(async () => {
    await web?.close();
  });

  const requestsOf = (authority: string, path: string): number => web.log.filter((entry) => entry.host === authority && entry.path === path).length;

  it('ends by itself; nothing could be fetched, so with exit status 3', () => {
    expect(code, stderr.slice(-2000)).toBe(3);
  });

  it('asks a URL that answers 429 with Retry-After for ever 1 + --max-retries + 5 times, never more than 10', () => {
    const expected = Math.min(MAX_REQUESTS_PER_URL, 1 + MAX_RETRIES + MAX_RETRY_AFTER_WAITS);
    expect(expected).toBeLessThanOrEqual(10);
    expect(requestsOf(web.hostile.authority, '/status/429-forever.html')).toBe(expected);
  });

  it('asks a URL that answers 503 with Retry-After: 1 for ever at most as often, and gives it up', () => {
    const requests = requestsOf(web.hostile.authority, '/status/503-forever.html');
    expect(requests).toBeGreaterThan(0);
    expect(requests).toBeLessThanOrEqual(Math.min(MAX_REQUESTS_PER_URL, 1 + MAX_RETRIES + MAX_RETRY_AFTER_WAITS));
    expect(summary.urlsByStatus.retry ?? 0).toBe(0);
    expect(summary.urlsByStatus.unfetched ?? 0).toBe(0);
  });

  it('backs the hanging host off as a whole: it gets HOST_GIVE_UP_FAILURES page requests, not one per URL and retry', () => {
    // Not robots.txt, nor /sitemap.xml (discovery, read once before the pages: it hangs too).
    const pageRequests = web.log.filter((entry) => entry.host === web.hanging.authority && entry.path !== '/robots.txt' && entry.path !== '/sitemap.xml');
    expect(pageRequests.length).toBe(HOST_GIVE_UP_FAILURES);
    expect(pageRequests.every((entry) => entry.status === 0)).toBe(true);
  });

  it('reports the hanging host as given up, why, and every one of its URLs as host-failing', () => {
    const hanging = summary.backedOffHosts.find((host) => host.origin === web.hanging.origin);
    expect(hanging).toMatchObject({ gaveUp: true, code: 'timeout', failuresInRow: HOST_GIVE_UP_FAILURES, givenUpUrls: HANGING_PAGES.length });
    expect(summary.errorsByCode['host-failing']).toBeGreaterThanOrEqual(HANGING_PAGES.length);
    expect(stderr).toContain(`gave up on:      ${web.hanging.origin} (timeout ${HOST_GIVE_UP_FAILURES} times in a row): ${HANGING_PAGES.length} URLs recorded host-failing`);
    console.log(`failing-hosts: crawl ended after ${summary.elapsedMs} ms, ${summary.requests} requests`);
  });
});
