/**
 * Host backoff: a host whose requests keep failing (timeouts, connection failures, 5xx or 429 without Retry-After; see
 * shared/fetch-codes.ts `isHostFailure`) is slowed down as a whole, instead of each of its URLs
 * retrying on its own schedule and each paying a full timeout. This is what Nutch's fetch queues do
 * (`fetcher.exceptions.per.queue.delay` adds a delay per exception of a queue, and
 * `fetcher.max.exceptions.per.queue` drops the queue's remaining URLs), made exponential.
 *
 *   failed requests in a row   what happens to the host
 *   -------------------------  ---------------------------------------------------------------------
 *   1, 2                       nothing yet (its URLs retry as usual)
 *   k >= HOST_FAILURES_IN_ROW  no new slot before now + min(maxWaitMs, baseMs * 2^(k - 3)); the
 *                              fetcher also stops the slot it is in (`not-requested`)
 *   k >= giveUpAfter           one-shot crawls only: the host is given up for the pass; every URL of
 *                              it still queued, waiting or found later is recorded `host-failing`
 *                              (gone) without a request
 *   a Retry-After longer than  one-shot crawls only: given up at once, as above (the host asked not to
 *   the crawl waits            be asked before the crawl would end)
 *   any other answer           forgotten: the host is healthy again
 *
 * Pure decision (`afterRequest`) plus a small owner of the state (`HostBackoff`). Memory: one entry per
 * host that is failing now (about 200 bytes); a host that answers again is forgotten.
 */
import { HOST_FAILURES_IN_ROW } from '../../shared/fetch-codes.js';

/** Failed requests in a row after which a one-shot crawl gives a host up. */
export const HOST_GIVE_UP_FAILURES = 6;
/** Longest host backoff of a continuous crawl (the daemon keeps asking, at most hourly). */
export const MAX_HOST_BACKOFF_MS = 60 * 60 * 1000;
/** Longest single wait of a one-shot crawl: retry backoff, host backoff, Retry-After (longer ones give the URL up). */
export const ONE_SHOT_MAX_WAIT_MS = 60 * 1000;
/** The code of URLs given up because their host kept failing. */
export const HOST_FAILING_CODE = 'host-failing';

export interface HostBackoffPolicy {
  /** Wait at the first backoff, ms (--retry-base-ms); doubled at each further failure in a row. */
  readonly baseMs: number;
  readonly maxWaitMs: number;
  /** Failures in a row that give the host up (one-shot crawls), or null: never given up. */
  readonly giveUpAfter: number | null;
}

export function hostBackoffPolicyOf(config: { retryBaseMs: number; once: boolean }): HostBackoffPolicy {
  return config.once
    ? { baseMs: config.retryBaseMs, maxWaitMs: ONE_SHOT_MAX_WAIT_MS, giveUpAfter: HOST_GIVE_UP_FAILURES }
    : { baseMs: config.retryBaseMs, maxWaitMs: MAX_HOST_BACKOFF_MS, giveUpAfter: null };
}

/** A failing host, as the status shows it (`backedOffHosts`). */
export interface HostHealth {
  readonly origin: string;
  readonly failuresInRow: number;
  /** Code of the last failure (`timeout`, `http-503`, ...). */
  readonly code: string;
  /** First failure of the run, ms since epoch. */
  readonly since: number;
  /** No new slot before this, ms since epoch; null while not backed off (or given up). */
  readonly until: number | null;
  readonly gaveUp: boolean;
  /** URLs recorded `host-failing` since it was given up. */
  readonly givenUpUrls: number;
  /** The Retry-After (ms) that gave it up, longer than the crawl waits; null: given up for failing, or not. */
  readonly waitAskedMs: number | null;
}

/** One request's answer as the host's health sees it. */
export interface HostAnswer {
  readonly failed: boolean;
  readonly code: string;
  /** A Retry-After longer than the crawl waits (ms): a one-shot crawl gives the host up at once. */
  readonly waitTooLongMs?: number | null;
}

/** The host's state after one request's answer. Pure; null: the host is healthy. */
export function afterRequest(health: HostHealth | null, origin: string, answer: HostAnswer, now: number, policy: HostBackoffPolicy): HostHealth | null {
  const waitTooLongMs = policy.giveUpAfter === null ? null : (answer.waitTooLongMs ?? null);
  if (!answer.failed && waitTooLongMs === null) return null;
  const failuresInRow = (health?.failuresInRow ?? 0) + 1;
  const gaveUp = health?.gaveUp === true || waitTooLongMs !== null || (policy.giveUpAfter !== null && failuresInRow >= policy.giveUpAfter);
  const backedOff = !gaveUp && failuresInRow >= HOST_FAILURES_IN_ROW;
  const wait = Math.min(policy.maxWaitMs, policy.baseMs * 2 ** Math.min(40, failuresInRow - HOST_FAILURES_IN_ROW));
  return {
    origin,
    failuresInRow,
    code: answer.code,
    since: health?.since ?? now,
    until: backedOff ? now + wait : null,
    gaveUp,
    givenUpUrls: health?.givenUpUrls ?? 0,
    waitAskedMs: health?.waitAskedMs ?? (gaveUp ? waitTooLongMs : null),
  };
}

/** Hosts shown in the status at most (the most recent first). */
export const MAX_SHOWN_HOSTS = 50;

export class HostBackoff {
  readonly #hosts = new Map<string, HostHealth>();
  #policy: HostBackoffPolicy;

  constructor(policy: HostBackoffPolicy) {
    this.#policy = policy;
  }

  /** Records a request's answer; returns the host's state (null: healthy). */
  record(origin: string, answer: HostAnswer, now: number): HostHealth | null {
    const next = afterRequest(this.#hosts.get(origin) ?? null, origin, answer, now, this.#policy);
    this.#hosts.delete(origin);
    if (next !== null) this.#hosts.set(origin, next);
    return next;
  }

  /** Whether the host is given up for this pass (its URLs are recorded `host-failing`). */
  gaveUp(origin: string): boolean {
    return this.#hosts.get(origin)?.gaveUp === true;
  }

  countGivenUp(origin: string): void {
    const health = this.#hosts.get(origin);
    if (health !== undefined) this.#hosts.set(origin, { ...health, givenUpUrls: health.givenUpUrls + 1 });
  }

  /** A new crawl: new settings, every host healthy again. */
  reset(policy: HostBackoffPolicy): void {
    this.#policy = policy;
    this.#hosts.clear();
  }

  /** The hosts backed off or given up, most recent failure first, at most MAX_SHOWN_HOSTS. */
  list(): HostHealth[] {
    const shown: HostHealth[] = [];
    for (const health of [...this.#hosts.values()].reverse()) {
      if (health.failuresInRow < HOST_FAILURES_IN_ROW && !health.gaveUp) continue;
      shown.push(health);
      if (shown.length === MAX_SHOWN_HOSTS) break;
    }
    return shown;
  }
}
