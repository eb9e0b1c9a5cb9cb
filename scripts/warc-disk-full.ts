/**
 * Disk-full scenario for the WARC archive (test/integration/warc-disk-full.test.ts runs it inside its
 * own mount namespace, on a tmpfs of a few hundred KiB, so the disk really fills):
 *
 *   node warc-disk-full.js DATA_DIR COPY_TO
 *
 * Opens the data directory's stores as the queue server does (openStores, the crawl's commit), writes
 * a filler file, then stores captures of incompressible bodies, with their crawl database records, and
 * runs the crawl's group commit after each, until the commit fails (a CommitFailure naming `warc/`,
 * which makes a running queue server pause, crawl-service.ts). It reports on stdout, one JSON
 * object per line: every commit that returned, the failure (code, errno), the WARC file's size on disk
 * against its durable size, whether the crawl database moved, a retry while still full, the retry after
 * the filler is deleted; then it copies the WARC files to COPY_TO for the test to read with warcio.
 */
import { copyFileSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { createCipheriv } from 'node:crypto';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { urlHash } from '../shared/url-hash.js';
import { WarcError } from '../shared/warc/errors.js';
import { buildCapture } from '../shared/warc/exchange.js';
import { responseHead } from '../shared/warc/http-head.js';
import { crawlConfigSchema, DEFAULT_FETCH_SCHEDULE, fetchScheduleOf } from '../queue-server/crawl-config.js';
import { Crawl } from '../queue-server/crawl/crawl.js';
import { CommitFailure } from '../queue-server/crawl/storage-error.js';
import { newCrawlDbRecord } from '../queue-server/crawldb/record.js';
import { openStores } from '../queue-server/daemon.js';

const T0 = Date.UTC(2026, 5, 1);

function report(event: Record<string, unknown>): void {
  writeSync(1, `${JSON.stringify(event)}\n`);
}

function noise(n: number, bytes: number): Buffer {
  const key = Buffer.alloc(16);
  key.writeUInt32LE(n + 1, 0);
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(bytes));
}

function main(argv: readonly string[]): void {
  const [dataDir, copyTo] = argv;
  if (dataDir === undefined || copyTo === undefined) {
    process.stderr.write('usage: warc-disk-full DATA_DIR COPY_TO\n');
    process.exitCode = 2;
    return;
  }
  const config = crawlConfigSchema.parse({ bloomCapacity: 1000 });
  const stores = openStores(dataDir, { warc: { maxFileBytes: 1 << 30, warcinfo: { software: 'Petrel/disk-full', operator: null, userAgent: null, settings: {} } } });
  const crawl = new Crawl(config, stores, fetchScheduleOf(config), null);
  crawl.commit();
  const filler = join(dataDir, 'filler');
  writeFileSync(filler, Buffer.alloc(96 * 1024));
  const warcDir = join(dataDir, 'warc');
  let n = 0;
  const store = (): void => {
    const url = `http://127.0.0.1:9/full/${n}`;
    const body = noise(n, 24 * 1024);
    const capture = buildCapture(
      {
        url,
        ipAddress: '127.0.0.1',
        startedAt: T0 + n,
        requestHead: Buffer.from(`GET /full/${n} HTTP/1.1\r\nhost: 127.0.0.1:9\r\n\r\n`),
        responseHead: responseHead({ status: 200, statusText: 'OK', rawHeaders: ['Content-Length', String(body.length)] }),
        responseBody: [body],
        truncated: null,
      },
      { maxBodyBytes: 1 << 20 },
    );
    const stored = stores.warc!.store(capture, null, T0 + n);
    stores.crawlDb.put(urlHash(url), { ...newCrawlDbRecord(url, 0, 1, T0, DEFAULT_FETCH_SCHEDULE), status: 'fetched', warc: stored.location });
    n++;
  };
  // The crawl database moved when its tree committed or its insert log grew (new URLs' records go there).
  const crawlDbVersion = (): string => `${stores.crawlDb.stats().txid}:${stores.crawlDb.logStats().bytes}`;
  const fileSize = (): number => {
    const names = readdirSync(warcDir).filter((name) => name.endsWith('.warc.gz'));
    return names.reduce((sum, name) => sum + statSync(join(warcDir, name)).size, 0);
  };
  let failure: WarcError | null = null;
  for (let attempt = 0; attempt < 200 && failure === null; attempt++) {
    store();
    const txid = crawlDbVersion();
    try {
      crawl.commit();
      report({ event: 'committed', captures: n, warcBytes: stores.warc!.stats().bytes, crawlDbTxid: stores.crawlDb.stats().txid, crawlDbVersion: crawlDbVersion() });
    } catch (error) {
      // The crawl names the store that failed (CommitFailure, which pauses a running crawl); the WARC writer's error is its cause.
      if (!(error instanceof CommitFailure) || !(error.cause instanceof WarcError)) throw error;
      failure = error.cause;
      report({
        event: 'failed',
        store: error.store,
        commitCode: error.code,
        code: failure.code,
        errno: failure.errno,
        disposition: failure.disposition,
        message: failure.message,
        captures: n,
        durableBytes: stores.warc!.stats().bytes,
        bytesOnDisk: fileSize(),
        crawlDbMoved: crawlDbVersion() !== txid,
      });
    }
  }
  if (failure === null) throw new Error('the disk never filled');
  try {
    crawl.commit();
    report({ event: 'retry-succeeded-while-full' });
  } catch (error) {
    const cause = (error as CommitFailure).cause as WarcError;
    report({ event: 'retry-failed', store: (error as CommitFailure).store, code: cause.code, errno: cause.errno, bytesOnDisk: fileSize(), durableBytes: stores.warc!.stats().bytes });
  }
  rmSync(filler);
  const txid = crawlDbVersion();
  crawl.commit();
  report({ event: 'retry-committed', warcBytes: stores.warc!.stats().bytes, bytesOnDisk: fileSize(), crawlDbMoved: crawlDbVersion() !== txid, captures: n });
  stores.close();
  // Reopenable: the next start reads the files as they are.
  const again = openStores(dataDir, { warc: { maxFileBytes: 1 << 30, warcinfo: { software: 'Petrel/disk-full', operator: null, userAgent: null, settings: {} } } });
  const located = [...again.crawlDb.entries()].filter(([, record]) => record.warc !== null).length;
  again.close();
  mkdirSync(copyTo, { recursive: true });
  for (const name of readdirSync(warcDir)) if (name.endsWith('.warc.gz')) copyFileSync(join(warcDir, name), join(copyTo, name));
  report({ event: 'reopened', crawlDbRecordsWithCapture: located });
}

const invoked = process.argv[1];
if (invoked !== undefined && import.meta.url === pathToFileURL(invoked).href) main(process.argv.slice(2));
