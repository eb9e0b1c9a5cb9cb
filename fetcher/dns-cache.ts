/**
 * The fetcher's DNS cache: a host name is resolved once per time-to-live, not once per connection, and
 * the address each name answered is known (the result says it: the queue server groups host names by
 * address for politeness, queue-server/frontier/politeness-group.ts).
 *
 * Answers come from DNS with their TTL (node:dns `resolve4`/`resolve6` with `ttl: true`, the lowest
 * TTL of the answer, held within MIN_TTL_MS..MAX_TTL_MS); a name DNS does not know (one of
 * /etc/hosts, `localhost`) from the system resolver (`dns.lookup`, as Node connects by default),
 * which tells no TTL, kept SYSTEM_TTL_MS. Failures are not cached. Bounded: MAX_NAMES names, the
 * least recently used forgotten first. undici's DNS interceptor was not taken: it rewrites the request's
 * origin to the address, so the address guard (address-guard.ts) would no longer see the host name a
 * seed trusts, and it keeps no TTL of its own (a fixed maxTTL).
 */
import { lookup as systemLookup, promises as dnsPromises, type LookupAddress } from 'node:dns';

export const MAX_NAMES = 10_000;
export const MIN_TTL_MS = 5_000;
export const MAX_TTL_MS = 60 * 60 * 1000;
export const SYSTEM_TTL_MS = 60_000;

export interface DnsAnswer {
  readonly addresses: readonly LookupAddress[];
  readonly ttlMs: number;
}

/** How a name is resolved: by default DNS with TTLs, else the system resolver. */
export type Resolve = (hostname: string) => Promise<DnsAnswer>;

interface Entry {
  readonly answer: DnsAnswer;
  /** ms since epoch (the fetcher's clock). */
  readonly expiresAt: number;
}

export class DnsCache {
  readonly #entries = new Map<string, Entry>();
  readonly #inFlight = new Map<string, Promise<DnsAnswer>>();
  readonly #resolve: Resolve;
  readonly #now: () => number;
  readonly #maxNames: number;
  #resolutions = 0;

  constructor(options: { resolve?: Resolve; now?: () => number; maxNames?: number } = {}) {
    this.#resolve = options.resolve ?? resolveWithTtl;
    this.#now = options.now ?? Date.now;
    this.#maxNames = options.maxNames ?? MAX_NAMES;
  }

  /** Names resolved (cache misses) so far. */
  get resolutions(): number {
    return this.#resolutions;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The addresses of `hostname`, from the cache while its TTL lasts; one resolution at a time per name. */
  async lookup(hostname: string): Promise<readonly LookupAddress[]> {
    const name = hostname.toLowerCase();
    const cached = this.#entries.get(name);
    if (cached !== undefined && cached.expiresAt > this.#now()) {
      // Most recently used last: the first entry is the one forgotten.
      this.#entries.delete(name);
      this.#entries.set(name, cached);
      return cached.answer.addresses;
    }
    let pending = this.#inFlight.get(name);
    if (pending === undefined) {
      this.#resolutions++;
      pending = this.#resolve(name).finally(() => this.#inFlight.delete(name));
      this.#inFlight.set(name, pending);
    }
    const answer = await pending;
    this.#entries.delete(name);
    if (answer.addresses.length > 0) {
      const ttlMs = Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, answer.ttlMs));
      this.#entries.set(name, { answer, expiresAt: this.#now() + ttlMs });
      while (this.#entries.size > this.#maxNames) this.#entries.delete(this.#entries.keys().next().value!);
    }
    return answer.addresses;
  }

  /** The first address `hostname` resolved to while it is cached, or null. */
  addressOf(hostname: string): string | null {
    return this.#entries.get(hostname.toLowerCase())?.answer.addresses[0]?.address ?? null;
  }
}

/**
 * DNS with TTLs (A and AAAA records, IPv4 first), else the system resolver for names DNS does not know.
 * `localhost` and names under it go to the system resolver alone, never to DNS (RFC 6761 section 6.3).
 */
async function resolveWithTtl(hostname: string): Promise<DnsAnswer> {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return systemAnswer(hostname);
  const [v4, v6] = await Promise.allSettled([dnsPromises.resolve4(hostname, { ttl: true }), dnsPromises.resolve6(hostname, { ttl: true })]);
  const records = [...(v4.status === 'fulfilled' ? v4.value.map((r) => ({ ...r, family: 4 })) : []), ...(v6.status === 'fulfilled' ? v6.value.map((r) => ({ ...r, family: 6 })) : [])];
  if (records.length > 0) {
    return { addresses: records.map((r) => ({ address: r.address, family: r.family })), ttlMs: Math.min(...records.map((r) => r.ttl)) * 1000 };
  }
  return systemAnswer(hostname);
}

function systemAnswer(hostname: string): Promise<DnsAnswer> {
  return new Promise((resolve, reject) => {
    systemLookup(hostname, { all: true }, (error, addresses) => (error === null ? resolve({ addresses, ttlMs: SYSTEM_TTL_MS }) : reject(error)));
  });
}
