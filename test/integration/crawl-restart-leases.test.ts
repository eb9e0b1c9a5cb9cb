/**
 * A crawl stopped and started again through the admin API while a fetcher still holds leases: every
 * known URL is placed once (queued, waiting for its next fetch, or out on lease), never twice. The URLs
 * out on lease at the restart were placed again by the restart and again by their results, and the
 * extra entries stayed in the frontier file: an operations review counted 1,813 placed of 1,800 known.
 * Real processes: `petrel queue-server` (continuous) and one `petrel fetcher` on the test web.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';
import { control, eventually } from '../support/cluster.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('a crawl started again while URLs are out on lease', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 40, slowMs: 150 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('places every known URL once', async () => {
    const seed = `${web.origins[0]}/index.html`;
    const server = startPetrel(['queue-server', '--data', join(tempDir('restart-leases'), 'data'), '--port', '0', '--seed', seed, '--scope', 'host', '--delay-ms', '0', '--host-concurrency', '2', '--slot-urls', '4']);
    const listening = await waitForEvent(server, 'listening');
    const url = String(listening.url);
    const adminToken = adminTokenOf(listening);
    startPetrel(['fetcher', '--server', url, '--token-file', String(listening.tokenFile), '--concurrency', '2']);
    await eventually(() => readStatus(url, adminToken), (status) => status.pagesFetched >= 6 && status.itemsLeased > 0, 'pages fetched and URLs out on lease');

    await control(url, adminToken, 'stop');
    // A stop drops what is queued; the slots out stay with their fetcher, and are out at the new start.
    expect((await readStatus(url, adminToken)).itemsLeased).toBeGreaterThan(0);
    await control(url, adminToken, 'crawl', { seeds: [seed] });
    // The crawl goes on to its end: every page fetched, nothing out, nothing queued.
    const done = await eventually(() => readStatus(url, adminToken), (status) => status.displayState === 'idle' && status.itemsLeased === 0, 'the crawl to end', 60_000);
    const { urlsByStatus, waitingUrls } = done as unknown as { urlsByStatus: Record<string, number>; waitingUrls: number };
    const known = Object.values(urlsByStatus).reduce((sum, count) => sum + count, 0);
    expect(done.frontierSize + done.itemsLeased).toBe(0);
    // A continuous crawl: each known URL waits for its next fetch, once.
    expect(waitingUrls).toBe(known);
  }, 90_000);
});
