/**
 * Cutting schedules (queue-server/frontier/schedule-cutter.ts) against a real Frontier, with `now` passed in.
 * The helpers below finish and expire slots the way the crawl does (the origin's robots state, then
 * `finishSlot`, which re-files it), so these tests pin the contract between the cutter and its caller.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Frontier, type OriginQueue, type QueuedUrl } from '../../queue-server/frontier/frontier.js';
import { rulesFromFetch, type RobotsRules } from '../../queue-server/robots/robots.js';
import { cutSchedule, type CutPolicy, type CutResult, type CutSlot } from '../../queue-server/frontier/schedule-cutter.js';
import { urlHash } from '../../shared/url-hash.js';
import { normalizeUrl } from '../../shared/url-normalize.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`schedule-cutter fast-check seed ${seed} (set FC_SEED to replay)`);

const T0 = 1_700_000_000_000;
const ROBOTS_POLICY = { userAgentToken: 'petrel', unreachableRetryMs: 600_000 };

function robotsFrom(origin: string, status: number | null, body: string | null, now: number): RobotsRules {
  return rulesFromFetch({ origin, status, errorCode: status === null ? 'connection-refused' : null, body }, ROBOTS_POLICY, now);
}

interface WorldOptions {
  /** Concurrency per origin; origins not named get `defaultConcurrency`. */
  concurrency?: Record<string, number>;
  defaultConcurrency?: number;
  delayMs?: number;
  slotUrls?: number;
}

/** A frontier plus the bookkeeping crawl.ts does around the cutter. */
class World {
  readonly frontier: Frontier;
  readonly #options: WorldOptions;

  constructor(options: WorldOptions = {}) {
    this.#options = options;
    this.frontier = new Frontier({ concurrencyOf: (queue) => this.concurrencyOf(queue) });
  }

  concurrencyOf(queue: OriginQueue): number {
    return this.#options.concurrency?.[queue.origin] ?? this.#options.defaultConcurrency ?? 1;
  }

  add(href: string, depth: number, now = T0): void {
    const result = normalizeUrl(href);
    if (!result.ok) throw new Error(`bad test URL ${href}`);
    this.frontier.add(result.origin, result.url, urlHash(result.url), depth, now);
  }

  /** Robots rules known before any slot is cut (as if fetched earlier). */
  knowRobots(origin: string, status: number | null = 404, body: string | null = null, now = T0): OriginQueue {
    const queue = this.frontier.origin(origin);
    queue.robots.know(robotsFrom(origin, status, body, now));
    this.frontier.reconsider(queue, now);
    return queue;
  }

  policy(overrides: Partial<Pick<CutPolicy, 'capacity' | 'liveFetchers' | 'budget'>> = {}): CutPolicy {
    return {
      capacity: overrides.capacity ?? 10,
      liveFetchers: overrides.liveFetchers ?? 1,
      budget: overrides.budget === undefined ? null : overrides.budget,
      userAgentToken: 'petrel',
      concurrencyOf: (queue) => this.concurrencyOf(queue),
      delayOf: () => this.#options.delayMs ?? 0,
      slotUrlsOf: () => this.#options.slotUrls ?? 32,
    };
  }

  cut(now = T0, overrides: Parameters<World['policy']>[0] = {}): CutResult {
    return cutSchedule(this.frontier, this.policy(overrides), now);
  }

  /** All results of a slot arrived (apply-results.ts #finishSlot, plus the robots rules for a robots slot). */
  finish(slot: CutSlot, now: number, robots: { status: number | null; body?: string | null } = { status: 404 }): void {
    const queue = slot.queue;
    if (slot.kind === 'robots') queue.robots.know(robotsFrom(queue.origin, robots.status, robots.body ?? null, now));
    queue.finishSlot(now, now + (this.#options.delayMs ?? 0));
  }

  /** The slot's lease ran out before any result (crawl.ts expireLeases). */
  expire(slot: CutSlot, now: number): void {
    const queue = slot.queue;
    if (slot.kind === 'robots') queue.robots.fetchLost();
    for (const entry of entriesOf(slot)) this.frontier.push(queue, entry, now);
    queue.finishSlot(now);
  }
}

/** The page URLs' frontier entries of a slot (none for a robots slot). */
const entriesOf = (slot: CutSlot): QueuedUrl[] => slot.items.flatMap((item) => (item.entry === null ? [] : [item.entry]));
const urlsOf = (slot: CutSlot): string[] => entriesOf(slot).map((entry) => entry.url);
const pageSlots = (result: CutResult): CutSlot[] => result.slots.filter((slot) => slot.kind === 'page');

describe('robots.txt first', () => {
  it('gives an unknown origin one robots slot and nothing else of it until its robots.txt is known', () => {
    const world = new World({ defaultConcurrency: 4 });
    for (let i = 0; i < 10; i++) world.add(`http://a.example/${i}`, 0);
    const first = world.cut(T0, { capacity: 10 });
    expect(first.slots).toHaveLength(1);
    expect(first.slots[0]).toMatchObject({ kind: 'robots', startAfterMs: 0 });
    expect(entriesOf(first.slots[0]!)).toEqual([]);
    expect(first.slots[0]!.queue.origin).toBe('http://a.example');
    expect(first.slots[0]!.queue.robotsState).toBe('fetching');
    expect(first.charged).toBe(0);

    // Further cuts, now or much later, hand out nothing of the origin while its robots.txt is out.
    expect(world.cut(T0).slots).toEqual([]);
    expect(world.cut(T0 + 3_600_000).slots).toEqual([]);
    expect(world.frontier.queued).toBe(10);

    world.finish(first.slots[0]!, T0 + 10);
    const after = world.cut(T0 + 10);
    expect(after.slots.length).toBeGreaterThan(0);
    expect(after.slots.every((slot) => slot.kind === 'page')).toBe(true);
  });

  it('gives every unknown origin its own robots slot, one per origin', () => {
    const world = new World({ defaultConcurrency: 4 });
    for (const host of ['a', 'b', 'c']) for (let i = 0; i < 3; i++) world.add(`http://${host}.example/${i}`, 0);
    const result = world.cut(T0, { capacity: 10 });
    expect(result.slots.map((slot) => [slot.kind, slot.queue.origin])).toEqual([
      ['robots', 'http://a.example'],
      ['robots', 'http://b.example'],
      ['robots', 'http://c.example'],
    ]);
  });

  it('asks again once the cached rules expire, before any further page of the origin', () => {
    const world = new World({ slotUrls: 1 });
    world.knowRobots('http://a.example', 404, null, T0);
    for (let i = 0; i < 3; i++) world.add(`http://a.example/${i}`, 0);
    const page = world.cut(T0);
    expect(pageSlots(page)).toHaveLength(1);
    world.finish(page.slots[0]!, T0 + 1);
    const expired = world.cut(T0 + 86_400_000);
    expect(expired.slots.map((slot) => slot.kind)).toEqual(['robots']);
  });

  it('re-asks for robots.txt when the robots slot lease expired', () => {
    const world = new World();
    world.add('http://a.example/', 0);
    const first = world.cut(T0);
    world.expire(first.slots[0]!, T0 + 60_000);
    expect(world.cut(T0 + 60_000).slots.map((slot) => slot.kind)).toEqual(['robots']);
  });
});

describe('order', () => {
  it('serves origins breadth-first: the shallowest head URL first, ties by admission order', () => {
    const world = new World({ slotUrls: 1 });
    for (const host of ['deep', 'shallow', 'middle', 'shallow2']) world.knowRobots(`http://${host}.example`);
    world.add('http://deep.example/a', 3);
    world.add('http://shallow.example/a', 0);
    world.add('http://middle.example/a', 1);
    world.add('http://shallow2.example/a', 0);
    const result = world.cut(T0, { capacity: 10 });
    expect(result.slots.map((slot) => slot.queue.origin)).toEqual([
      'http://shallow.example',
      'http://shallow2.example',
      'http://middle.example',
      'http://deep.example',
    ]);
  });

  it('takes the URLs of one origin breadth-first, ties by admission order', () => {
    const world = new World({ slotUrls: 10 });
    world.knowRobots('http://a.example');
    const depths: [string, number][] = [['d3', 3], ['d1a', 1], ['d2', 2], ['d0', 0], ['d1b', 1]];
    for (const [path, depth] of depths) world.add(`http://a.example/${path}`, depth);
    const result = world.cut(T0);
    expect(result.slots.flatMap(urlsOf)).toEqual(['d0', 'd1a', 'd1b', 'd2', 'd3'].map((p) => `http://a.example/${p}`));
  });

  it('moves an origin up when a shallower URL arrives', () => {
    const world = new World({ slotUrls: 1 });
    world.knowRobots('http://a.example');
    world.knowRobots('http://b.example');
    world.add('http://a.example/deep', 2);
    world.add('http://b.example/mid', 1);
    world.add('http://a.example/top', 0);
    expect(world.cut(T0, { capacity: 1 }).slots.flatMap(urlsOf)).toEqual(['http://a.example/top']);
  });
});

describe('politeness and fairness', () => {
  it('never has more slots of an origin out than its concurrency, across successive cuts', () => {
    const world = new World({ defaultConcurrency: 3, slotUrls: 2 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 40; i++) world.add(`http://a.example/${i}`, 0);
    const first = world.cut(T0, { capacity: 10 });
    expect(first.slots).toHaveLength(3);
    expect(first.slots[0]!.queue.slotsOut).toBe(3);
    expect(world.cut(T0 + 1, { capacity: 10 }).slots).toEqual([]);
    world.finish(first.slots[0]!, T0 + 2);
    const refill = world.cut(T0 + 2, { capacity: 10 });
    expect(refill.slots).toHaveLength(1);
    expect(refill.slots[0]!.queue.slotsOut).toBe(3);
  });

  it.each([
    [4, 2, [2, 2, 0]],
    [5, 2, [3, 2, 0]],
    [3, 5, [1, 1, 1, 0]],
    [4, 0, [4, 0]],
    [1, 3, [1, 0]],
  ])('at concurrency %i with %i live fetchers each schedule takes its fair share %j', (concurrency, liveFetchers, expected) => {
    const world = new World({ defaultConcurrency: concurrency, slotUrls: 1 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 50; i++) world.add(`http://a.example/${i}`, 0);
    const counts = expected.map(() => world.cut(T0, { capacity: 100, liveFetchers }).slots.length);
    expect(counts).toEqual(expected);
  });

  it('respects the capacity of the claiming fetcher, robots slots included', () => {
    const world = new World({ defaultConcurrency: 4, slotUrls: 1 });
    for (const host of ['a', 'b', 'c']) world.add(`http://${host}.example/x`, 0);
    expect(world.cut(T0, { capacity: 2 }).slots.map((slot) => slot.queue.origin)).toEqual(['http://a.example', 'http://b.example']);
    expect(world.cut(T0, { capacity: 2 }).slots.map((slot) => slot.queue.origin)).toEqual(['http://c.example']);

    const pages = new World({ defaultConcurrency: 8, slotUrls: 1 });
    pages.knowRobots('http://a.example');
    for (let i = 0; i < 20; i++) pages.add(`http://a.example/${i}`, 0);
    expect(pages.cut(T0, { capacity: 3 }).slots).toHaveLength(3);
  });

  it('puts at most slotUrls URLs into one slot', () => {
    const world = new World({ defaultConcurrency: 2, slotUrls: 3 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 10; i++) world.add(`http://a.example/${i}`, 0);
    const result = world.cut(T0);
    expect(result.slots.map((slot) => entriesOf(slot).length)).toEqual([3, 3]);
    expect(world.frontier.queued).toBe(4);
  });

  it('at concurrency 1 does not cut an origin before nextStartAt, and reports that time as the next wake-up', () => {
    const world = new World({ delayMs: 5000, slotUrls: 1 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 3; i++) world.add(`http://a.example/${i}`, 0);
    expect(world.frontier.nextWakeAt(T0)).toBeNull();
    const first = world.cut(T0);
    expect(first.slots).toHaveLength(1);
    world.finish(first.slots[0]!, T0 + 100);
    const due = T0 + 100 + 5000;
    expect(first.slots[0]!.queue.nextStartAt).toBe(due);
    expect(world.frontier.nextWakeAt(T0 + 100)).toBe(due);
    expect(world.cut(T0 + 100).slots).toEqual([]);
    expect(world.cut(due - 1).slots).toEqual([]);
    expect(world.frontier.nextWakeAt(due - 1)).toBe(due);
    const second = world.cut(due);
    expect(second.slots).toHaveLength(1);
    expect(second.slots[0]).toMatchObject({ kind: 'page', startAfterMs: 0, delayMs: 5000 });
    expect(world.frontier.nextWakeAt(due)).toBeNull();
  });

  it('reports the earliest of several waiting origins as the next wake-up', () => {
    const world = new World({ slotUrls: 1 });
    for (const host of ['a', 'b']) {
      const queue = world.knowRobots(`http://${host}.example`);
      queue.delayUntil(T0 + (host === 'a' ? 9000 : 4000), T0);
      world.add(`http://${host}.example/x`, 0);
    }
    expect(world.frontier.nextWakeAt(T0)).toBe(T0 + 4000);
    expect(world.cut(T0 + 4000).slots.map((slot) => slot.queue.origin)).toEqual(['http://b.example']);
    expect(world.frontier.nextWakeAt(T0 + 4000)).toBe(T0 + 9000);
  });
});

describe('robots verdicts', () => {
  it('returns URLs robots.txt forbids as denied with code robots-disallowed, and hands out the rest', () => {
    const world = new World({ slotUrls: 10 });
    world.knowRobots('http://a.example', 200, 'User-agent: *\nDisallow: /private/\n');
    for (const path of ['a', 'private/x', 'b', 'private/y']) world.add(`http://a.example/${path}`, 0);
    const result = world.cut(T0);
    expect(result.slots.flatMap(urlsOf)).toEqual(['http://a.example/a', 'http://a.example/b']);
    expect(result.denied.map(({ entry, code }) => [entry.url, code])).toEqual([
      ['http://a.example/private/x', 'robots-disallowed'],
      ['http://a.example/private/y', 'robots-disallowed'],
    ]);
    expect(result.charged).toBe(2);
    expect(world.frontier.queued).toBe(0);
  });

  it('denies every URL of an origin whose robots.txt was unreachable with code robots-unreachable', () => {
    const world = new World({ slotUrls: 2 });
    world.add('http://down.example/1', 0);
    world.add('http://down.example/2', 0);
    world.add('http://down.example/3', 0);
    const robots = world.cut(T0);
    world.finish(robots.slots[0]!, T0 + 5, { status: 503 });
    const result = world.cut(T0 + 5);
    expect(result.slots).toEqual([]);
    expect(result.denied.map(({ code }) => code)).toEqual(['robots-unreachable', 'robots-unreachable', 'robots-unreachable']);
    expect(result.charged).toBe(0);
  });

  it('does not count denied URLs against the budget', () => {
    const world = new World({ slotUrls: 10 });
    world.knowRobots('http://a.example', 200, 'User-agent: *\nDisallow: /no\n');
    for (const path of ['no1', 'no2', 'yes1', 'yes2', 'yes3']) world.add(`http://a.example/${path}`, 0);
    const result = world.cut(T0, { budget: 2 });
    expect(result.slots.flatMap(urlsOf)).toEqual(['http://a.example/yes1', 'http://a.example/yes2']);
    expect(result.charged).toBe(2);
  });
});

describe('budget (--max-pages)', () => {
  it('hands out no more page URLs than the budget, across slots and origins', () => {
    const world = new World({ defaultConcurrency: 3, slotUrls: 2 });
    for (const host of ['a', 'b']) {
      world.knowRobots(`http://${host}.example`);
      for (let i = 0; i < 10; i++) world.add(`http://${host}.example/${i}`, 0);
    }
    const result = world.cut(T0, { budget: 5, capacity: 10 });
    expect(result.slots.flatMap(urlsOf)).toHaveLength(5);
    expect(result.charged).toBe(5);
    expect(result.slots.every((slot) => entriesOf(slot).length > 0)).toBe(true);
    expect(world.cut(T0, { budget: 0, capacity: 10 }).slots).toEqual([]);
  });

  it('does not charge again for URLs re-pushed after an expired lease', () => {
    const world = new World({ slotUrls: 3 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 5; i++) world.add(`http://a.example/${i}`, 0);
    const first = world.cut(T0, { budget: 10 });
    expect(first.charged).toBe(3);
    expect(entriesOf(first.slots[0]!).every((entry) => entry.charged)).toBe(true);
    world.expire(first.slots[0]!, T0 + 60_000);
    const again = world.cut(T0 + 60_000, { budget: 7 });
    // The same three URLs, in their old place in line, and nothing new charged for them.
    expect(urlsOf(again.slots[0]!)).toEqual(urlsOf(first.slots[0]!));
    expect(again.charged).toBe(0);
    world.finish(again.slots[0]!, T0 + 60_001);
    const rest = world.cut(T0 + 60_001, { budget: 7 });
    expect(rest.charged).toBe(2);
  });

  it('hands out URLs back from an expired lease even when the budget is spent, and nothing new', () => {
    const world = new World({ slotUrls: 3 });
    world.knowRobots('http://a.example');
    for (let i = 0; i < 5; i++) world.add(`http://a.example/${i}`, 0);
    const first = world.cut(T0, { budget: 3 });
    expect(first.charged).toBe(3);
    world.expire(first.slots[0]!, T0 + 60_000);
    expect(world.frontier.chargedQueued).toBe(3);
    const again = world.cut(T0 + 60_000, { budget: 0 });
    expect(urlsOf(again.slots[0]!)).toEqual(urlsOf(first.slots[0]!));
    expect(again.charged).toBe(0);
    expect(world.frontier.chargedQueued).toBe(0);
    // The two URLs never charged stay queued, not handed out, not lost.
    expect(world.frontier.queued).toBe(2);
  });

  it('does not let robots slots use the budget', () => {
    const world = new World();
    world.add('http://a.example/', 0);
    const result = world.cut(T0, { budget: 0 });
    expect(result.slots.map((slot) => slot.kind)).toEqual(['robots']);
    expect(result.charged).toBe(0);
  });
});

describe('invariants under random claims, results, expiries and time', () => {
  type Step =
    | { op: 'cut'; capacity: number; liveFetchers: number; budget: number | null }
    | { op: 'finish'; pick: number; robotsStatus: number | null }
    | { op: 'expire'; pick: number }
    | { op: 'tick'; ms: number };

  const stepArb: fc.Arbitrary<Step> = fc.oneof(
    { weight: 4, arbitrary: fc.record({ op: fc.constant('cut' as const), capacity: fc.integer({ min: 1, max: 6 }), liveFetchers: fc.integer({ min: 0, max: 4 }), budget: fc.option(fc.integer({ min: 1, max: 20 }), { nil: null }) }) },
    { weight: 4, arbitrary: fc.record({ op: fc.constant('finish' as const), pick: fc.nat(), robotsStatus: fc.constantFrom<number | null>(200, 404, 404, 503, null) }) },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('expire' as const), pick: fc.nat() }) },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
  );

  it('keeps concurrency, politeness, robots-first and exactly-once hand-out, and loses no origin', () => {
    const origins = ['http://c1.example', 'http://c2.example', 'http://c3.example', 'http://slow.example'];
    const concurrency: Record<string, number> = { 'http://c1.example': 1, 'http://c2.example': 2, 'http://c3.example': 3, 'http://slow.example': 1 };
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 1, maxLength: 80, size: 'max' }), (steps) => {
        const world = new World({ concurrency, delayMs: 1000, slotUrls: 3 });
        const all = new Set<string>();
        for (const origin of origins) {
          for (let i = 0; i < 12; i++) {
            world.add(`${origin}/${i % 4}/${i}`, i % 3);
            all.add(`${origin}/${i % 4}/${i}`);
          }
        }
        world.knowRobots('http://c3.example', 200, 'User-agent: *\nDisallow: /3/\n');
        let now = T0;
        const out: CutSlot[] = [];
        const outUrls = new Set<string>();
        const done = new Set<string>();
        const lastFinish = new Map<string, number>();

        const check = () => {
          for (const origin of origins) {
            const queue = world.frontier.origin(origin);
            const slots = out.filter((slot) => slot.queue === queue);
            expect(queue.slotsOut).toBe(slots.length);
            expect(queue.slotsOut).toBeLessThanOrEqual(concurrency[origin]!);
          }
          expect(world.frontier.queued + outUrls.size + done.size).toBe(all.size);
        };

        const apply = (result: CutResult) => {
          for (const slot of result.slots) {
            const queue = slot.queue;
            if (slot.kind === 'page') {
              // robots.txt is known before any page of the origin goes out.
              expect(queue.robotsState).toBe('known');
              // Politeness: a slot at concurrency 1 starts no earlier than the delay after the last one ended.
              const last = lastFinish.get(queue.origin);
              if (world.concurrencyOf(queue) === 1 && last !== undefined) expect(now + slot.startAfterMs).toBeGreaterThanOrEqual(last + 1000);
            }
            for (const entry of entriesOf(slot)) {
              expect(outUrls.has(entry.url) || done.has(entry.url)).toBe(false);
              outUrls.add(entry.url);
            }
            out.push(slot);
          }
          for (const { entry } of result.denied) done.add(entry.url);
        };

        for (const step of steps) {
          switch (step.op) {
            case 'cut':
              apply(world.cut(now, { capacity: step.capacity, liveFetchers: step.liveFetchers, budget: step.budget }));
              break;
            case 'finish': {
              if (out.length === 0) break;
              const [slot] = out.splice(step.pick % out.length, 1);
              world.finish(slot!, now, { status: step.robotsStatus, body: 'User-agent: *\nDisallow: /1/\n' });
              for (const entry of entriesOf(slot!)) {
                outUrls.delete(entry.url);
                done.add(entry.url);
              }
              lastFinish.set(slot!.queue.origin, now);
              break;
            }
            case 'expire': {
              if (out.length === 0) break;
              const [slot] = out.splice(step.pick % out.length, 1);
              world.expire(slot!, now);
              for (const entry of entriesOf(slot!)) outUrls.delete(entry.url);
              break;
            }
            case 'tick':
              now += step.ms;
              break;
          }
          check();
        }

        // Liveness: finishing everything and letting time pass drains the frontier; no origin is lost.
        for (let round = 0; round < 500 && world.frontier.queued + out.length > 0; round++) {
          for (const slot of out.splice(0)) {
            world.finish(slot, now, { status: 404 });
            for (const entry of entriesOf(slot)) {
              outUrls.delete(entry.url);
              done.add(entry.url);
            }
            lastFinish.set(slot.queue.origin, now);
          }
          const result = world.cut(now, { capacity: 4, liveFetchers: 1, budget: null });
          apply(result);
          check();
          if (result.slots.length === 0) {
            const wake = world.frontier.nextWakeAt(now);
            // Nothing out and nothing cuttable: some origin must be waiting on time.
            if (out.length === 0 && world.frontier.queued > 0) expect(wake).not.toBeNull();
            if (wake !== null) now = wake;
          }
        }
        expect(world.frontier.queued).toBe(0);
        expect(out).toEqual([]);
        expect(done.size).toBe(all.size);
      }),
      { seed, numRuns: 150 },
    );
  });
});
