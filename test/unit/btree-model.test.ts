/**
 * Property tests: random operation sequences against an in-memory Map model (keys as hex strings).
 * Small pages (1 KiB) and a tiny cache force splits, merges, refills, root changes and cache evictions
 * within short runs. Every run ends with the full consistency check and a comparison of the contents.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BTree, maxValueBytes } from '../../queue-server/btree/index.js';
import { dump, expectClean, fromHex, hex, withTempFile } from '../support/btree-helpers.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`btree-model fast-check seed ${seed} (set FC_SEED to replay)`);

/**
 * Fixed run counts, never a time limit: a loaded machine makes the file slower, never weaker (about
 * 3 s for both properties on a quiet machine; vitest's 60 s test timeout only stops a hung run).
 */
const RUNS_RANDOM = 60;
const RUNS_DEEP = 15;

const PAGE_SIZE = 1024;
const MAX = maxValueBytes(PAGE_SIZE);

/** Keys that exercise byte order: extremes, the sign bit, and neighbours. */
const EDGE_KEYS = [
  '0000000000000000',
  '0000000000000001',
  '00000000000000ff',
  '7fffffffffffffff',
  '8000000000000000',
  '8000000000000001',
  'ff00000000000000',
  'fffffffffffffffe',
  'ffffffffffffffff',
];

/** Keys from a pool of `pool` scattered values (so puts overwrite and deletes hit), edges, and random. */
function keysFrom(pool: number): fc.Arbitrary<string> {
  return fc
    .oneof(
      { weight: 1, arbitrary: fc.constantFrom(...EDGE_KEYS) },
      {
        weight: 4,
        arbitrary: fc
          .integer({ min: 0, max: pool })
          .map((n) => BigInt.asUintN(64, BigInt(n) * 0x9e3779b97f4a7c15n).toString(16)),
      },
      { weight: 2, arbitrary: fc.uint8Array({ minLength: 8, maxLength: 8 }).map(hex) },
    )
    .map((s) => s.padStart(16, '0'));
}

const keyArb = keysFrom(300);

const valueArb = fc
  .oneof(
    { weight: 3, arbitrary: fc.uint8Array({ maxLength: 12 }) },
    { weight: 2, arbitrary: fc.uint8Array({ minLength: 100, maxLength: MAX, size: 'max' }) },
    { weight: 1, arbitrary: fc.constant(new Uint8Array(MAX).fill(0xee)) },
  )
  .map(hex);

type Mutation = { op: 'put'; key: string; value: string } | { op: 'del'; key: string };

function mutationsOn(keys: fc.Arbitrary<string>): fc.Arbitrary<Mutation> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ op: fc.constant('put' as const), key: keys, value: valueArb }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('del' as const), key: keys }) },
  );
}

const mutationArb = mutationsOn(keyArb);

type Step =
  | Mutation
  | { op: 'batch'; ops: Mutation[]; abort: boolean }
  | { op: 'reopen'; cachePages: number }
  | { op: 'iter'; from: string | null; take: number }
  | { op: 'get'; key: string }
  /** One batch deleting every `every`-th key in key order: mass merges and root collapses. */
  | { op: 'drain'; every: number }
  /** forEachEntry over the whole tree, reading `probe` with get at every entry (evicting the page being walked) and trying a write inside. */
  | { op: 'walk'; probe: string }
  /** One batch: some mutations, then insertAbsentSorted of `entries` (sorted here), then reads of them. */
  | { op: 'insertAbsent'; before: Mutation[]; entries: { key: string; value: string }[] };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: mutationArb },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('batch' as const),
      ops: fc.array(mutationArb, { minLength: 0, maxLength: 60, size: 'medium' }),
      abort: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reopen' as const), cachePages: fc.integer({ min: 1, max: 16 }) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant('iter' as const),
      from: fc.option(keyArb, { nil: null }),
      take: fc.integer({ min: 1, max: 400 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('get' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('drain' as const), every: fc.integer({ min: 1, max: 3 }) }) },
);

function applyToModel(model: Map<string, string>, m: Mutation): boolean {
  if (m.op === 'put') {
    model.set(m.key, m.value);
    return true;
  }
  return model.delete(m.key);
}

function sortedModel(model: Map<string, string>): Map<string, string> {
  return new Map([...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function runSteps(steps: Step[]): void {
  withTempFile((file) => runStepsOn(file, steps));
}

function runStepsOn(file: string, steps: Step[]): void {
  let tree = BTree.open(file, { pageSize: PAGE_SIZE, cachePages: 4 });
  const model = new Map<string, string>();
  try {
    for (const step of steps) {
      switch (step.op) {
        case 'put':
          tree.put(fromHex(step.key), fromHex(step.value));
          applyToModel(model, step);
          break;
        case 'del':
          expect(tree.delete(fromHex(step.key))).toBe(model.has(step.key));
          applyToModel(model, step);
          break;
        case 'batch': {
          const staged = new Map(model);
          const write = (): void =>
            tree.write((b) => {
              for (const m of step.ops) {
                if (m.op === 'put') b.put(fromHex(m.key), fromHex(m.value));
                else expect(b.delete(fromHex(m.key))).toBe(staged.has(m.key));
                applyToModel(staged, m);
                expect(hex(b.get(fromHex(m.key)) ?? new Uint8Array())).toBe(staged.get(m.key) ?? '');
              }
              if (step.abort) throw new Error('abort batch');
            });
          if (step.abort) {
            expect(write).toThrow('abort batch');
          } else {
            write();
            for (const m of step.ops) applyToModel(model, m);
          }
          break;
        }
        case 'reopen':
          tree.close();
          tree = BTree.open(file, { create: false, cachePages: step.cachePages });
          expect(tree.stats().cachePages).toBe(0);
          break;
        case 'iter': {
          const got: string[] = [];
          for (const [k, v] of tree.entries(step.from === null ? {} : { from: fromHex(step.from) })) {
            got.push(`${hex(k)}=${hex(v)}`);
            if (got.length >= step.take) break;
          }
          const want = [...sortedModel(model).entries()]
            .filter(([k]) => step.from === null || k >= step.from)
            .slice(0, step.take)
            .map(([k, v]) => `${k}=${v}`);
          expect(got).toEqual(want);
          break;
        }
        case 'drain': {
          const doomed = [...sortedModel(model).keys()].filter((_, i) => i % step.every === 0);
          tree.write((b) => {
            for (const k of doomed) expect(b.delete(fromHex(k))).toBe(true);
          });
          for (const k of doomed) model.delete(k);
          break;
        }
        case 'get':
          expect(hex(tree.get(fromHex(step.key)) ?? new Uint8Array())).toBe(model.get(step.key) ?? '');
          break;
        case 'insertAbsent': {
          const sorted = [...new Map(step.entries.map((e) => [e.key, e.value]))].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
          let put = 0;
          tree.write((b) => {
            for (const m of step.before) {
              if (m.op === 'put') b.put(fromHex(m.key), fromHex(m.value));
              else b.delete(fromHex(m.key));
              applyToModel(model, m);
            }
            put = b.insertAbsentSorted(sorted.map(([k, v]) => [fromHex(k), fromHex(v)] as const));
            for (const [k] of sorted) expect(hex(b.get(fromHex(k)) ?? new Uint8Array())).toBe(model.get(k) ?? sorted.find(([key]) => key === k)![1]);
          });
          let absent = 0;
          for (const [k, v] of sorted) {
            if (model.has(k)) continue;
            model.set(k, v);
            absent++;
          }
          expect(put).toBe(absent);
          if (sorted.length > 1) expect(() => tree.write((b) => b.insertAbsentSorted([...sorted].reverse().map(([k, v]) => [fromHex(k), fromHex(v)] as const)))).toThrow(/not above/);
          break;
        }
        case 'walk': {
          const got: string[] = [];
          const walked = tree.forEachEntry((k, v) => {
            got.push(`${hex(k)}=${hex(v)}`);
            expect(hex(tree.get(fromHex(step.probe)) ?? new Uint8Array())).toBe(model.get(step.probe) ?? '');
            if (got.length === 1) expect(() => tree.put(fromHex(step.probe), new Uint8Array(1))).toThrow(/inside forEachEntry/);
          });
          expect(walked).toBe(model.size);
          expect(got).toEqual([...sortedModel(model).entries()].map(([k, v]) => `${k}=${v}`));
          break;
        }
      }
      expect(tree.stats().keys).toBe(model.size);
      expect(tree.stats().cachePages).toBeLessThanOrEqual(tree.stats().cacheCapacity);
    }
    expect(dump(tree)).toEqual(sortedModel(model));
    expectClean(tree);
    tree.close();
    // And the durable file says the same after a cold reopen.
    const again = BTree.open(file, { create: false });
    expect(dump(again)).toEqual(sortedModel(model));
    expectClean(again);
    again.close();
  } finally {
    tree.close();
  }
}

describe('BTree against a Map model', () => {
  it('agrees with the model over random put/delete/batch/reopen/iterate sequences', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80, size: 'medium' }), (steps) => runSteps(steps)),
      { seed, numRuns: RUNS_RANDOM },
    );
  });

  it('forEachEntry hands over every entry once in key order, as views that stay right while the visitor reads the tree', () => {
    const walkArb: fc.Arbitrary<Step> = fc.record({ op: fc.constant('walk' as const), probe: keyArb });
    const bulkArb = fc.record({ op: fc.constant('batch' as const), ops: fc.array(mutationArb, { minLength: 50, maxLength: 300, size: 'max' }), abort: fc.constant(false) });
    fc.assert(
      fc.property(bulkArb, fc.array(fc.oneof({ weight: 3, arbitrary: stepArb }, { weight: 2, arbitrary: walkArb }), { minLength: 1, maxLength: 40, size: 'medium' }), (bulk, steps) =>
        runSteps([bulk, ...steps]),
      ),
      { seed, numRuns: RUNS_RANDOM },
    );
  });

  it('insertAbsentSorted puts exactly the absent keys of a sorted run, a leaf at a time, splitting as single puts would', () => {
    const entryArb = fc.record({ key: keysFrom(3000), value: valueArb });
    const insertArb: fc.Arbitrary<Step> = fc.record({
      op: fc.constant('insertAbsent' as const),
      before: fc.array(mutationsOn(keysFrom(3000)), { maxLength: 20, size: 'max' }),
      entries: fc.array(entryArb, { minLength: 0, maxLength: 400, size: 'medium' }),
    });
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 2, arbitrary: stepArb }, { weight: 3, arbitrary: insertArb }), { minLength: 1, maxLength: 25, size: 'medium' }), (steps) => runSteps(steps)),
      { seed, numRuns: RUNS_RANDOM },
    );
  });

  it('agrees with the model when large batches build deep trees that are then drained', () => {
    const bulkArb = fc.array(
      fc.record({
        op: fc.constant('batch' as const),
        ops: fc.array(mutationsOn(keysFrom(3000)), { minLength: 300, maxLength: 600 }),
        abort: fc.constant(false),
      }),
      { minLength: 3, maxLength: 8 },
    );
    const teardownArb = fc.array(
      fc.oneof(
        fc.record({ op: fc.constant('del' as const), key: keyArb }),
        fc.record({ op: fc.constant('drain' as const), every: fc.integer({ min: 1, max: 3 }) }),
      ),
      { maxLength: 20 },
    );
    fc.assert(
      fc.property(bulkArb, teardownArb, fc.array(stepArb, { maxLength: 10 }), (bulk, teardown, tail) =>
        runSteps([...bulk, { op: 'reopen', cachePages: 3 }, ...teardown, ...tail]),
      ),
      { seed, numRuns: RUNS_DEEP },
    );
  });
});
