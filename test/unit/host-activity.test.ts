/**
 * The busiest-hosts tally (queue-server/crawl/host-activity.ts): exact below its capacity, bounded above it,
 * and never losing an origin that got more than 1/capacity of the requests (Space-Saving guarantee).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BUSIEST_SHOWN, HostTally } from '../../queue-server/crawl/host-activity.js';

const ok = { error: false, bytes: 100 };

describe('HostTally', () => {
  it('counts requests, errors and bytes exactly while the table has room, busiest first', () => {
    const tally = new HostTally(10);
    for (let i = 0; i < 5; i++) tally.count('http://a', ok, i);
    tally.count('http://b', { error: true, bytes: 0 }, 10);
    tally.count('http://b', ok, 11);
    expect(tally.top(5)).toEqual([
      { origin: 'http://a', requests: 5, overcount: 0, errors: 0, bytes: 500, lastAt: 4 },
      { origin: 'http://b', requests: 2, overcount: 0, errors: 1, bytes: 100, lastAt: 11 },
    ]);
  });

  it('holds at most its capacity; a newcomer inherits the smallest count as overcount', () => {
    const tally = new HostTally(2);
    tally.count('http://a', ok, 0);
    tally.count('http://a', ok, 1);
    tally.count('http://b', ok, 2);
    tally.count('http://c', ok, 3);
    expect(tally.size).toBe(2);
    expect(tally.top(2)).toEqual([
      { origin: 'http://c', requests: 2, overcount: 1, errors: 0, bytes: 100, lastAt: 3 },
      { origin: 'http://a', requests: 2, overcount: 0, errors: 0, bytes: 200, lastAt: 1 },
    ]);
  });

  it('always keeps an origin with more than 1/capacity of all requests, its count within the bounds', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 1, maxLength: 400, size: 'max' }), fc.integer({ min: 2, max: 12 }), (stream, capacity) => {
        const tally = new HostTally(capacity);
        const exact = new Map<string, number>();
        stream.forEach((n, i) => {
          // Skewed: small numbers are frequent.
          const origin = `http://h${n % 7 === 0 ? 0 : n}`;
          tally.count(origin, ok, i);
          exact.set(origin, (exact.get(origin) ?? 0) + 1);
        });
        const kept = new Map(tally.top(capacity).map((h) => [h.origin, h]));
        expect(kept.size).toBeLessThanOrEqual(capacity);
        for (const [origin, count] of exact) {
          if (count > stream.length / capacity) expect(kept.has(origin), origin).toBe(true);
          const host = kept.get(origin);
          if (host !== undefined) {
            expect(host.requests).toBeGreaterThanOrEqual(count);
            expect(host.requests - host.overcount).toBeLessThanOrEqual(count);
          }
        }
      }),
      { seed: 20260601, numRuns: 200 },
    );
  });

  it('reports active and waiting hosts and shows at most BUSIEST_SHOWN', () => {
    const tally = new HostTally();
    for (let i = 0; i < 30; i++) for (let j = 0; j <= i; j++) tally.count(`http://h${i}`, ok, i);
    const queued = new Map([['http://h29', 3], ['http://h28', 0], ['http://q', 5]]);
    const overview = tally.overview(new Set(['http://h29', 'http://h28']), { queuedOrigins: 2, queuedOf: (o) => queued.get(o) ?? 0 });
    expect(overview.active).toBe(2);
    // Two origins have queued URLs; h29 is being fetched, so only q waits.
    expect(overview.waiting).toBe(1);
    expect(overview.busiest).toHaveLength(BUSIEST_SHOWN);
    expect(overview.busiest[0]).toMatchObject({ origin: 'http://h29', requests: 30, queued: 3, active: true });
    expect(overview.busiest[2]).toMatchObject({ origin: 'http://h27', active: false, queued: 0 });
  });
});
