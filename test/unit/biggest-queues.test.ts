/**
 * The biggest queues per Crawl-delay (queue-server/frontier/biggest-queues.ts), which the time-left
 * estimate reads instead of walking every origin, against a brute-force model: after any sequence of
 * queue sizes and Crawl-delay changes, each group's candidates are origins holding that group's
 * largest queue, and every group with a queued URL has some.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BiggestQueues } from '../../queue-server/frontier/biggest-queues.js';
import { Frontier } from '../../queue-server/frontier/frontier.js';
import { urlHash } from '../../shared/url-hash.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`biggest-queues fast-check seed ${seed} (set FC_SEED to replay)`);

const GROUPS = [null, 1000, 5000] as const;

describe('BiggestQueues', () => {
  it('names, per Crawl-delay, origins with the most queued URLs, as a brute-force model does', () => {
    const step = fc.record({ origin: fc.integer({ min: 0, max: 11 }), group: fc.constantFrom(...GROUPS), queued: fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constant(0)) , delta: fc.boolean() });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 300, size: 'max' }), (steps) => {
        const tracked = new BiggestQueues<number>();
        const model = new Map<number, { group: number | null; queued: number }>();
        for (const { origin, group, queued, delta } of steps) {
          // Half the steps move a queue by one, as takes and adds do; the others jump (a refill's stale count, a clear).
          const before = model.get(origin)?.queued ?? 0;
          const next = delta ? Math.max(0, before + (queued % 2 === 0 ? 1 : -1)) : queued;
          tracked.set(origin, group, next);
          if (next === 0) model.delete(origin);
          else model.set(origin, { group, queued: next });
          const expectedMax = new Map<number | null, number>();
          for (const { group: g, queued: q } of model.values()) expectedMax.set(g, Math.max(expectedMax.get(g) ?? 0, q));
          const candidates = [...tracked.candidates(100)];
          const groupsSeen = new Set<number | null>();
          for (const candidate of candidates) {
            const placed = model.get(candidate)!;
            expect(placed.queued).toBe(expectedMax.get(placed.group));
            groupsSeen.add(placed.group);
          }
          expect(groupsSeen).toEqual(new Set(expectedMax.keys()));
          expect(tracked.size).toBe(model.size);
        }
      }),
      { seed, numRuns: 300 },
    );
  });

  it('hands out at most perGroup origins of a group', () => {
    const tracked = new BiggestQueues<string>();
    for (let i = 0; i < 10; i++) tracked.set(`o${i}`, null, 5);
    tracked.set('slow', 2000, 1);
    expect([...tracked.candidates(3)].sort()).toEqual(['o0', 'o1', 'o2', 'slow']);
  });

  it('is what a frontier reports as its biggest queues while URLs are added and taken', () => {
    const frontier = new Frontier({ concurrencyOf: () => 1 });
    const random = fc.sample(fc.integer({ min: 0, max: 7 }), { seed, numRuns: 2000 });
    random.forEach((pick, n) => {
      const origin = `http://o${pick}.example`;
      if (n % 3 === 2) frontier.take(frontier.origin(origin));
      else {
        const url = `${origin}/${n}` as NormalizedUrl;
        frontier.add(origin, url, urlHash(url), 1, 0);
      }
      const largest = Math.max(0, ...[...frontier.origins()].map((queue) => queue.queuedUrls));
      const named = [...frontier.biggestQueues(100)];
      if (largest === 0) expect(named).toEqual([]);
      else expect(named.map((queue) => queue.queuedUrls)).toEqual(named.map(() => largest));
      expect(named.length).toBe([...frontier.origins()].filter((queue) => queue.queuedUrls === largest && largest > 0).length);
    });
  });
});
