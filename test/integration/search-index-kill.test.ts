/**
 * The search index across SIGKILLs of the queue server while fetchers keep posting index data: after
 * every kill, `petrel index check` finds no fault, and every page the crawl database has committed as
 * fetched is searchable (the index commits before the crawl database in each group commit, and a results
 * post is acknowledged only after both, so this covers every acknowledged page). At the end of the
 * crawl every indexable page of the web is in the index.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { adminTokenOf } from '../support/admin-api.js';
import { assertBuilt, freePort, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { justAfterResults, untilWorkOut } from '../support/repeat-accounting.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';

const KILLS = 6;
const seed = Number(process.env.KILL_SEED ?? Date.now() % 100_000);

describe('the search index of a queue server killed with SIGKILL while it indexes', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 80, hosts: 1, slowMs: 200 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  /** Pages the test web serves as indexable HTML (200, text/html, not noindex by meta tag or X-Robots-Tag). */
  const indexable = (url: string): boolean => {
    const page = web.model.page(url);
    return page !== undefined && page.status === 200 && (page.contentType ?? '').startsWith('text/html') && !page.metaNoindex && !page.headerNoindex;
  };

  /** The index is sound, and holds a page for every indexable URL the crawl database calls fetched. Returns how many. */
  const checkIndex = async (dataDir: string): Promise<number> => {
    const check = await runPetrel(['index', 'check', '--data', dataDir, '--json']);
    expect(check.code, check.stdout + check.stderr).toBe(0);
    expect((JSON.parse(check.stdout) as { ok: boolean }).ok).toBe(true);
    const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
    expect(dump.code, dump.stderr).toBe(0);
    const fetched = dump.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { url: string; status: string })
      .filter((record) => record.status === 'fetched' && indexable(record.url)).map((record) => record.url);
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      expect(fetched.filter((url) => !index.hasPage(url))).toEqual([]);
    } finally {
      await index.close();
    }
    return fetched.length;
  };

  it(`keeps every committed page searchable and the index sound over ${KILLS} kills (KILL_SEED=${seed})`, async () => {
    console.log(`search index kill test: KILL_SEED=${seed}`);
    // Deterministic, so a failing run can be replayed with KILL_SEED.
    const random = mulberry32(seed);
    const dataDir = join(tempDir('index-kill'), 'data');
    const main = web.hostByRole.main;
    const port = await freePort();
    const serverArgs = [
      'queue-server', '--data', dataDir, '--port', String(port), '--once', '--seed', `${main}/index.html`, '--scope', 'prefix',
      '--max-depth', '5', '--delay-ms', '100', '--host-concurrency', '2', '--slot-urls', '4', '--lease-ms', '3000', '--max-retries', '0',
    ];
    let server = startPetrel(serverArgs);
    const listening = await waitForEvent(server, 'listening');
    const serverUrl = String(listening.url);
    const adminToken = adminTokenOf(listening);
    const fetchers = ['one', 'two'].map((name) =>
      startPetrel(['fetcher', '--server', serverUrl, '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', '2', '--claim-wait-ms', '2000']),
    );

    let kills = 0;
    let finished: Record<string, unknown> | null = null;
    const committedAtKills: number[] = [];
    while (kills < KILLS) {
      const finishedEvent = waitForEvent(server, 'finished', 60_000).catch(() => null);
      const busy = await untilWorkOut(server, serverUrl, adminToken);
      if (busy !== null) await new Promise((resolve) => setTimeout(resolve, random() * 600));
      const status = busy !== null && server.exitCode === null ? await justAfterResults(serverUrl, adminToken, 1000) : null;
      if (status === null || status.displayState === 'done') {
        finished = await finishedEvent;
        break;
      }
      server.kill('SIGKILL');
      await server.output;
      kills++;
      // The directory as the kill left it (nobody has it open): sound, and every committed page in it.
      committedAtKills.push(await checkIndex(dataDir));
      server = startPetrel(serverArgs);
      const restarted = server;
      const outcome = await Promise.race([waitForEvent(restarted, 'listening', 60_000).then(() => null), restarted.output]);
      if (outcome !== null) throw new Error(`queue server did not restart after kill ${kills}: exit ${outcome.code}\n${outcome.stderr}`);
    }
    finished ??= await waitForEvent(server, 'finished', 90_000);
    await Promise.all([server.output, ...fetchers.map((fetcher) => fetcher.output)]);
    console.log(`search index kill test: ${kills} kills, indexed pages committed at each: ${committedAtKills.join(', ')}`);
    expect(kills).toBeGreaterThanOrEqual(3);
    // Kills came while pages were being indexed, not before or after.
    expect(committedAtKills.some((count) => count > 0)).toBe(true);

    const expected = [...web.model.reachable({ seeds: [`${main}/index.html`], inScope: (url) => url.startsWith(`${main}/`), maxDepth: 5 }).keys()].filter(indexable);
    const total = await checkIndex(dataDir);
    expect(total).toBe(expected.length);
    expect(committedAtKills.every((count) => count < total)).toBe(true);
    const index = SearchIndex.open(join(dataDir, 'index'), { readOnly: true });
    try {
      expect(expected.filter((url) => !index.hasPage(url))).toEqual([]);
      expect(index.stats().livePages).toBe(expected.length);
    } finally {
      await index.close();
    }
  }, 240_000);
});
