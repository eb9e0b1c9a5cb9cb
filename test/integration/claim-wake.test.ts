/**
 * A claim parked on a real queue server (`petrel queue-server` with nothing to do now) is
 * woken when work arrives: the queue server's scheduler waits on a condition variable, not in a sleep
 * loop (queue-server/crawl/condition.ts). A claim that times out is answered `wait`; one answered
 * with a schedule was woken by the work. The unit tests of the Condition and the CrawlService show,
 * with fake timers, that no timer is involved in the wake; scripts/bench-wake.ts measures how soon.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueClient } from '../../fetcher/queue-client.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { PROTOCOL_VERSION, type ClaimRequest, type ClaimResponse } from '../../shared/protocol.js';
import { adminTokenOf, inject, readStatus } from '../support/admin-api.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

/** The longest a claim may wait (protocol maximum). */
const WAIT_MS = 60_000;
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

describe('a claim parked on a queue server with nothing to do', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 3, pagesPerHost: 3 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('is answered with a schedule for injected URLs, woken long before its waitMs', async () => {
    // Inject adds to a crawl, so there is one: its seed's robots.txt is leased below to a fetcher that
    // never answers (for longer than the test runs), so nothing else is to be done until the injects.
    const seedOrigin = web.origins[2]!;
    const server = startPetrel(['queue-server', '--data', join(tempDir('wake'), 'data'), '--port', '0', '--delay-ms', '0', '--scope', 'any', '--seed', `${seedOrigin}/index.html`, '--lease-ms', '10min']);
    const listening = await waitForEvent(server, 'listening');
    const serverUrl = String(listening.url);
    const adminToken = adminTokenOf(listening);
    const stopping = new AbortController();
    const client = new QueueClient({ serverUrl, token: readFileSync(String(listening.tokenFile), 'utf8').trim(), signal: stopping.signal });
    try {
      const claimOf = (fetcherId: string): ClaimRequest => ({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: 1, waitMs: WAIT_MS, stats: STATS });
      expect(await client.claim({ ...claimOf('seed-holder'), waitMs: 0 })).toMatchObject({ kind: 'schedule', schedule: { slots: [{ origin: seedOrigin, items: [{ kind: 'robots' }] }] } });
      const answers: { id: string; response: ClaimResponse; at: number }[] = [];
      const claims = ['parked-1', 'parked-2'].map((id) => client.claim(claimOf(id)).then((response) => answers.push({ id, response, at: performance.now() })));

      // Parked: the queue server has taken both claims (a claim registers its fetcher, then finds
      // nothing and waits) and answered neither.
      await expect.poll(async () => (await readStatus(serverUrl, adminToken)).fetchers.map((f) => f.id).sort(), { timeout: 15_000 }).toEqual(['parked-1', 'parked-2', 'seed-holder']);
      expect(answers).toEqual([]);

      // Work for one of them: one origin, whose robots.txt is its first slot.
      const [first, second] = web.origins as [string, string];
      const injectedAt = performance.now();
      expect(await inject(serverUrl, adminToken, [`${first}/index.html`])).toMatchObject({ admitted: 1 });
      await expect.poll(() => answers.length, { timeout: WAIT_MS / 2 }).toBe(1);
      const woken = answers[0]!;
      expect(woken.response).toMatchObject({ kind: 'schedule', schedule: { slots: [{ origin: first, items: [{ kind: 'robots', url: `${first}/robots.txt` }] }] } });
      // Woken, not timed out: a claim whose waitMs ran out is answered `wait`, and not before WAIT_MS.
      expect(woken.at - injectedAt).toBeLessThan(WAIT_MS);

      // The other claim found the work taken (a woken claim checks again) and went on waiting; the
      // next work wakes it.
      expect(answers).toHaveLength(1);
      const injectedAgainAt = performance.now();
      expect(await inject(serverUrl, adminToken, [`${second}/index.html`])).toMatchObject({ admitted: 1 });
      await Promise.all(claims);
      const other = answers[1]!;
      expect(other.id).not.toBe(woken.id);
      expect(other.response).toMatchObject({ kind: 'schedule', schedule: { slots: [{ origin: second, items: [{ kind: 'robots', url: `${second}/robots.txt` }] }] } });
      expect(other.at - injectedAgainAt).toBeLessThan(WAIT_MS);
    } finally {
      stopping.abort();
      await client.close();
      server.kill('SIGTERM');
      await server.output;
    }
  }, 90_000);
});
