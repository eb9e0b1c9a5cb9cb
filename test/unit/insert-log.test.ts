/**
 * The crawl database's insert log (storage/insert-log.ts) and the map under it (storage/url-hash-map.ts):
 * random operation sequences against in-memory models, with a log small enough that sweeps into the
 * tree, new files and restarts (a reopen without close, as after a kill -9) happen within short runs;
 * a torn last frame is cut off on open; offline readers see the log's records.
 */
import { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { CrawlDbReader } from '../../queue-server/crawldb/crawl-db-reader.js';
import { checkCrawlDb } from '../../queue-server/crawldb/check.js';
import { newCrawlDbRecord, type CrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { STAGING_BYTES } from '../../queue-server/storage/staging-buffer.js';
import { UrlHashMap } from '../../queue-server/storage/url-hash-map.js';
import { urlHash, urlHashHex, type UrlHash } from '../../shared/url-hash.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`insert-log fast-check seed ${seed} (set FC_SEED to replay)`);

const POLICY = { initialIntervalMs: 86_400_000, minIntervalMs: 60_000, maxIntervalMs: 30 * 86_400_000, incRate: 0.4, decRate: 0.2, retryMax: 3, retryBackoffMs: 1000 } as never;
const NOW = Date.UTC(2026, 11, 4, 12, 0, 0);

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-insert-log-'));
  dirs.push(dir);
  return dir;
}

/** A crawl database in a fresh directory. */
function freshDb(options: Parameters<typeof CrawlDb.open>[1] = {}): { dir: string; path: string; db: CrawlDb } {
  const dir = tempDir();
  const path = join(dir, 'crawldb.btree');
  return { dir, path, db: CrawlDb.open(path, options) };
}

/** Stages new records for URLs from..to-1 (none known yet). */
function putNew(db: CrawlDb, from: number, to: number): void {
  for (let n = from; n < to; n++) db.put(urlHash(urlOf(n)), recordOf(n, 0), null);
}

function urlOf(n: number): string {
  return `http://127.0.0.${1 + (n % 7)}/page/${n}`;
}

function recordOf(n: number, version: number): CrawlDbRecord {
  const record = newCrawlDbRecord(urlOf(n), n % 5, 1 / (1 + n), NOW, POLICY);
  return version === 0 ? record : { ...record, status: 'fetched', lastFetchAt: NOW + version * 60_000, firstFetchAt: NOW, lastHttpStatus: 200 };
}

describe('UrlHashMap', () => {
  it('agrees with a Map through sets, replacements and deletions (backward shift keeps every entry findable)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('set', 'delete'), fc.integer({ min: 0, max: 300 }), fc.integer({ min: 0, max: 1000 })), { maxLength: 2000, size: 'max' }),
        (ops) => {
          const map = new UrlHashMap(4);
          const model = new Map<number, number>();
          // Few distinct low bits: long probe runs, wrapping at the table's end.
          const hiOf = (k: number) => (k === 0 ? 0 : (k * 2654435761) >>> 0);
          const loOf = (k: number) => (k === 0 ? 0 : k & 0xf);
          for (const [op, k, v] of ops) {
            if (op === 'set') {
              map.set(hiOf(k), loOf(k), { generation: v & 0xff, offset: v, length: v & 0xffff });
              model.set(k, v);
            } else expect(map.delete(hiOf(k), loOf(k))).toBe(model.delete(k));
          }
          expect(map.size).toBe(model.size);
          for (let k = 0; k <= 300; k++) {
            const span = map.get(hiOf(k), loOf(k));
            expect(span?.offset ?? null).toBe(model.get(k) ?? null);
          }
          let seen = 0;
          map.forEach(() => seen++);
          expect(seen).toBe(model.size);
        },
      ),
      { seed, numRuns: 100 },
    );
  });
});

type Op = { kind: 'put'; n: number } | { kind: 'update'; n: number } | { kind: 'commit' } | { kind: 'crash' } | { kind: 'reopen' };

/** Closes a database the test may have closed already (closing twice throws). */
function closeIfOpen(db: { close(): void }): void {
  try {
    db.close();
  } catch {
    // closed already
  }
}

/** Puts of URLs 0..urls (new, or again), updates of them, commits, kills and, with `reopens`, clean reopens. */
function opArbitrary(options: { urls: number; updateWeight: number; reopens: boolean }): fc.Arbitrary<Op> {
  const n = fc.integer({ min: 0, max: options.urls });
  return fc.oneof(
    { weight: 12, arbitrary: n.map((k) => ({ kind: 'put' as const, n: k })) },
    { weight: options.updateWeight, arbitrary: n.map((k) => ({ kind: 'update' as const, n: k })) },
    { weight: 3, arbitrary: fc.constant({ kind: 'commit' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
    ...(options.reopens ? [{ weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) }] : []),
  );
}

describe('CrawlDb with an insert log', () => {
  it('agrees with a model through new URLs, changes, commits, sweeps, clean reopens and kills', () => {
    const op = opArbitrary({ urls: 600, updateWeight: 4, reopens: true });
    /** The runs must reach what they are for: a sweep spread over commits, with two files live (a kill in one: the next test). */
    const reached = { longSweep: false };
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 400, size: 'max' }), fc.integer({ min: 8, max: 120 }), fc.integer({ min: 1, max: 40 }), (ops, logEntries, logSliceKeys) => {
        const dir = tempDir();
        const path = join(dir, 'crawldb.btree');
        const open = () => {
          const opened = CrawlDb.open(path, { logEntries, logSliceKeys, cachePages: 8 });
          opened.load(() => {}); // as the queue server does on start: the counts
          return opened;
        };
        let db = open();
        /** What is durable (committed) and what the open database shows (committed + staged): URL number -> version. */
        let durable = new Map<number, number>();
        let shown = new Map<number, number>();
        const hashOf = (n: number): UrlHash => urlHash(urlOf(n));
        const numberOf = new Map<string, number>();
        for (let n = 0; n <= 600; n++) numberOf.set(urlHashHex(hashOf(n)), n);
        try {
          for (const step of ops) {
            if (step.kind === 'put' || step.kind === 'update') {
              const hash = hashOf(step.n);
              const previous = db.get(hash);
              expect(previous === null).toBe(!shown.has(step.n));
              if (step.kind === 'put' && previous !== null) continue;
              const version = previous === null ? 0 : shown.get(step.n)! + 1;
              db.put(hash, recordOf(step.n, version), previous);
              shown.set(step.n, version);
            } else if (step.kind === 'commit') {
              db.commit();
              durable = new Map(shown);
            } else if (step.kind === 'crash') {
              // A kill -9: the open database is dropped unclosed (its descriptors leak until the test ends).
              db = open();
              shown = new Map(durable);
            } else {
              db.close();
              durable = new Map(shown);
              db = open();
            }
            if (step.kind !== 'put' && step.kind !== 'update') {
              // Contents: every key shows its latest version, in key order, nothing else.
              const listed = [...db.entries()].map(([hash, record]) => [numberOf.get(urlHashHex(hash))!, record] as const);
              expect(listed.map(([n]) => urlHashHex(hashOf(n)))).toEqual([...durable.keys()].map((n) => urlHashHex(hashOf(n))).sort());
              for (const [n, record] of listed) expect(record.lastFetchAt === null ? 0 : (record.lastFetchAt - NOW) / 60_000).toBe(durable.get(n));
              expect(db.size).toBe(shown.size);
              if (db.logStats().sweepLeft > 0 && db.logStats().files === 2) reached.longSweep = true;
            }
          }
          const sorted = [...new Set(ops.filter((o): o is { kind: 'put'; n: number } => o.kind === 'put').map((o) => o.n))].map(hashOf).sort(Buffer.compare);
          const has = db.hasSorted(sorted);
          sorted.forEach((hash, i) => expect(has[i]).toBe(shown.has(numberOf.get(urlHashHex(hash))!)));
          db.close();
          const report = checkCrawlDb(path);
          expect(report.faults).toEqual([]);
          expect(report.records).toBe(shown.size);
        } finally {
          closeIfOpen(db);
        }
      }),
      { seed, numRuns: 20 },
    );
    expect(reached).toEqual({ longSweep: true });
  });

  it('load hands every durable record over once at its latest version, reading the log in file order, and the database goes on as before', () => {
    const op = opArbitrary({ urls: 400, updateWeight: 5, reopens: false });
    /** Loads that met a key in both the tree and the log (a changed record, or a swept one, before a kill). */
    const reached = { inBoth: false };
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 300, size: 'max' }), fc.integer({ min: 8, max: 100 }), fc.integer({ min: 1, max: 30 }), (ops, logEntries, logSliceKeys) => {
        const dir = tempDir();
        const path = join(dir, 'crawldb.btree');
        const hashOf = (n: number): UrlHash => urlHash(urlOf(n));
        const numberOf = new Map<string, number>();
        for (let n = 0; n <= 400; n++) numberOf.set(urlHashHex(hashOf(n)), n);
        const versionOf = (record: CrawlDbRecord) => (record.lastFetchAt === null ? 0 : (record.lastFetchAt - NOW) / 60_000);
        let durable = new Map<number, number>();
        let shown = new Map<number, number>();
        /** Opens as the queue server does and checks what load handed over against the durable model. */
        const openAndLoad = (): CrawlDb => {
          const opened = CrawlDb.open(path, { logEntries, logSliceKeys, cachePages: 8 });
          const loggedBefore = opened.logStats().entries;
          const visited = new Map<number, number>();
          const loaded = opened.load((hash, record) => {
            const n = numberOf.get(urlHashHex(hash))!;
            expect(visited.has(n)).toBe(false);
            expect(record.url).toBe(urlOf(n));
            visited.set(n, versionOf(record));
          });
          expect(loaded).toBe(durable.size);
          expect(visited).toEqual(durable);
          if (opened.logStats().entries < loggedBefore) reached.inBoth = true;
          const counts = opened.countsByStatus();
          expect(counts.fetched).toBe([...durable.values()].filter((version) => version > 0).length);
          expect(counts.unfetched).toBe([...durable.values()].filter((version) => version === 0).length);
          return opened;
        };
        let db = openAndLoad();
        try {
          for (const step of ops) {
            if (step.kind === 'put' || step.kind === 'update') {
              const hash = hashOf(step.n);
              const previous = db.get(hash);
              if (step.kind === 'put' && previous !== null) continue;
              const version = previous === null ? 0 : shown.get(step.n)! + 1;
              db.put(hash, recordOf(step.n, version), previous);
              shown.set(step.n, version);
            } else if (step.kind === 'commit') {
              db.commit();
              durable = new Map(shown);
            } else {
              // A kill -9: dropped unclosed, opened and loaded again.
              db = openAndLoad();
              shown = new Map(durable);
            }
          }
          // After a load the log goes on: new records, changes and sweeps to the end of every file.
          for (let round = 0; round < 400 && (db.logStats().sweepLeft > 0 || db.logStats().files > 1); round++) {
            const n = 401 + round;
            db.put(hashOf(n), recordOf(n, 0), null);
            numberOf.set(urlHashHex(hashOf(n)), n);
            shown.set(n, 0);
            db.commit();
          }
          durable = new Map(shown);
          for (const [n, version] of durable) expect(versionOf(db.get(hashOf(n))!)).toBe(version);
          db.close();
          db = openAndLoad();
          db.close();
          expect(checkCrawlDb(path)).toMatchObject({ faults: [], records: durable.size });
        } finally {
          closeIfOpen(db);
        }
      }),
      { seed, numRuns: 30 },
    );
    expect(reached).toEqual({ inBoth: true });
  });

  it('puts new URLs in the log, not the tree, and sweeps them into the tree once the log is half full', () => {
    const { dir, db } = freshDb({ logEntries: 1000 });
    putNew(db, 0, 400);
    db.commit();
    expect(db.stats().keys).toBe(0);
    expect(db.logStats().entries).toBe(400);
    putNew(db, 400, 600);
    db.commit(); // 600 logged: a new file, and the old one's first slice (all 600: at least 2,048 a slice)
    expect(db.stats().keys).toBe(600);
    expect(db.logStats()).toMatchObject({ entries: 0, files: 1, sweepLeft: 0 });
    expect(readdirSync(dir).filter((name) => name.startsWith('crawldb.inserts-'))).toEqual(['crawldb.inserts-2']);
    db.close();
  });

  it('after a kill in the middle of a sweep, shows every record at its latest, then finishes the sweep and deletes the swept file', () => {
    const dir = tempDir();
    const path = join(dir, 'crawldb.btree');
    const open = () => {
      const opened = CrawlDb.open(path, { logEntries: 100, logSliceKeys: 5 });
      opened.load(() => {});
      return opened;
    };
    const db = open();
    const latest = new Map<number, number>();
    const put = (target: CrawlDb, n: number) => {
      const hash = urlHash(urlOf(n));
      const previous = target.get(hash);
      const version = previous === null ? 0 : latest.get(n)! + 1;
      target.put(hash, recordOf(n, version), previous);
      latest.set(n, version);
    };
    for (let n = 0; n < 60; n++) put(db, n);
    db.commit(); // 60 logged, half of 100: a second file, and 5 keys swept
    expect(db.logStats()).toMatchObject({ files: 2, sweepLeft: 55 });
    for (let n = 60; n < 70; n++) put(db, n); // to the second file
    for (const n of [0, 1, 2, 30, 31, 65]) put(db, n); // changed: to the tree, swept or not
    db.commit();
    expect(db.logStats().sweepLeft).toBe(50);
    // kill -9: dropped unclosed, opened again
    const again = open();
    expect(again.size).toBe(70);
    expect(again.logStats().files).toBe(2);
    const versionOf = (record: CrawlDbRecord) => (record.lastFetchAt === null ? 0 : (record.lastFetchAt - NOW) / 60_000);
    for (const [n, version] of latest) expect(versionOf(again.get(urlHash(urlOf(n)))!)).toBe(version);
    const listed = [...again.entries()];
    expect(listed.length).toBe(70);
    for (const [hash, record] of listed) expect(urlHashHex(urlHash(record.url))).toBe(urlHashHex(hash));
    for (let round = 0; round < 20 && again.logStats().files === 2; round++) {
      put(again, 100 + round);
      again.commit();
    }
    expect(again.logStats().files).toBe(1);
    expect(readdirSync(dir).filter((name) => name.startsWith('crawldb.inserts-'))).toEqual(['crawldb.inserts-2']);
    for (const [n, version] of latest) expect(versionOf(again.get(urlHash(urlOf(n)))!)).toBe(version);
    again.close();
    expect(checkCrawlDb(path)).toMatchObject({ ok: true, records: latest.size });
  });

  it('appends a commit window larger than the staging buffer, and a kill after it loses none of its records', () => {
    const { dir, path, db } = freshDb({ logEntries: 100_000 });
    putNew(db, 0, 20_000);
    db.commit();
    expect(statSync(join(dir, 'crawldb.inserts-1')).size).toBeGreaterThan(STAGING_BYTES);
    // kill -9: dropped unclosed, opened again
    const again = CrawlDb.open(path, { logEntries: 100_000 });
    expect(again.logStats()).toMatchObject({ entries: 20_000, cutBytes: 0 });
    for (let n = 0; n < 20_000; n++) expect(again.get(urlHash(urlOf(n)))).toEqual(recordOf(n, 0));
    again.close();
    expect(checkCrawlDb(path)).toMatchObject({ ok: true, records: 20_000 });
  });

  it('cuts a torn last frame on open and keeps every record before it', () => {
    const { dir, path, db } = freshDb();
    putNew(db, 0, 50);
    db.commit();
    const log = join(dir, 'crawldb.inserts-1');
    const whole = statSync(log).size;
    // A kill in the middle of the next append: a frame head promising more than was written.
    appendFileSync(log, Buffer.from([200, 0, 0, 0, 1, 2, 3, 4, 9, 9, 9]));
    const reader = CrawlDbReader.open(path);
    expect([...reader.entries()].length).toBe(50);
    reader.close();
    expect(statSync(log).size).toBe(whole + 11); // a reader cuts nothing
    const again = CrawlDb.open(path);
    expect(again.logStats()).toMatchObject({ entries: 50, cutBytes: 11 });
    expect(statSync(log).size).toBe(whole);
    for (let n = 0; n < 50; n++) expect(again.get(urlHash(urlOf(n)))?.url).toBe(urlOf(n));
    again.close();
  });

  it('with logEntries 0 writes every record to the tree at once, as before the log', () => {
    const { dir, db } = freshDb({ logEntries: 0 });
    putNew(db, 0, 20);
    db.commit();
    expect(db.stats().keys).toBe(20);
    expect(readdirSync(dir).some((name) => name.startsWith('crawldb.inserts-'))).toBe(false);
    db.close();
  });
});
