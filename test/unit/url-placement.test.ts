/**
 * UrlPlacement's pending URLs (frontier/url-placement.ts), found by hash through a map keyed by the
 * hash's low 32 bits: URLs whose hashes share that half must stay apart, and a random sequence of
 * operations must agree with a model keyed by the whole hash.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { QueuedUrl } from '../../queue-server/frontier/frontier.js';
import { UrlPlacement } from '../../queue-server/frontier/url-placement.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import { urlHashFromHalves, urlHashHex } from '../../shared/url-hash.js';

let seq = 0;

/** A queued URL whose hash has the given halves. */
function queued(high: number, low: number, leased = false): QueuedUrl {
  const n = seq++;
  return { url: `http://127.0.0.1/${n}` as NormalizedUrl, hash: urlHashFromHalves(high, low), hashHigh: high >>> 0, hashLow: low >>> 0, depth: 0, priority: 0, seq: n, charged: false, leased };
}

describe('UrlPlacement pending URLs', () => {
  it('keeps URLs apart whose hashes share the low half, high bit set or not', () => {
    const placement = new UrlPlacement();
    const a = queued(1, 0xdeadbeef);
    const b = queued(2, 0xdeadbeef);
    const c = queued(0x80000001, 0xdeadbeef);
    for (const entry of [a, b, c]) placement.pending(entry);
    expect(placement.pendingCount).toBe(3);
    expect(placement.pendingEntry(a.hash)).toBe(a);
    expect(placement.pendingEntry(b.hash)).toBe(b);
    expect(placement.pendingEntry(c.hash)).toBe(c);
    expect(placement.pendingEntry(urlHashFromHalves(3, 0xdeadbeef))).toBeUndefined();
    placement.settled(b);
    expect(placement.pendingEntry(b.hash)).toBeUndefined();
    expect(placement.pendingEntry(a.hash)).toBe(a);
    expect(placement.pendingEntry(c.hash)).toBe(c);
    expect(placement.pendingCount).toBe(2);
  });

  it('replaces an entry of the same hash, and settling the replaced one leaves the new one pending', () => {
    const placement = new UrlPlacement();
    const first = queued(7, 9);
    const again = queued(7, 9);
    const other = queued(8, 9);
    placement.pending(first);
    placement.pending(other);
    placement.pending(again);
    expect(placement.pendingCount).toBe(2);
    expect(placement.pendingEntry(first.hash)).toBe(again);
    placement.settled(first);
    expect(placement.pendingEntry(first.hash)).toBe(again);
    placement.settled(again);
    expect(placement.pendingEntry(first.hash)).toBeUndefined();
    expect(placement.pendingEntry(other.hash)).toBe(other);
    expect(placement.pendingCount).toBe(1);
  });

  it('agrees with a model keyed by the whole hash through pending, settled and dropQueued', () => {
    // Halves from tiny ranges, so that shared low halves (and whole hashes) are common.
    const half = fc.integer({ min: 0, max: 3 }).map((n) => (n === 3 ? 0xffffffff : n));
    const op = fc.oneof(
      fc.record({ kind: fc.constant('pending' as const), high: half, low: half, leased: fc.boolean() }),
      fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('drop' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60, size: 'max' }), (ops) => {
        const placement = new UrlPlacement();
        const model = new Map<string, QueuedUrl>();
        const made: QueuedUrl[] = [];
        for (const step of ops) {
          if (step.kind === 'pending') {
            const entry = queued(step.high, step.low, step.leased);
            made.push(entry);
            placement.pending(entry);
            model.set(urlHashHex(entry.hash), entry);
          } else if (step.kind === 'settle') {
            if (made.length === 0) continue;
            const entry = made[step.pick % made.length]!;
            placement.settled(entry);
            if (model.get(urlHashHex(entry.hash)) === entry) model.delete(urlHashHex(entry.hash));
          } else {
            placement.dropQueued();
            for (const [key, entry] of model) if (!entry.leased) model.delete(key);
          }
          expect(placement.pendingCount).toBe(model.size);
          for (const entry of made) expect(placement.pendingEntry(entry.hash)).toBe(model.get(urlHashHex(entry.hash)));
        }
      }),
      { numRuns: 300 },
    );
  });
});
