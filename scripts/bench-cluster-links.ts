/**
 * bench-cluster-links: what one forwarded link costs Redis, isolated from the crawl around it. The
 * product's own link router (with the shared Bloom filter) forwards links found at partition 0 for
 * the hosts of partition 1 through a real redis-server (AOF, appendfsync always); the product's own
 * link inbox reads them as partition 1's owner, "admits" them (every one new), sets their Bloom bits
 * after a commit that costs nothing, and acknowledges them. Two passes over the same URLs:
 *   - new: every link misses the filter, so it costs a probe, a share of an XADD, XREADGROUP, XACK and
 *     XDEL, and the owner's 20 bit sets;
 *   - known: every link hits the filter, so it costs a probe of all 20 bits and is not sent.
 * For each pass: Redis CPU (/proc), commands and bytes received (INFO), and this process's CPU (the
 * sending and receiving queue servers' share, router and inbox only), per link. A benchmark, not a
 * test. The URLs are strings only: nothing is fetched, every connection is to 127.0.0.1.
 *
 *   npm run build && node dist/scripts/bench-cluster-links.js [--links 200000] [--links-per-drain 1000] [--json]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ClusterBloom } from '../queue-server/cluster/cluster-bloom.js';
import { ClusterLinkRouter } from '../queue-server/cluster/link-router.js';
import { LinkInbox } from '../queue-server/cluster/link-inbox.js';
import { partitionOfUrl } from '../queue-server/cluster/partition.js';
import { clusterKeys } from '../shared/cluster-keys.js';
import type { NormalizedUrl } from '../shared/url-normalize.js';
import { cpuOf } from './bench-queue-server/proc.js';
import { intOption } from './bench-queue-server/int-option.js';
import { infoField, startRedis } from './bench-cluster/redis-process.js';

const USAGE = `Usage: node dist/scripts/bench-cluster-links.js [options]

Forwards links from one cluster partition to another through a real redis-server with Petrel's link
router, shared Bloom filter and link inbox, and prints what each link costs Redis (CPU, commands,
bytes) and the queue servers' code, for new links and for links the filter already knows.

Options:
  --links N             links per pass (default 200000)
  --links-per-drain N   links routed between two drains, as one group commit's worth (default 1000)
  --expected-urls N     the Bloom filter's capacity (default 1000000, the queue server's default)
  --json                print the figures as JSON
`;

interface PassFigures {
  pass: 'new' | 'known';
  links: number;
  seconds: number;
  linksPerSecond: number;
  redisCpuUsPerLink: number;
  processCpuUsPerLink: number;
  redisCommandsPerLink: number;
  redisBytesInPerLink: number;
  forwarded: number;
  bloomSkipped: number;
}

function redisCpuMs(pid: number): number {
  const cpu = cpuOf(pid);
  return cpu === null ? 0 : cpu.user + cpu.system;
}

/** `count` distinct URLs, with realistic shapes, of hosts in partition `partition` of `partitions`. */
function urlsOf(partition: number, partitions: number, count: number): NormalizedUrl[] {
  const urls: NormalizedUrl[] = [];
  for (let host = 0; urls.length < count; host++) {
    const origin = `https://www.site-${host}.example.org`;
    if (partitionOfUrl(origin, partitions) !== partition) continue;
    for (let page = 0; page < 50 && urls.length < count; page++) urls.push(`${origin}/articles/2026/${host % 97}/story-${page}-about-something.html` as NormalizedUrl);
  }
  return urls;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      links: { type: 'string' },
      'links-per-drain': { type: 'string' },
      'expected-urls': { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const links = intOption('links', values.links ?? '200000', 1000, 10_000_000);
  const perDrain = intOption('links-per-drain', values['links-per-drain'] ?? '1000', 1, 100_000);
  const capacity = intOption('expected-urls', values['expected-urls'] ?? '1000000', 1000, 1_000_000_000);
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-links-'));
  const redis = await startRedis(dir);
  const connect = () => {
    const connection = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null });
    connection.on('error', () => undefined);
    return connection;
  };
  const sender = connect();
  const reader = connect();
  const probe = connect();
  const keys = clusterKeys('bench');
  const bloom = new ClusterBloom(sender, keys, capacity);
  const router = new ClusterLinkRouter({ redis: sender, keys, partition: 0, partitions: 2, bloom });
  let received = 0;
  let wake: (() => void) | null = null;
  const inbox = new LinkInbox({
    redis: reader,
    keys,
    partition: 1,
    admit: (batch) => ({ admitted: batch.length, known: batch.map(([url]) => url) }),
    committed: async () => undefined,
    afterCommit: async (known) => {
      await bloom.add(1, known);
      received += known.length;
      wake?.();
    },
    log: (message) => process.stderr.write(`${message}\n`),
  });
  const urls = urlsOf(1, 2, links);
  const passes: PassFigures[] = [];
  try {
    await inbox.start();
    for (const pass of ['new', 'known'] as const) {
      const receivedBefore = received;
      const forwardedBefore = router.counters.forwarded;
      const skippedBefore = router.counters.bloomSkipped;
      await probe.config('RESETSTAT');
      const redisCpu0 = redisCpuMs(redis.child.pid!);
      const cpu0 = process.cpuUsage();
      const start = performance.now();
      for (let at = 0; at < urls.length; at += perDrain) {
        for (const url of urls.slice(at, at + perDrain)) router.forward(url, 1, 0);
        await router.drain();
      }
      const forwarded = router.counters.forwarded - forwardedBefore;
      // Every forwarded link read, admitted, its bits set and its entry acknowledged.
      while (received - receivedBefore < forwarded) await new Promise<void>((resolve) => (wake = resolve));
      const seconds = (performance.now() - start) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const redisCpu = redisCpuMs(redis.child.pid!) - redisCpu0;
      const info = await probe.info('stats');
      passes.push({
        pass,
        links: urls.length,
        seconds,
        linksPerSecond: urls.length / seconds,
        redisCpuUsPerLink: (redisCpu * 1000) / urls.length,
        processCpuUsPerLink: (cpu.user + cpu.system) / urls.length,
        // The INFO call itself is one command: not the links'.
        redisCommandsPerLink: (infoField(info, 'total_commands_processed') - 1) / urls.length,
        redisBytesInPerLink: infoField(info, 'total_net_input_bytes') / urls.length,
        forwarded,
        bloomSkipped: router.counters.bloomSkipped - skippedBefore,
      });
    }
  } finally {
    router.close();
    await inbox.stop();
    sender.disconnect();
    probe.disconnect();
    redis.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  const header = { links, linksPerDrain: perDrain, expectedUrls: capacity, bloomProbes: bloom.probes, loadAverage: loadavg()[0]! };
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...header, passes }, null, 2)}\n`);
    return;
  }
  const lines = [
    `bench-cluster-links: ${links} links a pass, drained every ${perDrain}, Bloom filter for ${capacity} URLs (${bloom.probes} probes), load ${header.loadAverage.toFixed(1)}`,
    '| pass | links/s | Redis CPU µs/link | router + inbox CPU µs/link | Redis commands/link | Redis bytes in/link | forwarded | kept back by the filter |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...passes.map((p) => `| ${p.pass} | ${p.linksPerSecond.toFixed(0)} | ${p.redisCpuUsPerLink.toFixed(1)} | ${p.processCpuUsPerLink.toFixed(1)} | ${p.redisCommandsPerLink.toFixed(2)} | ${p.redisBytesInPerLink.toFixed(0)} | ${p.forwarded} | ${p.bloomSkipped} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench-cluster-links: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
