/**
 * Politeness at host concurrency above one, with real processes: a single-host crawl never has more
 * requests in flight at the host than --host-concurrency, and with host concurrency at least the
 * number of fetchers, every fetcher gets work.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, peakConcurrency, urlOf } from '../support/request-log.js';

describe('a single-host crawl at host concurrency 2 with two fetcher processes', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 120, hosts: 1, profile: 'bench' });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('keeps both fetchers busy without ever exceeding two requests at the host', async () => {
    const main = web.hostByRole.main;
    const server = startPetrel([
      'queue-server', '--data', join(tempDir('hostconc'), 'data'), '--port', '0', '--once', '--seed', `${main}/index.html`,
      '--scope', 'host', '--delay-ms', '0', '--host-concurrency', '2', '--slot-urls', '4',
    ]);
    const listening = await waitForEvent(server, 'listening');
    const finishedEvent = waitForEvent(server, 'finished', 60_000);
    const fetchers = ['one', 'two'].map((name) =>
      startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', '4']),
    );
    const finished = await finishedEvent;
    await Promise.all([server.output, ...fetchers.map((fetcher) => fetcher.output)]);

    expect(peakConcurrency(web.log, new URL(main).host)).toBeLessThanOrEqual(2);
    const perFetcher = finished.fetchers as { name: string; pagesFetched: number }[];
    expect(perFetcher.map((fetcher) => fetcher.name).sort()).toEqual(['one', 'two']);
    for (const fetcher of perFetcher) expect(fetcher.pagesFetched, fetcher.name).toBeGreaterThan(10);
    const requested = countBy(pageRequests(web.log), urlOf);
    expect(requested.size).toBe(120);
    expect([...requested.values()].every((count) => count === 1)).toBe(true);
  }, 90_000);
});
