/**
 * A crawl stopped by its page limit promises no time left for the URLs it keeps queued: they are not
 * handed out in this pass, and `petrel status` and the progress line said "~4s left for the queued
 * URLs" of a crawl that had stopped. A real queue server in this process and a real fetcher child.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQueueServer } from '../../queue-server/daemon.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir } from '../support/petrel-process.js';

describe('a crawl stopped by its page limit', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 30 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('shows no time left while URLs stay queued', async () => {
    const server = await startQueueServer({ dataDir: join(tempDir('page-limit-time'), 'data'), port: 0, crawl: { seeds: [`${web.origins[0]}/index.html`], delayMs: 0, maxPages: 3, bloomCapacity: 1000 } });
    try {
      const fetcher = startPetrel(['fetcher', '--server', server.url, '--token-file', server.tokenFile, '--name', 'limit', '--claim-wait-ms', '1000']);
      await expect.poll(() => server.service.status().pagesFetched, { timeout: 30_000, interval: 100 }).toBe(3);
      await expect.poll(() => server.service.status().itemsLeased, { timeout: 30_000, interval: 100 }).toBe(0);
      const status = server.service.status();
      expect(status.frontierSize).toBeGreaterThan(0);
      expect(status.displayState).toBe('idle');
      expect(status.timeLeft).toBeNull();
      fetcher.kill('SIGTERM');
      await fetcher.output;
    } finally {
      await server.close();
    }
  }, 60_000);
});
