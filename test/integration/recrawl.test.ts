/**
 * Cache page validation end to end: `petrel crawl` run again on the same data directory recrawls
 * everything known; fresh pages are not requested at all, stale ones only conditionally.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';
import { pageRequests } from '../support/request-log.js';

const PAGES = 30;

interface Summary {
  pagesFetched: number;
  notModified: number;
  skippedFresh: number;
  bytesSaved: number;
  requests: number;
  byStatus: Record<string, number>;
}

describe('a second crawl on the same data directory', () => {
  let web: TestWeb;
  let dataDir: string;
  let first: Summary;
  let second: Summary;
  let secondLog: RequestLogEntry[];
  // Bench profile: host 0 says max-age=3600, host 1 max-age=0, host 2 an Expires in the past.
  let hosts: { fresh: string; maxAge0: string; expired: string };

  const crawl = async (label: string): Promise<Summary> => {
    const summaryFile = join(dataDir, `${label}.json`);
    const run = await runPetrel([
      'crawl', ...web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`]), '--data', join(dataDir, 'data'),
      '--scope', 'host', '--delay-ms', '0', '--host-concurrency', '2', '--fetchers', '2', '--summary-json', summaryFile, '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
  };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 3, pagesPerHost: PAGES });
    hosts = { fresh: new URL(web.origins[0]!).host, maxAge0: new URL(web.origins[1]!).host, expired: new URL(web.origins[2]!).host };
    dataDir = tempDir('recrawl');
    first = await crawl('first');
    web.clearLog();
    second = await crawl('second');
    secondLog = [...web.log];
  }, 120_000);

  afterAll(async () => {
    await web?.close();
  });

  it('fetched every page on the first pass', () => {
    expect(first.pagesFetched).toBe(3 * PAGES);
    expect(first.notModified).toBe(0);
    expect(first.skippedFresh).toBe(0);
  });

  it('sends no request at all to a site whose pages are fresh for an hour (its robots.txt is cached on disk, its 404 /sitemap.xml remembered)', () => {
    const requests = secondLog.filter((entry) => entry.host === hosts.fresh);
    // Sitemaps are read each pass (their lastmod may make a fresh page due), but a /sitemap.xml that
    // answered 404 is not asked again before --initial-interval-ms (sitemaps/sitemap-revisit.ts).
    expect(requests.map((entry) => entry.path)).toEqual([]);
    expect(second.skippedFresh).toBe(PAGES);
  });

  it('sends only conditional requests to sites whose pages are stale, and gets only 304s', () => {
    for (const host of [hosts.maxAge0, hosts.expired]) {
      const requests = pageRequests(secondLog).filter((entry) => entry.host === host);
      expect(requests).toHaveLength(PAGES);
      for (const entry of requests) {
        expect(entry.ifNoneMatch, entry.path).toMatch(/^"/);
        expect(entry.ifModifiedSince, entry.path).toBeTruthy();
        expect(entry.status, entry.path).toBe(304);
      }
    }
    expect(second.notModified).toBe(2 * PAGES);
    expect(second.pagesFetched).toBe(0);
  });

  it('counts the bytes the cache saved', () => {
    expect(second.bytesSaved).toBeGreaterThan(3 * PAGES * 10_000);
    // No /sitemap.xml again: the bench profile's hosts have none, and their 404s of the first pass are remembered.
    expect(second.byStatus).toEqual({ '304': 2 * PAGES });
  });

  it('keeps the first pass\'s page records standing after 304s', async () => {
    const exported = await runPetrel(['export', '--data', join(dataDir, 'data')]);
    const records = exported.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: number });
    expect(records).toHaveLength(3 * PAGES);
    expect(records.every((record) => record.status === 200)).toBe(true);
  });
});
