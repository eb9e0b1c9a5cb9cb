/**
 * Politeness by IP address as well as by host name: host names on one address (virtual hosting, a CDN
 * origin, a shared web host) are one server, so they share one politeness queue: their slots out
 * count together against the concurrency (--host-concurrency, 1 under a Crawl-delay), and the end of
 * any member's slot sets when the next slot of any member may start (the finishing origin's delay
 * after it), as Heritrix's and Nutch's queues by IP do. An origin joins the group of its address when
 * a result says which address its responses came from (the fetcher knows it: the connection's peer,
 * what WARC-IP-Address records); until then, for its first request (its robots.txt), it is on its own.
 * An origin whose address changes moves to the new address's group.
 *
 * The seam in the frontier: OriginQueue (frontier.ts) counts its slots out and its next start through
 * its group when it has one; this module owns the groups and who is in them.
 *
 * Memory: one map entry per origin whose address is known, one group per address (a set of its
 * origins); bounded by the origins the frontier holds.
 */
import type { OriginQueue } from './frontier.js';

/** The origins on one address and what they share. Changed only by OriginQueue's verbs and PolitenessGroups. */
export class PolitenessGroup {
  readonly address: string;
  /** Slots out across every member. */
  slotsOut = 0;
  /** Earliest start of the next slot of any member, ms since epoch. */
  nextStartAt = 0;
  readonly members = new Set<OriginQueue>();

  constructor(address: string) {
    this.address = address;
  }

  /** A member's slot came back: the others may be waiting for the group, so each is re-filed. */
  released(from: OriginQueue, restUntil: number, now: number): void {
    if (this.slotsOut === 0) throw new Error(`address ${this.address}: a slot finished that never started`);
    this.slotsOut--;
    this.nextStartAt = Math.max(this.nextStartAt, restUntil);
    for (const member of this.members) if (member !== from) member.refile(now);
  }
}

export class PolitenessGroups {
  readonly #groups = new Map<string, PolitenessGroup>();
  readonly #addressOf = new Map<string, string>();

  /** Addresses with more than one host name on them. */
  get sharedAddresses(): number {
    let shared = 0;
    for (const group of this.#groups.values()) if (group.members.size > 1) shared++;
    return shared;
  }

  /** The address the origin's responses come from, if known. */
  addressOf(origin: string): string | undefined {
    return this.#addressOf.get(origin);
  }

  /** A result of `queue` came from `address`: the origin is in that address's group from now on. */
  learned(queue: OriginQueue, address: string, now: number): void {
    const key = canonicalAddress(address);
    if (key === null || this.#addressOf.get(queue.origin) === key) return;
    const old = this.#addressOf.get(queue.origin);
    if (old !== undefined) {
      const previous = this.#groups.get(old);
      previous?.members.delete(queue);
      if (previous !== undefined && previous.members.size === 0) this.#groups.delete(old);
    }
    let group = this.#groups.get(key);
    if (group === undefined) {
      group = new PolitenessGroup(key);
      this.#groups.set(key, group);
    }
    this.#addressOf.set(queue.origin, key);
    group.members.add(queue);
    queue.joinGroup(group, now);
  }

  /** A new crawl: groups are learned again. Origins keep no group (their slots out are their own again). */
  clear(now: number): void {
    for (const group of this.#groups.values()) for (const member of group.members) member.joinGroup(null, now);
    this.#groups.clear();
    this.#addressOf.clear();
  }
}

/** An IP address as one spelling (IPv4-mapped IPv6 as IPv4, lower case, no zone); null for anything else. */
export function canonicalAddress(address: string): string | null {
  let text = address.trim().toLowerCase();
  if (text.startsWith('::ffff:') && /^\d+\.\d+\.\d+\.\d+$/.test(text.slice(7))) text = text.slice(7);
  text = text.split('%')[0]!;
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) return text;
  return /^[0-9a-f:]{2,39}$/.test(text) && text.includes(':') ? text : null;
}
