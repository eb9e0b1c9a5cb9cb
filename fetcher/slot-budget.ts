/**
 * One fetcher process's --concurrency as ONE budget of slots, shared by the claim loops of every queue
 * server it serves (server-pool.ts), so that a fetcher serving K servers downloads at most
 * --concurrency origins at once, not K times that.
 *
 * A unit is held from the moment a claim asks for it (the queue server may answer that claim with a
 * schedule of that many slots, which must be able to start at once) until the slot it became ends, or
 * the claim comes back with fewer slots, `wait` or `done`. So the units held are never more than
 * `total`, and neither are the requests in flight (a slot is one request at a time).
 *
 * Fairness (max-min, without pre-emption): units that come free go one at a time to the waiting loop
 * that holds the fewest (ties: the one waiting longest), up to what each asked for. Grants run in a
 * microtask, so loops asking in the same turn of the event loop share at once instead of the first
 * taking all. A loop that holds more than others gets nothing while another waits, and as its slots
 * end (a slot is bounded: its URLs and the lease) the shares even out. A queue server without work
 * costs its loop's parked claim: the fetcher asks it for one unit only (fetcher.ts), so an idle
 * server holds one unit while the others use the rest.
 *
 * Memory: one entry per loop and per waiting claim (at most one per loop).
 */

/** A claim loop's handle on the budget. */
export interface BudgetMember {
  readonly id: number;
}

interface Waiter {
  readonly member: BudgetMember;
  readonly max: number;
  readonly seq: number;
  readonly resolve: (units: number) => void;
  readonly cleanup: () => void;
}

export class SlotBudget {
  readonly total: number;
  /** Units held per member (claims waiting at a queue server, slots running). */
  readonly #held = new Map<BudgetMember, number>();
  #waiters: Waiter[] = [];
  #inUse = 0;
  #nextId = 0;
  #nextSeq = 0;
  #grantQueued = false;

  constructor(total: number) {
    if (!Number.isInteger(total) || total < 1) throw new Error(`SlotBudget: total must be a positive integer, got ${total}`);
    this.total = total;
  }

  /** Units held by all members together: never above `total`. */
  get inUse(): number {
    return this.#inUse;
  }

  get members(): number {
    return this.#held.size;
  }

  heldBy(member: BudgetMember): number {
    return this.#held.get(member) ?? 0;
  }

  join(): BudgetMember {
    const member = { id: this.#nextId++ };
    this.#held.set(member, 0);
    return member;
  }

  /** The loop ended: its waiting claim gets 0, and whatever it still held goes back. */
  leave(member: BudgetMember): void {
    for (const waiter of this.#waiters.filter((w) => w.member === member)) this.#settle(waiter, 0);
    const held = this.#held.get(member) ?? 0;
    this.#held.delete(member);
    this.#inUse -= held;
    this.#queueGrant();
  }

  /**
   * Resolves with the units reserved for `member` (1..max) once its turn comes, or with 0 when
   * `signal` aborts first (the loop is stopping). One acquire at a time per member.
   */
  acquire(member: BudgetMember, max: number, signal?: AbortSignal): Promise<number> {
    if (!this.#held.has(member)) throw new Error('SlotBudget: acquire by a member that left');
    if (!Number.isInteger(max) || max < 1) throw new Error(`SlotBudget: max must be a positive integer, got ${max}`);
    if (signal?.aborted === true) return Promise.resolve(0);
    return new Promise((resolve) => {
      const onAbort = () => this.#settle(waiter, 0);
      const waiter: Waiter = { member, max, seq: this.#nextSeq++, resolve, cleanup: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#queueGrant();
    });
  }

  /** Gives back `units` of what `member` holds (a slot ended, a claim came back with fewer slots). */
  release(member: BudgetMember, units: number): void {
    if (units === 0) return;
    const held = this.#held.get(member);
    // A member that left gave everything back already.
    if (held === undefined) return;
    if (!Number.isInteger(units) || units < 0 || units > held) throw new Error(`SlotBudget: release of ${units} by a member holding ${held}`);
    this.#held.set(member, held - units);
    this.#inUse -= units;
    this.#queueGrant();
  }

  #settle(waiter: Waiter, units: number): void {
    const at = this.#waiters.indexOf(waiter);
    if (at < 0) return;
    this.#waiters.splice(at, 1);
    waiter.cleanup();
    waiter.resolve(units);
  }

  #queueGrant(): void {
    if (this.#grantQueued) return;
    this.#grantQueued = true;
    queueMicrotask(() => {
      this.#grantQueued = false;
      this.#grant();
    });
  }

  /** Water-filling: each free unit to the waiter holding the fewest (its grant so far counted). */
  #grant(): void {
    const granted = new Map<Waiter, number>();
    let free = this.total - this.#inUse;
    while (free > 0) {
      let best: Waiter | null = null;
      let bestHeld = Infinity;
      for (const waiter of this.#waiters) {
        const given = granted.get(waiter) ?? 0;
        if (given >= waiter.max) continue;
        const held = this.heldBy(waiter.member) + given;
        if (held < bestHeld || (held === bestHeld && best !== null && waiter.seq < best.seq)) {
          best = waiter;
          bestHeld = held;
        }
      }
      if (best === null) break;
      granted.set(best, (granted.get(best) ?? 0) + 1);
      free--;
    }
    for (const [waiter, units] of granted) {
      this.#held.set(waiter.member, this.heldBy(waiter.member) + units);
      this.#inUse += units;
      this.#settle(waiter, units);
    }
  }
}
