/**
 * The duplicate indexes on disk (queue-server/crawldb/duplicate-store.ts) give the answers of the
 * in-memory indexes they replaced (queue-server/crawldb/near-duplicates.ts, the model here) through
 * adds, removals, commits, band log sweeps and reopens: the oldest original with the same signature, and the oldest
 * within 3 bits of a simhash that is older than the page asking. Stale entries (a kill between this
 * file's commit and the crawl database's) are dropped when the crawl database's record denies them.
 * New band entries go through the band log (queue-server/crawldb/band-log.ts): the property runs with
 * generations of a few entries and sweeps spread over several commits, and a kill keeps what the log
 * had written.
 */
import { appendFileSync, existsSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DUPLICATES_CACHE_BYTES, DUPLICATES_STAGE_MAX, DuplicateStore } from '../../queue-server/crawldb/duplicate-store.js';
import { NearDuplicateIndex, SignatureIndex } from '../../queue-server/crawldb/near-duplicates.js';
import { BTree } from '../../queue-server/btree/index.js';
import { tempFile, withTempFile } from '../support/btree-helpers.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`duplicate-store fast-check seed ${seed} (set FC_SEED to replay)`);

const BASES = [0x0123456789abcdefn, 0xfedcba9876543210n, 0x0f0f0f0f0f0f0f0fn, 0x0123456700000000n];
const simhashOf = (base: number, flips: readonly number[]): string => {
  let value = BASES[base % BASES.length]!;
  for (const bit of flips) value ^= 1n << BigInt(bit);
  return value.toString(16).padStart(16, '0');
};
const urlHex = (n: number): string => n.toString(16).padStart(16, '0');
const signatureOf = (n: number): string => `00000000000000${n.toString(16).padStart(2, '0')}`;

type Op =
  | { kind: 'index'; url: number; signature: number; base: number; flips: number[] }
  | { kind: 'unindex'; url: number }
  | { kind: 'ask'; url: number; signature: number; base: number; flips: number[] }
  | { kind: 'commit'; force: boolean }
  | { kind: 'reopen' }
  | { kind: 'flush' };

// Few URLs, signatures and simhash families, few bits flipped: most asks have several candidates.
const fingerprint = { url: fc.integer({ min: 0, max: 12 }), signature: fc.integer({ min: 0, max: 4 }), base: fc.integer({ min: 0, max: 2 }), flips: fc.array(fc.integer({ min: 0, max: 63 }), { maxLength: 4 }) };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('index' as const), ...fingerprint }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('unindex' as const), url: fc.integer({ min: 0, max: 12 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('ask' as const), ...fingerprint }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('commit' as const), force: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reopen' as const }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'flush' as const }) },
);
/** Band log generations of a few entries and sweeps of a few buckets a commit (a sweep then spans several commits), or the defaults. */
const bandLogArb = fc.constantFrom({}, { bandLogEntries: 1, bandSweepBuckets: 40_000 }, { bandLogEntries: 3, bandSweepBuckets: 70_000 }, { bandLogEntries: 8, bandSweepBuckets: 262_144 }, { bandLogEntries: 5 });

describe('DuplicateStore', () => {
  it('answers as the in-memory indexes do through adds, removals, commits, band log sweeps and reopens (property, against the model)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 30, maxLength: 150, size: 'max' }), bandLogArb, (ops, bandLog) =>
        withTempFile((file) => {
          let store = DuplicateStore.open(file, bandLog);
          const signatures = new SignatureIndex();
          const near = new NearDuplicateIndex();
          /** What each URL is indexed under now, as the crawl database's record would say. */
          const indexed = new Map<string, { signature: string; simhash: string }>();
          const always = () => true;
          try {
            for (const op of ops) {
              if (op.kind === 'index' || op.kind === 'unindex') {
                const url = urlHex(op.url);
                const current = indexed.get(url);
                if (current !== undefined) {
                  signatures.remove(current.signature, url);
                  near.remove(url, current.simhash);
                  store.removeSignature(current.signature, url);
                  store.removeNear(url, current.simhash);
                  indexed.delete(url);
                }
                if (op.kind === 'index') {
                  const next = { signature: signatureOf(op.signature), simhash: simhashOf(op.base, op.flips) };
                  signatures.add(next.signature, url);
                  near.add(url, next.simhash);
                  store.addSignature(next.signature, url);
                  store.addNear(url, next.simhash);
                  indexed.set(url, next);
                }
              } else if (op.kind === 'ask') {
                const url = urlHex(op.url);
                const signature = signatureOf(op.signature);
                const simhash = simhashOf(op.base, op.flips);
                expect(store.findSignature(signature, url, always)).toBe(signatures.find(signature, url));
                expect(store.findNear(simhash, url, indexed.get(url)?.simhash ?? null, always)).toBe(near.findNear(simhash, url));
              } else if (op.kind === 'commit') {
                store.commitSome(op.force);
              } else if (op.kind === 'flush') {
                // A group commit that is not the tree's: the band log's frames are written, the stage kept.
                store.commitSome(false);
              } else {
                store.close();
                store = DuplicateStore.open(file, bandLog);
              }
            }
            expect(store.check().ok).toBe(true);
          } finally {
            store.close();
          }
        }),
      ),
      { seed, numRuns: 60 },
    );
  });

  it('commits before the 20th group commit once DUPLICATES_STAGE_MAX changes are staged, and not with fewer', () => {
    const store = DuplicateStore.open(tempFile('duplicates.btree'));
    try {
      // Signatures spread over the key space: a staged key each.
      const signature = (n: number) => ((BigInt(n + 1) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn).toString(16).padStart(16, '0');
      for (let n = 0; n < 10; n++) store.addSignature(signature(n), urlHex(n));
      store.commitSome();
      expect(store.stats().txid).toBe(0);
      for (let n = 10; n < DUPLICATES_STAGE_MAX; n++) store.addSignature(signature(n), urlHex(n));
      expect(store.stagedCount).toBeGreaterThanOrEqual(DUPLICATES_STAGE_MAX);
      store.commitSome();
      expect(store.stats().txid).toBe(1);
      expect(store.stagedCount).toBe(0);
    } finally {
      store.close();
    }
  });

  it('makes 4 KiB pages, keeps a file made with 16 KiB pages at its size with the same 16 MiB of cache, and fits a full signature key in either', () => {
    const fresh = DuplicateStore.open(tempFile('duplicates.btree'));
    const oldPath = tempFile('duplicates.btree');
    BTree.open(oldPath, { pageSize: 16 * 1024 }).close();
    const old = DuplicateStore.open(oldPath);
    try {
      expect(DUPLICATES_CACHE_BYTES).toBe(16 * 2 ** 20);
      expect(fresh.stats()).toMatchObject({ pageSize: 4096, cacheCapacity: 4096 });
      expect(old.stats()).toMatchObject({ pageSize: 16 * 1024, cacheCapacity: 1024 });
      for (const store of [fresh, old]) {
        // 70 pages with one signature: the key's value stops growing at its bound and still fits a leaf.
        for (let n = 0; n < 70; n++) store.addSignature(signatureOf(7), urlHex(n));
        store.commitSome(true);
        expect(store.findSignature(signatureOf(7), urlHex(999), () => true)).toBe(urlHex(0));
      }
    } finally {
      fresh.close();
      old.close();
    }
  });

  it('drops an entry the record of its page denies, and answers with the next original', () => {
    const store = DuplicateStore.open(tempFile('duplicates.btree'));
    try {
      const simhash = simhashOf(0, []);
      store.addNear(urlHex(1), simhash);
      store.addNear(urlHex(2), simhashOf(0, [5]));
      store.addSignature(signatureOf(1), urlHex(1));
      store.addSignature(signatureOf(1), urlHex(2));
      const stale = (hex: string) => hex !== urlHex(1);
      expect(store.findNear(simhash, urlHex(9), null, stale)).toBe(urlHex(2));
      expect(store.findSignature(signatureOf(1), urlHex(9), stale)).toBe(urlHex(2));
      // Gone for good: asked again without the check, the stale page is not named.
      expect(store.findNear(simhash, urlHex(9), null, () => true)).toBe(urlHex(2));
      expect(store.findSignature(signatureOf(1), urlHex(9), () => true)).toBe(urlHex(2));
    } finally {
      store.close();
    }
  });

  it('logs near-duplicate entries instead of staging them in the tree, and puts them in the tree bucket by bucket in a sweep', () => {
    const file = tempFile('duplicates.btree');
    // Generations of 100 entries, sweeps of 65,536 buckets (one band) a commit: four commits a sweep.
    let store = DuplicateStore.open(file, { bandLogEntries: 100, bandSweepBuckets: 65_536 });
    const simhashes = Array.from({ length: 250 }, (_, n) => (BigInt(n + 1) * 0x9e3779b97f4a7c15n & 0xffffffffffffffffn).toString(16).padStart(16, '0'));
    try {
      for (let n = 0; n < 100; n++) store.addNear(urlHex(n), simhashes[n]!);
      // One staged key (the next age), whatever the number of entries.
      expect(store.stagedCount).toBe(1);
      expect(store.bandLogStats()).toMatchObject({ entries: 100, files: 1, sweepBucketsLeft: 0 });
      store.commitSome(true);
      // Full: a second generation begun and the first swept a band at a time.
      expect(store.bandLogStats()).toMatchObject({ files: 2, sweepBucketsLeft: 3 * 65_536 });
      for (let n = 100; n < 150; n++) store.addNear(urlHex(n), simhashes[n]!);
      store.commitSome(true);
      store.commitSome(true);
      expect(store.bandLogStats()).toMatchObject({ files: 2, sweepBucketsLeft: 65_536 });
      // Half swept: every entry still answers, from the tree or the log.
      for (let n = 0; n < 150; n++) expect(store.findNear(simhashes[n]!, urlHex(999), null, () => true)).toBe(urlHex(n));
      store.commitSome(true);
      expect(store.bandLogStats()).toMatchObject({ entries: 50, files: 1, sweepBucketsLeft: 0 });
      // The 100 swept entries are the tree's: four keys each (and the next age).
      let keys = 0;
      store.forEachCommitted(() => keys++);
      expect(keys).toBe(401);
      store.close();
      store = DuplicateStore.open(file, { bandLogEntries: 100, bandSweepBuckets: 65_536 });
      for (let n = 0; n < 150; n++) expect(store.findNear(simhashes[n]!, urlHex(999), null, () => true)).toBe(urlHex(n));
      expect(store.check().ok).toBe(true);
    } finally {
      store.close();
    }
  });

  it('keeps the entries whose frames were written through a kill, and cuts a torn last frame', () => {
    const file = tempFile('duplicates.btree');
    const first = DuplicateStore.open(file);
    const simhash = (n: number) => ((BigInt(n) * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn).toString(16).padStart(16, '0');
    for (let n = 1; n <= 30; n++) first.addNear(urlHex(n), simhash(n));
    // A group commit that is not the tree's writes the frames; then the process dies (no close, no tree commit).
    first.commitSome(false);
    first.addNear(urlHex(31), simhash(31));
    const bandFile = join(dirname(file), 'duplicates.bands-1');
    // A torn frame at the end, as a kill in the middle of a write leaves it.
    appendFileSync(bandFile, Buffer.alloc(13, 0xab));
    const second = DuplicateStore.open(file);
    try {
      for (let n = 1; n <= 30; n++) expect(second.findNear(simhash(n), urlHex(999), null, () => true)).toBe(urlHex(n));
      // The entry added after the last write was lost with the process, as the contract allows.
      expect(second.findNear(simhash(31), urlHex(999), null, () => true)).toBe(null);
      expect(second.bandLogStats()).toMatchObject({ entries: 30, cutBytes: 13 });
      // Ages go on above the logged ones: a new entry is the newest, the old ones answer first.
      second.addNear(urlHex(40), simhash(1));
      expect(second.findNear(simhash(1), urlHex(999), null, () => true)).toBe(urlHex(1));
      // Asked for the new page itself: the old one is older than it (an age handed out again would not be).
      expect(second.findNear(simhash(1), urlHex(40), simhash(1), () => true)).toBe(urlHex(1));
      expect(statSync(bandFile).size % 32).toBe(16);
    } finally {
      second.close();
    }
  });

  it('starts a new band log beside a new tree: files left from a deleted duplicates.btree are not read', () => {
    const file = tempFile('duplicates.btree');
    const first = DuplicateStore.open(file);
    first.addNear(urlHex(1), '0123456789abcdef');
    first.close();
    expect(existsSync(join(dirname(file), 'duplicates.bands-1'))).toBe(true);
    // The crawl database rebuilds the indexes from its records when duplicates.btree is missing.
    rmSync(file);
    const second = DuplicateStore.open(file);
    try {
      expect(second.findNear('0123456789abcdef', urlHex(999), null, () => true)).toBe(null);
      expect(second.bandLogStats()).toMatchObject({ entries: 0, files: 1 });
    } finally {
      second.close();
    }
  });
});
