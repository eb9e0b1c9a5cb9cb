/**
 * Leases (queue-server/frontier/leases.ts): a schedule is leased to one fetcher until its deadline; each item is
 * applied at most once, a retried post is a duplicate, and only the owner keeps a lease alive.
 */
import { describe, expect, it } from 'vitest';
import { OriginQueue, type QueuedUrl } from '../../queue-server/frontier/frontier.js';
import { LeaseTable, type Lease } from '../../queue-server/frontier/leases.js';
import type { CutSlot } from '../../queue-server/frontier/schedule-cutter.js';
import { urlHash, urlHashHigh, urlHashLow } from '../../shared/url-hash.js';
import { mustNormalize } from '../../shared/url-normalize.js';

const T0 = 1_700_000_000_000;
const LEASE_MS = 60_000;

function entry(href: string, seq: number): QueuedUrl {
  const url = mustNormalize(href);
  const hash = urlHash(url);
  return { url, hash, hashHigh: urlHashHigh(hash), hashLow: urlHashLow(hash), depth: 1, priority: 1, seq, charged: true };
}

/** One robots slot and one slot of `pages` page URLs. */
function slots(pages = 2): CutSlot[] {
  const pageItems = Array.from({ length: pages }, (_, i) => {
    const e = entry(`http://b.example/${i}`, i);
    return { kind: 'page' as const, entry: e, url: e.url as string, validators: null, applied: false };
  });
  return [
    { queue: new OriginQueue('http://a.example'), kind: 'robots', startAfterMs: 0, delayMs: 0, remaining: 1, items: [{ kind: 'robots', entry: null, url: 'http://a.example/robots.txt', validators: null, applied: false }] },
    { queue: new OriginQueue('http://b.example'), kind: 'page', startAfterMs: 0, delayMs: 1000, remaining: pages, items: pageItems },
  ];
}

function applyItem(table: LeaseTable, lease: Lease, slot: number, item: number): { slotDone: boolean; leaseDone: boolean } {
  const found = table.lookup(lease.id, slot, item);
  if (found.kind !== 'ok') throw new Error(`expected item ${slot}/${item} to be applicable, got ${found.kind}`);
  return table.markApplied(found.lease, found.slot, found.item);
}

describe('issue', () => {
  it('gives each lease a unique id with the table prefix, a deadline and a count of items out', () => {
    const table = new LeaseTable('abc123');
    const a = table.issue('fetcher-1', slots(2), T0, LEASE_MS);
    const b = table.issue('fetcher-2', slots(3), T0 + 5, LEASE_MS);
    expect(a.id).not.toBe(b.id);
    expect(a.id.startsWith('abc123-')).toBe(true);
    expect(a.id).toMatch(/^[A-Za-z0-9_.:-]{1,64}$/);
    expect(a).toMatchObject({ fetcherId: 'fetcher-1', issuedAt: T0, deadline: T0 + LEASE_MS, remaining: 3 });
    expect(b.remaining).toBe(4);
    expect(table.size).toBe(2);
    expect(table.itemsOut()).toBe(7);
    expect(table.get(a.id)).toBe(a);
    expect([...table.values()]).toEqual([a, b]);
  });

  it('never reuses an id across tables with different prefixes', () => {
    const one = new LeaseTable('p1').issue('f', slots(), T0, LEASE_MS);
    const two = new LeaseTable('p2').issue('f', slots(), T0, LEASE_MS);
    expect(one.id).not.toBe(two.id);
  });
});

describe('applying each item once', () => {
  it('answers a second look-up of an applied item with duplicate', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(2), T0, LEASE_MS);
    expect(applyItem(table, lease, 1, 0)).toEqual({ slotDone: false, leaseDone: false });
    expect(table.lookup(lease.id, 1, 0)).toEqual({ kind: 'duplicate' });
    expect(table.lookup(lease.id, 1, 1).kind).toBe('ok');
    expect(table.itemsOut()).toBe(2);
  });

  it('reports when a slot and when the whole lease are complete', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(2), T0, LEASE_MS);
    expect(applyItem(table, lease, 0, 0)).toEqual({ slotDone: true, leaseDone: false });
    expect(applyItem(table, lease, 1, 1)).toEqual({ slotDone: false, leaseDone: false });
    expect(applyItem(table, lease, 1, 0)).toEqual({ slotDone: true, leaseDone: true });
    expect(table.size).toBe(0);
    expect(table.itemsOut()).toBe(0);
    expect(table.get(lease.id)).toBeUndefined();
  });

  it('recognises every item of a finished lease as a duplicate, not as an unknown lease', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(1), T0, LEASE_MS);
    applyItem(table, lease, 0, 0);
    applyItem(table, lease, 1, 0);
    expect(table.lookup(lease.id, 0, 0)).toEqual({ kind: 'duplicate' });
    expect(table.lookup(lease.id, 1, 0)).toEqual({ kind: 'duplicate' });
    expect(table.lookup(lease.id, 7, 7)).toEqual({ kind: 'duplicate' });
  });

  it('tells an unknown lease id and a missing item apart', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(1), T0, LEASE_MS);
    expect(table.lookup('t-never', 0, 0)).toEqual({ kind: 'unknown-lease' });
    expect(table.lookup(lease.id, 2, 0)).toEqual({ kind: 'no-such-item' });
    expect(table.lookup(lease.id, 1, 1)).toEqual({ kind: 'no-such-item' });
    expect(table.lookup(lease.id, -1, 0)).toEqual({ kind: 'no-such-item' });
  });

  it('hands back the leased item itself, so its frontier entry can be returned as is', () => {
    const table = new LeaseTable('t');
    const given = slots(1);
    const lease = table.issue('f', given, T0, LEASE_MS);
    const found = table.lookup(lease.id, 1, 0);
    expect(found.kind).toBe('ok');
    if (found.kind === 'ok') {
      expect(found.item).toBe(given[1]!.items[0]);
      expect(found.slot).toBe(given[1]);
      expect(found.lease).toBe(lease);
    }
  });

  it('remembers at most 10,000 finished lease ids, forgetting the oldest first', () => {
    const table = new LeaseTable('t');
    const ids: string[] = [];
    for (let i = 0; i < 10_001; i++) ids.push(table.issue('f', slots(0).slice(0, 1), T0, 1).id);
    expect(table.expire(T0 + 1)).toHaveLength(10_001);
    expect(table.lookup(ids[0]!, 0, 0)).toEqual({ kind: 'unknown-lease' });
    expect(table.lookup(ids[1]!, 0, 0)).toEqual({ kind: 'duplicate' });
    expect(table.lookup(ids[10_000]!, 0, 0)).toEqual({ kind: 'duplicate' });
  });
});

describe('renew', () => {
  it('extends the deadline for the owning fetcher', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('owner', slots(), T0, LEASE_MS);
    expect(table.renew(lease.id, 'owner', T0 + 30_000, LEASE_MS)).toBe(true);
    expect(lease.deadline).toBe(T0 + 30_000 + LEASE_MS);
  });

  it('refuses another fetcher and leaves the deadline alone', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('owner', slots(), T0, LEASE_MS);
    expect(table.renew(lease.id, 'intruder', T0 + 30_000, LEASE_MS)).toBe(false);
    expect(lease.deadline).toBe(T0 + LEASE_MS);
  });

  it('never moves a deadline backwards', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('owner', slots(), T0, LEASE_MS);
    expect(table.renew(lease.id, 'owner', T0 + 1000, 1000)).toBe(true);
    expect(lease.deadline).toBe(T0 + LEASE_MS);
  });

  it('refuses an unknown, finished or expired lease', () => {
    const table = new LeaseTable('t');
    expect(table.renew('t-unknown', 'owner', T0, LEASE_MS)).toBe(false);
    const finished = table.issue('owner', slots(0).slice(0, 1), T0, LEASE_MS);
    applyItem(table, finished, 0, 0);
    expect(table.renew(finished.id, 'owner', T0, LEASE_MS)).toBe(false);
    const expired = table.issue('owner', slots(), T0, LEASE_MS);
    table.expire(T0 + LEASE_MS);
    expect(table.renew(expired.id, 'owner', T0 + LEASE_MS, LEASE_MS)).toBe(false);
  });
});

describe('expire and nextDeadline', () => {
  it('returns and removes only the leases whose deadline has passed', () => {
    const table = new LeaseTable('t');
    const early = table.issue('f', slots(), T0, 10_000);
    const late = table.issue('f', slots(), T0, 20_000);
    expect(table.expire(T0 + 9_999)).toEqual([]);
    expect(table.expire(T0 + 10_000)).toEqual([early]);
    expect(table.size).toBe(1);
    expect(table.get(late.id)).toBe(late);
    expect(table.expire(T0 + 15_000)).toEqual([]);
    expect(table.expire(T0 + 20_001)).toEqual([late]);
    expect(table.size).toBe(0);
    expect(table.itemsOut()).toBe(0);
  });

  it('keeps a renewed lease past its first deadline', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(), T0, 10_000);
    table.renew(lease.id, 'f', T0 + 9_000, 10_000);
    expect(table.expire(T0 + 10_000)).toEqual([]);
    expect(table.expire(T0 + 19_000)).toEqual([lease]);
  });

  it('returns an expired lease with its applied marks, so only unapplied items go back', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(3), T0, 10_000);
    applyItem(table, lease, 1, 1);
    const [expired] = table.expire(T0 + 10_000);
    expect(expired!.slots[1]!.items.map((item) => item.applied)).toEqual([false, true, false]);
    expect(expired!.slots[1]!.remaining).toBe(2);
    expect(expired!.remaining).toBe(3);
  });

  it('treats an expired lease id as finished: a late post is a duplicate', () => {
    const table = new LeaseTable('t');
    const lease = table.issue('f', slots(), T0, 10_000);
    table.expire(T0 + 10_000);
    expect(table.lookup(lease.id, 1, 0)).toEqual({ kind: 'duplicate' });
  });

  it('reports the earliest deadline, or null with no lease out', () => {
    const table = new LeaseTable('t');
    expect(table.nextDeadline()).toBeNull();
    const a = table.issue('f', slots(), T0, 30_000);
    table.issue('g', slots(), T0, 20_000);
    const c = table.issue('h', slots(0).slice(0, 1), T0, 10_000);
    expect(table.nextDeadline()).toBe(T0 + 10_000);
    applyItem(table, c, 0, 0);
    expect(table.nextDeadline()).toBe(T0 + 20_000);
    table.expire(T0 + 20_000);
    expect(table.nextDeadline()).toBe(T0 + 30_000);
    table.renew(a.id, 'f', T0 + 25_000, 30_000);
    expect(table.nextDeadline()).toBe(T0 + 55_000);
    table.expire(T0 + 55_000);
    expect(table.nextDeadline()).toBeNull();
  });
});
