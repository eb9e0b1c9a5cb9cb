/**
 * bench-cluster: a cluster's throughput with 1 and with 2 (or more) queue servers on this machine, in
 * one run, as ratios. A benchmark, not a test: it proves nothing by passing; read the figures.
 *
 * Each configuration gets a fresh real redis-server on loopback (AOF, appendfsync always: the
 * persistence the cluster's guarantee needs, README "Cluster"), a fresh test web (profile 'bench',
 * in this process, on 127.0.0.x), N real `petrel queue-server --cluster` processes owning one
 * partition each (K = N) and N real `petrel fetcher --cluster` processes, all seeded with every
 * host's /index.html; it runs until every reachable page was requested and the cluster holds nothing
 * queued, leased or forwarded. Measured:
 *   - pages/s: pages the test web answered, over the time from the first request to the last;
 *   - CPU ms per page of each process kind (queue servers, fetchers, redis-server together), from
 *     /proc/PID/stat between the fleet's start and the end;
 *   - Redis commands and bytes received per page (INFO stats, reset at the fleet's start);
 *   - links forwarded between partitions per page, and the Bloom filter's hit rate (links it kept
 *     back over links routed to another partition), from GET /api/cluster.
 * Every connection is to 127.0.0.0/8.
 *
 *   npm run build && node dist/scripts/bench-cluster.js [--servers 1,2] [--hosts 16] [--pages-per-host 150] [--concurrency 8] [--rounds 1] [--json]
 *
 * On a machine with fewer cores than processes (two cores run N queue servers, N fetchers, Redis and
 * the test web), the ratio measures contention as much as scaling: see README "Cluster".
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startTestWeb } from './test-web.js';
import { cpuOf } from './bench-queue-server/proc.js';
import { spawnQueueServer, type QueueServerProcess } from './bench-queue-server/queue-server-process.js';
import { intOption } from './bench-queue-server/int-option.js';
import { infoField, startRedis } from './bench-cluster/redis-process.js';

const DIST = fileURLToPath(new URL('..', import.meta.url));

const USAGE = `Usage: node dist/scripts/bench-cluster.js [options]

Crawls the test web with a cluster of N queue servers and N fetchers over a real redis-server, for
each N given, and prints pages/s, CPU per page per process kind, Redis commands and bytes per page,
links forwarded per page and the Bloom filter's hit rate, with ratios to the first N.

Options:
  --servers LIST        queue servers (and fetchers) per configuration, comma-separated (default 1,2)
  --hosts N             test web hosts (default 16)
  --pages-per-host N    pages per host (default 150)
  --concurrency N       --concurrency of each fetcher (default 8)
  --rounds N            run the configurations this many times, interleaved (default 1)
  --json                print the figures as JSON
`;

interface Figures {
  servers: number;
  pages: number;
  seconds: number;
  pagesPerSecond: number;
  cpuMsPerPage: { queueServers: number; fetchers: number; redis: number };
  redisCommandsPerPage: number;
  redisBytesInPerPage: number;
  linksForwardedPerPage: number;
  bloomHitRate: number | null;
  loadAverage: [number, number];
}

function cpuMs(pid: number | undefined): number {
  const cpu = pid === undefined ? null : cpuOf(pid);
  return cpu === null ? 0 : cpu.user + cpu.system;
}

async function clusterView(url: string, adminToken: string): Promise<{ sum: Record<string, number> }> {
  const response = await fetch(new URL('/api/cluster', url), { headers: { authorization: `Bearer ${adminToken}` } });
  if (!response.ok) throw new Error(`GET /api/cluster answered ${response.status}`);
  return (await response.json()) as { sum: Record<string, number> };
}

async function runOnce(servers: number, options: { hosts: number; pagesPerHost: number; concurrency: number }): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-cluster-'));
  const redis = await startRedis(dir);
  const web = await startTestWeb({ profile: 'bench', hosts: options.hosts, pagesPerHost: options.pagesPerHost });
  const members: QueueServerProcess[] = [];
  const fetchers: ChildProcess[] = [];
  const probe = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: null });
  try {
    const seeds = web.origins.map((origin) => `${origin}/index.html`);
    const expected = web.model.reachable({ seeds, inScope: () => true, maxDepth: 1_000_000 }).size;
    const tokenFile = join(dir, 'fetcher.token');
    writeFileSync(tokenFile, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
    const clusterUrl = `redis://127.0.0.1:${redis.port}`;
    for (let i = 0; i < servers; i++) {
      members.push(spawnQueueServer(DIST, ['--data', join(dir, `q${i}`), '--port', '0', '--token-file', tokenFile, '--cluster', clusterUrl, '--partitions', String(servers), '--partition', String(i), ...seeds.flatMap((seed) => ['--seed', seed]), '--scope', 'any', '--delay-ms', '0', '--log-level', 'warn']));
    }
    const listening = await Promise.all(members.map((member) => member.listening));
    if (listening.some((event) => event === null)) throw new Error(`a queue server exited: ${members.map((member) => member.stderr()).join('\n')}`);
    const adminToken = readFileSync(listening[0]!.adminTokenFile, 'utf8').trim();
    await probe.config('RESETSTAT');
    const serverCpu0 = members.map((member) => cpuMs(member.child.pid));
    const redisCpu0 = cpuMs(redis.child.pid);
    const load0 = loadavg()[0]!;
    for (let i = 0; i < servers; i++) {
      fetchers.push(spawn(process.execPath, [join(DIST, 'cli/petrel.js'), 'fetcher', '--cluster', clusterUrl, '--token-file', tokenFile, '--name', `bench-${i}`, '--concurrency', String(options.concurrency), '--claim-wait-ms', '1000', '--allow-private-addresses'], { stdio: ['ignore', 'ignore', 'pipe'] }));
    }
    const pagesOf = () => web.log.filter((entry) => entry.path !== '/robots.txt').length;
    const deadline = Date.now() + 600_000;
    let sum: Record<string, number> = {};
    for (;;) {
      if (Date.now() > deadline) throw new Error(`the crawl did not finish: ${pagesOf()} of ${expected} pages`);
      await new Promise((resolve) => setTimeout(resolve, 250));
      if (pagesOf() < expected) continue;
      sum = (await clusterView(listening[0]!.url, adminToken)).sum;
      if (sum.frontierSize === 0 && sum.itemsLeased === 0 && sum.backlog === 0) break;
    }
    const fetcherCpu = fetchers.reduce((total, child) => total + cpuMs(child.pid), 0);
    const serverCpu = members.reduce((total, member, i) => total + cpuMs(member.child.pid) - serverCpu0[i]!, 0);
    const redisCpu = cpuMs(redis.child.pid) - redisCpu0;
    const info = await probe.info('stats');
    // The heartbeat carrying the last counters may be up to 3.3 s behind: read the sums once more.
    await new Promise((resolve) => setTimeout(resolve, 3500));
    sum = (await clusterView(listening[0]!.url, adminToken)).sum;
    const pageLog = web.log.filter((entry) => entry.path !== '/robots.txt');
    const first = Math.min(...pageLog.map((entry) => entry.start));
    const last = Math.max(...pageLog.map((entry) => entry.end));
    const pages = pageLog.length;
    const seconds = (last - first) / 1000;
    const routed = (sum.linksForwarded ?? 0) + (sum.bloomSkipped ?? 0);
    return {
      servers,
      pages,
      seconds,
      pagesPerSecond: pages / seconds,
      cpuMsPerPage: { queueServers: serverCpu / pages, fetchers: fetcherCpu / pages, redis: redisCpu / pages },
      redisCommandsPerPage: infoField(info, 'total_commands_processed') / pages,
      redisBytesInPerPage: infoField(info, 'total_net_input_bytes') / pages,
      linksForwardedPerPage: (sum.linksForwarded ?? 0) / pages,
      bloomHitRate: routed === 0 ? null : (sum.bloomSkipped ?? 0) / routed,
      loadAverage: [load0, loadavg()[0]!],
    };
  } finally {
    for (const child of fetchers) child.kill('SIGTERM');
    await Promise.all(fetchers.map((child) => new Promise((resolve) => (child.exitCode !== null ? resolve(null) : child.once('exit', resolve)))));
    for (const member of members) member.child.kill('SIGTERM');
    await Promise.all(members.map((member) => member.exited));
    probe.disconnect();
    redis.child.kill('SIGKILL');
    await web.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      servers: { type: 'string', default: '1,2' },
      hosts: { type: 'string' },
      'pages-per-host': { type: 'string' },
      concurrency: { type: 'string' },
      rounds: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const counts = values.servers.split(',').map((text) => Number(text));
  if (counts.some((count) => !Number.isInteger(count) || count < 1 || count > 8)) throw new Error(`--servers: a comma-separated list of 1..8, got ${values.servers}`);
  const options = {
    hosts: intOption('hosts', values.hosts ?? '16', 1, 200),
    pagesPerHost: intOption('pages-per-host', values['pages-per-host'] ?? '150', 1, 100_000),
    concurrency: intOption('concurrency', values.concurrency ?? '8', 1, 1024),
  };
  const rounds = intOption('rounds', values.rounds ?? '1', 1, 20);
  const results: Figures[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const servers of counts) {
      const figures = await runOnce(servers, options);
      results.push(figures);
      if (!values.json) process.stderr.write(`round ${round + 1}: ${servers} queue server(s): ${figures.pages} pages in ${figures.seconds.toFixed(1)} s\n`);
    }
  }
  const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
  const per = counts.map((servers) => {
    const runs = results.filter((figures) => figures.servers === servers);
    return {
      servers,
      pagesPerSecond: median(runs.map((r) => r.pagesPerSecond)),
      queueServerMs: median(runs.map((r) => r.cpuMsPerPage.queueServers)),
      fetcherMs: median(runs.map((r) => r.cpuMsPerPage.fetchers)),
      redisMs: median(runs.map((r) => r.cpuMsPerPage.redis)),
      redisCommands: median(runs.map((r) => r.redisCommandsPerPage)),
      redisBytes: median(runs.map((r) => r.redisBytesInPerPage)),
      forwarded: median(runs.map((r) => r.linksForwardedPerPage)),
      bloom: runs.map((r) => r.bloomHitRate).find((rate) => rate !== null) ?? null,
    };
  });
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ cores: cpus().length, options, rounds, results, medians: per }, null, 2)}\n`);
    return;
  }
  const base = per[0]!;
  const lines = [
    `bench-cluster: ${options.hosts} hosts x ${options.pagesPerHost} pages, fetchers at --concurrency ${options.concurrency}, ${rounds} round(s), ${cpus().length} cores, load ${results.map((r) => r.loadAverage.map((l) => l.toFixed(1)).join('->')).join(', ')}`,
    '| queue servers + fetchers | pages/s | ratio | CPU ms/page: queue servers | fetchers | redis | Redis cmds/page | Redis bytes in/page | links forwarded/page | Bloom hit rate |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...per.map((row) => `| ${row.servers} + ${row.servers} | ${row.pagesPerSecond.toFixed(0)} | ${(row.pagesPerSecond / base.pagesPerSecond).toFixed(2)} | ${row.queueServerMs.toFixed(2)} | ${row.fetcherMs.toFixed(2)} | ${row.redisMs.toFixed(3)} | ${row.redisCommands.toFixed(1)} | ${row.redisBytes.toFixed(0)} | ${row.forwarded.toFixed(1)} | ${row.bloom === null ? '-' : `${(row.bloom * 100).toFixed(1)} %`} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench-cluster: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
