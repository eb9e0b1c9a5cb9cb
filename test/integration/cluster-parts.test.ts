/**
 * The cluster's parts against a real redis-server on loopback (started here): partition leases,
 * the inbox's acknowledgement after the commit, the router's outbox when Redis is away, the Bloom
 * filter. Process-level behaviour is in cluster-crawl.test.ts.
 */
import { join } from 'node:path';
import { connect, createServer } from 'node:net';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeStartedRedis, haveRedis, startRedis, type TestRedis } from '../support/redis-server.js';
import { tempDir } from '../support/petrel-process.js';
import { Membership } from '../../queue-server/cluster/membership.js';
import { LinkInbox } from '../../queue-server/cluster/link-inbox.js';
import { ClusterLinkRouter, type ForwardedLink } from '../../queue-server/cluster/link-router.js';
import { ClusterBloom } from '../../queue-server/cluster/cluster-bloom.js';
import { clusterKeys, LINKS_GROUP } from '../../shared/cluster-keys.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { ClusterEvents } from '../../queue-server/cluster/cluster-events.js';
import { ClusterControl } from '../../queue-server/cluster/cluster-control.js';
import { ClusterDirectory } from '../../fetcher/cluster-directory.js';
import { ServerPool } from '../../fetcher/server-pool.js';
import type { FetcherEnd } from '../../fetcher/fetcher.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';

const until = async (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** A host name of `partition` (of K), found by trying. */
function hostOf(partition: number, partitions: number): string {
  for (let i = 0; ; i++) if (partitionOfUrl(`http://h${i}.example/`, partitions) === partition) return `h${i}.example`;
}

describe.skipIf(!haveRedis())('cluster parts on a real Redis', () => {
  let server: TestRedis;
  let redis: Redis;
  const clients: Redis[] = [];
  const client = () => {
    const made = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: null, retryStrategy: () => 50 });
    made.on('error', () => undefined);
    clients.push(made);
    return made;
  };

  beforeAll(async () => {
    server = await startRedis(tempDir('redis'));
    redis = client();
  });

  afterAll(async () => {
    for (const made of clients) made.disconnect();
    await closeStartedRedis();
  });

  it('leases: the first member fixes K, each new member takes a free partition, a full cluster refuses, a restart on the same directory takes its own back', async () => {
    const name = 'leases';
    const join_ = (dir: string, partitions: number | null, partition: number | null = null) =>
      Membership.join({ redis, clusterName: name, url: 'http://127.0.0.1:1', partitions, partition, file: join(dir, 'cluster.json'), leaseMs: 60_000, clock: Date.now });
    const [d1, d2, d3, d4] = [tempDir('m'), tempDir('m'), tempDir('m'), tempDir('m')];
    await expect(join_(d1, null)).rejects.toThrow(/first member gives --partitions/);
    const one = await join_(d1, 2);
    const two = await join_(d2, null);
    expect([one.partition, two.partition]).toEqual([0, 1]);
    await expect(join_(d3, null)).rejects.toMatchObject({ code: 'cluster-no-free-partition' });
    await expect(join_(d3, 3)).rejects.toMatchObject({ code: 'cluster-partitions' });
    await expect(join_(d4, null, 1)).rejects.toMatchObject({ code: 'cluster-partition-held' });
    // As after kill -9: the lease still runs, and the same data directory takes it back at once.
    const again = await join_(d2, null);
    expect(again.partition).toBe(1);
    expect(again.memberId).toBe(two.memberId);
    // A directory that owned partition 1 is not moved to another.
    await expect(join_(d2, null, 0)).rejects.toMatchObject({ code: 'cluster-data-dir' });
    await again.leave();
    expect(await redis.get(clusterKeys(name).lease(1))).toBeNull();
    const three = await join_(d3, null);
    expect(three.partition).toBe(1);
    await one.leave();
    await three.leave();
    // A directory of this 2-partition cluster, given --partitions 3 for a new cluster, is refused before
    // it writes K there: the new cluster's first good member fixes it.
    const other = (partitions: number | null, dir: string) =>
      Membership.join({ redis, clusterName: 'leases-other', url: 'http://127.0.0.1:1', partitions, partition: null, file: join(dir, 'cluster.json'), leaseMs: 60_000, clock: Date.now });
    await expect(other(3, d1)).rejects.toMatchObject({ code: 'cluster-data-dir', name: 'ClusterError' });
    expect(await redis.hget(clusterKeys('leases-other').meta, 'partitions')).toBeNull();
    const fresh = await other(2, tempDir('m'));
    expect(fresh.partitions).toBe(2);
    await fresh.leave();
  });

  it('a member that cannot renew its lease for a whole lease time says it lost the partition', async () => {
    const name = 'lost';
    const member = await Membership.join({ redis: client(), clusterName: name, url: 'http://127.0.0.1:1', partitions: 1, partition: null, file: join(tempDir('m'), 'cluster.json'), leaseMs: 300, clock: Date.now });
    const lost = new Promise<string>((resolve) => member.once('lost', resolve));
    // Someone else holds it now (as after a stall longer than the lease).
    await redis.set(clusterKeys(name).lease(0), 'intruder', 'PX', 10_000);
    expect(await lost).toMatch(/held by another member/);
    await member.leave();
  });

  it('the inbox acknowledges stream entries only after the commit succeeded; what a failed commit read is read again', async () => {
    const keys = clusterKeys('inbox');
    const stream = keys.links(0);
    await redis.xadd(stream, '*', 'from', '1', 'links', JSON.stringify([['http://a.example/1', 1, 0], ['http://a.example/2', 1, 0]]));
    await redis.xadd(stream, '*', 'from', '1', 'links', 'not json');
    const admitted: ForwardedLink[] = [];
    let commitFails = true;
    const inbox = new LinkInbox({
      redis: client(),
      keys,
      partition: 0,
      admit: (links) => {
        admitted.push(...links);
        return { admitted: links.length, known: links.map(([url]) => url) };
      },
      committed: () => (commitFails ? Promise.reject(new Error('disk full')) : Promise.resolve()),
      log: () => undefined,
    });
    await inbox.start();
    await until(() => admitted.length >= 2, 'the first read');
    // The commit failed: nothing acknowledged, both entries still in the stream and pending.
    expect(inbox.counters.acked).toBe(0);
    expect(await redis.xlen(stream)).toBe(2);
    const pending = (await redis.xpending(stream, LINKS_GROUP)) as [number, ...unknown[]];
    expect(pending[0]).toBe(2);
    commitFails = false;
    await until(() => inbox.counters.acked === 2, 'the acknowledgement');
    // Read again after the failure, acknowledged and deleted once committed; the malformed entry too.
    expect(admitted.filter(([url]) => url === 'http://a.example/1').length).toBeGreaterThanOrEqual(2);
    expect(inbox.counters.malformed).toBeGreaterThanOrEqual(1);
    expect(await redis.xlen(stream)).toBe(0);
    await inbox.stop();
  });

  it('the inbox reads its pending list again after a reconnect: an entry whose read reply was lost is admitted and acknowledged', async () => {
    // Between the inbox and Redis, a proxy that once drops the connection in place of passing on the
    // reply of a `>` read that handed out entries (as a Redis killed after handing them out, or a
    // connection reset): Redis has the entry pending, the inbox never saw it, and ioredis sends the read again.
    let armed = true;
    let dropped = 0;
    const proxy = createServer((inbound) => {
      const outbound = connect(server.port, '127.0.0.1');
      let lastCommand = '';
      inbound.on('data', (chunk) => {
        lastCommand = chunk.toString('latin1');
        outbound.write(chunk);
      });
      outbound.on('data', (chunk) => {
        const reply = chunk.toString('latin1');
        if (armed && /XREADGROUP/i.test(lastCommand) && lastCommand.includes('\r\n>\r\n') && (reply.startsWith('*1\r\n') || reply.startsWith('%1\r\n'))) {
          armed = false;
          dropped++;
          inbound.destroy();
          outbound.destroy();
          return;
        }
        inbound.write(chunk);
      });
      for (const socket of [inbound, outbound]) socket.on('error', () => undefined);
      inbound.on('close', () => outbound.destroy());
      outbound.on('close', () => inbound.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const reader = new Redis({ host: '127.0.0.1', port: (proxy.address() as { port: number }).port, maxRetriesPerRequest: null, retryStrategy: () => 50 });
    reader.on('error', () => undefined);
    const keys = clusterKeys('lost-reply');
    const stream = keys.links(0);
    const admitted: string[] = [];
    const inbox = new LinkInbox({
      redis: reader,
      keys,
      partition: 0,
      admit: (links) => {
        admitted.push(...links.map(([url]) => url));
        return { admitted: links.length, known: links.map(([url]) => url) };
      },
      committed: () => Promise.resolve(),
      log: () => undefined,
    });
    try {
      await inbox.start();
      // Let the inbox read its (empty) pending list and block on `>`.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await redis.xadd(stream, '*', 'from', '1', 'links', JSON.stringify([['http://lost.example/only-here', 1, 0]]));
      await until(() => dropped === 1, 'the dropped reply');
      // Well within the periodic pending read (10 s): the reconnect makes the next read the pending list's.
      await until(async () => admitted.includes('http://lost.example/only-here') && (await redis.xlen(stream)) === 0, 'the lost entry admitted and acknowledged', 5_000);
      const pending = (await redis.xpending(stream, LINKS_GROUP)) as [number, ...unknown[]];
      expect(pending[0]).toBe(0);
    } finally {
      await inbox.stop();
      reader.disconnect();
      proxy.close();
    }
  });

  it('the router keeps its links when Redis is away and sends them once it is back', async () => {
    const keys = clusterKeys('router');
    const own = client();
    const router = new ClusterLinkRouter({ redis: own, keys, partition: 0, partitions: 2 });
    const url = `http://${hostOf(1, 2)}/page` as NormalizedUrl;
    expect(router.forward(`http://${hostOf(0, 2)}/mine` as NormalizedUrl, 1, 0)).toBe(false);
    expect(router.forward(url, 3, 0.25)).toBe(true);
    await server.kill();
    await expect(router.drain()).rejects.toThrow();
    expect(router.waiting).toBe(1);
    await server.restart();
    await router.drain();
    expect(router.waiting).toBe(0);
    const entries = (await redis.xrange(keys.links(1), '-', '+')) as [string, string[]][];
    expect(entries.flatMap(([, fields]) => JSON.parse(fields[fields.indexOf('links') + 1]!) as ForwardedLink[])).toContainEqual([url, 3, 0.25]);
    router.close();
  }, 30_000);

  it('the Bloom filter: a URL its owner added is not forwarded again, and the skip is counted', async () => {
    const keys = clusterKeys('bloom');
    const bloom = new ClusterBloom(redis, keys, 10_000);
    const router = new ClusterLinkRouter({ redis, keys, partition: 0, partitions: 2, bloom });
    const host = hostOf(1, 2);
    const known = `http://${host}/known`;
    await bloom.add(1, [known]);
    const probe = await bloom.knownOf(new Map([[1, [[known, 1, 0], [`http://${host}/new`, 1, 0]] as ForwardedLink[]]]));
    expect(probe.get(1)).toEqual([true, false]);
    router.forward(known as NormalizedUrl, 1, 0);
    router.forward(`http://${host}/new` as NormalizedUrl, 1, 0);
    await router.drain();
    expect(router.counters).toMatchObject({ routed: 2, forwarded: 1, bloomSkipped: 1 });
    router.close();
  });

  it('a member joining is served by a fetcher pool at once through the events channel, long before its fallback poll', async () => {
    const name = 'events-join';
    const own = client();
    const seen: string[] = [];
    // Stands for a fetcher's claim loop: the pool under test only decides whom to serve.
    const makeFetcher = (url: string) => {
      seen.push(url);
      let end: (value: FetcherEnd) => void = () => undefined;
      const ended = new Promise<FetcherEnd>((resolve) => (end = resolve));
      return { run: () => ended, stop: () => end('stopped'), abort: () => end('stopped') };
    };
    const directory = new ClusterDirectory(own, name);
    const said: string[] = [];
    const pool = new ServerPool({ discover: () => directory.servers(), pollMs: 600_000, makeFetcher, log: (line) => said.push(line) });
    const events = ClusterEvents.listen(own, clusterKeys(name), (event) => event === 'member' && pool.lookUpNow());
    const running = pool.run();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([]);
    // A fetcher started before any member says why it does nothing yet.
    expect(said).toEqual(['no queue server in the cluster yet: waiting for one to join']);
    const member = await Membership.join({ redis, clusterName: name, url: 'http://127.0.0.1:7777', partitions: 1, partition: null, file: join(tempDir('m'), 'cluster.json'), leaseMs: 60_000, clock: Date.now });
    // The fallback poll is 10 minutes away: only the member's announcement can explain this.
    await until(() => seen.includes('http://127.0.0.1:7777'), 'the pool to serve the new member', 20_000);
    pool.stop();
    await running;
    events.close();
    await member.leave();
  });

  it('a control published by one member is applied by another at once through the events channel, long before its fallback poll', async () => {
    const name = 'events-control';
    const keys = clusterKeys(name);
    const applied: string[] = [];
    const target = { pause: () => applied.push('pause'), resume: () => applied.push('resume'), stop: () => applied.push('stop'), crawl: async () => applied.push('crawl') };
    const follower = new ClusterControl(client(), keys, 'follower', Date.now, 600_000);
    await follower.follow(target, () => undefined);
    const events = ClusterEvents.listen(client(), keys, (event) => event === 'control' && void follower.poll());
    await new Promise((resolve) => setTimeout(resolve, 300));
    const leader = new ClusterControl(client(), keys, 'leader', Date.now, 600_000);
    await leader.publish('pause', 'leader');
    await until(() => applied.includes('pause'), 'the follower to pause', 20_000);
    await leader.publishCrawl({ seeds: ['http://127.0.0.1:1/'] }, 'leader');
    await until(() => applied.includes('crawl'), 'the follower to start the crawl', 20_000);
    expect(applied).toEqual(['pause', 'crawl']);
    follower.close();
    events.close();
  });
});
