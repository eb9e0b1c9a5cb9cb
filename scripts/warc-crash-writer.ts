/**
 * Crash-test writer for the WARC archive (test/integration/warc-crash.test.ts runs it as a real child
 * process and SIGKILLs it at random instants).
 *
 *   node warc-crash-writer.js DATA_DIR FIRST [MAX_FILE_BYTES] [sync|async]
 *
 * Opens the archive in DATA_DIR (which cuts a torn tail), prints `ready`, then stores capture after
 * capture from number FIRST on, committing after every few, and prints the numbers of each commit once
 * it has returned (so they are durable: acknowledged). Capture n depends only on n (`crashCapture`):
 * its URL is /c/n, its body has a size and bytes chosen by n, and every seventh repeats an earlier body,
 * so identical-payload revisits happen too. `async` commits as the queue server's group commit does:
 * the records' fsync on the thread pool first (WarcArchive.syncRecords), then `commit`.
 */
import { createCipheriv } from 'node:crypto';
import { writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { buildCapture, type Exchange } from '../shared/warc/exchange.js';
import { responseHead } from '../shared/warc/http-head.js';
import { WarcArchive } from '../queue-server/warc/warc-archive.js';
import { mulberry32 } from './test-web/prng.js';

const T0 = Date.UTC(2026, 5, 1);

export function crashUrl(n: number): string {
  return `http://127.0.0.1:9/c/${n}`;
}

/**
 * The body of capture n: 0 to ~60 KiB, mostly small; every seventh the body of capture n - 3; every
 * 29th 1.5 MiB that does not compress, so some writes are long enough for a kill to land inside one
 * (Linux ends a write early when a fatal signal arrives between pages).
 */
export function crashBody(n: number): Buffer {
  if (n % 7 === 0 && n >= 3) return crashBody(n - 3);
  if (n % 29 === 11) {
    const key = Buffer.alloc(16);
    key.writeUInt32LE(n, 0);
    return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(1536 * 1024));
  }
  const rand = mulberry32(Math.imul(n, 0x9e3779b1) ^ 0x5bd1e995);
  const r = rand();
  const line = Buffer.from(`${n}:${Array.from({ length: 8 }, () => Math.floor(rand() * 1e9).toString(36)).join(' ')}\n`);
  return Buffer.alloc(Math.floor(r * r * r * 60 * 1024), line);
}

export function crashExchange(n: number): Exchange {
  const body = crashBody(n);
  return {
    url: crashUrl(n),
    ipAddress: '127.0.0.1',
    startedAt: T0 + n * 1000,
    requestHead: Buffer.from(`GET /c/${n} HTTP/1.1\r\nhost: 127.0.0.1:9\r\n\r\n`),
    responseHead: responseHead({ status: 200, statusText: 'OK', rawHeaders: ['Content-Type', 'text/plain', 'Content-Length', String(body.length)] }),
    responseBody: [body],
    truncated: null,
  };
}

async function main(argv: readonly string[]): Promise<void> {
  const [dataDir, firstArg, maxArg, mode = 'sync'] = argv;
  if (dataDir === undefined || firstArg === undefined || (mode !== 'sync' && mode !== 'async')) {
    process.stderr.write('usage: warc-crash-writer DATA_DIR FIRST [MAX_FILE_BYTES] [sync|async]\n');
    process.exitCode = 2;
    return;
  }
  const archive = WarcArchive.open({ dataDir, maxFileBytes: Number(maxArg ?? 256 * 1024), warcinfo: { software: 'Petrel/crash-test', operator: null, userAgent: null, settings: {} } });
  writeSync(1, 'ready\n');
  const rand = mulberry32(Number(firstArg));
  for (let n = Number(firstArg); ; ) {
    const batch: number[] = [];
    const size = 1 + Math.floor(rand() * 6);
    for (let i = 0; i < size; i++, n++) {
      archive.store(buildCapture(crashExchange(n), { maxBodyBytes: 4 << 20 }), null, T0 + n * 1000);
      batch.push(n);
    }
    if (mode === 'async') await archive.syncRecords();
    archive.commit();
    writeSync(1, `${batch.join(' ')}\n`);
  }
}

const invoked = process.argv[1];
if (invoked !== undefined && import.meta.url === pathToFileURL(invoked).href) await main(process.argv.slice(2));
