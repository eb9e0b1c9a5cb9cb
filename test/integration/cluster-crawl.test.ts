/**
 * Petrel past one machine, with real processes: a real redis-server on loopback (AOF, appendfsync
 * always), queue servers started with --cluster owning one partition each, fetchers started with
 * --cluster that find them in Redis. The crawl is seeded on ONE host only, so the hosts of the other
 * partition are reached only through links forwarded over Redis streams.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, stopInOrder, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, politenessViolations, urlOf } from '../support/request-log.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';
import { closeStartedRedis, haveRedis, startRedis, type TestRedis } from '../support/redis-server.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { control, eventually, fetchedUrls, partitionOfDir, readCluster, stablePort, untilCrawled, fleetTokenFile } from '../support/cluster.js';
import { Redis } from 'ioredis';
import { clusterKeys } from '../../shared/cluster-keys.js';

const PARTITIONS = 3;
/** The kill test's cluster: the seed's partition and one other. */
const KILL_PARTITIONS = 2;
const MAX_DEPTH = 5;
const DELAY_MS = 20;
/** From a response handed to the socket to the next request's arrival, as crawl-e2e.test.ts allows. */
const MEASUREMENT_LAG_MS = 10;

describe.skipIf(!haveRedis())('a cluster of queue servers over Redis', () => {
  let web: TestWeb;
  let redis: TestRedis;
  let seedUrl: string;
  let expected: Map<string, number>;
  let tokenFile: string;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 6, pagesPerHost: 12 });
    seedUrl = `${web.origins[0]}/index.html`;
    expected = web.model.reachable({ seeds: [seedUrl], inScope: () => true, maxDepth: MAX_DEPTH });
    tokenFile = fleetTokenFile('cluster');
  });

  afterAll(async () => {
    killStartedPetrels();
    await closeStartedRedis();
    await web?.close();
  });

  const serverArgs = (dataDir: string, port: number, first: boolean) => [
    'queue-server', '--data', dataDir, '--port', String(port), '--token-file', tokenFile, '--cluster', redis.url, ...(first ? ['--partitions', String(PARTITIONS)] : []),
    '--seed', seedUrl, '--scope', 'any', '--max-depth', String(MAX_DEPTH), '--delay-ms', String(DELAY_MS), '--lease-ms', '3000',
  ];
  const fetcherArgs = (name: string) => ['fetcher', '--cluster', redis.url, '--token-file', tokenFile, '--name', name, '--concurrency', '3', '--claim-wait-ms', '1000', '--allow-private-addresses'];

  it('three queue servers and three fetchers fetch every reachable page exactly once, each by the owner of its host\'s partition, robots.txt first and per-host politeness held although links cross partitions; pause and resume given to one member reach the others; GET /api/cluster sums the crawl', async () => {
    redis = await startRedis(tempDir('redis'));
    // Both partitions have hosts, and the seed's partition is only one of them: the rest comes over Redis.
    const partitionsOfHosts = new Set(web.origins.slice(0, 6).map((host) => partitionOfUrl(host, PARTITIONS)));
    expect(partitionsOfHosts.size).toBe(PARTITIONS);
    const dirs = Array.from({ length: PARTITIONS }, () => join(tempDir('member'), 'data'));
    const servers = [];
    const listening = [];
    // One after the other: the first fixes K, each next one takes a free partition.
    for (const [i, dir] of dirs.entries()) {
      servers.push(startPetrel(serverArgs(dir, await freePort(), i === 0)));
      listening.push(await waitForEvent(servers[i]!, 'listening'));
    }
    const urls = listening.map((event) => String(event.url));
    const tokens = listening.map(adminTokenOf);

    // Pause given to one member pauses the others; resume given to the last resumes the first.
    await control(urls[0]!, tokens[0]!, 'pause');
    for (const i of [1, 2]) await eventually(() => readStatus(urls[i]!, tokens[i]!), (status) => status.displayState === 'paused', `member ${i} paused`);
    await control(urls[2]!, tokens[2]!, 'resume');
    for (const i of [0, 1]) await eventually(() => readStatus(urls[i]!, tokens[i]!), (status) => status.displayState !== 'paused', `member ${i} resumed`);

    const fetchers = ['f1', 'f2', 'f3'].map((name) => startPetrel(fetcherArgs(name)));
    await untilCrawled(web, expected, 90_000);

    // Any member shows the whole cluster; its sum of pages fetched is what the web servers saw.
    const pages = pageRequests(web.log).length;
    const view = await eventually(() => readCluster(urls[1]!, tokens[1]!), (v) => v.sum.pagesFetched === pages, 'the cluster view to sum up the crawl');
    expect(view.partitions).toBe(PARTITIONS);
    expect(view.members.map((member) => member.owner?.url).sort()).toEqual([...urls].sort());
    expect(view.sum.backlog).toBe(0);
    expect(view.sum.linksForwarded).toBeGreaterThan(0);
    console.log(`cluster crawl test: ${pages} pages; cluster sum ${JSON.stringify(view.sum)}`);
    const outputs = await stopInOrder([fetchers, servers]);
    for (const output of outputs) expect(output.code, output.stderr).toBe(0);

    const requested = countBy(pageRequests(web.log), urlOf);
    expect([...expected.keys()].filter((url) => !requested.has(url))).toEqual([]);
    expect([...requested.keys()].filter((url) => !expected.has(url))).toEqual([]);
    expect([...requested].filter(([, count]) => count !== 1)).toEqual([]);
    // robots.txt once per host, across the cluster, and answered before the host's first page was asked for.
    const robots = countBy(web.log.filter((entry) => entry.path === '/robots.txt'), (entry) => entry.host);
    expect([...robots].filter(([, count]) => count !== 1)).toEqual([]);
    const hostsCrawled = new Set(web.log.map((entry) => entry.host));
    expect(robots.size).toBe(hostsCrawled.size);
    const robotsAnswered = new Map(web.log.filter((entry) => entry.path === '/robots.txt').map((entry) => [entry.host, entry.handedOver]));
    expect(pageRequests(web.log).filter((entry) => entry.start < robotsAnswered.get(entry.host)!).map(urlOf)).toEqual([]);
    // Per-host politeness: one request at a time and the delay between them, though the links that led
    // to a host came from other partitions' pages.
    expect(politenessViolations(web.log, () => DELAY_MS - MEASUREMENT_LAG_MS)).toEqual([]);

    // Each server's crawl database holds exactly its partition's pages, and together all of them.
    const byServer = dirs.map((dir) => ({ partition: partitionOfDir(dir), urls: fetchedUrls(dir) }));
    expect(new Set(byServer.map((server) => server.partition)).size).toBe(PARTITIONS);
    for (const server of byServer) {
      expect(server.urls.length).toBeGreaterThan(0);
      expect(server.urls.filter((url) => partitionOfUrl(url, PARTITIONS) !== server.partition)).toEqual([]);
    }
    expect(byServer.flatMap((server) => server.urls).sort()).toEqual([...expected.keys()].sort());
  }, 150_000);

  it('loses nothing when the receiving queue server and then Redis are killed with SIGKILL mid-crawl and restarted', async () => {
    redis = await startRedis(tempDir('redis'));
    const web2 = await startTestWeb({ profile: 'bench', hosts: 6, pagesPerHost: 24 });
    try {
      const seed = `${web2.origins[0]}/index.html`;
      const reachable = web2.model.reachable({ seeds: [seed], inScope: () => true, maxDepth: MAX_DEPTH });
      const seedPartition = partitionOfUrl(seed, KILL_PARTITIONS);
      const other = 1 - seedPartition;
      const args = (dataDir: string, port: number, partition: number) => [
        'queue-server', '--data', dataDir, '--port', String(port), '--token-file', tokenFile, '--cluster', redis.url, '--partitions', String(KILL_PARTITIONS), '--partition', String(partition),
        '--seed', seed, '--scope', 'any', '--max-depth', String(MAX_DEPTH), '--delay-ms', '150', '--lease-ms', '3000',
      ];
      const dirA = join(tempDir('member'), 'data');
      const dirB = join(tempDir('member'), 'data');
      const portB = await stablePort();
      const a = startPetrel(args(dirA, await freePort(), seedPartition));
      const listeningA = await waitForEvent(a, 'listening');
      let b = startPetrel(args(dirB, portB, other));
      await waitForEvent(b, 'listening');
      const fetchers = ['k1', 'k2'].map((name) => startPetrel(fetcherArgs(name)));
      const requestsOf = (partition: number) => pageRequests(web2.log).filter((entry) => partitionOfUrl(urlOf(entry), KILL_PARTITIONS) === partition).length;

      // The receiving server dies once it crawls: links for its hosts keep coming from the other one.
      while (requestsOf(other) < 3) await new Promise((resolve) => setTimeout(resolve, 50));
      b.kill('SIGKILL');
      await b.output;
      const seedSideBefore = requestsOf(seedPartition);
      const probe = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null });
      probe.on('error', () => undefined);
      let backlog = 0;
      for (let i = 0; i < 40 && (backlog === 0 || requestsOf(seedPartition) === seedSideBefore); i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        backlog = await probe.xlen(clusterKeys('default').links(other));
      }
      // Meanwhile the other partition kept crawling, and the dead one's links waited in its stream.
      expect(requestsOf(seedPartition)).toBeGreaterThan(seedSideBefore);
      expect(backlog).toBeGreaterThan(0);
      b = startPetrel(args(dirB, portB, other));
      await waitForEvent(b, 'listening');

      // Redis itself dies mid-crawl and comes back from its append-only file.
      const before = pageRequests(web2.log).length;
      while (pageRequests(web2.log).length < before + 5) await new Promise((resolve) => setTimeout(resolve, 50));
      await redis.kill();
      await new Promise((resolve) => setTimeout(resolve, 500));
      await redis.restart();

      try {
        await untilCrawled(web2, reachable, 120_000);
      } catch (error) {
        // What the members said is the first thing to read when the crawl stalls.
        for (const child of [a, b, ...fetchers]) child.kill('SIGKILL');
        const said = await Promise.all([a, b, ...fetchers].map((child) => child.output));
        throw new Error(`${(error as Error).message}\n${said.map((out, i) => `--- child ${i}:\n${out.stderr.slice(-3000)}`).join('\n')}`);
      }
      // Requested is not yet applied: a result may still be on its way, or its URL back from a lease
      // that died with a server (--lease-ms 3000, longer than untilCrawled's quiet time). Stop only
      // once the cluster has nothing queued, leased or waiting in a stream.
      await eventually(() => readCluster(String(listeningA.url), adminTokenOf(listeningA)), (v) => v.sum.frontierSize === 0 && v.sum.itemsLeased === 0 && v.sum.backlog === 0, 'the cluster to hold nothing queued, leased or forwarded', 60_000).catch(async (error: Error) => {
        // A backlog that stays: what the streams and their consumer groups hold, and what the members said.
        const streams = await Promise.all([0, 1].map(async (partition) => {
          const key = clusterKeys('default').links(partition);
          const [groups, entries] = await Promise.all([probe.xinfo('GROUPS', key).catch((e: Error) => e.message), probe.xrange(key, '-', '+', 'COUNT', 5).catch((e: Error) => e.message)]);
          return `partition ${partition}: groups ${JSON.stringify(groups)}; first entries ${JSON.stringify(entries).slice(0, 600)}`;
        }));
        for (const child of [a, b, ...fetchers]) child.kill('SIGKILL');
        const said = await Promise.all([a, b, ...fetchers].map((child) => child.output));
        throw new Error(`${error.message}\n${streams.join('\n')}\n${said.map((out, i) => `--- child ${i}:\n${out.stderr.slice(-2000)}`).join('\n')}`);
      });
      probe.disconnect();
      const outputs = await stopInOrder([fetchers, [a, b]]);
      for (const output of outputs) expect(output.code, output.stderr).toBe(0);

      const requested = countBy(pageRequests(web2.log), urlOf);
      expect([...reachable.keys()].filter((url) => !requested.has(url))).toEqual([]);
      expect([...requested.keys()].filter((url) => !reachable.has(url))).toEqual([]);
      const fetchedA = fetchedUrls(dirA);
      const fetchedB = fetchedUrls(dirB);
      expect(fetchedA.filter((url) => partitionOfUrl(url, KILL_PARTITIONS) !== seedPartition)).toEqual([]);
      expect(fetchedB.filter((url) => partitionOfUrl(url, KILL_PARTITIONS) !== other)).toEqual([]);
      expect([...fetchedA, ...fetchedB].sort()).toEqual([...reachable.keys()].sort());
      const repeats = [...requested].filter(([, count]) => count > 1).length;
      console.log(`cluster kill test: ${reachable.size} pages, ${repeats} fetched again (leases the killed server held), backlog while it was down ${backlog} entries`);
    } finally {
      await web2.close();
    }
  }, 200_000);
});
