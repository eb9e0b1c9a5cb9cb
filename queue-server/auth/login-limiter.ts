/**
 * Failed logins per client address: at most `maxFailures` wrong tokens within `windowMs` from one
 * address; after that its wrong tokens are answered 429 with Retry-After until the window, counted
 * from its first failure, has passed (a program with a stale token backs off). The callers let a right
 * token through all the same (admin/routes.ts, app.ts): a lockout keyed on an address that every local
 * user shares would let any of them lock the operator out.
 *
 * An attempt is counted when it arrives (`begin`), before its body is read: counted after, 300
 * logins that send their headers at once and their bodies later would all pass the check before the
 * first failure is recorded. An attempt is a failure until proved right; a right token (`succeeded`)
 * gives its one attempt back, no more, so a correct login never clears failures already made, and
 * nobody without the token ever gets an attempt back.
 *
 * The bearer-token routes (app.ts) keep a limiter of their own, and there a right token is always
 * served: see app.ts for why. An IPv6 client is counted by its /64 (one host usually holds a whole
 * /64), and an IPv4-mapped address as its IPv4 one. Behind a reverse proxy every client shares the
 * proxy's address; a proxy should then rate limit on its own.
 *
 * Memory bound: at most `maxAddresses` entries; when full, expired entries go first, then the
 * oldest (so a flood from many addresses can evict an attacker's count, never grow memory).
 * Time is a parameter (`now`, ms since epoch); this module never reads the clock.
 */
import { isIPv6 } from 'node:net';

export interface LoginLimiterOptions {
  /** Failures allowed per address within the window (default 5). */
  readonly maxFailures?: number;
  /** ms (default 60 s). */
  readonly windowMs?: number;
  /** Addresses tracked at most (default 10,000). */
  readonly maxAddresses?: number;
}

interface Entry {
  /** ms since epoch of the first failure of this window */
  readonly since: number;
  failures: number;
}

export class LoginLimiter {
  readonly #maxFailures: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  /** Key: clientKey(address). Insertion order is the order of first failures. */
  readonly #entries = new Map<string, Entry>();

  constructor(options: LoginLimiterOptions = {}) {
    this.#maxFailures = options.maxFailures ?? 5;
    this.#windowMs = options.windowMs ?? 60_000;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** How long this address must wait before it may try again, ms; 0 when it may try now. */
  blockedForMs(address: string, now: number): number {
    const entry = this.#live(clientKey(address), now);
    if (entry === null || entry.failures < this.#maxFailures) return 0;
    return entry.since + this.#windowMs - now;
  }

  /**
   * An attempt arrives: 0 when it may be evaluated (it is counted as a failure from now on), else the
   * ms it must wait (it is not counted). Call before reading anything of the request.
   */
  begin(address: string, now: number): number {
    const waitMs = this.blockedForMs(address, now);
    if (waitMs > 0) return waitMs;
    this.recordFailure(address, now);
    return 0;
  }

  /** The attempt `begin` counted was right: it is given back (failures made before stay counted). */
  succeeded(address: string, now: number): void {
    const entry = this.#live(clientKey(address), now);
    if (entry !== null && entry.failures > 0) entry.failures--;
  }

  recordFailure(address: string, now: number): void {
    const key = clientKey(address);
    const entry = this.#live(key, now);
    if (entry !== null) {
      entry.failures++;
      return;
    }
    if (this.#entries.size >= this.#maxAddresses) this.#evict(now);
    this.#entries.set(key, { since: now, failures: 1 });
  }

  #live(key: string, now: number): Entry | null {
    const entry = this.#entries.get(key);
    if (entry === undefined) return null;
    if (now - entry.since >= this.#windowMs) {
      this.#entries.delete(key);
      return null;
    }
    return entry;
  }

  #evict(now: number): void {
    for (const [key, entry] of this.#entries) {
      if (now - entry.since >= this.#windowMs) this.#entries.delete(key);
    }
    if (this.#entries.size >= this.#maxAddresses) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
  }
}

/** The key an address is counted under: IPv4 as is, IPv4-mapped IPv6 as IPv4, other IPv6 by its /64. */
export function clientKey(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!isIPv6(address)) return address;
  const [head = '', tail = ''] = address.toLowerCase().split('%')[0]!.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
