/**
 * MinHeap (frontier/heap.ts) against a sorted model: random pushes, pops and clears, across the size
 * where a heap stops copying its array on each push.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MinHeap } from '../../queue-server/frontier/heap.js';

describe('MinHeap', () => {
  it('pops in order of the comparison, ties first come first served when the comparison says so', () => {
    const op = (clears: number) =>
      fc.oneof(
        { arbitrary: fc.record({ kind: fc.constant('push' as const), value: fc.integer({ min: 0, max: 20 }) }), weight: 3 },
        { arbitrary: fc.record({ kind: fc.constant('pop' as const) }), weight: clears === 0 ? 1 : 2 },
        { arbitrary: fc.record({ kind: fc.constant('clear' as const) }), weight: clears },
      );
    // With clears a heap stays small; without them, and fewer pops, it grows to about 60 (past 16).
    fc.assert(
      fc.property(fc.oneof(fc.array(op(1), { maxLength: 120, size: 'max' }), fc.array(op(0), { maxLength: 120, size: 'max' })), (ops) => {
        const heap = new MinHeap<{ value: number; seq: number }>((a, b) => a.value < b.value || (a.value === b.value && a.seq < b.seq));
        let model: { value: number; seq: number }[] = [];
        let seq = 0;
        for (const step of ops) {
          if (step.kind === 'push') {
            const item = { value: step.value, seq: seq++ };
            heap.push(item);
            model.push(item);
            model.sort((a, b) => a.value - b.value || a.seq - b.seq);
          } else if (step.kind === 'pop') {
            expect(heap.pop()).toBe(model.shift());
          } else {
            heap.clear();
            model = [];
          }
          expect(heap.size).toBe(model.length);
          expect(heap.peek()).toBe(model[0]);
          expect([...heap].length).toBe(model.length);
        }
      }),
      { numRuns: 300 },
    );
  });
});
