/**
 * Inject and crawl settings in a cluster, with real processes over a real redis-server: URLs injected
 * at any member are injected by the owner of each URL's host (cluster/cluster-inject.ts: through its
 * stream, queued there); a crawl started at one member with new settings and seeds starts at
 * every member with them (cluster/cluster-control.ts), and a member restarted afterwards does not
 * start it a second time.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, stopInOrder, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';
import { closeStartedRedis, haveRedis, startRedis, type TestRedis } from '../support/redis-server.js';
import { control, eventually, fetchedUrls, fleetTokenFile } from '../support/cluster.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';

const PARTITIONS = 2;

describe.skipIf(!haveRedis())('inject and crawl settings across a cluster', () => {
  let web: TestWeb;
  let redis: TestRedis;
  let tokenFile: string;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 4, pagesPerHost: 10 });
    redis = await startRedis(tempDir('redis'));
    tokenFile = fleetTokenFile('cluster');
  });

  afterAll(async () => {
    killStartedPetrels();
    await closeStartedRedis();
    await web?.close();
  });

  it('an inject at either member reaches each URL\'s owner; a crawl started at one member with new settings runs at both, and a restart does not start it again', async () => {
    const partitionOf = (url: string) => partitionOfUrl(url, PARTITIONS);
    const byPartition = [0, 1].map((partition) => web.origins.filter((origin) => partitionOf(origin) === partition));
    expect(byPartition.map((origins) => origins.length >= 2)).toEqual([true, true]);
    const pageOf = (origin: string) => [...web.model.reachable({ seeds: [`${origin}/index.html`], inScope: (url) => url.startsWith(`${origin}/`), maxDepth: 1 }).keys()].find((url) => !url.endsWith('/index.html'))!;
    const seed = `${byPartition[0]![0]}/index.html`;
    // --max-depth 0: only seeds and injected URLs are fetched, so each request below is one the test asked for.
    const args = (dataDir: string, port: number, partition: number) => [
      'queue-server', '--data', dataDir, '--port', String(port), '--token-file', tokenFile, '--cluster', redis.url, '--partitions', String(PARTITIONS), '--partition', String(partition),
      '--seed', seed, '--scope', 'any', '--max-depth', '0', '--delay-ms', '50', '--lease-ms', '3000',
    ];
    const dirs = [join(tempDir('member'), 'data'), join(tempDir('member'), 'data')];
    const start = async (i: number) => {
      const child = startPetrel(args(dirs[i]!, await freePort(), i));
      const listening = await waitForEvent(child, 'listening');
      return { child, url: String(listening.url), token: adminTokenOf(listening) };
    };
    const members = [await start(0), await start(1)];
    const fetcher = startPetrel(['fetcher', '--cluster', redis.url, '--token-file', tokenFile, '--name', 'f', '--concurrency', '4', '--claim-wait-ms', '1000', '--allow-private-addresses']);
    const requested = () => new Set(pageRequests(web.log).map(urlOf));
    await eventually(async () => requested().has(seed), Boolean, 'the seed');

    // Inject at member 0 a URL of each partition, and at member 1 the same: each is its owner's.
    const injected = [[`${byPartition[1]![0]}/index.html`, pageOf(byPartition[0]![1]!)], [pageOf(byPartition[1]![1]!), `${byPartition[0]![1]}/index.html`]];
    const answers = [await control(members[0]!.url, members[0]!.token, 'inject', { urls: injected[0] }), await control(members[1]!.url, members[1]!.token, 'inject', { urls: injected[1] })];
    expect(answers).toMatchObject([{ admitted: 1, forwarded: 1 }, { admitted: 1, forwarded: 1 }]);
    await eventually(async () => injected.flat().every((url) => requested().has(url)), Boolean, 'every injected URL fetched');
    // An injected URL is queued by its owner, not made a seed of any member (which member fetched it
    // is checked in the crawl databases at the end).
    const statuses = [await readStatus(members[0]!.url, members[0]!.token), await readStatus(members[1]!.url, members[1]!.token)] as unknown as { config: { seeds: string[]; maxDepth: number | null; delayMs: number } }[];
    expect(statuses.map((status) => status.config.seeds)).toEqual([[seed], [seed]]);

    // Stop at member 0 (the cluster stops), then a new crawl with new settings given to member 1.
    await control(members[0]!.url, members[0]!.token, 'stop');
    await eventually(() => readStatus(members[1]!.url, members[1]!.token), (status) => status.displayState === 'stopped', 'member 1 stopped');
    // Seeds never fetched before (a page fetched before answers 304 to the new crawl and gives no links).
    const fetchedBefore = requested();
    const freshPageOf = (origin: string) => [...web.model.reachable({ seeds: [`${origin}/index.html`], inScope: (url) => url.startsWith(`${origin}/`), maxDepth: 1 }).keys()].find((url) => !fetchedBefore.has(url))!;
    const newSeeds = [freshPageOf(byPartition[1]![1]!), freshPageOf(byPartition[0]![0]!)];
    const startedAt = web.log.length;
    await control(members[1]!.url, members[1]!.token, 'crawl', { seeds: newSeeds, maxDepth: 1, delayMs: 30, scope: 'any' });
    const configOf = async (i: number) => ((await readStatus(members[i]!.url, members[i]!.token)) as unknown as (typeof statuses)[number]).config;
    const applied = await eventually(() => configOf(0), (config) => config.maxDepth === 1 && config.delayMs === 30, 'member 0 to take the new settings');
    expect([...applied.seeds].sort()).toEqual([...newSeeds].sort());
    const expected = web.model.reachable({ seeds: newSeeds, inScope: () => true, maxDepth: 1 });
    // Pages fetched before wait for their next fetch time.
    const due = [...expected.keys()].filter((url) => !fetchedBefore.has(url));
    const since = () => new Set(pageRequests(web.log.slice(startedAt)).map(urlOf));
    await eventually(async () => due.filter((url) => !since().has(url)), (missing) => missing.length === 0, 'the new crawl at depth 1 from both seeds', 60_000);
    // Both partitions crawled at depth 1, and nothing deeper.
    expect(new Set([...since()].map(partitionOf)).size).toBe(2);
    expect([...since()].filter((url) => !expected.has(url))).toEqual([]);

    // Member 0 restarted on its data directory does not start the cluster's crawl a second time.
    const [first] = await stopInOrder([[members[0]!.child]]);
    expect(first!.code).toBe(0);
    expect(first!.stderr).toContain("started the cluster's crawl");
    members[0] = await start(0);
    await eventually(() => readStatus(members[0]!.url, members[0]!.token), (status) => status.displayState !== 'starting', 'member 0 back');
    await new Promise((resolve) => setTimeout(resolve, 1500));

    const outputs = await stopInOrder([[fetcher], members.map((member) => member.child)]);
    for (const output of outputs) expect(output.code, output.stderr).toBe(0);
    expect(outputs[1]!.stderr).not.toContain("started the cluster's crawl");
    // Each injected URL is in its owner's crawl database only, and was fetched once.
    const counts = countBy(pageRequests(web.log.slice(0, startedAt)), urlOf);
    for (const url of injected.flat()) {
      expect(counts.get(url), url).toBe(1);
      expect(fetchedUrls(dirs[partitionOf(url)]!), url).toContain(url);
      expect(fetchedUrls(dirs[1 - partitionOf(url)]!), url).not.toContain(url);
    }
  }, 150_000);
});
