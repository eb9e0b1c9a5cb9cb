/**
 * The seen-set and its two parts: the scalable Bloom filter (queue-server/admission/bloom-filter.ts), the exact
 * hash set (queue-server/admission/url-hash-set.ts) and the SeenSet that puts one in front of the other
 * (queue-server/admission/seen-set.ts). What must never happen: a URL admitted twice, or a new URL dropped
 * because the filter said "maybe".
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { urlHash, urlHashFromHex, type UrlHash } from '../../shared/url-hash.js';
import { ScalableBloomFilter } from '../../queue-server/admission/bloom-filter.js';
import { RecentlySeen } from '../../queue-server/admission/recently-seen.js';
import { SeenSet, type ExactUrlStore } from '../../queue-server/admission/seen-set.js';
import { UrlHashSet } from '../../queue-server/admission/url-hash-set.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`seen-set fast-check seed ${seed} (set FC_SEED to replay)`);

function halves(hash: Uint8Array): [number, number] {
  const view = Buffer.from(hash.buffer, hash.byteOffset, 8);
  return [view.readUInt32BE(0), view.readUInt32BE(4)];
}

/** The two 32-bit halves of the URL hash of `prefix + i`, for i in [0, count). */
function hashHalves(prefix: string, count: number): Uint32Array {
  const out = new Uint32Array(count * 2);
  for (let i = 0; i < count; i++) {
    const [hi, lo] = halves(urlHash(`${prefix}${i}`));
    out[i * 2] = hi;
    out[i * 2 + 1] = lo;
  }
  return out;
}

function falsePositiveRate(filter: ScalableBloomFilter, probes: Uint32Array): number {
  let hits = 0;
  const count = probes.length / 2;
  for (let i = 0; i < count; i++) if (filter.mightContain(probes[i * 2]!, probes[i * 2 + 1]!)) hits++;
  return hits / count;
}

const hashArb = fc.uint8Array({ minLength: 8, maxLength: 8 });
const EDGE_HASHES = ['0000000000000000', '0000000000000001', '0000000100000000', 'ffffffffffffffff', '8000000000000000', '7fffffff80000000'];
const hashWithEdges = fc.oneof({ weight: 5, arbitrary: hashArb }, { weight: 1, arbitrary: fc.constantFrom(...EDGE_HASHES).map((hex) => new Uint8Array(Buffer.from(hex, 'hex'))) });

describe('ScalableBloomFilter', () => {
  it('never forgets an added hash (no false negatives), across stage growth', () => {
    fc.assert(
      fc.property(fc.array(hashWithEdges, { maxLength: 400, size: 'max' }), fc.integer({ min: 1, max: 50 }), fc.double({ min: 0.001, max: 0.9, noNaN: true }), (hashes, capacity, rate) => {
        const filter = new ScalableBloomFilter({ capacity, falsePositiveRate: rate });
        hashes.forEach((hash, index) => {
          filter.add(...halves(hash));
          // Everything added so far is still reported, not just the last one.
          for (let j = 0; j <= index; j += Math.max(1, index >> 3)) expect(filter.mightContain(...halves(hashes[j]!))).toBe(true);
        });
        for (const hash of hashes) expect(filter.mightContain(...halves(hash))).toBe(true);
        expect(filter.stats().items).toBe(hashes.length);
      }),
      { seed, numRuns: 150 },
    );
  });

  it('keeps the measured false-positive rate below the bound at its capacity (100k items, p = 0.01)', () => {
    const filter = new ScalableBloomFilter({ capacity: 100_000, falsePositiveRate: 0.01 });
    const added = hashHalves('http://added.example/page/', 100_000);
    for (let i = 0; i < 100_000; i++) filter.add(added[i * 2]!, added[i * 2 + 1]!);
    expect(filter.stats()).toMatchObject({ stages: 1, items: 100_000, falsePositiveRateBound: 0.01 });
    const rate = falsePositiveRate(filter, hashHalves('http://other.example/page/', 100_000));
    // The first stage is sized for p / 2, so the measured rate sits near 0.005.
    expect(rate).toBeLessThan(0.01);
    expect(rate).toBeGreaterThan(0);
  });

  it('adds stages when it outgrows its capacity and keeps the bound (8x capacity)', () => {
    const filter = new ScalableBloomFilter({ capacity: 10_000, falsePositiveRate: 0.01 });
    const added = hashHalves('http://grown.example/', 150_000);
    for (let i = 0; i < 150_000; i++) filter.add(added[i * 2]!, added[i * 2 + 1]!);
    // Stages of 10k, 20k, 40k and 80k items hold 150k.
    const stats = filter.stats();
    expect(stats.stages).toBe(4);
    expect(stats.items).toBe(150_000);
    expect(falsePositiveRate(filter, hashHalves('http://never-added.example/', 100_000))).toBeLessThan(0.01);
    let forgotten = 0;
    for (let i = 0; i < 150_000; i++) if (!filter.mightContain(added[i * 2]!, added[i * 2 + 1]!)) forgotten++;
    expect(forgotten).toBe(0);
  });

  it('starts a second stage exactly when the first holds its capacity', () => {
    const filter = new ScalableBloomFilter({ capacity: 100, falsePositiveRate: 0.1 });
    const added = hashHalves('http://x.example/', 101);
    for (let i = 0; i < 100; i++) filter.add(added[i * 2]!, added[i * 2 + 1]!);
    expect(filter.stats().stages).toBe(1);
    filter.add(added[200]!, added[201]!);
    expect(filter.stats().stages).toBe(2);
    expect(filter.stats().bytes).toBeGreaterThan(0);
  });

  it('answers "certainly not" for everything while empty', () => {
    const filter = new ScalableBloomFilter({ capacity: 1000, falsePositiveRate: 0.01 });
    expect(filter.mightContain(0, 0)).toBe(false);
    expect(filter.mightContain(0xffffffff, 0xffffffff)).toBe(false);
  });

  it.each([
    [{ capacity: 0, falsePositiveRate: 0.01 }],
    [{ capacity: Number.NaN, falsePositiveRate: 0.01 }],
    [{ capacity: 10, falsePositiveRate: 0 }],
    [{ capacity: 10, falsePositiveRate: 1 }],
    [{ capacity: 10, falsePositiveRate: Number.NaN }],
  ])('rejects impossible options %j with a RangeError', (options) => {
    expect(() => new ScalableBloomFilter(options)).toThrow(RangeError);
  });
});

describe('UrlHashSet', () => {
  it('is an exact set: matches a model set under any sequence of adds and look-ups', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 300 })), { maxLength: 600, size: 'max' }), fc.integer({ min: 0, max: 64 }), (ops, initialCapacity) => {
        // A small pool of hashes, spread over both halves and including the all-zero hash, so adds repeat.
        const pool = (n: number): [number, number] => (n === 0 ? [0, 0] : [(n * 0x9e3779b1) >>> 0 & 0xff, (n * 0x85ebca6b) >>> 0]);
        const set = new UrlHashSet(initialCapacity);
        const model = new Set<number>();
        const problems: string[] = [];
        for (const [isAdd, n] of ops) {
          const [hi, lo] = pool(n);
          if (isAdd && set.add(hi, lo) === model.has(n)) problems.push(`add ${n}`);
          if (isAdd) model.add(n);
          if (set.has(hi, lo) !== model.has(n)) problems.push(`has ${n} after op`);
        }
        for (let n = 0; n <= 300; n++) if (set.has(...pool(n)) !== model.has(n)) problems.push(`has ${n} at end`);
        expect(problems).toEqual([]);
        expect(set.size).toBe(model.size);
      }),
      { seed, numRuns: 200 },
    );
  });

  it('remembers the all-zero hash, which is also the empty-slot marker', () => {
    const set = new UrlHashSet(16);
    expect(set.has(0, 0)).toBe(false);
    expect(set.add(0, 0)).toBe(true);
    expect(set.add(0, 0)).toBe(false);
    expect(set.has(0, 0)).toBe(true);
    expect(set.size).toBe(1);
    // Hashes with one zero half are ordinary members.
    expect(set.has(0, 1)).toBe(false);
    expect(set.add(0, 1)).toBe(true);
    expect(set.add(1, 0)).toBe(true);
    expect(set.size).toBe(3);
  });

  it('grows past its initial capacity without losing a member', () => {
    const set = new UrlHashSet(1);
    const bytesBefore = set.bytes;
    const hashes = hashHalves('http://grow.example/', 50_000);
    let refused = 0;
    for (let i = 0; i < 50_000; i++) if (!set.add(hashes[i * 2]!, hashes[i * 2 + 1]!)) refused++;
    expect(refused).toBe(0);
    expect(set.size).toBe(50_000);
    expect(set.bytes).toBeGreaterThan(bytesBefore);
    // At most 70 % full: at least 50k / 0.7 slots of 8 bytes.
    expect(set.bytes).toBeGreaterThanOrEqual((50_000 / 0.7) * 8);
    let missing = 0;
    let readmitted = 0;
    for (let i = 0; i < 50_000; i++) if (!set.has(hashes[i * 2]!, hashes[i * 2 + 1]!)) missing++;
    for (let i = 0; i < 50_000; i++) if (set.add(hashes[i * 2]!, hashes[i * 2 + 1]!)) readmitted++;
    expect({ missing, readmitted, size: set.size }).toEqual({ missing: 0, readmitted: 0, size: 50_000 });
    const others = hashHalves('http://not-added.example/', 10_000);
    let phantom = 0;
    for (let i = 0; i < 10_000; i++) if (set.has(others[i * 2]!, others[i * 2 + 1]!)) phantom++;
    expect(phantom).toBe(0);
  });

  it('treats signed and unsigned spellings of a half as the same hash', () => {
    const set = new UrlHashSet();
    expect(set.add(-1, -2)).toBe(true);
    expect(set.has(0xffffffff, 0xfffffffe)).toBe(true);
    expect(set.add(0xffffffff, 0xfffffffe)).toBe(false);
  });

  it('copes with hashes that all land in one probe run', () => {
    // hi ^ lo is the same for all of them, so they collide on the first slot.
    const set = new UrlHashSet(16);
    for (let i = 1; i <= 200; i++) expect(set.add(i, i)).toBe(true);
    for (let i = 1; i <= 200; i++) expect(set.has(i, i)).toBe(true);
    expect(set.has(201, 201)).toBe(false);
    expect(set.size).toBe(200);
  });
});

describe('SeenSet', () => {
  it('admits every URL exactly once even when the Bloom filter answers "maybe" for new URLs', () => {
    // A tiny, sloppy filter (1000 items at p = 0.4) gives false positives by the thousand.
    const seen = new SeenSet({ capacity: 1000, falsePositiveRate: 0.4, recentUrls: 0 });
    const urls = Array.from({ length: 20_000 }, (_, i) => urlHash(`http://example.com/page/${i}`));
    const admittedFirst = urls.filter((hash) => seen.addIfNew(hash)).length;
    const admittedAgain = urls.filter((hash) => seen.addIfNew(hash)).length;
    expect({ admittedFirst, admittedAgain }).toEqual({ admittedFirst: 20_000, admittedAgain: 0 });
    const stats = seen.stats();
    expect(stats.bloomFalsePositives).toBeGreaterThan(0);
    expect(stats.urls).toBe(20_000);
    expect(seen.size).toBe(20_000);
    // Without the recently seen URLs, every second-round look-up and every false positive went to the exact store.
    expect(stats.exactLookups).toBe(20_000 + stats.bloomFalsePositives);
    expect(stats.recentHits).toBe(0);
    expect(stats.bloomStages).toBeGreaterThan(1);
    expect(stats.bloomFalsePositiveRateBound).toBe(0.4);
    expect(urls.every((hash) => seen.has(hash))).toBe(true);
  });

  it('answers the "maybe" of a URL met lately from the recently seen URLs, and only a false positive or a URL met longer ago asks the exact store', () => {
    const seen = new SeenSet({ capacity: 1000, falsePositiveRate: 0.4, recentUrls: 5_000 });
    const urls = Array.from({ length: 20_000 }, (_, i) => urlHash(`http://example.com/page/${i}`));
    expect(urls.filter((hash) => seen.addIfNew(hash)).length).toBe(20_000);
    const first = seen.stats();
    // The first round asked the exact store for false positives only (and each found the URL new).
    expect(first.exactLookups).toBe(first.bloomFalsePositives);
    expect(first.recentHits).toBe(0);
    // Asked again newest first: the last 10,000 admitted are remembered (two generations of 5,000), the rest are asked for.
    expect([...urls].reverse().filter((hash) => seen.addIfNew(hash)).length).toBe(0);
    const second = seen.stats();
    const recentHits = second.recentHits - first.recentHits;
    const exact = second.exactLookups - first.exactLookups;
    expect(recentHits).toBe(10_000);
    expect(exact).toBe(10_000);
    expect(second.bloomFalsePositives).toBe(first.bloomFalsePositives);
    expect(second.recentUrls).toBeLessThanOrEqual(10_000);
    // What the exact store confirmed is remembered in turn: the 5,000 it confirmed last need it no more.
    expect(urls.slice(0, 5_000).filter((hash) => seen.addIfNew(hash)).length).toBe(0);
    const third = seen.stats();
    expect(third.exactLookups).toBe(second.exactLookups);
    expect(third.recentHits - second.recentHits).toBe(5_000);
  });

  it('admits interleaved repeats once each, the recently seen URLs turning over all the while (property, against a model)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 500 }), { maxLength: 1500, size: 'max' }), fc.constantFrom(0, 1, 7, 64, 4096), (picks, recentUrls) => {
        const seen = new SeenSet({ capacity: 20, falsePositiveRate: 0.3, recentUrls });
        const model = new Set<number>();
        for (const n of picks) {
          const hash = urlHash(`http://example.com/${n}`);
          expect(seen.addIfNew(hash)).toBe(!model.has(n));
          model.add(n);
        }
        expect(seen.size).toBe(model.size);
        for (let n = 0; n <= 500; n++) expect(seen.has(urlHash(`http://example.com/${n}`))).toBe(model.has(n));
      }),
      { seed, numRuns: 60 },
    );
  });

  it('admits the all-zero hash once', () => {
    const seen = new SeenSet({ capacity: 1000, falsePositiveRate: 0.01 });
    const zero = urlHashFromHex('0000000000000000');
    expect(seen.has(zero)).toBe(false);
    expect(seen.addIfNew(zero)).toBe(true);
    expect(seen.addIfNew(zero)).toBe(false);
    expect(seen.has(zero)).toBe(true);
  });

  it('reads a hash that is a view into a larger buffer by its own 8 bytes', () => {
    const seen = new SeenSet({ capacity: 1000, falsePositiveRate: 0.01 });
    const backing = Buffer.alloc(24, 0x55);
    urlHashFromHex('0123456789abcdef').forEach((byte, i) => (backing[8 + i] = byte));
    expect(seen.addIfNew(backing.subarray(8, 16) as unknown as UrlHash)).toBe(true);
    expect(seen.addIfNew(urlHashFromHex('0123456789abcdef'))).toBe(false);
    expect(seen.has(urlHashFromHex('5555555555555555'))).toBe(false);
  });

  it('asks the exact store only when the filter says "maybe"', () => {
    let lookups = 0;
    const inner = new UrlHashSet();
    const counting: ExactUrlStore = {
      has: (hi, lo) => {
        lookups++;
        return inner.has(hi, lo);
      },
      add: (hi, lo) => inner.add(hi, lo),
      get size() {
        return inner.size;
      },
    };
    const seen = new SeenSet({ capacity: 10_000, falsePositiveRate: 0.001, recentUrls: 0 }, counting);
    for (let i = 0; i < 5000; i++) seen.addIfNew(urlHash(`http://example.com/${i}`));
    expect(lookups).toBe(seen.stats().exactLookups);
    expect(lookups).toBe(seen.stats().bloomFalsePositives);
    expect(lookups).toBeLessThan(50);
  });
});

describe('RecentlySeen', () => {
  it('never answers for a hash it was not given, always for the last generation of hashes given, and holds at most two generations (property, against a model)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 2000, size: 'max' }), fc.integer({ min: 1, max: 50 }), (picks, generation) => {
        const recent = new RecentlySeen(generation);
        const given = new Set<number>();
        /** Distinct hashes in the order they were last given. */
        const order: number[] = [];
        for (const n of picks) {
          const [hi, lo] = halves(urlHash(`http://example.com/${n}`));
          recent.add(hi, lo);
          given.add(n);
          const at = order.indexOf(n);
          if (at >= 0) order.splice(at, 1);
          order.push(n);
          expect(recent.size).toBeLessThanOrEqual(2 * generation);
        }
        for (let n = 0; n <= 300; n++) {
          const [hi, lo] = halves(urlHash(`http://example.com/${n}`));
          if (!given.has(n)) expect(recent.has(hi, lo)).toBe(false);
        }
        // A hash given again while in the current generation is not added twice, so the last
        // `generation` distinct hashes given are all still there.
        for (const n of order.slice(-generation)) {
          const [hi, lo] = halves(urlHash(`http://example.com/${n}`));
          expect(recent.has(hi, lo)).toBe(true);
        }
      }),
      { seed, numRuns: 100 },
    );
  });

  it('keeps its tables when a generation turns over: its bytes stop growing', () => {
    const recent = new RecentlySeen(1000);
    const probes = hashHalves('http://example.com/r/', 10_000);
    for (let i = 0; i < 2000; i++) recent.add(probes[i * 2]!, probes[i * 2 + 1]!);
    const bytes = recent.bytes;
    for (let i = 2000; i < 10_000; i++) recent.add(probes[i * 2]!, probes[i * 2 + 1]!);
    expect(recent.bytes).toBe(bytes);
    expect(recent.size).toBeLessThanOrEqual(2000);
    expect(recent.has(probes[0]!, probes[1]!)).toBe(false);
    expect(recent.has(probes[9_999 * 2]!, probes[9_999 * 2 + 1]!)).toBe(true);
  });
});
