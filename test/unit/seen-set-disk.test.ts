/**
 * The seen-set's exact part on disk: the batched, sorted look-up of the B-Tree (BTree.hasSorted), the
 * crawl database's stage in front of it (StagedTree.hasSorted: admitted URLs not yet committed still
 * count as seen), and the SeenSet over the crawl database, each held against an in-memory model. A
 * URL must never be admitted twice, and a new one never refused, whatever the Bloom filter answers and
 * wherever a commit or a crash (reopen without committing) falls.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTree, BTreeError } from '../../queue-server/btree/index.js';
import { crawlDbExactStore, SeenSet } from '../../queue-server/admission/seen-set.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { DEFAULT_FETCH_SCHEDULE } from '../../queue-server/crawl-config.js';
import { newCrawlDbRecord } from '../../queue-server/crawldb/record.js';
import { urlHash, urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import { key, tempFile, withTempFile } from '../support/btree-helpers.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`seen-set-disk fast-check seed ${seed} (set FC_SEED to replay)`);

const sortKeys = (keys: Uint8Array[]): Uint8Array[] => [...keys].sort((a, b) => Buffer.compare(a, b));

describe('BTree.hasSorted', () => {
  it('answers a sorted batch exactly as one look-up per key would, across leaves and levels (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 20_000 }), { maxLength: 1_500, size: 'max' }),
        fc.array(fc.integer({ min: -5, max: 20_005 }), { maxLength: 600, size: 'max' }),
        (stored, asked) =>
          withTempFile((file) => {
            // 1 KiB pages and 40-byte values: a few dozen keys per leaf, so batches cross many leaves.
            const tree = BTree.open(file, { pageSize: 1024 });
            try {
              tree.write((batch) => {
                for (const n of stored) batch.put(key(n * 7), new Uint8Array(40).fill(n & 0xff));
              });
              const model = new Set(stored.map((n) => n * 7));
              const keys = sortKeys(asked.map((n) => key(Math.max(0, n))));
              const expected = keys.map((k) => model.has(Number(Buffer.from(k).readBigUInt64BE())));
              expect(tree.hasSorted(keys)).toEqual(expected);
              expect(tree.hasSorted(keys)).toEqual(keys.map((k) => tree.get(k) !== null));
            } finally {
              tree.close();
            }
          }),
      ),
      { seed, numRuns: 40 },
    );
  });

  it('refuses keys out of order rather than skip leaves', () => {
    const tree = BTree.open(tempFile());
    try {
      expect(() => tree.hasSorted([key(2), key(1)])).toThrow(BTreeError);
      expect(tree.hasSorted([])).toEqual([]);
    } finally {
      tree.close();
    }
  });
});

type Step = { kind: 'batch'; urls: number[] } | { kind: 'commit' } | { kind: 'crash' } | { kind: 'reopen' };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.array(fc.integer({ min: 0, max: 3_000 }), { minLength: 1, maxLength: 300, size: 'max' }).map((urls) => ({ kind: 'batch' as const, urls })) },
  { weight: 2, arbitrary: fc.constant({ kind: 'commit' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
);

const urlOf = (n: number): string => `http://host-${n % 97}.example/page/${n}`;

/** A SeenSet over the crawl database with a sloppy Bloom filter (many "maybe" answers), filled from the records as a start does. */
function openSeen(file: string): { db: CrawlDb; seen: SeenSet } {
  const db = CrawlDb.open(file);
  const seen = new SeenSet({ capacity: 50, falsePositiveRate: 0.3 }, crawlDbExactStore(db));
  db.load((hash) => seen.markKnown(hash));
  return { db, seen };
}

describe('SeenSet over the crawl database', () => {
  it('admits each URL once across batches, commits, kills before a commit and reopens (property, against a model)', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { maxLength: 25, size: 'max' }), (steps) =>
        withTempFile((file) => {
          let { db, seen } = openSeen(file);
          /** URLs durable in the crawl database; and those admitted since the last commit. */
          const committed = new Set<number>();
          let pending = new Set<number>();
          const abandoned: CrawlDb[] = [];
          try {
            for (const step of steps) {
              if (step.kind === 'batch') {
                const hashes = step.urls.map((n) => urlHash(urlOf(n)));
                const answers = seen.seenAmong(hashes);
                const admittedNow = new Set<number>();
                step.urls.forEach((n, i) => {
                  const known = committed.has(n) || pending.has(n);
                  // The batch's answer is as of its start; what the batch admitted itself the caller remembers.
                  expect(answers[i]).toBe(known && !admittedNow.has(n));
                  if (answers[i] || admittedNow.has(n)) return;
                  seen.addNew(hashes[i]!);
                  db.put(hashes[i]!, newCrawlDbRecord(urlOf(n), 0, 1, 0, DEFAULT_FETCH_SCHEDULE), null);
                  admittedNow.add(n);
                  pending.add(n);
                });
              } else if (step.kind === 'commit') {
                db.commit();
                for (const n of pending) committed.add(n);
                pending = new Set();
              } else if (step.kind === 'crash') {
                // kill -9 before the group commit: what was staged is lost, and must be new again.
                abandoned.push(db);
                ({ db, seen } = openSeen(file));
                pending = new Set();
              } else {
                db.close();
                for (const n of pending) committed.add(n);
                pending = new Set();
                ({ db, seen } = openSeen(file));
              }
            }
            const all = Array.from({ length: 3_001 }, (_, n) => n);
            const hashes = all.map((n) => urlHash(urlOf(n)));
            const answers = seen.seenAmong(hashes);
            expect(all.filter((n, i) => answers[i] !== (committed.has(n) || pending.has(n)))).toEqual([]);
            expect(seen.size).toBe(committed.size + pending.size);
            expect(db.check().ok).toBe(true);
          } finally {
            db.close();
          }
        }),
      ),
      { seed, numRuns: 30 },
    );
  });

  it('counts a URL admitted in the current commit window as seen before the commit, and after it', () => {
    const db = CrawlDb.open(tempFile('crawldb.btree'));
    try {
      // The crawl database's own answer: no recently seen URLs in front of it.
      const seen = new SeenSet({ capacity: 1000, falsePositiveRate: 0.001, recentUrls: 0 }, crawlDbExactStore(db));
      const hash = urlHash('http://a.example/');
      expect(seen.seenAmong([hash])).toEqual([false]);
      seen.addNew(hash);
      db.put(hash, newCrawlDbRecord('http://a.example/', 0, 1, 0, DEFAULT_FETCH_SCHEDULE), null);
      expect(seen.seenAmong([hash])).toEqual([true]);
      db.commit();
      expect(seen.seenAmong([hash, urlHash('http://b.example/')])).toEqual([true, false]);
      expect(seen.stats()).toMatchObject({ urls: 1, exactLookups: 2, bloomFalsePositives: 0 });
    } finally {
      db.close();
    }
  });

  it('confirms the "maybe" answers of a batch in one ordered pass of the tree', () => {
    const db = CrawlDb.open(tempFile('crawldb.btree'));
    try {
      const seen = new SeenSet({ capacity: 100_000, falsePositiveRate: 0.001, recentUrls: 0 }, crawlDbExactStore(db));
      const hashes: UrlHash[] = Array.from({ length: 5_000 }, (_, i) => urlHash(`http://h${i % 50}.example/${i}`));
      for (const hash of hashes) {
        seen.addNew(hash);
        db.put(hash, newCrawlDbRecord(`http://x.example/${urlHashHex(hash)}`, 0, 1, 0, DEFAULT_FETCH_SCHEDULE), null);
      }
      db.commit();
      const before = seen.stats();
      expect(seen.seenAmong(hashes).every((answer) => answer)).toBe(true);
      const after = seen.stats();
      expect(after.exactBatches - before.exactBatches).toBe(1);
      expect(after.exactLookups - before.exactLookups).toBe(5_000);
    } finally {
      db.close();
    }
  });

  it('confirms a URL known from the crawl database (a restart) in the tree once, then from the recently seen URLs', () => {
    const path = tempFile('crawldb.btree');
    const hashes: UrlHash[] = Array.from({ length: 3_000 }, (_, i) => urlHash(`http://h${i % 30}.example/${i}`));
    const fresh: UrlHash[] = Array.from({ length: 3_000 }, (_, i) => urlHash(`http://new${i % 30}.example/${i}`));
    const first = CrawlDb.open(path);
    try {
      for (const hash of hashes) first.put(hash, newCrawlDbRecord(`http://x.example/${urlHashHex(hash)}`, 0, 1, 0, DEFAULT_FETCH_SCHEDULE), null);
      first.commit();
    } finally {
      first.close();
    }
    const db = CrawlDb.open(path);
    try {
      const seen = new SeenSet({ capacity: 100_000, falsePositiveRate: 0.001, recentUrls: 1_000 }, crawlDbExactStore(db));
      for (const hash of hashes) seen.markKnown(hash);
      const batch = [...hashes, ...fresh];
      const expected = batch.map((_, i) => i < hashes.length);
      expect(seen.seenAmong(batch)).toEqual(expected);
      const once = seen.stats();
      // Marked known on start is not remembered as met: the tree confirms all 3,000 (and the filter's false positives among the new).
      expect(once.exactLookups).toBe(3_000 + once.bloomFalsePositives);
      expect(once.recentHits).toBe(0);
      expect(seen.seenAmong(batch)).toEqual(expected);
      const twice = seen.stats();
      // Asked again: the 1,000 to 2,000 last confirmed answer from memory, the rest from the tree, the new ones are still new.
      expect(twice.recentHits - once.recentHits).toBeGreaterThanOrEqual(1_000);
      expect(twice.recentHits - once.recentHits + (twice.exactLookups - once.exactLookups) - (twice.bloomFalsePositives - once.bloomFalsePositives)).toBe(3_000);
    } finally {
      db.close();
    }
  });
});
