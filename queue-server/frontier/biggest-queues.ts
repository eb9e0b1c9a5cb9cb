/**
 * The origins with the most URLs queued, per group of origins that are paced alike (the same
 * robots.txt Crawl-delay, or none), kept up to date as queues grow and shrink, so that the time the
 * queued URLs take (crawl/time-left.ts) is estimated from a few origins instead of a walk over every
 * origin, which took 0.4 to 6.7 s at 100,000 origins and held the event loop that long per status.
 *
 * Why that is enough: an origin needs about ceil(queued / concurrency) x (delay + response time), and
 * within a group delay and concurrency are the same, so the origin with the most queued URLs needs the
 * longest; only the wait before an origin's next slot (Retry-After, a robots.txt retry) is left out for
 * the others (`candidates` hands out up to `perGroup` origins of each group's largest count).
 *
 * Per group a count -> origins map and the largest count; a queue that shrinks from the largest moves
 * one count down, so the next largest is found by a short step down (a queue emptied at once, the
 * rare case, steps down to the next count in use). Memory: one entry per origin with queued URLs.
 * Pure bookkeeping: no clock, no I/O.
 */

interface Placed {
  group: number | null;
  queued: number;
}

class Group<K> {
  readonly byCount = new Map<number, Set<K>>();
  max = 0;

  add(key: K, queued: number): void {
    let keys = this.byCount.get(queued);
    if (keys === undefined) this.byCount.set(queued, (keys = new Set()));
    keys.add(key);
    if (queued > this.max) this.max = queued;
  }

  remove(key: K, queued: number): void {
    const keys = this.byCount.get(queued)!;
    keys.delete(key);
    if (keys.size > 0) return;
    this.byCount.delete(queued);
    if (queued !== this.max) return;
    if (this.byCount.size === 0) {
      this.max = 0;
      return;
    }
    let next = queued - 1;
    while (next > 0 && !this.byCount.has(next)) next--;
    this.max = next;
  }
}

export class BiggestQueues<K> {
  readonly #groups = new Map<number | null, Group<K>>();
  readonly #placed = new Map<K, Placed>();

  /** The origin `key` has `queued` URLs queued (0: none) and is paced as `group` (its Crawl-delay in ms, null for none). */
  set(key: K, group: number | null, queued: number): void {
    // Called for every URL queued or taken: an origin that stays tracked keeps its Placed, changed in place.
    let placed = this.#placed.get(key);
    if (placed !== undefined) {
      if (placed.group === group && placed.queued === queued) return;
      const from = this.#groups.get(placed.group)!;
      from.remove(key, placed.queued);
      if (from.byCount.size === 0) this.#groups.delete(placed.group);
      if (queued <= 0) {
        this.#placed.delete(key);
        return;
      }
      placed.group = group;
      placed.queued = queued;
    } else {
      if (queued <= 0) return;
      placed = { group, queued };
      this.#placed.set(key, placed);
    }
    let to = this.#groups.get(group);
    if (to === undefined) this.#groups.set(group, (to = new Group()));
    to.add(key, queued);
  }

  /** Up to `perGroup` origins holding each group's largest count. */
  *candidates(perGroup: number): IterableIterator<K> {
    for (const group of this.#groups.values()) {
      let given = 0;
      for (const key of group.byCount.get(group.max) ?? []) {
        if (given++ >= perGroup) break;
        yield key;
      }
    }
  }

  /** Origins tracked (with queued URLs). */
  get size(): number {
    return this.#placed.size;
  }

  clear(): void {
    this.#groups.clear();
    this.#placed.clear();
  }
}
