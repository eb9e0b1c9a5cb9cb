/**
 * One origin's robots.txt state, and the only code that changes it (RFC 9309):
 *
 *   unknown ──(a robots slot is cut)──► fetching ──(its result arrives)──► known
 *      ▲                                   │                                 │
 *      └──────(its lease runs out)─────────┘     (the rules expire: ask again, as unknown)
 *
 * Known rules are kept 24 hours (section 2.4); an unreachable robots.txt (5xx, network failure: all
 * denied, section 2.3.1.4) only `unreachableRetryMs`, and the origin's URLs wait for the next attempt
 * until `attempts` fetches in a row found it unreachable (then the cutter denies them). The first time
 * an origin is met in this process, a robots.txt kept on disk (robots-store.ts) may make it known at once.
 *
 * Memory: the small facts of the rules (kind, Crawl-delay, expiry) are held here; the parsed file is
 * not. With a store, `rules.robot` reads through the store's bounded cache of parsed files, which
 * parses the stored file again on a miss, so the queue server never holds one parsed file per origin
 * met (parsed-robots-cache.ts). Without a store (tests of other parts) the parsed file is held here.
 */
import type { RobotsStore, StoredRobots } from './robots-store.js';
import { ROBOTS_CACHE_MS, rulesFromFetch, type Robot, type RobotsFetchOutcome, type RobotsPolicy, type RobotsRules } from './robots.js';

/** What one robots.txt fetch means for its origin (OriginRobots.fetched). */
export interface RobotsAttempt {
  /** When the origin may be tried again (robots.txt unreachable, attempts left); null otherwise. */
  readonly retryAt: number | null;
  /** For an unreachable robots.txt: which attempt in a row, and whether that was the last. */
  readonly unreachable: { readonly attempt: number; readonly givenUp: boolean } | null;
}

export type RobotsState = 'unknown' | 'fetching' | 'known';

export class OriginRobots {
  readonly #origin: string;
  #state: RobotsState = 'unknown';
  #rules: RobotsRules | null = null;
  /** Consecutive robots.txt fetches that found the origin unreachable. */
  #failures = 0;
  /** The robots.txt kept on disk was consulted (once per process). */
  #storeConsulted = false;

  constructor(origin: string) {
    this.#origin = origin;
  }

  get state(): RobotsState {
    return this.#state;
  }

  /** The rules in force; null until the first are known. */
  get rules(): RobotsRules | null {
    return this.#rules;
  }

  /** True when robots.txt must be fetched before any other URL of the origin: unknown, or known and expired. */
  needsFetch(now: number): boolean {
    return this.#state === 'unknown' || (this.#state === 'known' && this.#rules !== null && this.#rules.expiresAt <= now);
  }

  /** The robots.txt request is out (the schedule cutter cut a robots slot). */
  fetchStarted(): void {
    this.#state = 'fetching';
  }

  /** The robots.txt request's lease ran out before its result: it is asked again. */
  fetchLost(): void {
    this.#state = 'unknown';
  }

  know(rules: RobotsRules): void {
    this.#rules = rules;
    this.#state = 'known';
  }

  /**
   * A robots.txt result arrived: its rules are in force and kept on disk. Says when the origin may
   * start again if its robots.txt was unreachable and attempts remain (its URLs wait for the next
   * attempt), and which attempt in a row this was. After the last attempt the origin is given up:
   * its deny-all rules stand for the usual lifetime of a robots.txt (section 2.4), so the URLs queued
   * now are denied as robots-unreachable at the next cut, and a later series of attempts starts afresh.
   */
  fetched(
    result: Omit<RobotsFetchOutcome, 'origin'> & { readonly retryAfterMs?: number | null },
    policy: RobotsPolicy & { readonly attempts: number; readonly maxRetryAfterMs?: number },
    store: RobotsStore | null,
    now: number,
  ): RobotsAttempt {
    const fetched: RobotsFetchOutcome = { origin: this.#origin, status: result.status, errorCode: result.errorCode, body: result.body };
    let rules = rulesFromFetch(fetched, policy, now);
    store?.save({ ...fetched, fetchedAt: now });
    if (rules.kind !== 'deny-all') {
      this.#knowParsed(rules, now, result.body?.length ?? 0, store, policy);
      this.#failures = 0;
      return { retryAt: null, unreachable: null };
    }
    const attempt = ++this.#failures;
    if (attempt < policy.attempts) {
      // A 429 or 503 saying when to come back (RFC 9110 section 10.2.3) is not asked before then, up to
      // the longest wait the crawl makes; the retry time is the least wait.
      const asked = result.retryAfterMs ?? null;
      if (asked !== null) rules = { ...rules, expiresAt: Math.max(rules.expiresAt, now + Math.min(asked, policy.maxRetryAfterMs ?? asked)) };
      this.know(rules);
      return { retryAt: rules.expiresAt, unreachable: { attempt, givenUp: false } };
    }
    this.#failures = 0;
    rules = { ...rules, expiresAt: now + Math.max(policy.unreachableRetryMs, ROBOTS_CACHE_MS) };
    this.know(rules);
    return { retryAt: null, unreachable: { attempt, givenUp: true } };
  }

  /** Whether the robots.txt kept on disk is still to be consulted (the origin not met yet in this process). */
  get storeUnconsulted(): boolean {
    return this.#state === 'unknown' && !this.#storeConsulted;
  }

  /** The first time the origin is met in this process: a stored robots.txt still fresh, and no failure, is known at once. */
  consultStore(store: RobotsStore | null, policy: RobotsPolicy, now: number): void {
    if (!this.storeUnconsulted) return;
    this.consultStored(store?.load(this.#origin) ?? null, store, policy, now);
  }

  /** `consultStore` with the stored outcome read already (RobotsStore.loadMany, many origins in one pass). */
  consultStored(stored: StoredRobots | null, store: RobotsStore | null, policy: RobotsPolicy, now: number): void {
    if (!this.storeUnconsulted) return;
    this.#storeConsulted = true;
    if (stored === null) return;
    const rules = rulesFromFetch(stored, policy, stored.fetchedAt);
    if (rules.expiresAt <= now || rules.kind === 'deny-all') return;
    this.#knowParsed(rules, stored.fetchedAt, stored.body?.length ?? 0, store, policy);
  }

  /**
   * Known rules from the fetch made at `fetchedAt`. A parsed file goes into the store's cache, and
   * what is kept here reads it from there: the getter holds the store and the fetch's time, never the
   * parsed rules themselves.
   */
  #knowParsed(rules: RobotsRules, fetchedAt: number, chars: number, store: RobotsStore | null, policy: RobotsPolicy): void {
    if (rules.kind !== 'rules' || store === null) {
      this.know(rules);
      return;
    }
    store.rememberParsed(this.#origin, fetchedAt, rules, chars);
    const origin = this.#origin;
    const policyNow: RobotsPolicy = { userAgentToken: policy.userAgentToken, unreachableRetryMs: policy.unreachableRetryMs };
    this.know({
      kind: 'rules',
      crawlDelayMs: rules.crawlDelayMs,
      expiresAt: rules.expiresAt,
      get robot(): Robot {
        return store.parsedRules(origin, fetchedAt, policyNow).robot;
      },
    });
  }
}
