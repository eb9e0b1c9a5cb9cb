/**
 * The crawl's group commit (Crawl.commit over the stores of a real data directory) under a failing
 * disk, through the file-operations seam: the order of the stores (page archive, robots.txt tree,
 * cache tree, crawl database, each fsynced before the next begins), the durability steps of small
 * files (temporary file fsynced, renamed, directory fsynced; a new file's directory entry fsynced),
 * and a failure at every write, fsync and rename of a commit: what is on disk then is, store by store,
 * the last acknowledged commit (a store that finished before the failure holds the new batch whole),
 * and once the disk works again the same commit, retried, stores every record exactly once.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import { decodeCacheRecord, type CacheRecord } from '../../queue-server/cache/cache-record.js';
import { crawlConfigSchema, fetchScheduleOf } from '../../queue-server/crawl-config.js';
import { Crawl } from '../../queue-server/crawl/crawl.js';
import type { PageRecord } from '../../queue-server/crawl/outcome.js';
import { readPageArchive } from '../../queue-server/crawl/page-archive.js';
import { CommitFailure } from '../../queue-server/crawl/storage-error.js';
import { decodeCrawlDbRecord, newCrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { CrawlDbReader } from '../../queue-server/crawldb/crawl-db-reader.js';
import { openStores } from '../../queue-server/daemon.js';
import { loadOrCreateToken } from '../../queue-server/auth/tokens.js';
import { writeFileAtomic } from '../../queue-server/storage/atomic-file.js';
import { DATA_FILES, ensureDataDir } from '../../queue-server/storage/data-dir.js';
import { RobotsStore } from '../../queue-server/robots/robots-store.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { FaultyFileOps, type Fault, type FileOp } from '../support/faulty-file-ops.js';

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const CONFIG = crawlConfigSchema.parse({ seeds: ['http://example.test/'], bloomCapacity: 1000 });
const POLICY = fetchScheduleOf(CONFIG);
const STORES = ['pages.jsonl', 'robots.btree', 'cache.btree', 'crawldb.btree'] as const;
type Store = (typeof STORES)[number];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-store-faults-'));
  dirs.push(dir);
  return dir;
}

function storeOf(op: FileOp): Store | null {
  for (const store of STORES) if (op.path.includes(`/${store}`)) return store;
  // The crawl database's insert log (new URLs' records) is part of its commit.
  if (op.path.includes('/crawldb.inserts-')) return 'crawldb.btree';
  return null;
}

const urlOf = (batch: string, i: number) => `http://example.test/${batch}/${i}`;

function pageRecord(url: string): PageRecord {
  return {
    url, depth: 1, status: 200, outcome: 'fetched', errorCode: null, contentType: 'text/html', title: `title of ${url}`, description: null,
    language: null, excerpt: 'x'.repeat(500), outlinkCount: 0, outlinks: [], canonical: null, noindex: false, redirectTo: null, signature: null, bytes: 1000, truncated: false, fetchedAt: NOW,
  };
}

function cacheRecord(i: number): CacheRecord {
  return { etag: `"e${i}"`, lastModified: null, cacheControl: 'max-age=60', expires: null, freshUntil: NOW + i, date: NOW, storedAt: NOW, bodyBytes: i };
}

/** One data directory's stores, under `io`, with a Crawl whose commit is the one under test. */
function open(dir: string, io?: FaultyFileOps) {
  const stores = openStores(dir, { io });
  const crawl = new Crawl(CONFIG, stores, POLICY, null);
  return {
    stores,
    crawl,
    /** Applies one batch of results to every store, as ResultApplier does, without committing. */
    stage(batch: string, count: number) {
      stores.archive.append(Array.from({ length: count }, (_, i) => pageRecord(urlOf(batch, i))));
      stores.robots!.save({ origin: `http://${batch}.example.test`, status: 200, errorCode: null, body: `User-agent: *\nDisallow: /${batch}/`, fetchedAt: NOW });
      for (let i = 0; i < count; i++) {
        const url = urlOf(batch, i);
        stores.cache.stage(urlHash(url), cacheRecord(i));
        stores.crawlDb.put(urlHash(url), { ...newCrawlDbRecord(url, 1, 0, NOW, POLICY), status: 'fetched', lastFetchAt: NOW });
      }
    },
  };
}

/** What each store holds on disk, read without changing anything (a reopen after a crash would see this). */
async function onDisk(dir: string): Promise<Record<Store, string[]>> {
  const archived: string[] = [];
  for await (const record of readPageArchive(join(dir, DATA_FILES.pages))) archived.push(record.url);
  const robotsStore = RobotsStore.openReadOnly(join(dir, DATA_FILES.robots));
  let robots: string[];
  try {
    expect(robotsStore.check().faults).toEqual([]);
    robots = [...robotsStore.entries()].map((stored) => stored.origin);
  } finally {
    robotsStore.close();
  }
  const treeUrls = (file: string, decode: (bytes: Uint8Array) => string) => {
    const tree = BTree.open(join(dir, file), { readOnly: true });
    try {
      expect(tree.check().faults).toEqual([]);
      return [...tree.entries()].map(([, value]) => decode(value));
    } finally {
      tree.close();
    }
  };
  const byHash = new Map<string, string>();
  for (const batch of ['a', 'b']) for (let i = 0; i < BATCH; i++) byHash.set(urlHashHex(urlHash(urlOf(batch, i))), urlOf(batch, i));
  return {
    'pages.jsonl': archived,
    'robots.btree': robots.sort(),
    'cache.btree': treeUrls(DATA_FILES.cache, (bytes) => `cached ${decodeCacheRecord(bytes).etag}`).sort(),
    'crawldb.btree': crawlDbUrls(join(dir, DATA_FILES.crawlDb)),
  };
}

const BATCH = 40;

/** The crawl database's URLs as a reader sees them: its tree (checked) and its insert log. */
function crawlDbUrls(path: string): string[] {
  const reader = CrawlDbReader.open(path);
  try {
    expect(reader.tree.check().faults).toEqual([]);
    return [...reader.entries()].map(([, value]) => decodeCrawlDbRecord(value).url).sort();
  } finally {
    reader.close();
  }
}

/** What each store holds after batch a only, and after a and b. */
function expected(batches: string[]): Record<Store, string[]> {
  const urls = batches.flatMap((batch) => Array.from({ length: BATCH }, (_, i) => urlOf(batch, i)));
  return {
    'pages.jsonl': urls,
    'robots.btree': batches.map((batch) => `http://${batch}.example.test`).sort(),
    'cache.btree': batches.flatMap(() => Array.from({ length: BATCH }, (_, i) => `cached "e${i}"`)).sort(),
    'crawldb.btree': [...urls].sort(),
  };
}

/** The steps (write, fsync, rename) of the commit of batch b after batch a was committed. */
function commitSteps(): FileOp[] {
  const dir = tempDir();
  const io = new FaultyFileOps();
  const { crawl, stage, stores } = open(dir, io);
  stage('a', BATCH);
  crawl.commit();
  stage('b', BATCH);
  io.reset();
  crawl.commit();
  const steps = io.ops.filter((op) => op.kind === 'write' || op.kind === 'fsync' || op.kind === 'rename');
  stores.close();
  return steps;
}

describe('the order of the group commit', () => {
  it('commits the page archive, then the robots.txt tree, then the cache tree, then the crawl database, each fsynced before the next begins', () => {
    const steps = commitSteps();
    const order = steps.map(storeOf);
    expect(order.every((store) => store !== null)).toBe(true);
    // Each store's steps form one run, in the order above.
    const runs = order.filter((store, i) => i === 0 || store !== order[i - 1]);
    expect(runs).toEqual([...STORES]);
    // A store's last step is an fsync (its commit is durable before the next store writes anything).
    for (const store of STORES) expect(steps.filter((op) => storeOf(op) === store).at(-1)!.kind, store).toBe('fsync');
    // robots.txt outcomes: one B-Tree commit (pages, fsync, meta page, fsync), no file per origin, no rename.
    const robots = steps.filter((op) => storeOf(op) === 'robots.btree');
    expect(robots.filter((op) => op.kind === 'fsync')).toHaveLength(2);
    expect(robots.every((op) => op.kind !== 'rename' && op.path.endsWith('/robots.btree'))).toBe(true);
  });

  it('replaces a small file durably: temporary file fsynced, renamed over the old one, directory fsynced', () => {
    const dir = tempDir();
    const io = new FaultyFileOps();
    writeFileAtomic(join(dir, 'pass.json'), '{"number":1}\n', { io });
    expect(io.ops.map((op) => `${op.kind} ${op.path.slice(dir.length)}`)).toEqual([
      `open /pass.json.tmp-${process.pid}`,
      `write /pass.json.tmp-${process.pid}`,
      `fsync /pass.json.tmp-${process.pid}`,
      `rename /pass.json.tmp-${process.pid}`,
      'open ',
      'fsync ',
    ]);
    expect(readFileSync(join(dir, 'pass.json'), 'utf8')).toBe('{"number":1}\n');
  });

  it('fsyncs the data directory when it creates pages.jsonl and the B-Tree files (robots.btree among them), before writing a record', () => {
    const parent = tempDir();
    const dir = join(parent, 'data');
    const io = new FaultyFileOps();
    ensureDataDir(dir, io);
    const { stores } = open(dir, io);
    stores.close();
    const dirFsyncs = io.ops.map((op, i) => ({ op, i })).filter(({ op }) => op.kind === 'fsync' && (op.path === dir || op.path === parent));
    const created = (name: string) => io.ops.findIndex((op) => (op.kind === 'open' || op.kind === 'mkdir' || op.kind === 'link') && (op.to ?? op.path) === join(dir, name));
    for (const name of [DATA_FILES.pages, DATA_FILES.robots, DATA_FILES.cache, DATA_FILES.crawlDb]) {
      const at = created(name);
      expect(at, name).toBeGreaterThanOrEqual(0);
      // The next directory fsync after the file appeared makes its name durable.
      expect(dirFsyncs.some(({ i }) => i > at), name).toBe(true);
    }
    // The data directory itself was created and its parent fsynced.
    expect(dirFsyncs.some(({ op }) => op.path === parent)).toBe(true);
  });

  it('creates a token file with its bytes and its directory entry fsynced', () => {
    const dir = tempDir();
    const io = new FaultyFileOps();
    const file = join(dir, DATA_FILES.token);
    const token = loadOrCreateToken(file, io);
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(io.ops.map((op) => `${op.kind} ${op.path}`)).toEqual([`open ${file}`, `write ${file}`, `fsync ${file}`, `open ${dir}`, `fsync ${dir}`]);
    expect(loadOrCreateToken(file, io)).toBe(token);
  });
});

describe('a failing disk during the group commit', () => {
  const steps = commitSteps();
  let writes = 0;
  const cases: [string, number, Fault][] = steps.map((op, index) => {
    // Writes alternate between a torn write (half the bytes, then ENOSPC) and the kernel's ENOSPC at once.
    const fault: Fault = op.kind === 'write' ? (writes++ % 2 === 0 ? 'short-write' : 'enospc') : 'eio';
    return [`${op.kind} ${index + 1} of ${steps.length} (${storeOf(op)}, ${fault})`, index, fault];
  });

  it.each(cases)('a failure at %s leaves each store at its last commit, and the retried commit stores every record once', async (_name, step, fault) => {
    const dir = tempDir();
    const io = new FaultyFileOps();
    const { crawl, stage, stores } = open(dir, io);
    stage('a', BATCH);
    crawl.commit();
    stage('b', BATCH);
    io.reset();
    let counted = -1;
    io.rule = (op) => ((op.kind === 'write' || op.kind === 'fsync' || op.kind === 'rename') && ++counted === step ? fault : null);
    let failure: unknown = null;
    try {
      crawl.commit();
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(CommitFailure);
    const failedStore = storeOf(io.failed[0]!.op)!;
    expect((failure as CommitFailure).store.replace(/\/$/, '')).toBe(failedStore);
    expect((failure as CommitFailure).code).toBe(fault === 'eio' ? 'EIO' : 'ENOSPC');

    // A crash now: stores before the failing one hold batch b, those after it only a; the failing
    // store holds a, or a and b whole if its last step (the meta page, the directory entry) got through.
    const now = await onDisk(dir);
    const a = expected(['a']);
    const ab = expected(['a', 'b']);
    const failedAt = STORES.indexOf(failedStore);
    STORES.forEach((store, i) => {
      if (i < failedAt) expect(now[store], store).toEqual(ab[store]);
      else if (i > failedAt) expect(now[store], store).toEqual(a[store]);
      else expect([a[store], ab[store]], store).toContainEqual(now[store]);
    });

    // The disk works again: the same commit, retried, completes; nothing is stored twice.
    io.rule = null;
    crawl.commit();
    expect(await onDisk(dir)).toEqual(ab);
    stores.close();
    // And a restart finds exactly that.
    const reopened = open(dir);
    reopened.stores.close();
    expect(await onDisk(dir)).toEqual(ab);
  });
});
