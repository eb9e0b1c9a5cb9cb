/**
 * bench-frontier-restart: how long a queue server takes from start to its first answered claim on a
 * data directory whose frontier is large. A benchmark, not a test: read the figures.
 *
 * Builds a data directory in this process with the queue server's own stores: a continuous crawl
 * (scope any) that knows `--urls` unfetched URLs over `--hosts` hosts (127.1.x.y, never contacted:
 * nothing here fetches), admitted through `Crawl.inject` in batches of 1,000 with a group commit after
 * each, as `POST /api/control/inject` does. Then starts `petrel queue-server` on it three times and
 * times each from spawn to the first claim answered with a schedule (a signed claim, as a fetcher
 * sends it; the schedule is a robots.txt slot):
 *   1. a clean start (the frontier read from frontier.btree),
 *   2. a start after the previous one was killed with SIGKILL right after its first claim,
 *   3. a start without frontier.btree (deleted: the frontier rebuilt from the whole crawl database, as
 *      every start did before the frontier moved to disk).
 *
 *   npm run build && node dist/scripts/bench-frontier-restart.js [--urls 1000000] [--hosts 10000]
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { QueueClient } from '../fetcher/queue-client.js';
import { PROTOCOL_VERSION } from '../shared/protocol.js';
import { Crawl } from '../queue-server/crawl/crawl.js';
import { saveCrawl } from '../queue-server/crawl/saved-settings.js';
import { crawlConfigSchema, fetchScheduleOf } from '../queue-server/crawl-config.js';
import { openStores } from '../queue-server/daemon.js';
import { dataPath } from '../queue-server/storage/data-dir.js';

const OWN_DIST = fileURLToPath(new URL('..', import.meta.url));

function hostOf(i: number): string {
  return `http://127.1.${(i >> 8) & 255}.${(i & 255) + 1}`;
}

function build(data: string, urls: number, hosts: number): { ms: number } {
  const began = performance.now();
  const config = crawlConfigSchema.parse({ seeds: [`${hostOf(0)}/`], scope: 'any', once: false, index: false, warc: false });
  const stores = openStores(data);
  try {
    const crawl = new Crawl(config, stores, fetchScheduleOf(config), null);
    const now = Date.now();
    crawl.load(now);
    crawl.seed(now);
    for (let n = 0; n < urls; n += 1000) {
      const batch: string[] = [];
      for (let k = n; k < Math.min(urls, n + 1000); k++) batch.push(`${hostOf(k % hosts)}/p/${k}`);
      crawl.inject(batch, now);
      crawl.commit();
    }
    saveCrawl(dataPath(data, 'settings'), crawl.config, false);
  } finally {
    stores.close();
  }
  return { ms: performance.now() - began };
}

/** Starts a queue server on `data`, returns the ms from spawn to the first claim answered with a schedule, and the child. */
async function firstClaim(data: string): Promise<{ ms: number; kill: () => Promise<void>; stop: () => Promise<void> }> {
  const began = performance.now();
  const child = spawn(process.execPath, [join(OWN_DIST, 'cli/petrel.js'), 'queue-server', '--data', data, '--port', '0', '--no-index', '--no-warc'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const event = JSON.parse(line) as { event?: string };
        if (event.event === 'listening') resolve(event as Record<string, unknown>);
      } catch {
        // not an event line
      }
    });
    void exited.then(() => reject(new Error(`the queue server exited:\n${stderr}`)));
  });
  const token = readFileSync(String(listening.tokenFile), 'utf8').trim();
  const abort = new AbortController();
  const client = new QueueClient({ serverUrl: String(listening.url), token, signal: abort.signal, connections: 2 });
  for (;;) {
    const answer = await client.claim({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'bench', name: 'bench', capacity: 1, waitMs: 2000, stats: { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 } });
    if (answer.kind === 'schedule') break;
  }
  const ms = performance.now() - began;
  abort.abort();
  return {
    ms,
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { urls: { type: 'string', default: '1000000' }, hosts: { type: 'string', default: '10000' } } });
  const urls = Number(values.urls);
  const hosts = Number(values.hosts);
  const dir = mkdtempSync(join(tmpdir(), 'petrel-bench-restart-'));
  const data = join(dir, 'data');
  mkdirSync(data, { mode: 0o700 });
  try {
    const built = build(data, urls, hosts);
    const size = (file: string) => (statSync(join(data, file)).size / 2 ** 20).toFixed(0);
    console.log(`built ${urls.toLocaleString('en-US')} URLs over ${hosts.toLocaleString('en-US')} hosts in ${(built.ms / 1000).toFixed(1)} s: crawldb.btree ${size('crawldb.btree')} MiB, frontier.btree ${size('frontier.btree')} MiB`);
    const clean = await firstClaim(data);
    console.log(`start, frontier from frontier.btree: first claim answered after ${(clean.ms / 1000).toFixed(2)} s`);
    await clean.kill();
    const afterKill = await firstClaim(data);
    console.log(`start after kill -9: first claim answered after ${(afterKill.ms / 1000).toFixed(2)} s`);
    await afterKill.stop();
    rmSync(join(data, 'frontier.btree'));
    const rebuilt = await firstClaim(data);
    console.log(`start without frontier.btree (rebuilt from the crawl database): first claim answered after ${(rebuilt.ms / 1000).toFixed(2)} s`);
    await rebuilt.stop();
    console.log(`load ${loadavg().map((n) => n.toFixed(2)).join(' ')}`);
    return 0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exitCode = await main();
