/**
 * One fetcher's --concurrency shared by the claim loops of several queue servers (fetcher/slot-budget.ts):
 * never more units out than the budget, max-min fair between loops that want more, work-conserving
 * when a loop has nothing to do, and stopping a loop gives its units back.
 */
import { describe, expect, it } from 'vitest';
import { SlotBudget } from '../../fetcher/slot-budget.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('SlotBudget', () => {
  it('loops asking in the same turn share the budget evenly instead of the first taking all', async () => {
    const budget = new SlotBudget(8);
    const [a, b] = [budget.join(), budget.join()];
    const grants = await Promise.all([budget.acquire(a, 8), budget.acquire(b, 8)]);
    expect(grants).toEqual([4, 4]);
    expect(budget.inUse).toBe(8);
  });

  it('never hands out more than the budget, and units freed go to the loop holding the fewest', async () => {
    const budget = new SlotBudget(4);
    const [a, b] = [budget.join(), budget.join()];
    expect(await budget.acquire(a, 4)).toBe(4);
    let bGot = 0;
    void budget.acquire(b, 4).then((units) => (bGot = units));
    await settle();
    expect(bGot).toBe(0);
    // a wants more too, but b holds fewer: the freed unit is b's.
    budget.release(a, 1);
    let aGot = -1;
    void budget.acquire(a, 4).then((units) => (aGot = units));
    await settle();
    expect([bGot, aGot]).toEqual([1, -1]);
    expect(budget.inUse).toBe(4);
    // Shares even out as a's slots end: a (now 1) and b (1) both waiting, two units freed: one each.
    bGot = -1;
    void budget.acquire(b, 4).then((units) => (bGot = units));
    budget.release(a, 2);
    await settle();
    expect([aGot, bGot]).toEqual([1, 1]);
    expect([budget.heldBy(a), budget.heldBy(b)]).toEqual([2, 2]);
  });

  it('a loop with nothing to do costs one unit; the other may use the rest', async () => {
    const budget = new SlotBudget(6);
    const [idle, busy] = [budget.join(), budget.join()];
    expect(await budget.acquire(idle, 1)).toBe(1);
    expect(await budget.acquire(busy, 6)).toBe(5);
    expect(budget.inUse).toBe(6);
  });

  it('a model of many rounds: units out never exceed the budget, and two hungry loops end up within one unit of each other', async () => {
    const seed = 1234;
    console.log(`slot budget model seed ${seed}`);
    let state = seed;
    const random = () => ((state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const budget = new SlotBudget(7);
    const loops = [budget.join(), budget.join()];
    const running: { loop: (typeof loops)[number] }[] = [];
    const pending = new Set<(typeof loops)[number]>();
    for (let round = 0; round < 2000; round++) {
      for (const loop of loops) {
        if (pending.has(loop)) continue;
        pending.add(loop);
        void budget.acquire(loop, 7).then((units) => {
          pending.delete(loop);
          for (let i = 0; i < units; i++) running.push({ loop });
        });
      }
      await settle();
      expect(budget.inUse).toBeLessThanOrEqual(7);
      expect(running.length).toBe(budget.inUse);
      // A random slot ends.
      if (running.length > 0) {
        const [ended] = running.splice(Math.floor(random() * running.length), 1);
        budget.release(ended!.loop, 1);
      }
    }
    await settle();
    expect(Math.abs(budget.heldBy(loops[0]!) - budget.heldBy(loops[1]!))).toBeLessThanOrEqual(1);
  });

  it('a loop that stops is answered 0 and its units go back', async () => {
    const budget = new SlotBudget(2);
    const [a, b] = [budget.join(), budget.join()];
    expect(await budget.acquire(a, 2)).toBe(2);
    const stopping = new AbortController();
    const waiting = budget.acquire(b, 2, stopping.signal);
    stopping.abort();
    expect(await waiting).toBe(0);
    const c = budget.join();
    const forC = budget.acquire(c, 2);
    budget.leave(a);
    expect(await forC).toBe(2);
    expect(budget.inUse).toBe(2);
    expect(() => budget.release(c, 3)).toThrow(/holding 2/);
  });
});
