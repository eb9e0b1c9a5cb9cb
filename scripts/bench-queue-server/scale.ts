/**
 * bench-queue-server scale: one queue server at crawl scale. A real `petrel queue-server` process
 * (scope any, no politeness delay, one-shot pass) is driven by a synthetic fleet (the fetcher's own
 * QueueClient: signed requests over real HTTP on 127.0.0.1) that answers every claimed URL from the
 * graph model (graph-model.ts: about 50 links a page over 100,000 hosts, some new, most known) until
 * the crawl database holds --target-urls URLs, the queue server's RSS passes --max-rss-mib, or
 * --max-seconds pass. No connection is made to any host of the model: the fleet never fetches.
 *
 * Prints one JSON line every --interval-s (known URLs, results and pages per second applied, new URLs
 * admitted per second, claim latency p50/p99, queue server RSS and CPU, the driver's own CPU), then
 * kills the queue server with SIGKILL while the fleet is still posting (SIGTERM with --profile, so
 * that V8 writes the profile), starts it again on the same data directory and port, and reports the
 * seconds until a claim is answered with a schedule. Last it stops that process and reads the crawl
 * database offline: every URL that a result acknowledged by the queue server linked to (all are in
 * scope) must be in it ("nothing dropped"). The last line is the summary (`"event":"summary"`).
 */
import { setMaxListeners } from 'node:events';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { QueueClient } from '../../fetcher/queue-client.js';
import { PROTOCOL_VERSION, type ClaimResponse } from '../../shared/protocol.js';
import { knownUrlsOf, memoryMetrics, status, type StatusFigures } from './admin-api.js';
import { eachCrawlDbUrl } from './crawl-db-file.js';
import { profilesIn, topSelfTimes } from './cpu-profile.js';
import { profileWindow } from './inspector-profile.js';
import { GraphModel, MAX_HOST_PAGES, MAX_HOSTS } from './graph-model.js';
import { quantiles } from './percentiles.js';
import { cpuOf, memoryOf } from './proc.js';
import { spawnQueueServer, type Listening, type QueueServerProcess } from './queue-server-process.js';
import { SyntheticResults } from './synthetic-results.js';
import { intOption } from './int-option.js';

export const SCALE_USAGE = `Usage: node dist/scripts/bench-queue-server.js scale [options]

Drives a real petrel queue-server with a synthetic fleet answering from a deterministic link graph until
the crawl knows --target-urls URLs; prints JSON lines over time, then kill -9, restart, seconds to the
first claim answered, and a check that no URL linked from an acknowledged result is missing.

Options:
  --target-urls N   stop once the crawl database holds N URLs (default 10000000)
  --hosts N         hosts of the graph model, 127.1.0.0 and up, never contacted (default 100000)
  --links N         links per page (default 50)
  --new-links N     of them, children in the host's page tree (new when first seen; default 5)
  --cross-links N   of them, links to another host's first pages (default 3)
  --seeds N         seeds: the first N hosts' roots (default 10; scope any)
  --graph-seed N    seed of the model's pseudo-randomness (default 1)
  --fetchers N      simulated fetchers (default 4)
  --concurrency N   slots one claim asks for (default 64: with 100,000 hosts most slots hold a few URLs)
  --batch N         results per post (default 64)
  --in-flight N     results posts one simulated fetcher keeps open (default 8)
  --interval-s N    seconds between progress lines, each reading GET /api/status and /metrics (default 30; the
                    status costs the queue server time in proportion to its origins: statusMs)
  --max-rss-mib N   stop when the queue server's RSS passes N MiB (default 3072)
  --max-seconds N   stop after N seconds of crawling (default 3600)
  --no-index        the queue server runs with --no-index
  --qs-arg ARG      an argument for the queue server's command line, e.g. --qs-arg=--heap-growth=50
                    (repeat it for more)
  --profile         the queue server runs under node --cpu-prof (stopped with SIGTERM instead of
                    SIGKILL, so the profile is written; the restart is profiled too)
  --profile-at N    once the crawl knows N URLs, profile the queue server for --profile-seconds through its
                    inspector (SIGUSR1 opens it on 127.0.0.1:9229) and print the top functions of that
                    window alone (the file stays with --keep)
  --profile-seconds N  length of that window (default 60)
  --top N           functions per profile (default 30)
  --dist DIR        the Petrel build to run (default: the one holding this script)
  --keep            keep the data directory
  --help            show this help
`;

interface ScaleOptions {
  targetUrls: number;
  hosts: number;
  links: number;
  newLinks: number;
  crossLinks: number;
  seeds: number;
  graphSeed: number;
  fetchers: number;
  concurrency: number;
  batch: number;
  inFlight: number;
  intervalS: number;
  maxRssMib: number;
  maxSeconds: number;
  noIndex: boolean;
  qsArgs: string[];
  profile: boolean;
  profileAt: number | null;
  profileSeconds: number;
  top: number;
  dist: string;
  keep: boolean;
}

function scaleOptions(argv: string[], ownDist: string): ScaleOptions | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      'target-urls': { type: 'string', default: '10000000' },
      hosts: { type: 'string', default: '100000' },
      links: { type: 'string', default: '50' },
      'new-links': { type: 'string', default: '5' },
      'cross-links': { type: 'string', default: '3' },
      seeds: { type: 'string', default: '10' },
      'graph-seed': { type: 'string', default: '1' },
      fetchers: { type: 'string', default: '4' },
      concurrency: { type: 'string', default: '64' },
      batch: { type: 'string', default: '64' },
      'in-flight': { type: 'string', default: '8' },
      'interval-s': { type: 'string', default: '30' },
      'max-rss-mib': { type: 'string', default: '3072' },
      'max-seconds': { type: 'string', default: '3600' },
      'no-index': { type: 'boolean', default: false },
      'qs-arg': { type: 'string', multiple: true, default: [] },
      profile: { type: 'boolean', default: false },
      'profile-at': { type: 'string' },
      'profile-seconds': { type: 'string', default: '60' },
      top: { type: 'string', default: '30' },
      dist: { type: 'string', default: ownDist },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(SCALE_USAGE);
    return null;
  }
  const int = intOption;
  const hosts = int('hosts', values.hosts, 1, MAX_HOSTS);
  return {
    targetUrls: int('target-urls', values['target-urls'], 1, 1_000_000_000),
    hosts,
    links: int('links', values.links, 1, 5000),
    newLinks: int('new-links', values['new-links'], 0, 5000),
    crossLinks: int('cross-links', values['cross-links'], 0, 5000),
    seeds: int('seeds', values.seeds, 1, Math.min(hosts, 1000)),
    graphSeed: int('graph-seed', values['graph-seed'], 0, 2 ** 31),
    fetchers: int('fetchers', values.fetchers, 1, 64),
    concurrency: int('concurrency', values.concurrency, 1, 1024),
    batch: int('batch', values.batch, 1, 2000),
    inFlight: int('in-flight', values['in-flight'], 1, 256),
    intervalS: int('interval-s', values['interval-s'], 1, 3600),
    maxRssMib: int('max-rss-mib', values['max-rss-mib'], 64, 1_000_000),
    maxSeconds: int('max-seconds', values['max-seconds'], 1, 7 * 86_400),
    noIndex: values['no-index'],
    qsArgs: values['qs-arg'],
    profile: values.profile,
    profileAt: values['profile-at'] === undefined ? null : int('profile-at', values['profile-at'], 1, 1_000_000_000),
    profileSeconds: int('profile-seconds', values['profile-seconds'], 1, 3600),
    top: int('top', values.top, 1, 1000),
    dist: values.dist,
    keep: values.keep,
  };
}

/** One bit per URL id of the model. */
class IdBitmap {
  readonly #bits: Uint8Array;
  count = 0;

  constructor(ids: number) {
    this.#bits = new Uint8Array(Math.ceil(ids / 8));
  }

  /** Sets the bit; true when it was clear. */
  add(id: number): boolean {
    const byte = id >>> 3;
    const mask = 1 << (id & 7);
    if ((this.#bits[byte]! & mask) !== 0) return false;
    this.#bits[byte]! |= mask;
    this.count++;
    return true;
  }

  has(id: number): boolean {
    return (this.#bits[id >>> 3]! & (1 << (id & 7))) !== 0;
  }

  *ids(): Generator<number> {
    for (let byte = 0; byte < this.#bits.length; byte++) {
      const value = this.#bits[byte]!;
      if (value === 0) continue;
      for (let bit = 0; bit < 8; bit++) if ((value & (1 << bit)) !== 0) yield byte * 8 + bit;
    }
  }
}

/** What the fleet has seen acknowledged, and the claims' latencies of the current interval. */
class FleetTally {
  resultsApplied = 0;
  duplicates = 0;
  pagesAcked = 0;
  claims = 0;
  /** Claim latencies (ms) of the current interval; `intervalClaims` of them are valid. */
  readonly intervalMs = new Float64Array(1 << 16);
  intervalClaims = 0;
  readonly allMs: number[] = [];
  /** Every URL a page acknowledged by the queue server links to (seeds too): what must be in the crawl database. */
  readonly linked: IdBitmap;
  readonly #model: GraphModel;
  readonly #links: Int32Array;

  constructor(model: GraphModel) {
    this.#model = model;
    this.#links = new Int32Array(model.options.links);
    this.linked = new IdBitmap(model.options.hosts * MAX_HOST_PAGES);
  }

  claimAnswered(ms: number): void {
    this.claims++;
    this.allMs.push(ms);
    if (this.intervalClaims < this.intervalMs.length) this.intervalMs[this.intervalClaims++] = ms;
  }

  /** A results post was answered (after its group commit): the links of its pages are durable now. */
  acknowledged(pageIds: Int32Array, applied: number, duplicates: number): void {
    this.resultsApplied += applied;
    this.duplicates += duplicates;
    for (const id of pageIds) {
      if (id < 0) continue;
      this.pagesAcked++;
      const n = this.#model.linksOf(id, this.#links);
      for (let k = 0; k < n; k++) this.linked.add(this.#links[k]!);
    }
  }
}

interface Fleet {
  client: QueueClient;
  synthetic: SyntheticResults;
  tally: FleetTally;
  opts: ScaleOptions;
  stopping: boolean;
}

const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

/** One simulated fetcher: claims, makes the results up, posts them in batches without waiting for the answers. */
async function fleetMember(n: number, fleet: Fleet): Promise<void> {
  const { client, synthetic, tally, opts } = fleet;
  const fetcherId = `scale-fetcher-${n}`;
  const open = new Set<Promise<void>>();
  while (!fleet.stopping) {
    while (open.size >= opts.inFlight) await Promise.race(open);
    if (fleet.stopping) break;
    const sent = performance.now();
    let answer: ClaimResponse;
    try {
      answer = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: opts.concurrency, waitMs: 2000, stats: STATS });
    } catch (error) {
      if (fleet.stopping) break;
      throw error;
    }
    if (answer.kind === 'done') break;
    if (answer.kind === 'wait') continue;
    tally.claimAnswered(performance.now() - sent);
    const scheduleId = answer.schedule.id;
    const { results, pageIds } = synthetic.resultsOf(answer.schedule, Date.now());
    for (let at = 0; at < results.length; at += opts.batch) {
      const ids = pageIds.subarray(at, at + opts.batch);
      // As the fetcher posts: a binary frame of the version the schedule names (JSON when it names none).
      const posted = client.results({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId, results: results.slice(at, at + opts.batch) }, { frame: answer.schedule.resultsFrame ?? 0 }).then(
        (response) => tally.acknowledged(ids, response.applied, response.duplicates),
        (error: unknown) => {
          // Posts cut off by the kill are not acknowledged: their links are not owed.
          if (!fleet.stopping) throw error;
        },
      );
      const tracked: Promise<void> = posted.finally(() => open.delete(tracked));
      open.add(tracked);
    }
  }
  await Promise.allSettled(open);
}

interface Sample {
  at: number;
  applied: number;
  pages: number;
  known: number;
  qsCpuMs: number;
  driverCpuMs: number;
  exactLookups: number;
  recentHits: number;
}

function driverCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

function qsCpuMs(pid: number): number {
  const cpu = cpuOf(pid);
  return cpu === null ? 0 : cpu.user + cpu.system;
}

const emit = (line: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(line)}\n`);

export async function runScale(argv: string[], ownDist: string): Promise<number> {
  const opts = scaleOptions(argv, ownDist);
  if (opts === null) return 0;
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-scale-'));
  const data = join(dir, 'data');
  const profileDir = join(dir, 'profile');
  const restartProfileDir = join(dir, 'profile-restart');
  if (opts.profile) {
    mkdirSync(profileDir);
    mkdirSync(restartProfileDir);
  }
  const model = new GraphModel({ hosts: opts.hosts, links: opts.links, newLinks: opts.newLinks, crossLinks: opts.crossLinks, seed: opts.graphSeed });
  const seeds = Array.from({ length: opts.seeds }, (_, h) => model.url(h * MAX_HOST_PAGES));
  const args = (port: number) => [
    '--data', data, '--port', String(port), '--once', '--scope', 'any', '--delay-ms', '0',
    ...seeds.flatMap((seed) => ['--seed', seed]),
    ...(opts.noIndex ? ['--no-index'] : []),
    ...opts.qsArgs,
  ];
  process.stderr.write(`bench-queue-server scale: target ${opts.targetUrls.toLocaleString('en-US')} known URLs, model of ${opts.hosts.toLocaleString('en-US')} hosts (${model.capacity.toLocaleString('en-US')} URLs), data in ${dir}\n`);
  emit({ event: 'start', date: new Date().toISOString(), machine: { cpus: cpus().length, loadavg: loadavg() }, options: opts, modelUrls: model.capacity });

  const server = spawnQueueServer(opts.dist, args(0), opts.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []);
  const listening = await server.listening;
  if (listening === null) {
    process.stderr.write(`bench-queue-server scale: the queue server exited before listening:\n${server.stderr()}\n`);
    return 1;
  }
  const pid = listening.pid;
  const port = Number(new URL(listening.url).port);
  const adminToken = readFileSync(listening.adminTokenFile, 'utf8').trim();
  const token = readFileSync(listening.tokenFile, 'utf8').trim();
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const tally = new FleetTally(model);
  for (const seed of seeds) tally.linked.add(model.idOf(seed)!);
  const fleet: Fleet = {
    client: new QueueClient({ serverUrl: listening.url, token, signal: abort.signal, connections: 4 * opts.inFlight * opts.fetchers }),
    synthetic: new SyntheticResults(model),
    tally,
    opts,
    stopping: false,
  };

  const started = performance.now();
  const first: Sample = { at: started, applied: 0, pages: 0, known: 0, qsCpuMs: qsCpuMs(pid), driverCpuMs: driverCpuMs(), exactLookups: 0, recentHits: 0 };
  let last = first;
  let stopReason: string | null = null;
  let peakRssMib = 0;
  let lastStatus: StatusFigures | null = null;
  const rssAtMillions: Record<string, number> = {};
  const lines: Record<string, unknown>[] = [];
  let finish: () => void = () => undefined;
  const stopped = new Promise<void>((resolve) => (finish = resolve));
  const stop = (reason: string): void => {
    if (stopReason !== null) return;
    stopReason = reason;
    finish();
  };
  void server.exited.then(() => stop('queue-server-exited'));
  const memoryTimer = setInterval(() => {
    const memory = memoryOf(pid);
    if (memory === null) return;
    peakRssMib = Math.max(peakRssMib, Math.round(memory.peakKib / 1024));
    if (memory.rssKib / 1024 > opts.maxRssMib) stop('max-rss');
    if ((performance.now() - started) / 1000 > opts.maxSeconds) stop('max-seconds');
    // What acknowledged results linked to is in the crawl database (unless dropped): a lower bound of
    // the known URLs that costs the queue server nothing, checked every second between status reads.
    if (tally.linked.count >= opts.targetUrls) stop('target-urls');
  }, 1000);
  let polling = false;
  let windowProfiled = false;
  const poll = async (): Promise<void> => {
    if (polling || stopReason !== null) return;
    polling = true;
    try {
      const asked = performance.now();
      const figures = await status(listening.url, adminToken);
      const statusMs = performance.now() - asked;
      lastStatus = figures;
      const now: Sample = {
        at: performance.now(),
        applied: tally.resultsApplied,
        pages: tally.pagesAcked,
        known: knownUrlsOf(figures),
        qsCpuMs: qsCpuMs(pid),
        driverCpuMs: driverCpuMs(),
        exactLookups: figures.seenSet?.exactLookups ?? 0,
        recentHits: figures.seenSet?.recentHits ?? 0,
      };
      const seconds = (now.at - last.at) / 1000;
      const memory = memoryOf(pid);
      const metrics = await memoryMetrics(listening.url, adminToken).catch(() => null);
      const [p50, p99] = quantiles(tally.intervalMs, tally.intervalClaims, [0.5, 0.99]);
      const line = {
        event: 'progress',
        t: Math.round((now.at - started) / 100) / 10,
        knownUrls: now.known,
        linkedUrls: tally.linked.count,
        pagesAcked: now.pages,
        resultsPerSecond: Math.round((now.applied - last.applied) / seconds),
        pagesPerSecond: Math.round((now.pages - last.pages) / seconds),
        linksPerSecond: Math.round(((now.pages - last.pages) * opts.links) / seconds),
        admittedPerSecond: Math.round((now.known - last.known) / seconds),
        // Links the Bloom filter said "maybe" for, confirmed by the crawl database (a leaf read once it outgrows its cache) or by the recently seen URLs.
        exactLookupsPerSecond: Math.round((now.exactLookups - last.exactLookups) / seconds),
        recentHitsPerSecond: Math.round((now.recentHits - last.recentHits) / seconds),
        claims: tally.intervalClaims,
        claimP50Ms: p50,
        claimP99Ms: p99,
        rssMiB: memory === null ? null : Math.round(memory.rssKib / 1024),
        heapUsedMiB: metrics?.heapUsedMiB ?? null,
        heapTotalMiB: metrics?.heapTotalMiB ?? null,
        externalMiB: metrics?.externalMiB ?? null,
        queueServerCpu: Math.round(((now.qsCpuMs - last.qsCpuMs) / (now.at - last.at)) * 100) / 100,
        driverCpu: Math.round(((now.driverCpuMs - last.driverCpuMs) / (now.at - last.at)) * 100) / 100,
        frontier: figures.frontierSize,
        waiting: figures.waitingUrls,
        origins: figures.origins,
        statusMs: Math.round(statusMs),
      };
      tally.intervalClaims = 0;
      last = now;
      lines.push(line);
      emit(line);
      for (let m = 1; m * 1_000_000 <= now.known; m++) if (rssAtMillions[`${m}M`] === undefined && line.rssMiB !== null) rssAtMillions[`${m}M`] = line.rssMiB;
      if (now.known >= opts.targetUrls) stop('target-urls');
      if (opts.profileAt !== null && !windowProfiled && now.known >= opts.profileAt) {
        windowProfiled = true;
        const file = join(dir, `profile-at-${now.known}.cpuprofile`);
        void profileWindow(pid, opts.profileSeconds, file).then(
          () => emit({ event: 'profile-window', knownUrls: now.known, seconds: opts.profileSeconds, file, top: topSelfTimes(file, opts.top) }),
          (error: unknown) => process.stderr.write(`bench-queue-server scale: --profile-at: ${(error as Error).message}\n`),
        );
      }
    } finally {
      polling = false;
    }
  };
  const statusTimer = setInterval(() => void poll().catch((error: unknown) => process.stderr.write(`bench-queue-server scale: status: ${(error as Error).message}\n`)), opts.intervalS * 1000);
  const members = Array.from({ length: opts.fetchers }, (_, n) => fleetMember(n, fleet));
  const fleetDone = Promise.all(members).then(() => stop('fleet-done'), (error: unknown) => {
    process.stderr.write(`bench-queue-server scale: fleet: ${(error as Error).stack ?? String(error)}\n`);
    stop('fleet-failed');
  });

  await stopped;
  clearInterval(statusTimer);
  clearInterval(memoryTimer);
  const crawlSeconds = (performance.now() - started) / 1000;
  const beforeKill: Sample = { ...last, at: performance.now(), applied: tally.resultsApplied, pages: tally.pagesAcked, qsCpuMs: qsCpuMs(pid), driverCpuMs: driverCpuMs() };
  const rssAtStopMib = Math.round((memoryOf(pid)?.rssKib ?? 0) / 1024);
  // The crash: the fleet is still posting (--profile: SIGTERM, so that the profile is written).
  fleet.stopping = true;
  server.child.kill(opts.profile ? 'SIGTERM' : 'SIGKILL');
  await server.exited;
  abort.abort();
  await fleetDone;
  await fleet.client.close().catch(() => undefined);

  const restart = await timeRestart(opts, args(port), restartProfileDir, token);

  // Nothing dropped: every URL linked from an acknowledged page is in the crawl database.
  const scanStarted = performance.now();
  const inDb = new IdBitmap(opts.hosts * MAX_HOST_PAGES);
  let foreign = 0;
  const byStatus: Record<string, number> = {};
  const records = await eachCrawlDbUrl(opts.dist, data, (url, recordStatus) => {
    byStatus[recordStatus] = (byStatus[recordStatus] ?? 0) + 1;
    const id = model.idOf(url);
    if (id === null) foreign++;
    else inDb.add(id);
  });
  let missing = 0;
  const missingExamples: string[] = [];
  for (const id of tally.linked.ids()) {
    if (inDb.has(id)) continue;
    missing++;
    if (missingExamples.length < 5) missingExamples.push(model.url(id));
  }
  const profiles = opts.profile ? { crawl: profilesIn(profileDir).map((file) => topSelfTimes(file, opts.top))[0] ?? [], restart: profilesIn(restartProfileDir).map((file) => topSelfTimes(file, opts.top))[0] ?? [] } : null;
  const workMs = beforeKill.at - first.at;
  const summary = {
    event: 'summary',
    stopReason,
    crawlSeconds: Math.round(crawlSeconds),
    knownUrlsAtStop: lastStatus === null ? null : knownUrlsOf(lastStatus),
    resultsApplied: tally.resultsApplied,
    pagesAcked: tally.pagesAcked,
    duplicates: tally.duplicates,
    resultsPerSecond: Math.round(tally.resultsApplied / (workMs / 1000)),
    pagesPerSecond: Math.round(tally.pagesAcked / (workMs / 1000)),
    lastIntervalPagesPerSecond: (lines.at(-1)?.pagesPerSecond as number | undefined) ?? null,
    claims: tally.claims,
    claimMs: Object.fromEntries(['p50', 'p99', 'max'].map((name, k) => [name, quantiles(tally.allMs, tally.allMs.length, [0.5, 0.99, 1])[k]])),
    rssAtMillions,
    rssAtStopMiB: rssAtStopMib,
    peakRssMiB: peakRssMib,
    queueServerCpuMs: Math.round(beforeKill.qsCpuMs - first.qsCpuMs),
    queueServerCpuMsPerPage: tally.pagesAcked === 0 ? null : Math.round(((beforeKill.qsCpuMs - first.qsCpuMs) / tally.pagesAcked) * 1000) / 1000,
    driverCpuMs: Math.round(beforeKill.driverCpuMs - first.driverCpuMs),
    driverCpuMsPerPage: tally.pagesAcked === 0 ? null : Math.round(((beforeKill.driverCpuMs - first.driverCpuMs) / tally.pagesAcked) * 1000) / 1000,
    errorsByCode: lastStatus === null ? null : (lastStatus as StatusFigures).errorsByCode,
    stop: opts.profile ? 'SIGTERM (--profile)' : 'SIGKILL',
    restart,
    check: { records, byStatus, foreign, linkedUrls: tally.linked.count, missing, missingExamples, ok: missing === 0, scanMs: Math.round(performance.now() - scanStarted) },
    profiles,
    loadavg: loadavg(),
  };
  emit(summary);
  if (opts.keep) process.stderr.write(`bench-queue-server scale: kept ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
  return summary.check.ok && restart.firstClaimMs !== null ? 0 : 1;
}

/**
 * Starts the queue server again on the same data directory and port and times, from the spawn: its
 * port answering /healthz (it listens before it loads), the `listening` event (loaded), and the first
 * claim answered with a schedule. Then stops it with SIGTERM.
 */
async function timeRestart(opts: ScaleOptions, args: string[], profileDir: string, token: string): Promise<{ healthzMs: number | null; listeningMs: number | null; firstClaimMs: number | null; loaded: unknown; peakRssMiB: number | null; exit: number | null }> {
  const server: QueueServerProcess = spawnQueueServer(opts.dist, args, opts.profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []);
  const url = `http://127.0.0.1:${args[args.indexOf('--port') + 1]}`;
  let listeningMs: number | null = null;
  let listening: Listening | null = null;
  void server.listening.then((event) => {
    listening = event;
    if (event !== null) listeningMs = Math.round(performance.now() - server.spawnedAt);
  });
  let exited = false;
  void server.exited.then(() => (exited = true));
  let healthzMs: number | null = null;
  while (!exited && performance.now() - server.spawnedAt < 600_000) {
    try {
      const response = await fetch(new URL('/healthz', url));
      await response.arrayBuffer();
      if (response.ok) {
        healthzMs = Math.round(performance.now() - server.spawnedAt);
        break;
      }
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  let firstClaimMs: number | null = null;
  const abort = new AbortController();
  const client = new QueueClient({ serverUrl: url, token, signal: abort.signal, connections: 2 });
  while (healthzMs !== null && !exited && firstClaimMs === null && performance.now() - server.spawnedAt < 600_000) {
    const answer = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'restart-probe', name: 'restart-probe', capacity: 1, waitMs: 2000, stats: STATS });
    if (answer.kind === 'schedule') firstClaimMs = Math.round(performance.now() - server.spawnedAt);
    if (answer.kind === 'done') break;
  }
  const peak = memoryOf(server.child.pid!);
  abort.abort();
  await client.close().catch(() => undefined);
  await server.listening;
  server.child.kill('SIGTERM');
  const exit = await server.exited;
  if (firstClaimMs === null) process.stderr.write(`bench-queue-server scale: no claim answered after the restart:\n${server.stderr()}\n`);
  const loaded = (listening as Listening | null)?.loaded ?? null;
  return { healthzMs, listeningMs, firstClaimMs, loaded, peakRssMiB: peak === null ? null : Math.round(peak.peakKib / 1024), exit };
}
