/**
 * Durability with real processes: the queue server is killed with SIGKILL at random moments and
 * restarted on the same data directory while two fetchers keep working. At the end every reachable
 * allowed page was fetched, the crawl database is consistent, and repeated requests are bounded by
 * what was out on lease at each kill.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, freePort, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';

const KILLS = 20;
const SLOT_URLS = 4;
const FETCHER_CONCURRENCY = 2;
const seed = Number(process.env.KILL_SEED ?? Date.now() % 100_000);

/** A small deterministic generator, so a failing run can be replayed with KILL_SEED. */
function random(state: { s: number }): number {
  state.s = (state.s * 1_103_515_245 + 12_345) % 2 ** 31;
  return state.s / 2 ** 31;
}

describe('a queue server killed with SIGKILL again and again', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 60, hosts: 1, slowMs: 200 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it(`loses nothing over ${KILLS} kills and restarts (KILL_SEED=${seed})`, async () => {
    console.log(`queue-server kill test: KILL_SEED=${seed}`);
    const rng = { s: seed };
    const dataDir = join(tempDir('kill'), 'data');
    const main = web.hostByRole.main;
    const port = await freePort();
    const serverArgs = [
      'queue-server', '--data', dataDir, '--port', String(port), '--once', '--seed', `${main}/index.html`, '--scope', 'prefix',
      '--max-depth', '4', '--delay-ms', '10', '--host-concurrency', '2', '--slot-urls', String(SLOT_URLS), '--lease-ms', '3000',
      '--max-retries', '0',
    ];
    let server = startPetrel(serverArgs);
    const listening = await waitForEvent(server, 'listening');
    const fetchers = ['one', 'two'].map((name) =>
      startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', String(FETCHER_CONCURRENCY), '--claim-wait-ms', '2000']),
    );

    let kills = 0;
    let finished: Record<string, unknown> | null = null;
    while (kills < KILLS) {
      const finishedEvent = waitForEvent(server, 'finished', 60_000).catch(() => null);
      await new Promise((resolve) => setTimeout(resolve, 150 + random(rng) * 600));
      if (server.exitCode !== null) {
        finished = await finishedEvent;
        break;
      }
      server.kill('SIGKILL');
      await server.output;
      kills++;
      server = startPetrel(serverArgs);
      const restarted = server;
      const outcome = await Promise.race([waitForEvent(restarted, 'listening', 60_000).then(() => null), restarted.output]);
      if (outcome !== null) throw new Error(`queue server did not restart after kill ${kills}: exit ${outcome.code}\n${outcome.stderr}`);
    }
    finished ??= await waitForEvent(server, 'finished', 90_000);
    await Promise.all([server.output, ...fetchers.map((fetcher) => fetcher.output)]);
    console.log(`queue-server kill test: ${kills} kills`);
    expect(kills).toBeGreaterThanOrEqual(Math.min(KILLS, 5));

    const expected = web.model.reachable({ seeds: [`${main}/index.html`], inScope: (url) => url.startsWith(`${main}/`), maxDepth: 4 });
    const requested = countBy(pageRequests(web.log), urlOf);
    const missing = [...expected.keys()].filter((url) => !requested.has(url));
    expect(missing).toEqual([]);
    expect([...requested.keys()].filter((url) => !expected.has(url))).toEqual([]);
    // Each kill can cost at most what was out on lease: two fetchers, each with its slots of URLs.
    const repeats = [...requested.values()].reduce((sum, count) => sum + count - 1, 0);
    expect(repeats).toBeLessThanOrEqual(kills * 2 * FETCHER_CONCURRENCY * SLOT_URLS);

    const check = await runPetrel(['db', 'check', '--data', dataDir, '--json']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const report = JSON.parse(check.stdout) as { ok: boolean; records: number; byStatus: Record<string, number> };
    expect(report.ok).toBe(true);
    expect(report.byStatus.unfetched).toBe(0);
    expect(report.byStatus.retry).toBe(0);
    expect(report.records).toBeGreaterThanOrEqual(expected.size);
    expect(finished).not.toBeNull();
  }, 180_000);
});
