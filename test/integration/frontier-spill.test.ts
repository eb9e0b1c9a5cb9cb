/**
 * A crawl whose frontier may hold only 100 URLs in memory (`--frontier-memory-urls 100`): the rest of
 * the queued URLs wait on disk (frontier.btree) and are read back per host as its queue runs low. The
 * test web's request log is the ground truth: the spilling crawl requests every reachable URL exactly
 * once, the same URLs as a crawl with the default bound (which never spills on a web this size).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type RequestLogEntry, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir, type Finished } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';

const MAX_DEPTH = 6;
const PAGES_PER_HOST = 150;

describe('a crawl with a frontier of 100 URLs in memory', () => {
  let web: TestWeb;
  let spilled: { run: Finished; log: RequestLogEntry[]; dataDir: string };
  let unbounded: { run: Finished; log: RequestLogEntry[] };

  const crawl = async (name: string, extra: string[]) => {
    const dataDir = join(tempDir(name), 'data');
    const from = web.log.length;
    const seeds = web.origins.flatMap((origin) => ['--seed', `${origin}/index.html`]);
    const run = await runPetrel([
      'crawl', ...seeds, '--data', dataDir, '--fetchers', '2', '--scope', 'host', '--max-depth', String(MAX_DEPTH),
      '--delay-ms', '0', '--host-concurrency', '2', '--robots-retry-ms', '200', '--robots-attempts', '2', '--max-retries', '0', '--no-progress', ...extra,
    ]);
    return { run, log: web.log.slice(from), dataDir };
  };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: PAGES_PER_HOST, hosts: 3 });
    spilled = await crawl('spill', ['--frontier-memory-urls', '100']);
    unbounded = await crawl('spill-default', []);
  }, 240_000);

  afterAll(async () => {
    await web?.close();
  });

  const expectedUrls = () => {
    const hosts = new Set(web.origins);
    return web.model.reachable({ seeds: web.origins.map((origin) => `${origin}/index.html`), inScope: (url) => hosts.has(new URL(url).origin), maxDepth: MAX_DEPTH });
  };

  /** URLs requested more than once, except those a 503 with Retry-After asks again for. */
  const repeatedOf = (log: RequestLogEntry[]) => {
    const requested = countBy(pageRequests(log), urlOf);
    const retriedAfter = new Set(pageRequests(log).filter((entry) => entry.status === 503).map(urlOf));
    return [...requested].filter(([url, count]) => count > 1 && !retriedAfter.has(url));
  };

  it('requests every reachable allowed URL exactly once while most of its queue is on disk', () => {
    expect(spilled.run.code, spilled.run.stderr).toBe(0);
    expect(existsSync(join(spilled.dataDir, 'frontier.btree'))).toBe(true);
    const expected = [...expectedUrls().keys()].sort();
    // Far more URLs than the 100 in memory: the crawl had to spill and read back.
    expect(expected.length).toBeGreaterThan(250);
    expect([...countBy(pageRequests(spilled.log), urlOf).keys()].sort()).toEqual(expected);
    expect(repeatedOf(spilled.log)).toEqual([]);
  });

  it('requests the same URLs as a crawl with the default memory bound', () => {
    expect(unbounded.run.code, unbounded.run.stderr).toBe(0);
    const spilledUrls = [...countBy(pageRequests(spilled.log), urlOf).keys()].sort();
    const unboundedUrls = [...countBy(pageRequests(unbounded.log), urlOf).keys()].sort();
    expect(spilledUrls).toEqual(unboundedUrls);
    expect(repeatedOf(unbounded.log)).toEqual([]);
  });

  it('asks each host for robots.txt before its pages, once (the host whose robots.txt fails: --robots-attempts times)', () => {
    const robots500 = new URL(web.hostByRole.robots500).host;
    for (const origin of web.origins) {
      const host = new URL(origin).host;
      const paths = spilled.log.filter((entry) => entry.host === host).map((entry) => entry.path);
      expect(paths[0]).toBe('/robots.txt');
      expect(paths.filter((path) => path === '/robots.txt')).toHaveLength(host === robots500 ? 2 : 1);
    }
  });
});
