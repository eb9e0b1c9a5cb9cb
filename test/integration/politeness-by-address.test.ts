/**
 * Politeness by IP address as well as by host name: three host names resolved (--resolve) to the one
 * loopback address of the test web's sitemap host, which serves them as virtual hosts, are one
 * server. The crawl's fetchers get the address from the connection and say it in their results; the
 * queue server then gives the three names one politeness queue. Measured from the web server's log
 * (handed-over to next arrival), per address: no two requests overlap and every gap is at least the
 * delay, the first request of each name (its robots.txt, sent before any address is known) apart.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';
import { politenessViolations } from '../support/request-log.js';

const NAMES = ['alpha.test', 'beta.test', 'gamma.test'];
const DELAY_MS = 150;
/** Timer and clock granularity, as in the other politeness tests. */
const MEASUREMENT_LAG_MS = 10;

describe('three host names on one address', () => {
  let web: TestWeb;
  let log: RequestLogEntry[];
  let summary: { pagesFetched: number; requests: number };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ hosts: 1, pagesPerHost: 5 });
    const address = web.sitemaps.authority.split(':')[0]!;
    const dataDir = tempDir('politeness-by-address');
    const summaryFile = join(dataDir, 'summary.json');
    const run = await runPetrel([
      'crawl', ...NAMES.flatMap((name) => ['--seed', `http://${name}:${web.port}/index.html`, '--resolve', `${name}:${address}`]),
      '--data', join(dataDir, 'data'), '--scope', 'host', '--delay-ms', String(DELAY_MS), '--host-concurrency', '1',
      '--fetchers', '2', '--summary-json', summaryFile, '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
    summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as typeof summary;
    log = [...web.log];
  }, 120_000);

  afterAll(async () => {
    await web?.close();
  });

  it('crawls every name', () => {
    for (const name of NAMES) {
      const paths = log.filter((entry) => entry.hostHeader === `${name}:${web.port}`).map((entry) => entry.path);
      expect(paths, name).toContain('/index.html');
      expect(paths, name).toContain('/sitemaps/page-1-1.html');
    }
    expect(summary.requests).toBe(log.length);
  });

  it('never requests the address faster than its politeness allows, whichever name is asked', () => {
    const afterFirst = log.filter((entry) => entry.path !== '/robots.txt');
    expect(afterFirst.length).toBeGreaterThan(30);
    expect(politenessViolations(afterFirst, () => DELAY_MS - MEASUREMENT_LAG_MS)).toEqual([]);
    // The names take turns: the requests of one name are not all in one run.
    const order = afterFirst.sort((a, b) => a.start - b.start).map((entry) => entry.hostHeader);
    let switches = 0;
    for (let i = 1; i < order.length; i++) if (order[i] !== order[i - 1]) switches++;
    expect(switches).toBeGreaterThanOrEqual(2);
  });
});
