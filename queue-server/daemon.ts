/**
 * Starting and stopping a queue server: data directory, token, archive, crawl, HTTP listener (HTTPS
 * with `tls`: the same app behind node:https). `startQueueServer` is what `petrel queue-server` runs
 * and what tests start on port 0.
 */
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { crawlConfigSchema, fetchScheduleOf, type CrawlConfigInput } from './crawl-config.js';
import { Crawl, type CrawlStores } from './crawl/crawl.js';
import { nextPass, readPass, writePass } from './crawl/crawl-pass.js';
import { CrawlDb } from './crawldb/crawl-db.js';
import { RobotsStore } from './robots/robots-store.js';
import { CrawlService, systemClock, type Clock } from './crawl/crawl-service.js';
import { dataPath, ensureDataDir, lockDataDir } from './storage/data-dir.js';
import { createApp } from './app.js';
import { loadOrCreateToken, readTokenFile } from './auth/tokens.js';
import { PageArchive } from './crawl/page-archive.js';
import { CacheStore } from './cache/cache-store.js';

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
  /** ms since epoch; the system clock by default. */
  readonly clock?: Clock;
}

export interface RunningQueueServer {
  readonly url: string;
  readonly token: string;
  readonly tokenFile: string;
  readonly adminTokenFile: string;
  readonly service: CrawlService;
  /** Resolves when a one-shot crawl has finished. */
  readonly finished: Promise<void>;
  close(): Promise<void>;
}

export async function startQueueServer(options: QueueServerOptions): Promise<RunningQueueServer> {
  const config = crawlConfigSchema.parse(options.crawl);
  ensureDataDir(options.dataDir);
  const releaseLock = lockDataDir(options.dataDir);
  let stores: OpenStores | null = null;
  try {
    const tokenFile = options.tokenFile ?? dataPath(options.dataDir, 'token');
    const token = options.tokenFile === undefined ? loadOrCreateToken(tokenFile) : readTokenFile(tokenFile);
    const adminTokenFile = dataPath(options.dataDir, 'adminToken');
    const adminToken = loadOrCreateToken(adminTokenFile);
    stores = openStores(options.dataDir);
    const clock = options.clock ?? systemClock;
    const now = clock();
    // A one-shot crawl resumes its pass if the last one did not finish, else starts a new pass,
    // which recrawls everything known (crawl-pass.ts). A continuous crawl has no passes.
    const passFile = dataPath(options.dataDir, 'pass');
    const pass = config.once ? nextPass(readPass(passFile), now).pass : null;
    if (pass !== null) writePass(passFile, pass);
    const crawl = new Crawl(config, stores, fetchScheduleOf(config), pass);
    crawl.load(now);
    const service = new CrawlService(crawl, { clock });
    const finished = new Promise<void>((resolve) =>
      service.once('finished', () => {
        if (pass !== null) writePass(passFile, { ...pass, finishedAt: clock() });
        resolve();
      }),
    );
    const app = createApp({ service, token, adminToken, clock });
    const server = options.tls === undefined ? createServer(app) : createHttpsServer(options.tls, app);
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await listen(server, options.listenFd === undefined ? { host: options.host ?? '127.0.0.1', port: options.port ?? 7700 } : { fd: options.listenFd });
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    service.start();
    crawl.commit();
    const open = stores;
    let closed = false;
    return {
      url: `${options.tls === undefined ? 'http' : 'https'}://${host}:${port}`,
      token,
      tokenFile,
      adminTokenFile,
      service,
      finished,
      async close() {
        if (closed) return;
        closed = true;
        service.close();
        // Results being acknowledged get their answer: commit them, then let in-flight responses go out.
        await service.flush();
        const drained = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), 1000);
        await drained;
        clearTimeout(timer);
        open.close();
        releaseLock();
      },
    };
  } catch (error) {
    stores?.close();
    releaseLock();
    throw error;
  }
}

interface OpenStores extends CrawlStores {
  close(): void;
}

/** Opens every store of the data directory; closing commits what is staged. */
export function openStores(dataDir: string): OpenStores {
  const archive = PageArchive.open(dataPath(dataDir, 'pages'));
  const opened: { close(): void }[] = [archive];
  try {
    const cache = CacheStore.open(dataPath(dataDir, 'cache'));
    opened.push(cache);
    const crawlDb = CrawlDb.open(dataPath(dataDir, 'crawlDb'));
    opened.push(crawlDb);
    const robots = new RobotsStore(dataPath(dataDir, 'robots'));
    return {
      archive,
      cache,
      crawlDb,
      robots,
      close() {
        // The crawl database last: it is the authority on what is done (see ARCHITECTURE.md).
        for (const store of opened) store.close();
      },
    };
  } catch (error) {
    for (const store of opened) store.close();
    throw error;
  }
}

function createHttpsServer(tls: NonNullable<QueueServerOptions['tls']>, app: ReturnType<typeof createApp>) {
  try {
    return createTlsServer({ cert: tls.cert, key: tls.key }, app);
  } catch (error) {
    // OpenSSL's own words ("no start line", "key values mismatch") are cryptic without this context.
    throw new Error(`cannot serve HTTPS with the given certificate and key: ${(error as Error).message}`);
  }
}

function listen(server: Server, where: { host: string; port: number } | { fd: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(where, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
