/**
 * Queue servers coming and going in a running cluster, with real processes over a real redis-server:
 * of 4 partitions only 2 are owned when the crawl starts (the others' links wait in their streams);
 * a 3rd and a 4th queue server join mid-crawl and each takes a free partition; the fetchers, never
 * told, find them in Redis; a fetcher started late works for every member; one member leaves (SIGTERM)
 * and comes back on its data directory at another port. At the end every reachable page was fetched
 * and recorded by the owner of its host's partition, nothing lost.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, stopInOrder, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';
import { closeStartedRedis, haveRedis, startRedis, type TestRedis } from '../support/redis-server.js';
import { eventually, fetchedUrls, partitionOfDir, readCluster, untilCrawled, fleetTokenFile } from '../support/cluster.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { clusterKeys } from '../../shared/cluster-keys.js';

const PARTITIONS = 4;
const MAX_DEPTH = 5;

const waitFor = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

describe.skipIf(!haveRedis())('queue servers joining and leaving a running cluster', () => {
  let web: TestWeb;
  let redis: TestRedis;
  let tokenFile: string;

  beforeAll(async () => {
    assertBuilt();
    // Hosts 127.0.0.2-11: partitions 3 0 3 0 1 1 2 0 3 2 of 4, so each partition has two or three.
    web = await startTestWeb({ profile: 'bench', hosts: 10, pagesPerHost: 36 });
    redis = await startRedis(tempDir('redis'));
    tokenFile = fleetTokenFile('cluster');
  });

  afterAll(async () => {
    killStartedPetrels();
    await closeStartedRedis();
    await web?.close();
  });

  it('a 3rd and a 4th member joining mid-crawl take the free partitions, fetchers find them and one started late works for all, a member leaving and coming back loses nothing', async () => {
    const seeds = web.origins.map((origin) => `${origin}/index.html`);
    const expected = web.model.reachable({ seeds, inScope: () => true, maxDepth: MAX_DEPTH });
    expect(new Set(web.origins.map((origin) => partitionOfUrl(origin, PARTITIONS))).size).toBe(PARTITIONS);
    const partitionOf = (url: string) => partitionOfUrl(url, PARTITIONS);
    const requestsOf = (partition: number) => pageRequests(web.log).filter((entry) => partitionOf(urlOf(entry)) === partition).length;
    const args = (dataDir: string, port: number, first: boolean) => [
      'queue-server', '--data', dataDir, '--port', String(port), '--token-file', tokenFile, '--cluster', redis.url, ...(first ? ['--partitions', String(PARTITIONS)] : []),
      ...seeds.flatMap((seed) => ['--seed', seed]), '--scope', 'any', '--max-depth', String(MAX_DEPTH), '--delay-ms', '500', '--lease-ms', '3000',
    ];
    const fetcher = (name: string) => startPetrel(['fetcher', '--cluster', redis.url, '--token-file', tokenFile, '--name', name, '--concurrency', '5', '--claim-wait-ms', '1000', '--allow-private-addresses']);
    const dirs = [0, 1, 2, 3].map(() => join(tempDir('member'), 'data'));
    const start = async (i: number, first = false) => {
      const child = startPetrel(args(dirs[i]!, await freePort(), first));
      const listening = await waitForEvent(child, 'listening');
      return { child, url: String(listening.url), token: adminTokenOf(listening) };
    };

    const members = [await start(0, true), await start(1)];
    expect([partitionOfDir(dirs[0]!), partitionOfDir(dirs[1]!)]).toEqual([0, 1]);
    const fetchers = [fetcher('early-1'), fetcher('early-2')];
    await waitFor(() => requestsOf(0) + requestsOf(1) >= 6, 'the first pages of partitions 0 and 1');
    // Partitions 2 and 3 have no owner: nothing of theirs is fetched, their seeds and links wait in Redis.
    const probe = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null });
    probe.on('error', () => undefined);
    const keys = clusterKeys('default');
    expect(await probe.xlen(keys.links(2))).toBeGreaterThan(0);
    expect(await probe.xlen(keys.links(3))).toBeGreaterThan(0);
    expect([requestsOf(2), requestsOf(3)]).toEqual([0, 0]);

    // A 3rd and a 4th join mid-crawl: each takes the first free partition; nobody tells the fetchers.
    members.push(await start(2), await start(3));
    expect([partitionOfDir(dirs[2]!), partitionOfDir(dirs[3]!)]).toEqual([2, 3]);

    // Member 1 leaves with work left (SIGTERM: it drains and gives its lease up) ...
    const partitionOneLeft = [...expected.keys()].filter((url) => partitionOf(url) === 1 && !pageRequests(web.log).some((entry) => urlOf(entry) === url));
    expect(partitionOneLeft.length).toBeGreaterThan(0);
    members[1]!.child.kill('SIGTERM');
    expect((await members[1]!.child.output).code).toBe(0);
    const view = await eventually(() => readCluster(members[0]!.url, members[0]!.token), (v) => v.members[1]!.owner === null, 'partition 1 without an owner');
    expect(view.members.filter((member) => member.owner !== null).map((member) => member.partition)).toEqual([0, 2, 3]);
    // ... the fetchers find the new members meanwhile, and the others keep crawling ...
    await waitFor(() => requestsOf(2) > 0 && requestsOf(3) > 0, 'the fetchers to find the new members');
    fetchers.push(fetcher('late'));
    const othersBefore = requestsOf(0) + requestsOf(2) + requestsOf(3);
    await waitFor(() => requestsOf(0) + requestsOf(2) + requestsOf(3) >= othersBefore + 5, 'the other partitions to go on crawling');
    // ... and it comes back on its data directory at another port: its partition, found by the fetchers again.
    members[1] = await start(1);
    expect(partitionOfDir(dirs[1]!)).toBe(1);

    await untilCrawled(web, expected, 150_000);
    await eventually(() => readCluster(members[2]!.url, members[2]!.token), (v) => v.sum.frontierSize === 0 && v.sum.itemsLeased === 0 && v.sum.backlog === 0 && v.members.every((m) => m.owner !== null), 'the cluster to hold nothing queued, leased or forwarded', 60_000);
    // The fetcher started late claimed from every member, the one that came back included.
    for (const member of members) {
      const status = await readStatus(member.url, member.token);
      expect(status.fetchers.map((info) => info.name), member.url).toContain('late');
    }
    probe.disconnect();
    const outputs = await stopInOrder([fetchers, members.map((member) => member.child)]);
    for (const output of outputs) expect(output.code, output.stderr).toBe(0);
    const early = outputs[0]!.stderr;
    for (const member of members) expect(early).toContain(`serving the queue server at ${member.url}`);
    expect(early).toMatch(/left the cluster: abandoning its schedules/);

    const requested = countBy(pageRequests(web.log), urlOf);
    expect([...expected.keys()].filter((url) => !requested.has(url))).toEqual([]);
    expect([...requested.keys()].filter((url) => !expected.has(url))).toEqual([]);
    // Pages of the members that stayed were fetched once; of the one that left, those its fetchers held
    // when it went may be fetched again (their results had nowhere to go).
    expect([...requested].filter(([url, count]) => count !== 1 && partitionOf(url) !== 1)).toEqual([]);
    const robots = countBy(web.log.filter((entry) => entry.path === '/robots.txt' && partitionOf(`http://${entry.host}/`) !== 1), (entry) => entry.host);
    expect([...robots].filter(([, count]) => count !== 1)).toEqual([]);
    // Each member's crawl database holds its partition's pages only, and together every reachable page.
    for (const [i, dir] of dirs.entries()) {
      const urls = fetchedUrls(dir);
      expect(urls.length, `member ${i}`).toBeGreaterThan(0);
      expect(urls.filter((url) => partitionOf(url) !== i)).toEqual([]);
    }
    expect(dirs.flatMap(fetchedUrls).sort()).toEqual([...expected.keys()].sort());
    const again = [...requested].filter(([, count]) => count > 1).length;
    console.log(`cluster membership test: ${expected.size} pages over ${PARTITIONS} partitions, ${again} of partition 1 fetched again after its member left`);
  }, 240_000);
});
