/**
 * What the cluster tests (test/integration/cluster-*.test.ts) read about a cluster of real queue
 * servers: each member's crawl database, its partition, GET /api/cluster, and waiting for a crawl
 * to be over as the test web saw it.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import type { TestWeb } from '../../scripts/test-web.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { pageRequests, urlOf } from './request-log.js';
import { tempDir } from './petrel-process.js';

/** URLs the member's crawl database holds as fetched (read after the member exited). */
export function fetchedUrls(dataDir: string): string[] {
  const db = CrawlDb.open(join(dataDir, 'crawldb.btree'));
  try {
    const urls: string[] = [];
    for (const [, record] of db.entries()) if (record.status === 'fetched') urls.push(record.url);
    return urls;
  } finally {
    db.close();
  }
}

/**
 * A free port below Linux's ephemeral range (32768-60999), for a server that must come back on the
 * same port: while it is down, no port-0 listener of another test file and no outgoing connection
 * can be given that port in the meantime.
 */
export async function stablePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const free = await new Promise<boolean>((resolve) => {
      const probe = createServer();
      probe.once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** The partition a member's data directory holds (cluster.json). */
export function partitionOfDir(dataDir: string): number {
  return (JSON.parse(readFileSync(join(dataDir, 'cluster.json'), 'utf8')) as { partition: number }).partition;
}

export async function control(serverUrl: string, adminToken: string, action: string, body: unknown = {}): Promise<unknown> {
  const response = await fetch(new URL(`/api/control/${action}`, serverUrl), { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`POST /api/control/${action} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

export interface ClusterView {
  partitions: number;
  control: string;
  members: { partition: number; owner: { url: string; memberId: string } | null; state: string; backlog: number; counters: { pagesFetched: number } | null }[];
  sum: Record<string, number>;
}

export async function readCluster(serverUrl: string, adminToken: string): Promise<ClusterView> {
  const response = await fetch(new URL('/api/cluster', serverUrl), { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`GET /api/cluster answered ${response.status}`);
  return (await response.json()) as ClusterView;
}

export async function eventually<T>(read: () => Promise<T>, ok: (value: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Resolves once every expected URL was requested and the log has then been quiet for a while. */
export async function untilCrawled(web: TestWeb, expected: ReadonlyMap<string, number>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let quietSince = Date.now();
  let lastSize = -1;
  for (;;) {
    const requested = new Set(pageRequests(web.log).map(urlOf));
    const missing = [...expected.keys()].filter((url) => !requested.has(url));
    if (web.log.length !== lastSize) {
      lastSize = web.log.length;
      quietSince = Date.now();
    }
    if (missing.length === 0 && Date.now() - quietSince > 2000) return;
    if (Date.now() > deadline) throw new Error(`crawl did not complete: ${missing.length} missing, e.g. ${missing.slice(0, 3).join(' ')}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** A fresh fleet token (mode 0600) in a new temporary directory: the one secret every member and fetcher of a test cluster signs with. */
export function fleetTokenFile(prefix: string): string {
  const file = join(tempDir(prefix), 'fetcher.token');
  writeFileSync(file, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600 });
  return file;
}
