/**
 * Petrel's cluster on a sharded Redis: a real Redis Cluster of three primaries on loopback
 * (`redis-cli --cluster create`), three queue servers and two fetchers given one node's address with
 * `--redis-cluster`. Each partition's stream and Bloom filter live in their own hash slot, so they
 * spread over the nodes; the crawl is the same as on one Redis: every reachable page once, by its
 * partition's owner. And a cluster made under the key names before hash tags, on one Redis, keeps
 * its backlog: the first member renames the old keys.
 */
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { clusterKeys, legacyClusterKeys } from '../../shared/cluster-keys.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { adminTokenOf } from '../support/admin-api.js';
import { closeStartedRedis, haveRedis, startRedis, startRedisCluster } from '../support/redis-server.js';
import { eventually, fetchedUrls, readCluster, untilCrawled, fleetTokenFile } from '../support/cluster.js';

const PARTITIONS = 3;
const MAX_DEPTH = 5;

describe.skipIf(!haveRedis())('a cluster of queue servers over a sharded Redis (Redis Cluster)', () => {
  let web: TestWeb;
  let tokenFile: string;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 6, pagesPerHost: 12 });
    tokenFile = fleetTokenFile('sharded');
  });

  afterAll(async () => {
    killStartedPetrels();
    await closeStartedRedis();
    await web?.close();
  });

  it('three queue servers and two fetchers given one node of a three-node Redis Cluster crawl every reachable page once, the partitions\' keys spread over the nodes', async () => {
    const redis = await startRedisCluster(tempDir('redis-cluster'));
    const seed = `${web.origins[0]}/index.html`;
    const expected = web.model.reachable({ seeds: [seed], inScope: () => true, maxDepth: MAX_DEPTH });
    const dirs = Array.from({ length: PARTITIONS }, () => join(tempDir('member'), 'data'));
    const urls: string[] = [];
    const tokens: string[] = [];
    for (const [i, dir] of dirs.entries()) {
      const server = startPetrel([
        'queue-server', '--data', dir, '--port', String(await freePort()), '--token-file', tokenFile, '--cluster', redis.url, '--redis-cluster',
        ...(i === 0 ? ['--partitions', String(PARTITIONS)] : []), '--seed', seed, '--scope', 'any', '--max-depth', String(MAX_DEPTH), '--delay-ms', '20', '--lease-ms', '3000',
      ]);
      const listening = await waitForEvent(server, 'listening');
      urls.push(String(listening.url));
      tokens.push(adminTokenOf(listening));
    }
    for (const name of ['s1', 's2']) startPetrel(['fetcher', '--cluster', redis.url, '--redis-cluster', '--token-file', tokenFile, '--name', name, '--concurrency', '3', '--claim-wait-ms', '1000', '--allow-private-addresses']);
    await untilCrawled(web, expected, 90_000);
    const pages = pageRequests(web.log).length;
    const view = await eventually(() => readCluster(urls[2]!, tokens[2]!), (v) => v.sum.pagesFetched === pages && v.sum.backlog === 0, 'the cluster view to sum up the crawl');
    expect(view.members.map((member) => member.owner?.url).sort()).toEqual([...urls].sort());
    expect(view.sum.linksForwarded).toBeGreaterThan(0);

    // Where the keys are: each partition's stream and Bloom filter in one slot, not all on one node.
    const keys = clusterKeys('default');
    const node = new Redis({ host: '127.0.0.1', port: redis.nodes[0]!.port, maxRetriesPerRequest: null });
    const slotOwner = async (key: string) => {
      const slot = (await node.call('CLUSTER', 'KEYSLOT', key)) as number;
      const ranges = (await node.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
      return ranges.find(([from, to]) => slot >= from && slot <= to)![2][1];
    };
    const owners = await Promise.all(Array.from({ length: PARTITIONS }, (_, i) => slotOwner(keys.links(i))));
    for (let i = 0; i < PARTITIONS; i++) expect(await slotOwner(keys.bloom(i))).toBe(owners[i]);
    expect(new Set(owners).size).toBeGreaterThan(1);
    node.disconnect();

    const requested = countBy(pageRequests(web.log), urlOf);
    expect([...expected.keys()].filter((url) => !requested.has(url))).toEqual([]);
    expect([...requested].filter(([, count]) => count !== 1)).toEqual([]);
    killStartedPetrels();
    const byServer = dirs.map(fetchedUrls);
    expect(byServer.flat().sort()).toEqual([...expected.keys()].sort());
    for (const list of byServer) expect(new Set(list.map((url) => partitionOfUrl(url, PARTITIONS))).size).toBe(1);
  }, 150_000);

  it('a member finding a cluster under the old key names renames them once: K, the control and each partition\'s backlog with its consumer group', async () => {
    const redis = await startRedis(tempDir('redis'));
    const probe = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null });
    const legacy = legacyClusterKeys('default');
    const keys = clusterKeys('default');
    await probe.hset(legacy.meta, 'partitions', '2');
    await probe.hset(legacy.control, 'state', 'active', 'version', '1');
    await probe.xgroup('CREATE', legacy.links(1), 'owner', '0', 'MKSTREAM');
    const waiting = `${web.origins[1]}/page-waiting.html`;
    await probe.xadd(legacy.links(1), '*', 'from', '0', 'links', JSON.stringify([[waiting, 1, 0]]));
    await probe.setbit(legacy.bloom(1), 7, 1);
    const server = startPetrel(['queue-server', '--data', join(tempDir('member'), 'data'), '--port', '0', '--token-file', tokenFile, '--cluster', redis.url, '--partition', '0']);
    const listening = await waitForEvent(server, 'listening');
    expect(await probe.exists(legacy.meta, legacy.control, legacy.links(1), legacy.bloom(1))).toBe(0);
    expect(await probe.hget(keys.meta, 'partitions')).toBe('2');
    expect(await probe.getbit(keys.bloom(1), 7)).toBe(1);
    // Partition 1 has no owner: its backlog waits under the new name, in its group, as before.
    expect(await probe.xlen(keys.links(1))).toBe(1);
    const groups = (await probe.xinfo('GROUPS', keys.links(1))) as unknown[][];
    expect(groups.map((group) => group[1])).toEqual(['owner']);
    const view = await readCluster(String(listening.url), adminTokenOf(listening));
    expect(view.partitions).toBe(2);
    expect(view.members[1]!.backlog).toBe(1);
    probe.disconnect();
  }, 60_000);
});
