/**
 * Durability with real processes: the queue server is killed with SIGKILL at random moments and
 * restarted on the same data directory while two fetchers keep working. At the end every reachable
 * allowed page was fetched, the crawl database is consistent, and every page fetched more than once
 * is accounted for: each second fetch left a result that some queue server refused as a duplicate
 * (test/support/repeat-accounting.ts). A fetcher that dropped the results it held while the queue
 * server was away, or a queue server that acknowledged results before committing them, fails it.
 * The web archive (WARC on, the default) survives every kill: each file parses whole with warcio and
 * its digests check, and every page the crawl database holds as fetched points at its capture there.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, freePort, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { adminTokenOf } from '../support/admin-api.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { justAfterResults, pageRepeats, refusedResults, untilWorkOut } from '../support/repeat-accounting.js';
import { checkWarcPath, type ParsedRecord } from '../support/warc-exchange.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';

/**
 * Kills per run, at instants drawn from KILL_SEED (printed, to replay one). 14, not 20: the test was the
 * longest of the suite (83 s of the 571 s CI run of 2026-12-07, which has a 10-minute bound); each run
 * draws new instants, so runs add coverage, and KILL_COUNT=20 in the environment restores the old count.
 */
const KILLS = Number.parseInt(process.env.KILL_COUNT ?? '', 10) || 14;
const SLOT_URLS = 4;
const FETCHER_CONCURRENCY = 2;
/** Paces the crawl so that it is still fetching at most kills, and fetchers go on fetching while it is away. */
const DELAY_MS = 150;
const seed = Number(process.env.KILL_SEED ?? Date.now() % 100_000);

// The second run keeps only 8 queued URLs in memory: most of its frontier is read back from disk
// (frontier.btree) after each kill, and while it runs. Each run has a test web (and request log) of its own.
for (const extra of [[], ['--frontier-memory-urls', '8']]) describe(`a queue server killed with SIGKILL again and again${extra.length === 0 ? '' : ` with ${extra.join(' ')}`}`, () => {
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
    // Deterministic, so a failing run can be replayed with KILL_SEED.
    const random = mulberry32(seed);
    const dataDir = join(tempDir('kill'), 'data');
    const main = web.hostByRole.main;
    const port = await freePort();
    const serverArgs = [
      'queue-server', '--data', dataDir, '--port', String(port), '--once', '--seed', `${main}/index.html`, '--scope', 'prefix',
      '--max-depth', '4', '--delay-ms', String(DELAY_MS), '--host-concurrency', '2', '--slot-urls', String(SLOT_URLS), '--lease-ms', '3000',
      '--max-retries', '0', ...extra,
    ];
    let server = startPetrel(serverArgs);
    const listening = await waitForEvent(server, 'listening');
    const serverUrl = String(listening.url);
    const adminToken = adminTokenOf(listening);
    // --once: a fetcher that misses `done` (the queue server gives silent fetchers 1.5 s to hear it, and a
    // fetcher still backing off from the last kill may be silent longer) gives up once the finished queue
    // server has been gone 30 s, instead of waiting for the next crawl for good; the test waits for the
    // fetchers to exit. A fresh-ci run (KILL_SEED=26788) hung there until the 300 s guard, before the
    // kill count was printed; the same seed passed alone and in six runs under load.
    const fetchers = ['one', 'two'].map((name) =>
      startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', String(FETCHER_CONCURRENCY), '--claim-wait-ms', '2000', '--once', '--give-up-after', '30s']),
    );

    let kills = 0;
    let finished: Record<string, unknown> | null = null;
    /** Results refused as duplicates or late by the queue servers killed so far, each read just before its kill. */
    let refusedBeforeKills = 0;
    const inFlight: string[] = [];
    while (kills < KILLS) {
      const finishedEvent = waitForEvent(server, 'finished', 60_000).catch(() => null);
      // Kill a queue server with work out, at a random moment of the slots it leased first, just after it
      // applied results (their commit may be pending).
      const busy = await untilWorkOut(server, serverUrl, adminToken);
      if (busy !== null) await new Promise((resolve) => setTimeout(resolve, random() * 600));
      const status = busy !== null && server.exitCode === null ? await justAfterResults(serverUrl, adminToken, 1000) : null;
      if (status === null || status.displayState === 'done') {
        // The pass ended (the queue server exits after `finished`) before this kill.
        finished = await finishedEvent;
        break;
      }
      server.kill('SIGKILL');
      refusedBeforeKills += refusedResults(status);
      inFlight.push(`${status.itemsLeased} leased/${refusedResults(status)} refused`);
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
    // Every second fetch of a page left a result that a queue server refused; none was lost or dropped.
    const repeats = pageRepeats(web.log);
    const refused = refusedBeforeKills + refusedResults(finished!.summary as { duplicateResults: number; lateResults: number });
    console.log(`queue-server kill test: ${repeats.total} repeats, ${refused} refused results; at each kill ${inFlight.join(', ')}`);
    expect(repeats.total, `pages fetched again: ${JSON.stringify([...repeats.byUrl])}`).toBeLessThanOrEqual(refused);
    // And no kill cost more than the two fetchers can hold (the old, loose bound, kept).
    expect([...requested.values()].reduce((sum, count) => sum + count - 1, 0)).toBeLessThanOrEqual(kills * 2 * FETCHER_CONCURRENCY * SLOT_URLS);

    const check = await runPetrel(['db', 'check', '--data', dataDir, '--json']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    const report = JSON.parse(check.stdout) as { ok: boolean; records: number; byStatus: Record<string, number> };
    expect(report.ok).toBe(true);
    expect(report.byStatus.unfetched).toBe(0);
    expect(report.byStatus.retry).toBe(0);
    expect(report.records).toBeGreaterThanOrEqual(expected.size);
    expect(finished).not.toBeNull();

    // Every WARC file (one per queue server run, each cut back to its last whole record on the next
    // start) parses whole, digests included; every fetched page's crawl db location names its response.
    const warcDir = join(dataDir, 'warc');
    const files = readdirSync(warcDir).filter((name) => name.endsWith('.warc.gz')).sort();
    expect(files.length).toBeGreaterThan(1);
    const records: ParsedRecord[] = [];
    const at = new Map<string, ParsedRecord>();
    for (const file of files) {
      for (const record of await checkWarcPath(join(warcDir, file), records)) {
        records.push(record);
        at.set(`${file}@${record.offset}`, record);
      }
    }
    const crawlDb = CrawlDb.open(join(dataDir, 'crawldb.btree'));
    let archived = 0;
    try {
      for (const [, record] of crawlDb.entries()) {
        if (record.status !== 'fetched') continue;
        const location = record.warc;
        expect(location, record.url).not.toBeNull();
        const request = at.get(`${location!.file}@${location!.offset}`);
        const response = at.get(`${location!.file}@${location!.offset + location!.requestLength}`);
        expect(request?.type, record.url).toBe('request');
        expect(response?.headers.get('WARC-Record-ID')).toBe(location!.recordId);
        expect(response?.headers.get('WARC-Target-URI')).toBe(record.url);
        archived++;
      }
    } finally {
      crawlDb.close();
    }
    expect(archived).toBeGreaterThanOrEqual(expected.size - 10);
  }, 300_000); // 25 s on a quiet machine; several times that while other work loads both cores
});
