/**
 * Property tests of the frontier on disk (frontier/frontier-store.ts behind frontier/frontier.ts)
 * against an in-memory model: random sequences of queueing, taking, settling, putting back, waiting
 * URLs, group commits and crashes, with a memory bound of a few URLs so that most URLs live on disk
 * only. A crash drops every object without closing it, sometimes after tearing a commit in the middle
 * of a write (a short write: the file's tail is torn), sometimes between the frontier's commit and the
 * crawl database's; the reopened frontier must then hold exactly the URLs the model says are due:
 * every URL queued by a commit that completed and not settled by a crawl database commit, each once.
 * The crawl database is the model's set of settled URLs (what `validate` asks it).
 */
import { rmSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Frontier, refillSlack, type OriginQueue, type QueuedUrl } from '../../queue-server/frontier/frontier.js';
import { FrontierStore } from '../../queue-server/frontier/frontier-store.js';
import { urlHash, urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import { FaultyFileOps } from '../support/faulty-file-ops.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`frontier-store-model fast-check seed ${seed} (set FC_SEED to replay)`);

const ORIGINS = ['http://a.test', 'http://b.test', 'http://c.test', 'http://d.test'];
const MEMORY_URLS = 6;
const T0 = 1_800_000_000_000;

type Step =
  | { op: 'add'; origin: number; depth: number; count: number }
  | { op: 'take'; origin: number; count: number }
  | { op: 'settle'; pick: number }
  | { op: 'back'; pick: number }
  | { op: 'wait'; id: number; inMs: number }
  | { op: 'due'; advanceMs: number }
  | { op: 'commit' }
  /** Kill: `torn` tears the n-th write of a frontier commit first; `frontierOnly` commits the frontier but not the crawl database. */
  | { op: 'crash'; torn: number | null; frontierOnly: boolean };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ op: fc.constant('add' as const), origin: fc.nat(ORIGINS.length - 1), depth: fc.nat(6), count: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('take' as const), origin: fc.nat(ORIGINS.length - 1), count: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('settle' as const), pick: fc.nat(1000) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('back' as const), pick: fc.nat(1000) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('wait' as const), id: fc.nat(40), inMs: fc.integer({ min: 0, max: 5000 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('due' as const), advanceMs: fc.integer({ min: 0, max: 3000 }) }) },
  { weight: 3, arbitrary: fc.constant({ op: 'commit' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant('crash' as const), torn: fc.option(fc.integer({ min: 0, max: 6 }), { nil: null }), frontierOnly: fc.boolean() }),
  },
);

interface Opened {
  store: FrontierStore;
  frontier: Frontier;
  io: FaultyFileOps;
}

function run(steps: Step[]): void {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-frontier-model-'));
  const file = join(dir, 'frontier.btree');
  try {
    // The model. Live URLs: queued (not taken) or out (taken, neither settled nor put back).
    const queued = new Map<string, number>(); // url -> origin index
    const out = new Map<string, { entry: QueuedUrl; origin: number }>();
    /** The most URLs out at once: given back, they return to memory whatever it holds. */
    let mostOut = 0;
    const settledSinceCommit = new Set<string>();
    /** The crawl database: URLs whose settlement it committed. */
    const done = new Set<string>();
    const addedSinceCommit = new Set<string>();
    const addedDurably = new Set<string>();
    let waiting: { id: number; at: number }[] = [];
    let waitingDurable: { id: number; at: number }[] = [];
    let next = 0;
    let now = T0;
    const hashOfId = (id: number): UrlHash => urlHash(`http://waiting.test/${id}` as NormalizedUrl);
    const idOfHash = new Map<string, number>();
    for (let id = 0; id <= 40; id++) idOfHash.set(urlHashHex(hashOfId(id)), id);

    const open = (): Opened => {
      const io = new FaultyFileOps();
      const store = FrontierStore.open(file, { io });
      const frontier = new Frontier({ concurrencyOf: () => 1 }, { store, memoryUrls: MEMORY_URLS, validate: (entry) => !done.has(entry.url) });
      frontier.restore(now, () => {});
      return { store, frontier, io };
    };
    const queueOf = (opened: Opened, origin: number): OriginQueue => opened.frontier.origin(ORIGINS[origin]!);
    const commit = (opened: Opened) => {
      opened.store.commit((id, count) => opened.frontier.storeDeleted(id, count));
      for (const url of addedSinceCommit) addedDurably.add(url);
      addedSinceCommit.clear();
      waitingDurable = [...waiting];
      opened.store.crawlDbCommitted();
      for (const url of settledSinceCommit) done.add(url);
      settledSinceCommit.clear();
    };

    let opened = open();
    for (const step of steps) {
      switch (step.op) {
        case 'add':
          for (let i = 0; i < step.count; i++) {
            const url = `${ORIGINS[step.origin]}/${next++}`;
            opened.frontier.add(ORIGINS[step.origin]!, url as NormalizedUrl, urlHash(url as NormalizedUrl), step.depth, now);
            queued.set(url, step.origin);
            addedSinceCommit.add(url);
          }
          break;
        case 'take':
          for (let i = 0; i < step.count; i++) {
            const entry = opened.frontier.take(queueOf(opened, step.origin));
            if (entry === undefined) {
              // Nothing handed out while the model has a URL of the origin queued: a URL would be lost.
              expect([...queued.values()].filter((origin) => origin === step.origin)).toEqual([]);
              break;
            }
            expect(queued.get(entry.url), `taken ${entry.url}, not queued (a duplicate or a settled URL)`).toBe(step.origin);
            queued.delete(entry.url);
            out.set(entry.url, { entry, origin: step.origin });
            mostOut = Math.max(mostOut, out.size);
          }
          break;
        case 'settle':
        case 'back': {
          if (out.size === 0) break;
          const [url, { entry, origin }] = [...out][step.pick % out.size]!;
          out.delete(url);
          if (step.op === 'settle') {
            opened.frontier.settle(entry);
            settledSinceCommit.add(url);
          } else {
            opened.frontier.push(queueOf(opened, origin), entry, now);
            queued.set(url, origin);
          }
          break;
        }
        case 'wait': {
          const at = now + step.inMs;
          opened.store.putWaiting(hashOfId(step.id), at);
          waiting.push({ id: step.id, at });
          break;
        }
        case 'due': {
          now += step.advanceMs;
          const due = opened.store.takeDue(now, 1_000_000).map((hash) => idOfHash.get(urlHashHex(hash))!);
          const expected = waiting.filter((w) => w.at <= now).map((w) => w.id);
          expect(due.sort((a, b) => a - b)).toEqual(expected.sort((a, b) => a - b));
          waiting = waiting.filter((w) => w.at > now);
          const nextDue = waiting.length === 0 ? null : Math.min(...waiting.map((w) => w.at));
          expect(opened.store.nextDueAt()).toBe(nextDue);
          break;
        }
        case 'commit':
          commit(opened);
          break;
        case 'crash': {
          if (step.frontierOnly) {
            // The frontier's commit reached the disk, the crawl database's did not.
            opened.store.commit((id, count) => opened.frontier.storeDeleted(id, count));
            for (const url of addedSinceCommit) addedDurably.add(url);
            waitingDurable = [...waiting];
          } else if (step.torn !== null) {
            const tornAt = step.torn;
            const txidBefore = opened.store.stats().txid;
            let writes = 0;
            opened.io.rule = (op) => (op.kind === 'write' && writes++ === tornAt ? 'short-write' : null);
            let completed = true;
            try {
              opened.store.commit((id, count) => opened.frontier.storeDeleted(id, count));
            } catch {
              completed = false;
            }
            // A torn commit leaves the file at its last complete commit, or at this one when the torn
            // write was of the meta page and its checksummed part reached the disk: the file says which.
            const reopened = FrontierStore.open(file);
            const durable = completed || reopened.stats().txid > txidBefore;
            reopened.close();
            if (durable) {
              for (const url of addedSinceCommit) addedDurably.add(url);
              waitingDurable = [...waiting];
            }
          }
          // Nothing is closed: the process is gone. What is due now is what the disk says.
          addedSinceCommit.clear();
          settledSinceCommit.clear();
          out.clear();
          queued.clear();
          for (const url of addedDurably) if (!done.has(url)) queued.set(url, ORIGINS.indexOf(new URL(url).origin));
          waiting = [...waitingDurable];
          opened = open();
          break;
        }
      }
      // Memory's bound: refills stop at memoryUrls plus the slack, and URLs given back from leases come
      // on top (each was taken from memory, so at most the most ever out at once).
      expect(opened.frontier.resident).toBeLessThanOrEqual(MEMORY_URLS + refillSlack(MEMORY_URLS) + mostOut);
      // Counts read back from the directory may include URLs settled before a kill until their origin is read.
      expect(opened.frontier.queued).toBeGreaterThanOrEqual(queued.size);
      expect(opened.store.waiting).toBe(waiting.length);
    }
    // Drain: every live URL comes out exactly once, and nothing else.
    for (const [url, { entry, origin }] of out) {
      opened.frontier.push(queueOf(opened, origin), entry, now);
      queued.set(url, origin);
    }
    const drained: string[] = [];
    for (let origin = 0; origin < ORIGINS.length; origin++) {
      for (let entry = opened.frontier.take(queueOf(opened, origin)); entry !== undefined; entry = opened.frontier.take(queueOf(opened, origin))) drained.push(entry.url);
    }
    expect(drained.sort()).toEqual([...queued.keys()].sort());
    expect(opened.frontier.queued).toBe(0);
    commit(opened);
    expect(opened.store.check().ok).toBe(true);
    opened.store.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('the frontier on disk against a model', () => {
  it('hands out every queued URL once, in memory or from disk, and keeps them over crashes and torn commits', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 120, size: 'max' }), (steps) => run(steps)),
      { seed, numRuns: 60 },
    );
  });

  it('reads an origin back in priority order when it was queued on disk only', () => {
    const dir = mkdtempSync(join(tmpdir(), 'petrel-frontier-order-'));
    try {
      const store = FrontierStore.open(join(dir, 'frontier.btree'));
      const frontier = new Frontier({ concurrencyOf: () => 1 }, { store, memoryUrls: 1 });
      // The first URL fills memory; the others are on disk only, queued deepest first.
      frontier.add('http://a.test', 'http://a.test/first' as NormalizedUrl, urlHash('http://a.test/first' as NormalizedUrl), 9, T0);
      for (const depth of [5, 4, 3, 2, 1]) {
        const url = `http://a.test/d${depth}` as NormalizedUrl;
        frontier.add('http://a.test', url, urlHash(url), depth, T0);
      }
      const queue = frontier.origin('http://a.test');
      const order: number[] = [];
      for (let entry = frontier.take(queue); entry !== undefined; entry = frontier.take(queue)) order.push(entry.depth);
      expect(order).toEqual([9, 1, 2, 3, 4, 5]);
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps a URL held in memory with its hash in no buffer: not the pool slab it was handed, not 8 bytes of its own', () => {
    const dir = mkdtempSync(join(tmpdir(), 'petrel-frontier-hash-'));
    try {
      const store = FrontierStore.open(join(dir, 'frontier.btree'));
      const frontier = new Frontier({ concurrencyOf: () => 1 }, { store, memoryUrls: 10 });
      const url = 'http://a.test/page' as NormalizedUrl;
      const handed = urlHash(url);
      const entry = frontier.add('http://a.test', url, handed, 0, T0)!;
      expect(urlHashHex(entry.hash)).toBe(urlHashHex(handed));
      // A pooled hash shares an 8 KiB ArrayBuffer, which the entry must not keep alive; and an array of
      // its own costs a few hundred bytes for 8 (frontier.ts ResidentUrl).
      expect(handed.buffer.byteLength).toBeGreaterThan(8);
      expect(Object.values(entry).filter((value) => ArrayBuffer.isView(value) || value instanceof ArrayBuffer)).toEqual([]);
      expect(entry.hash).not.toBe(entry.hash);
      expect(urlHashHex(entry.hash)).toBe(urlHashHex(handed));
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('settles a second copy of a URL read back while the first is pending, instead of queueing it twice', () => {
    const dir = mkdtempSync(join(tmpdir(), 'petrel-frontier-copy-'));
    try {
      const store = FrontierStore.open(join(dir, 'frontier.btree'));
      const pending = new Set<string>();
      const frontier = new Frontier(
        { concurrencyOf: () => 1 },
        { store, memoryUrls: 1, onResident: (entry) => pending.add(urlHashHex(entry.hash)), isPending: (hash) => pending.has(urlHashHex(hash)) },
      );
      frontier.add('http://a.test', 'http://a.test/first' as NormalizedUrl, urlHash('http://a.test/first' as NormalizedUrl), 0, T0);
      // On disk only: the same URL twice (queued again while its first copy was on disk, as releaseDue can), and another.
      const twice = 'http://a.test/twice' as NormalizedUrl;
      frontier.add('http://a.test', twice, urlHash(twice), 1, T0);
      frontier.add('http://a.test', twice, urlHash(twice), 1, T0);
      frontier.add('http://a.test', 'http://a.test/other' as NormalizedUrl, urlHash('http://a.test/other' as NormalizedUrl), 1, T0);
      const queue = frontier.origin('http://a.test');
      const taken: string[] = [];
      for (let entry = frontier.take(queue); entry !== undefined; entry = frontier.take(queue)) taken.push(entry.url);
      expect(taken).toEqual(['http://a.test/first', 'http://a.test/twice', 'http://a.test/other']);
      expect(frontier.queued).toBe(0);
      store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
