/**
 * Starting and stopping a queue server: data directory, token, archive, crawl, HTTP listener (HTTPS
 * with `tls`: the same app behind node:https). `startQueueServer` is what `petrel queue-server` runs
 * and what tests start on port 0.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { crawlConfigSchema, fetchScheduleOf, type CrawlConfigInput } from './crawl-config.js';
import { Crawl, type CrawlStores, type LoadedCrawl } from './crawl/crawl.js';
import { nextPass, readPass, writePass, type CrawlPass } from './crawl/crawl-pass.js';
import { saveCrawl } from './crawl/saved-settings.js';
import { FrontierStore } from './frontier/frontier-store.js';
import { CrawlDb } from './crawldb/crawl-db.js';
import { RobotsStore } from './robots/robots-store.js';
import { CrawlService, systemClock, type Clock } from './crawl/crawl-service.js';
import { dataPath, ensureDataDir, lockDataDir } from './storage/data-dir.js';
import { createApp } from './app.js';
import { createMetrics } from './ops/metrics.js';
import { logCrawlEvents } from './ops/crawl-events.js';
import { createLogger, type Logger } from '../shared/logger.js';
import { ReadinessGate } from './ops/readiness.js';
import { loadOrCreateToken, readTokenFile } from './auth/tokens.js';
import { PageArchive } from './crawl/page-archive.js';
import { CacheStore } from './cache/cache-store.js';
import { WarcArchive, type WarcArchiveOptions } from './warc/warc-archive.js';
import type { FileOps } from './storage/file-ops.js';
import { IndexStore } from './crawl/index-store.js';
import { IndexError } from './search/errors.js';
import { indexSearcher } from './api/search-api.js';
import { ClusterMember, type ClusterOptions } from './cluster/cluster-member.js';
import { newInstanceId } from '../shared/request-signing.js';
import { INSTANCE_HEADER } from './api/request-auth.js';

export interface QueueServerOptions {
  readonly dataDir: string;
  readonly host?: string;
  readonly port?: number;
  /**
   * Accept connections on this inherited file descriptor, a socket already bound and listening, instead
   * of binding `host` and `port`: `petrel crawl` opens it before it starts the queue server, so its
   * fetchers can connect while the queue server is still starting (their requests wait in the socket's
   * backlog instead of failing and backing off).
   */
  readonly listenFd?: number;
  /** A token file to use instead of <data>/fetcher.token. */
  readonly tokenFile?: string;
  /** Serve HTTPS with this certificate (chain) and private key, PEM. */
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  readonly crawl: CrawlConfigInput;
  /** Start with the crawl stopped (it was stopped before the last shutdown: saved-settings.ts). */
  readonly stopped?: boolean;
  /** ms since epoch; the system clock by default. */
  readonly clock?: Clock;
  /** Who runs the crawl (the fetchers' --contact), for the `operator` field of each WARC file's warcinfo record. */
  readonly operator?: string | null;
  /** The file operations of every store (default node:fs); tests inject disk faults through it. */
  readonly fileOps?: FileOps;
  /** Messages for people (storage failures and recoveries); through `logger` by default. */
  readonly log?: (line: string) => void;
  /** The process's logger (shared/logger.ts); a queue-server logger on stderr by default. */
  readonly logger?: Logger;
  /**
   * How long a shutdown waits for requests in flight (results posts being read, applied and committed)
   * before it closes their connections, ms (default DRAIN_MS). Parked claims are answered at once.
   */
  readonly drainMs?: number;
  /** Serve /search and /api/search without login, rate limited per address (api/search-api.ts). Default false. */
  readonly publicSearch?: boolean;
  /** Join a cluster over Redis (cluster/cluster-member.ts); absent: a queue server on its own. */
  readonly cluster?: ClusterOptions & { readonly url?: string };
  /** The cluster lease was lost (cluster/membership.ts): the caller must stop; by default the crawl is paused. */
  readonly onClusterLost?: (why: string) => void;
  /** A data file was found damaged while serving (a page failing its checks): the caller must stop; by default the error is only logged. */
  readonly onDamagedData?: (error: Error) => void;
}

/** A shutdown (SIGTERM) waits this long at most for requests in flight; README "Operating Petrel". */
export const DRAIN_MS = 10_000;

export interface RunningQueueServer {
  readonly url: string;
  readonly token: string;
  readonly tokenFile: string;
  readonly adminTokenFile: string;
  /** The read-only secret of GET /metrics (metrics.token in the data directory). */
  readonly metricsTokenFile: string;
  readonly service: CrawlService;
  /** Resolves when a one-shot crawl has finished. */
  readonly finished: Promise<void>;
  /** What the crawl database held at start, and the pass (one-shot crawls): resumed, or new. */
  readonly loaded: LoadedCrawl;
  readonly pass: { readonly pass: CrawlPass; readonly resumed: boolean } | null;
  /** The cluster membership, when started with `cluster`. */
  readonly cluster: ClusterMember | null;
  close(): Promise<void>;
}

export async function startQueueServer(options: QueueServerOptions): Promise<RunningQueueServer> {
  const config = crawlConfigSchema.parse(options.crawl);
  const io = options.fileOps;
  const logger = options.logger ?? createLogger({ role: 'queue-server' });
  /** A line for people, as a record with its event (the human form prints the line as it was). */
  const say = (event: string, line: string, level: 'info' | 'warn' | 'error' = 'info', fields: Record<string, unknown> = {}) => {
    if (options.log !== undefined) options.log(line);
    else logger[level]({ event, say: true, ...fields }, line);
  };
  const log = (line: string) => say('message', line);
  ensureDataDir(options.dataDir, io);
  const releaseLock = lockDataDir(options.dataDir);
  let stores: OpenStores | null = null;
  // Listening first, the stores opened after: /healthz answers while they open, /readyz says when
  // they are (ops/readiness.ts); requests that come meanwhile wait for the app.
  // One instance id for the gate and the app: signed requests held while starting are checked against it.
  const instance = newInstanceId();
  const gate = new ReadinessGate({ headers: { [INSTANCE_HEADER]: instance } });
  let server: ReturnType<typeof createServer> | null = null;
  let draining = false;
  let member: ClusterMember | null = null;
  try {
    server = options.tls === undefined ? createServer(gate.handler) : createHttpsServer(options.tls, gate.handler);
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await listen(server, options.listenFd === undefined ? { host: options.host ?? '127.0.0.1', port: options.port ?? 7700 } : { fd: options.listenFd });
    const tokenFile = options.tokenFile ?? dataPath(options.dataDir, 'token');
    const token = options.tokenFile === undefined ? loadOrCreateToken(tokenFile, io) : readTokenFile(tokenFile);
    const adminTokenFile = dataPath(options.dataDir, 'adminToken');
    const adminToken = loadOrCreateToken(adminTokenFile, io);
    const metricsTokenFile = dataPath(options.dataDir, 'metricsToken');
    const metricsToken = loadOrCreateToken(metricsTokenFile, io);
    stores = openStores(options.dataDir, {
      io,
      index: true,
      warc: !config.warc ? undefined : { maxFileBytes: config.warcMaxFileBytes, warcinfo: { software: `Petrel/${petrelVersion()}`, operator: options.operator ?? null, userAgent: null, settings: config } },
    });
    const clock = options.clock ?? systemClock;
    const now = clock();
    // A one-shot crawl resumes its pass if the last one did not finish, else starts a new pass,
    // which recrawls everything known (crawl-pass.ts). A continuous crawl has no passes.
    const passFile = dataPath(options.dataDir, 'pass');
    const passChoice = config.once ? nextPass(readPass(passFile), now) : null;
    const pass = passChoice?.pass ?? null;
    if (pass !== null) writePass(passFile, pass, io);
    if (options.cluster !== undefined) {
      const { address, port } = server.address() as AddressInfo;
      const listeningUrl = `${options.tls === undefined ? 'http' : 'https'}://${address.includes(':') ? `[${address}]` : address}:${port}`;
      member = await ClusterMember.join({ ...options.cluster, url: options.cluster.url ?? listeningUrl, file: dataPath(options.dataDir, 'cluster'), bloomCapacity: config.bloomCapacity, clock, log });
      const { partition, partitions } = member.membership;
      say('cluster-joined', `petrel queue-server: member ${member.membership.memberId} of the cluster at ${member.redisDisplay} owns partition ${partition} of ${partitions}`, 'info', { partition, partitions });
      member.membership.on('lost', (why) => {
        say('cluster-lease-lost', `petrel queue-server: lost partition ${partition}: ${why}; stopping so that no two members crawl its hosts`, 'error', { partition });
        if (options.onClusterLost !== undefined) options.onClusterLost(why);
        else service.pause();
      });
    }
    const router = member?.router;
    const crawl = new Crawl(config, stores, fetchScheduleOf(config), pass, { router });
    const loaded = crawl.load(now);
    const service = new CrawlService(crawl, { clock, beforeCommit: router === undefined ? undefined : () => router.drain() });
    service.on('storage-error', (failed) => {
      const retryInMs = Math.max(0, failed.retryAt - clock());
      const diskFull = failed.code === 'ENOSPC' || failed.code === 'EDQUOT' || failed.code === 'EFBIG';
      say(
        diskFull ? 'disk-full' : 'storage-error',
        `petrel queue-server: storage error ${failed.code}: ${failed.message}; the crawl is paused (results are refused with 503 and kept by the fetchers, ` +
          `no new work is handed out) until a commit succeeds: attempt ${failed.attempts} failed, next in ${retryInMs} ms`,
        'error',
        { code: failed.code, attempts: failed.attempts, retryInMs },
      );
    });
    service.on('storage-recovered', ({ failedForMs, attempts }) => {
      say('storage-recovered', `petrel queue-server: storage works again after ${failedForMs} ms and ${attempts} failed commit${attempts === 1 ? '' : 's'}; the crawl goes on`, 'info', { failedForMs, attempts });
    });
    // The settings live in the data directory, so that the next start on it keeps them.
    const settingsFile = dataPath(options.dataDir, 'settings');
    service.on('settings', (settings, stopped) => saveCrawl(settingsFile, settings, stopped));
    /**
     * When the one-shot crawl finished. The pass is marked finished in pass.json only at close, after
     * the last commit: a queue server killed in between (telling its fetchers `done`, or committing the
     * last results) resumes the same pass at its next start, which finds nothing left to do and ends,
     * instead of starting a new pass (a recrawl of everything) with its fetchers gone home.
     */
    let finishedAt: number | null = null;
    const finished = new Promise<void>((resolve) =>
      service.once('finished', () => {
        finishedAt = clock();
        resolve();
      }),
    );
    const ready = () => !draining;
    const metrics = createMetrics(service, { clock, ready });
    const searcher = indexSearcher(stores.index!, stores.crawlDb, stores.warc !== null);
    const app = createApp({ service, token, adminToken, clock, ready, logger, metrics: { token: metricsToken, contentType: metrics.contentType, scrape: () => metrics.scrape() }, search: { searcher, public: options.publicSearch === true }, cluster: member ?? undefined, instance, onDamagedData: options.onDamagedData });
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    service.start();
    logger.info({ event: 'crawl-started', seeds: crawl.config.seeds.length, once: crawl.config.once, pass: pass?.number ?? null, queued: crawl.status(clock()).frontierSize, stopped: options.stopped === true }, 'crawl started');
    const stopEvents = logCrawlEvents(service, logger, clock);
    if (options.stopped === true) service.stop();
    else saveCrawl(settingsFile, crawl.config, false);
    crawl.commit();
    await member?.start(service, log);
    gate.open(app);
    const open = stores;
    const listening = server;
    const drainMs = options.drainMs ?? DRAIN_MS;
    let closed = false;
    return {
      url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${port}`,
      token,
      tokenFile,
      adminTokenFile,
      metricsTokenFile,
      service,
      finished,
      loaded: { ...loaded, queued: crawl.status(now).frontierSize },
      pass: passChoice,
      cluster: member,
      async close() {
        if (closed) return;
        closed = true;
        // Draining: /readyz says so, no schedule is handed out (parked claims are answered `wait`),
        // results posts in flight are still applied and committed before their answer.
        draining = true;
        logger.info({ event: 'draining', drainMs }, `draining: no new schedules; requests in flight get up to ${drainMs} ms, then the last commit`);
        stopEvents();
        service.close();
        // Links read from the stream and not yet committed stay pending in Redis for the next start.
        await member?.stopReading();
        // Results being acknowledged get their answer: commit them, then let in-flight responses go out.
        // If storage still fails, what is not durable was not acknowledged either: fetchers keep it.
        let unstored: unknown = null;
        await service.flush().catch((error: unknown) => (unstored = error));
        if (unstored !== null) log(`petrel queue-server: stopping with results not stored (${(unstored as Error).message}); fetchers still hold them and post them again`);
        const drained = new Promise<void>((resolve) => listening.close(() => resolve()));
        // A keep-alive connection whose last answer went out while draining is idle from then on and
        // would hold the shutdown for drainMs: idle ones are closed as they become so.
        listening.closeIdleConnections();
        const sweep = setInterval(() => listening.closeIdleConnections(), 50);
        const timer = setTimeout(() => listening.closeAllConnections(), drainMs);
        await drained;
        clearInterval(sweep);
        clearTimeout(timer);
        metrics.close();
        // Posts applied while draining (their commit was due on its timer): durable before the stores close.
        if (unstored === null) await service.flush().catch((error: unknown) => (unstored = error));
        try {
          open.close();
          if (unstored === null && finishedAt !== null && pass !== null) {
            try {
              writePass(passFile, { ...pass, finishedAt }, io);
            } catch (error) {
              // Not fatal: the pass is found unfinished next time and resumed, which finds nothing left to do.
              log(`petrel queue-server: could not mark the pass finished in ${passFile}: ${(error as Error).message}`);
            }
          }
        } catch (error) {
          if (unstored === null) throw error;
        } finally {
          // The merge worker stops before the directory is given up.
          await open.index?.close().catch(() => undefined);
          releaseLock();
          await member?.leave();
        }
      },
    };
  } catch (error) {
    gate.fail();
    member?.disconnect();
    server?.close();
    server?.closeAllConnections();
    stores?.close();
    await stores?.index?.close().catch(() => undefined);
    releaseLock();
    throw error;
  }
}

interface OpenStores extends CrawlStores {
  close(): void;
}

/**
 * Opens every store of the data directory; closing commits what is staged and closes every file even
 * when a commit fails (the first failure is thrown after all are closed). `warc`: the web archive's
 * settings; without it the archive stays closed (no warc/ files are touched). `index`: open the search
 * index too (its merge worker is stopped by `index.close()`, which the caller awaits after `close`).
 */
export function openStores(dataDir: string, options: { io?: FileOps; warc?: Omit<WarcArchiveOptions, 'dataDir' | 'io'>; index?: boolean } = {}): OpenStores {
  const { io } = options;
  const warc = options.warc === undefined ? null : WarcArchive.open({ dataDir, io, ...options.warc });
  const opened: { close(): void }[] = warc === null ? [] : [warc];
  let archive: PageArchive;
  try {
    archive = PageArchive.open(dataPath(dataDir, 'pages'), { io });
  } catch (error) {
    warc?.close();
    throw error;
  }
  opened.push(archive);
  const closeAll = () => {
    let failure: unknown = null;
    for (const store of opened) {
      try {
        store.close();
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== null) throw failure;
  };
  let index: IndexStore | null = null;
  try {
    const robots = RobotsStore.open(dataPath(dataDir, 'robots'), { io, legacyDir: dataPath(dataDir, 'robotsLegacy') });
    // Closed (committed) in this order, as Crawl.commit does: the crawl database last, since it is the
    // authority on what is done (see ARCHITECTURE.md).
    opened.push(robots);
    const cache = CacheStore.open(dataPath(dataDir, 'cache'), { io });
    opened.push(cache);
    // The search index, committed before the crawl database, as in Crawl.commit.
    const indexDir = dataPath(dataDir, 'index');
    const newIndex = !existsSync(indexDir);
    index = options.index === true ? IndexStore.open(indexDir) : null;
    const opening = index;
    let crawlDbOpened: CrawlDb | null = null;
    if (opening !== null) {
      opened.push({
        close: () => {
          opening.commit();
          crawlDbOpened?.noteIndexCommits(opening.commits);
        },
      });
    }
    // The frontier's queues: committed by Crawl.commit before the crawl database (a close does not
    // commit them: what a Crawl staged, its last commit wrote).
    const frontier = FrontierStore.open(dataPath(dataDir, 'frontier'), { io });
    opened.push(frontier);
    const crawlDb = CrawlDb.open(dataPath(dataDir, 'crawlDb'), { io });
    opened.push(crawlDb);
    if (index !== null) checkIndexCommits(index, crawlDb, { dir: indexDir, isNew: newIndex });
    // Only an index found whole may record its count at close (a refused one leaves the record as it was).
    crawlDbOpened = crawlDb;
    // WARC files are committed first (crawl db records name them), as in Crawl.commit.
    return { archive, warc, cache, index, crawlDb, robots, frontier, close: closeAll };
  } catch (error) {
    try {
      closeAll();
    } catch {
      // The open's own error is the one to report.
    }
    void index?.close();
    throw error;
  }
}

/**
 * Refuses an index that lost acknowledged commits: each group commit commits the index first and then
 * the crawl database, which records the index's commit count (Crawl.commit), so a durable index never
 * holds fewer than that count, and one that does lost commits whose results were acknowledged (its
 * commit log cut short or replaced by an older copy): those pages are fetched and done for the crawl
 * database, and would stay unsearchable without a word. An index directory that did not exist is a new
 * index (one moved away on purpose, or a crawl that ran with --no-index until now): the count starts
 * again from it, recorded at once, before the index commits anything.
 */
function checkIndexCommits(index: IndexStore, crawlDb: CrawlDb, where: { dir: string; isNew: boolean }): void {
  const recorded = crawlDb.indexCommits;
  if (where.isNew) {
    if (recorded === 0) return;
    crawlDb.noteIndexCommits(0);
    crawlDb.commit();
    return;
  }
  if (index.commits >= recorded) return;
  throw new IndexError(
    'INDEX_CORRUPT',
    `the search index in ${where.dir} holds ${index.commits} commits, but the crawl database recorded ${recorded} when it last committed: ` +
      `the index lost ${recorded - index.commits} acknowledged commits (its commit log was cut short or replaced by an older copy), so pages the crawl database calls fetched are missing from it. ` +
      `"petrel index check --data DIR" says the same; to go on, move ${where.dir} away: a new, empty index is started, and takes each page when it is next fetched with content (not a revalidation answered 304)`,
  );
}

/** Petrel's version from package.json (found from dist/ and from the sources alike). */
function petrelVersion(): string {
  for (const relative of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'petrel' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // not this one
    }
  }
  return 'unknown';
}

function createHttpsServer(tls: NonNullable<QueueServerOptions['tls']>, app: RequestListener) {
  try {
    return createTlsServer({ cert: tls.cert, key: tls.key }, app);
  } catch (error) {
    // OpenSSL's own words ("no start line", "key values mismatch") are cryptic without this context.
    throw new Error(`cannot serve HTTPS with the given certificate and key: ${(error as Error).message}`);
  }
}

function listen(server: Server, where: { host: string; port: number } | { fd: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      if (!('port' in where)) return reject(new Error(`cannot listen on the inherited file descriptor ${where.fd}: ${error.message}`));
      const { host, port } = where;
      if (error.code === 'EADDRINUSE') {
        reject(new Error(`port ${port} on ${host} is in use (another petrel start or queue server?): stop that one, give another --port, or --port 0 to take any free port`));
      } else if (error.code === 'EACCES') {
        reject(new Error(`no permission to listen on port ${port} of ${host} (ports below 1024 need privileges): give another --port, or --port 0`));
      } else if (error.code === 'EADDRNOTAVAIL') {
        reject(new Error(`${host} is not an address of this machine: give --host one of its addresses (127.0.0.1 for this machine only, 0.0.0.0 for all)`));
      } else reject(error);
    };
    server.once('error', onError);
    server.listen(where, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
