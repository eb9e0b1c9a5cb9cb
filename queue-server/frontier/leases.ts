/**
 * Leases: every schedule handed out is leased to one fetcher until `deadline`. The deadline moves
 * forward with every sign of life from that fetcher (a results post or a heartbeat). Items are "in
 * transit" until their result is applied; when a lease runs out, its unapplied items go back to the
 * frontier (crawl.ts does that with what `expire` returns).
 *
 * Each item is applied at most once: a fetcher that retries a post is told "duplicate" and nothing
 * changes. A finished lease's id is remembered for a while (bounded) so that a late retry is
 * recognised as a duplicate rather than mistaken for an unknown lease.
 */
import type { Schedule } from '../../shared/protocol.js';
import type { CutSlot, SlotItem } from './schedule-cutter.js';

export interface Lease {
  readonly id: string;
  readonly fetcherId: string;
  readonly issuedAt: number;
  deadline: number;
  readonly slots: CutSlot[];
  remaining: number;
}

export type ItemLookup =
  | { readonly kind: 'ok'; readonly lease: Lease; readonly slot: CutSlot; readonly item: SlotItem }
  | { readonly kind: 'duplicate' }
  | { readonly kind: 'unknown-lease' }
  | { readonly kind: 'no-such-item' };

const FINISHED_IDS_KEPT = 10_000;

export class LeaseTable {
  readonly #leases = new Map<string, Lease>();
  readonly #finished = new Set<string>();
  #counter = 0;
  readonly #prefix: string;

  constructor(idPrefix: string) {
    this.#prefix = idPrefix;
  }

  get size(): number {
    return this.#leases.size;
  }

  /** Items (URLs and robots.txt) currently out on lease. */
  itemsOut(): number {
    let out = 0;
    for (const lease of this.#leases.values()) out += lease.remaining;
    return out;
  }

  values(): IterableIterator<Lease> {
    return this.#leases.values();
  }

  get(id: string): Lease | undefined {
    return this.#leases.get(id);
  }

  issue(fetcherId: string, slots: CutSlot[], now: number, leaseMs: number): Lease {
    const id = `${this.#prefix}-${(++this.#counter).toString(36)}`;
    const remaining = slots.reduce((sum, slot) => sum + slot.remaining, 0);
    const lease: Lease = { id, fetcherId, issuedAt: now, deadline: now + leaseMs, slots, remaining };
    this.#leases.set(id, lease);
    return lease;
  }

  renew(id: string, fetcherId: string, now: number, leaseMs: number): boolean {
    const lease = this.#leases.get(id);
    if (lease === undefined || lease.fetcherId !== fetcherId) return false;
    lease.deadline = Math.max(lease.deadline, now + leaseMs);
    return true;
  }

  lookup(leaseId: string, slotIndex: number, itemIndex: number): ItemLookup {
    const lease = this.#leases.get(leaseId);
    if (lease === undefined) return this.#finished.has(leaseId) ? { kind: 'duplicate' } : { kind: 'unknown-lease' };
    const slot = lease.slots[slotIndex];
    const item = slot?.items[itemIndex];
    if (slot === undefined || item === undefined) return { kind: 'no-such-item' };
    if (item.applied) return { kind: 'duplicate' };
    return { kind: 'ok', lease, slot, item };
  }

  /** Marks an item applied; returns whether its slot (and the lease) are now complete. */
  markApplied(lease: Lease, slot: CutSlot, item: SlotItem): { slotDone: boolean; leaseDone: boolean } {
    item.applied = true;
    slot.remaining--;
    lease.remaining--;
    const leaseDone = lease.remaining === 0;
    if (leaseDone) this.#retire(lease.id);
    return { slotDone: slot.remaining === 0, leaseDone };
  }

  /** Removes and returns the leases whose deadline has passed. */
  expire(now: number): Lease[] {
    const expired: Lease[] = [];
    for (const lease of this.#leases.values()) {
      if (lease.deadline <= now) expired.push(lease);
    }
    for (const lease of expired) this.#retire(lease.id);
    return expired;
  }

  /** Removes and returns the lease `id` of `fetcherId` (handed back before its deadline), or undefined. */
  take(id: string, fetcherId: string): Lease | undefined {
    const lease = this.#leases.get(id);
    if (lease === undefined || lease.fetcherId !== fetcherId) return undefined;
    this.#retire(id);
    return lease;
  }

  /** Removes and returns every lease out to `fetcherId` (its process is known to be gone). */
  takeAllOf(fetcherId: string): Lease[] {
    const taken = [...this.#leases.values()].filter((lease) => lease.fetcherId === fetcherId);
    for (const lease of taken) this.#retire(lease.id);
    return taken;
  }

  /** The earliest deadline, ms since epoch, or null with no lease out. */
  nextDeadline(): number | null {
    let next: number | null = null;
    for (const lease of this.#leases.values()) if (next === null || lease.deadline < next) next = lease.deadline;
    return next;
  }

  #retire(id: string): void {
    this.#leases.delete(id);
    this.#finished.add(id);
    if (this.#finished.size > FINISHED_IDS_KEPT) {
      const oldest = this.#finished.values().next().value;
      if (oldest !== undefined) this.#finished.delete(oldest);
    }
  }
}

/** A lease in its wire form (shared/protocol.ts): what the fetcher is told to fetch, slot by slot. */
export function scheduleOf(lease: Lease, leaseMs: number, isSeedHost: (origin: string) => boolean = () => false, warc = false, index = true): Schedule {
  return {
    id: lease.id,
    leaseMs,
    warc,
    index,
    slots: lease.slots.map((slot, index) => ({
      slot: index,
      origin: slot.queue.origin,
      startAfterMs: slot.startAfterMs,
      delayMs: slot.delayMs,
      allowPrivateAddresses: isSeedHost(slot.queue.origin),
      items: slot.items.map((item, i) => ({ i, url: item.url, kind: item.kind, depth: item.entry?.depth ?? 0, validators: item.validators })),
    })),
  };
}
