/**
 * The cache-validator store (queue-server/cache/cache-store.ts) on a real file: staged writes are visible at
 * once, reach the disk together in one B-Tree commit, and only once committed. Every test ends by
 * opening the file with BTree.open and requiring a clean consistency check.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import type { CacheRecord } from '../../queue-server/cache/cache-record.js';
import { CacheStore } from '../../queue-server/cache/cache-store.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';

const T = Date.UTC(2026, 0, 15, 12, 0, 0);

const dirs: string[] = [];
const open: CacheStore[] = [];

afterEach(() => {
  for (const store of open.splice(0)) {
    try {
      store.close();
    } catch {
      // Already closed by the test.
    }
  }
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-cache-store-'));
  dirs.push(dir);
  return dir;
}

function openStore(file: string): CacheStore {
  const store = CacheStore.open(file);
  open.push(store);
  return store;
}

function hashOf(n: number): UrlHash {
  return urlHash(`http://example.test/page/${n}`);
}

function record(n: number, fields: Partial<CacheRecord> = {}): CacheRecord {
  return {
    etag: `"etag-${n}"`,
    lastModified: 'Wed, 14 Jan 2026 08:00:00 GMT',
    cacheControl: 'max-age=600',
    expires: null,
    freshUntil: T + n,
    date: T - 1_000,
    storedAt: T,
    bodyBytes: 1_000 + n,
    ...fields,
  };
}

/** Every test ends here: the file, opened as a plain B-Tree, must pass the full consistency check. */
function expectCleanFile(file: string): void {
  const tree = BTree.open(file);
  try {
    const report = tree.check();
    expect(report.faults).toEqual([]);
    expect(report.ok).toBe(true);
  } finally {
    tree.close();
  }
}

describe('CacheStore', () => {
  it('shows a staged record to get before commit, without writing it to the tree', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    const txid = store.stats().txid;
    store.stage(hashOf(1), record(1));
    expect(store.get(hashOf(1))).toEqual(record(1));
    expect(store.stagedCount).toBe(1);
    expect(store.stats().keys).toBe(0);
    expect(store.stats().txid).toBe(txid);
    expect(store.get(hashOf(2))).toBeNull();
    store.close();
    expectCleanFile(file);
  });

  it('lets the latest staging of a URL win before commit', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(1), record(1));
    store.stage(hashOf(1), record(1, { etag: '"second"' }));
    expect(store.stagedCount).toBe(1);
    expect(store.get(hashOf(1))?.etag).toBe('"second"');
    store.commit();
    expect(store.get(hashOf(1))?.etag).toBe('"second"');
    store.close();
    expectCleanFile(file);
  });

  it('writes many staged records in exactly one B-Tree commit', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    const before = store.stats().txid;
    for (let n = 0; n < 600; n++) store.stage(hashOf(n), record(n));
    store.commit();
    const stats = store.stats();
    expect(stats.txid).toBe(before + 1);
    expect(stats.keys).toBe(600);
    expect(store.stagedCount).toBe(0);
    for (const n of [0, 299, 599]) expect(store.get(hashOf(n))).toEqual(record(n));
    store.close();
    expectCleanFile(file);
  });

  it('writes nothing when committing with nothing staged', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(1), record(1));
    store.commit();
    const txid = store.stats().txid;
    store.commit();
    expect(store.stats().txid).toBe(txid);
    store.close();
    expectCleanFile(file);
  });

  it('deletes a committed record when null is staged for it', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(1), record(1));
    store.stage(hashOf(2), record(2));
    store.commit();
    store.stage(hashOf(1), null);
    expect(store.get(hashOf(1))).toBeNull();
    expect(store.stats().keys).toBe(2);
    store.commit();
    expect(store.get(hashOf(1))).toBeNull();
    expect(store.get(hashOf(2))).toEqual(record(2));
    expect(store.stats().keys).toBe(1);
    store.close();

    const reopened = openStore(file);
    expect(reopened.get(hashOf(1))).toBeNull();
    expect(reopened.get(hashOf(2))).toEqual(record(2));
    reopened.close();
    expectCleanFile(file);
  });

  it('accepts a staged null for a URL that was never stored', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(7), null);
    store.stage(hashOf(8), record(8));
    store.commit();
    expect(store.get(hashOf(7))).toBeNull();
    expect(store.stats().keys).toBe(1);
    store.close();
    expectCleanFile(file);
  });

  it('finds committed records after close and reopen', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    for (let n = 0; n < 50; n++) store.stage(hashOf(n), record(n));
    store.commit();
    store.close();

    const reopened = openStore(file);
    expect(reopened.stats().keys).toBe(50);
    for (let n = 0; n < 50; n++) expect(reopened.get(hashOf(n))).toEqual(record(n));
    reopened.close();
    expectCleanFile(file);
  });

  it('commits staged records on close', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(1), record(1));
    store.close();

    const reopened = openStore(file);
    expect(reopened.get(hashOf(1))).toEqual(record(1));
    reopened.close();
    expectCleanFile(file);
  });

  it('keeps staged records off the disk until commit (a copy of the file taken before commit lacks them)', () => {
    const dir = tempDir();
    const file = path.join(dir, 'cache.btree');
    const snapshot = path.join(dir, 'before-commit.btree');
    const store = openStore(file);
    store.stage(hashOf(1), record(1));
    store.commit();
    store.stage(hashOf(2), record(2));
    store.stage(hashOf(1), record(1, { etag: '"changed"' }));
    // What a crash now would leave behind: the file as of the last commit.
    fs.copyFileSync(file, snapshot);
    store.commit();
    store.close();

    const crashed = openStore(snapshot);
    expect(crashed.get(hashOf(1))).toEqual(record(1));
    expect(crashed.get(hashOf(2))).toBeNull();
    expect(crashed.stats().keys).toBe(1);
    crashed.close();

    const committed = openStore(file);
    expect(committed.get(hashOf(1))?.etag).toBe('"changed"');
    expect(committed.get(hashOf(2))).toEqual(record(2));
    committed.close();
    expectCleanFile(snapshot);
    expectCleanFile(file);
  });

  it('stores records under the URL hash as an 8-byte B-Tree key', () => {
    const file = path.join(tempDir(), 'cache.btree');
    const store = openStore(file);
    store.stage(hashOf(3), record(3));
    store.close();

    const tree = BTree.open(file);
    try {
      expect(tree.get(hashOf(3))).not.toBeNull();
      expect(tree.get(hashOf(4))).toBeNull();
    } finally {
      tree.close();
    }
    expectCleanFile(file);
  });
});
