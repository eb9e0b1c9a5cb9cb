/**
 * Starting and stopping a queue server: data directory, token, archive, crawl, HTTP listener.
 * `startQueueServer` is what `petrel queue-server` runs and what tests start on port 0.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { crawlConfigSchema, type CrawlConfigInput } from './crawl-config.js';
import { Crawl } from './crawl.js';
import { CrawlService } from './crawl-service.js';
import { dataPath, ensureDataDir, lockDataDir } from './data-dir.js';
import { createApp } from './http-app.js';
import { loadOrCreateToken, readTokenFile } from './auth.js';
import { PageArchive } from './page-archive.js';

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
  try {
    const tokenFile = options.tokenFile ?? dataPath(options.dataDir, 'token');
    const token = options.tokenFile === undefined ? loadOrCreateToken(tokenFile) : readTokenFile(tokenFile);
    archive = PageArchive.open(dataPath(options.dataDir, 'pages'));
    const service = new CrawlService(new Crawl(config, archive));
    const finished = new Promise<void>((resolve) => service.once('finished', resolve));
    const server = createServer(createApp({ service, token }));
    server.keepAliveTimeout = 65_000;
    server.headersTimeout = 66_000;
    await listen(server, options.host ?? '127.0.0.1', options.port ?? 7700);
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    service.start();
    const openArchive = archive;
    let closed = false;
    return {
      url: `http://${host}:${port}`,
      token,
      tokenFile,
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
        releaseLock();
      },
    };
  } catch (error) {
    archive?.close();
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
