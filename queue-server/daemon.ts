/**
 * Starting and stopping a queue server: data directory, token, archive, crawl, HTTP listener.
 * `startQueueServer` is what `petrel queue-server` runs and what tests start on port 0.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crawlConfigSchema, type CrawlConfigInput } from './crawl-config.js';
import { Crawl } from './crawl.js';
import { CrawlService } from './crawl-service.js';
import { dataPath, ensureDataDir, lockDataDir } from './data-dir.js';
import { createApp } from './http-app.js';
import { loadOrCreateToken, readTokenFile } from './auth.js';
import { PageArchive, readPageArchive } from './page-archive.js';
import { CacheStore } from './cache-store.js';

export interface QueueServerOptions {
  readonly dataDir: string;
  readonly host?: string;
  readonly port?: number;
  /** A token file to use instead of <data>/fetcher.token. */
  readonly tokenFile?: string;
  readonly crawl: CrawlConfigInput;
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
  let archive: PageArchive | null = null;
  let cache: CacheStore | null = null;
  try {
    const tokenFile = options.tokenFile ?? dataPath(options.dataDir, 'token');
    const token = options.tokenFile === undefined ? loadOrCreateToken(tokenFile) : readTokenFile(tokenFile);
    const known = await knownUrls(dataPath(options.dataDir, 'pages'));
    archive = PageArchive.open(dataPath(options.dataDir, 'pages'));
    cache = CacheStore.open(dataPath(options.dataDir, 'cache'));
    const crawl = new Crawl(config, archive, cache);
    // A crawl on a data directory that holds an earlier pass is a recrawl of everything known.
    const startedAt = Date.now();
    for (const [url, depth] of known) crawl.admitKnown(url, depth, startedAt);
    const service = new CrawlService(crawl);
    const finished = new Promise<void>((resolve) => service.once('finished', resolve));
    const adminTokenFile = dataPath(options.dataDir, 'adminToken');
    const adminToken = loadOrCreateToken(adminTokenFile);
    const server = createServer(createApp({ service, token, adminToken }));
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await listen(server, options.host ?? '127.0.0.1', options.port ?? 7700);
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    service.start();
    const openArchive = archive;
    const openCache = cache;
    let closed = false;
    return {
      url: `http://${host}:${port}`,
      token,
      tokenFile,
      adminTokenFile,
      service,
      finished,
      async close() {
        if (closed) return;
        closed = true;
        service.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        openArchive.close();
        openCache.close();
        releaseLock();
      },
    };
  } catch (error) {
    archive?.close();
    cache?.close();
    releaseLock();
    throw error;
  }
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** URLs requested in earlier passes, with their depth, from the page archive (shallowest wins). */
async function knownUrls(archivePath: string): Promise<Map<string, number>> {
  const known = new Map<string, number>();
  if (!existsSync(archivePath)) return known;
  for await (const record of readPageArchive(archivePath)) {
    const depth = known.get(record.url);
    if (depth === undefined || record.depth < depth) known.set(record.url, record.depth);
  }
  return known;
}

