/**
 * The seen-set across kill -9: its exact part is the crawl database on disk (admission/seen-set.ts), so
 * a queue server killed with SIGKILL and restarted on the same data directory must know every URL an
 * inject had been answered for (none lost: an inject is answered after its group commit) and admit
 * none of them again, while a URL whose inject was still unanswered at the kill is either known or
 * admitted anew, once. Real processes, the inject route over HTTP, no fetchers (nothing is fetched:
 * the URLs' host is 127.0.0.1:9, never connected to).
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';
import { adminTokenOf } from '../support/admin-api.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const ROUNDS = 4;
const BATCH = 1000;
const SEED = 'http://127.0.0.1:9/';
const seed = Number(process.env.KILL_SEED ?? Date.now() % 100_000);

interface InjectAnswer {
  admitted: number;
  rejected: { url: string; code: string }[];
}

async function injectAll(serverUrl: string, token: string, urls: readonly string[]): Promise<InjectAnswer> {
  const total: InjectAnswer = { admitted: 0, rejected: [] };
  for (let at = 0; at < urls.length; at += BATCH) {
    const answer = await postInject(serverUrl, token, urls.slice(at, at + BATCH));
    total.admitted += answer.admitted;
    total.rejected.push(...answer.rejected);
  }
  return total;
}

async function postInject(serverUrl: string, token: string, urls: readonly string[]): Promise<InjectAnswer> {
  const response = await fetch(new URL('/api/control/inject', serverUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ urls }),
  });
  if (!response.ok) throw new Error(`inject answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as InjectAnswer;
}

describe('the seen-set of a queue server killed with SIGKILL', () => {
  afterAll(() => killStartedPetrels());

  it(`re-admits no URL and loses none an inject was answered for, over ${ROUNDS} kills (KILL_SEED=${seed})`, async () => {
    assertBuilt();
    console.log(`seen-set kill test: KILL_SEED=${seed}`);
    const random = mulberry32(seed);
    const dataDir = join(tempDir('seen-kill'), 'data');
    const args = (port: number) => ['queue-server', '--data', dataDir, '--port', String(port), '--seed', SEED, '--scope', 'host'];
    /** URLs an inject was answered for (durable), and those sent to a queue server killed before it answered. */
    const durable: string[] = [];
    let unanswered: string[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const server = startPetrel(args(await freePort()));
      const listening = await waitForEvent(server, 'listening');
      const serverUrl = String(listening.url);
      const token = adminTokenOf(listening);
      const known = (listening.loaded as { known: number }).known;
      // The seed (admitted at the first start, committed with the first inject), every answered URL, and
      // perhaps some of the unanswered batch (its commit may have run).
      const seeded = round === 0 ? 0 : 1;
      expect(known).toBeGreaterThanOrEqual(seeded + durable.length);
      expect(known).toBeLessThanOrEqual(seeded + durable.length + unanswered.length);

      // Nothing answered before is admitted again: every one is queued already.
      const again = await injectAll(serverUrl, token, durable);
      expect(again.admitted).toBe(0);
      expect(again.rejected.length).toBe(durable.length);
      expect(new Set(again.rejected.map((refusal) => refusal.code))).toEqual(new Set(durable.length > 0 ? ['already-queued'] : []));
      // The unanswered batch: each URL known, or admitted now (it was lost with the kill) — and then known.
      const retried = await injectAll(serverUrl, token, unanswered);
      expect(retried.admitted).toBe(seeded + durable.length + unanswered.length - known);
      expect(retried.rejected.every((refusal) => refusal.code === 'already-queued')).toBe(true);
      durable.push(...unanswered);
      unanswered = [];
      if (round === ROUNDS) {
        server.kill('SIGTERM');
        await server.output;
        break;
      }

      // New URLs, answered: durable from now on.
      const fresh = Array.from({ length: 2 * BATCH }, (_, i) => `${SEED}round-${round}/answered-${i}`);
      const answered = await injectAll(serverUrl, token, fresh);
      expect(answered).toEqual({ admitted: fresh.length, rejected: [] });
      durable.push(...fresh);
      // One more batch, killed at a random moment around its group commit.
      unanswered = Array.from({ length: BATCH }, (_, i) => `${SEED}round-${round}/killed-${i}`);
      void postInject(serverUrl, token, unanswered).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, random() * 150));
      server.kill('SIGKILL');
      await server.output;
    }

    // The crawl database holds each URL once: the seed and every URL injected.
    const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
    try {
      const urls: string[] = [];
      for (const [, record] of crawlDb.entries()) urls.push(record.url);
      expect(urls.length).toBe(1 + durable.length);
      expect(new Set(urls)).toEqual(new Set([SEED, ...durable]));
      expect(crawlDb.check().ok).toBe(true);
    } finally {
      crawlDb.close();
    }
  }, 120_000);
});
