/**
 * Continuous mode: `petrel queue-server` without --once keeps the crawl alive, and each URL comes back
 * at its next fetch time (adaptive interval, never before HTTP freshness), revalidated with its
 * validators.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';

describe('a queue server in continuous mode', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    // Bench profile, two hosts: host 0 says max-age=3600 (never due again within the test), host 1 max-age=0.
    web = await startTestWeb({ profile: 'bench', hosts: 2, pagesPerHost: 8 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('fetches stale pages again at their next fetch time, conditionally, and leaves fresh ones alone', async () => {
    const [fresh, stale] = web.origins as [string, string];
    const server = startPetrel([
      'queue-server', '--data', join(tempDir('continuous'), 'data'), '--port', '0', '--seed', `${fresh}/index.html`, '--seed', `${stale}/index.html`,
      '--scope', 'host', '--delay-ms', '0', '--initial-interval-ms', '1500', '--min-interval-ms', '1000',
    ]);
    const listening = await waitForEvent(server, 'listening');
    const fetcher = startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--concurrency', '4']);
    const staleHost = new URL(stale).host;
    const freshHost = new URL(fresh).host;
    // Until every stale page came back (not a fixed window: a loaded machine only takes longer);
    // the fresh ones must not have come back meanwhile.
    const revalidated = () => new Set(pageRequests(web.log).filter((entry) => entry.host === staleHost && entry.ifNoneMatch !== null).map(urlOf)).size;
    // The crawl time counts the stretches with work: it stops while idle and runs on when pages fall due.
    const status = async () => (await readStatus(String(listening.url), adminTokenOf(listening))) as unknown as { displayState: string; elapsedMs: number; notModified: number };
    const firstIdle = await vi.waitFor(async () => {
      const now = await status();
      if (now.displayState !== 'idle') throw new Error(`state ${now.displayState}`);
      return now;
    }, { timeout: 60_000, interval: 50 });
    await expect.poll(revalidated, { timeout: 60_000, interval: 100 }).toBe(8);
    const afterRefetches = await status();
    expect(afterRefetches.notModified).toBeGreaterThan(0);
    expect(afterRefetches.elapsedMs).toBeGreaterThan(firstIdle.elapsedMs);
    // The fetcher first, as petrel crawl and Ctrl-C stop them: it delivers what it holds, which a queue
    // server stopped at the same moment may no longer take (a fetcher without --once then waits for it).
    fetcher.kill('SIGTERM');
    await fetcher.output;
    server.kill('SIGTERM');
    await server.output;

    const requests = pageRequests(web.log);
    const staleCounts = countBy(requests.filter((entry) => entry.host === staleHost), urlOf);
    expect(staleCounts.size).toBe(8);
    for (const [url, count] of staleCounts) expect(count, url).toBeGreaterThanOrEqual(2);
    const revalidations = requests.filter((entry) => entry.host === staleHost && entry.ifNoneMatch !== null);
    expect(revalidations.length).toBeGreaterThanOrEqual(8);
    expect(revalidations.every((entry) => entry.status === 304)).toBe(true);
    const freshCounts = countBy(requests.filter((entry) => entry.host === freshHost), urlOf);
    expect([...freshCounts.values()].every((count) => count === 1)).toBe(true);
  }, 90_000);
});
