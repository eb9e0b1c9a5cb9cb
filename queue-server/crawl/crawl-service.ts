/**
 * The crawl as a running service: the Crawl plus the clock. It owns the condition variable that
 * parked claims wait on and the single timer that fires when time alone makes work available (a
 * politeness wait ends) or takes it back (a lease runs out). No loop polls anything.
 *
 * The clock: this is the one place of the queue server that reads the time (`systemClock`); the
 * crawl and every decision below it are handed `now`, and the Crawl is reached only through the
 * service, so no caller can skip the clock. HTTP edges that need time (signature timestamps, login
 * limits, sessions, the status stream's pacing) are handed a clock, the system clock by default.
 */
import { EventEmitter } from 'node:events';
import type { ClaimRequest, ClaimResponse, HeartbeatRequest, ResultsRequest, ResultsResponse } from '../../shared/protocol.js';
import { Condition } from './condition.js';
import type { Crawl } from './crawl.js';
import type { CrawlStatus } from './crawl-status.js';
import type { CrawlConfig } from '../crawl-config.js';
import type { CrawlSummary } from './crawl-stats.js';
import type { CrawlDbStatus } from '../crawldb/record.js';
import { CommitFailure, StorageUnavailableError, storageRetryDelayMs, type StorageErrorState } from './storage-error.js';

/** ms since epoch. */
export type Clock = () => number;

/** The system clock: the one read of the wall clock in the queue server. */
export const systemClock: Clock = () => Date.now();

/** What the admin has asked for: `active` hands out work, `paused` holds it, `stopped` dropped the queue. */
export type ControlState = 'active' | 'paused' | 'stopped';

/**
 * The state shown to people: the crawl's own state, unless the admin paused or stopped it, or group
 * commits fail (`storage-error`: the crawl is paused until one succeeds; `storageError` says why).
 */
export type DisplayState = 'running' | 'idle' | 'paused' | 'stopped' | 'done' | 'storage-error';

/**
 * Events: `change` (anything the status shows), `finished` (a one-shot crawl ended), `settings` (the
 * crawl's settings or its stopped state changed: the daemon saves them), `storage-error` and
 * `storage-recovered` (commits failing, and working again), `closed` (the daemon is shutting down:
 * status streams end, so they do not hold the drain).
 */
export class CrawlService extends EventEmitter<{
  change: [];
  finished: [];
  closed: [];
  settings: [config: CrawlConfig, stopped: boolean];
  /** A commit failed (first failure, and every failed retry after it). */
  'storage-error': [StorageErrorState];
  /** A retried commit succeeded after `failedForMs` of failures: the crawl goes on. */
  'storage-recovered': [{ readonly failedForMs: number; readonly attempts: number }];
  /** A group commit ran (ops/metrics.ts times them): how long it took, and whether it stored everything. */
  commit: [{ readonly durationMs: number; readonly ok: boolean }];
  /** A claim was answered, `durationMs` after it arrived (long polls included). */
  claim: [{ readonly kind: ClaimResponse['kind']; readonly durationMs: number; readonly fetcherId: string; readonly name: string }];
  /** A results post was applied (before its commit): how many results it carried. */
  results: [{ readonly results: number; readonly applied: number }];
}> {
  readonly #crawl: Crawl;
  readonly #clock: Clock;
  readonly #workAvailable = new Condition();
  #timer: NodeJS.Timeout | null = null;
  #timerAt: number | null = null;
  #finishedEmitted = false;
  #closed = false;
  #control: ControlState = 'active';
  /** Fetchers that were answered `done`. */
  readonly #toldDone = new Set<string>();
  /** The next group commit, due at its timer; `commitNow` runs it at once (flush, on shutdown). */
  #pendingCommit: { readonly done: Promise<void>; readonly commitNow: () => void } | null = null;
  /** A group commit between its start and its end (its WARC fsync runs off the event loop): results wait for it. */
  #committing: Promise<void> | null = null;
  #lastCommitAt = 0;
  readonly #commitIntervalMs: number;
  /** Set while commits fail: results are refused with 503 and no work is handed out until a retry succeeds. */
  #storageError: StorageErrorState | null = null;
  #storageRetry: NodeJS.Timeout | null = null;

  /**
   * Runs before every commit and must succeed first (cluster/link-router.ts `drain`: the links found
   * for other partitions are in Redis before the crawl db marks their pages done); null outside a cluster.
   */
  readonly #beforeCommit: (() => Promise<void>) | null;

  constructor(crawl: Crawl, options: { clock?: Clock; commitIntervalMs?: number; beforeCommit?: () => Promise<void> } = {}) {
    super();
    this.#beforeCommit = options.beforeCommit ?? null;
    // One listener per open status stream (admin pages, progress displays); bounded by the sessions kept.
    this.setMaxListeners(0);
    this.#crawl = crawl;
    this.#clock = options.clock ?? systemClock;
    this.#commitIntervalMs = options.commitIntervalMs ?? 100;
  }

  start(): void {
    this.#crawl.seed(this.#clock());
    this.#afterChange(true);
  }

  /** Long poll: answers with a schedule as soon as one can be cut, else `wait` after waitMs. */
  async claim(request: ClaimRequest, address: string, signal?: AbortSignal): Promise<ClaimResponse> {
    const arrived = performance.now();
    const response = await this.#claim(request, address, signal);
    this.emit('claim', { kind: response.kind, durationMs: performance.now() - arrived, fetcherId: request.fetcherId, name: request.name });
    return response;
  }

  async #claim(request: ClaimRequest, address: string, signal?: AbortSignal): Promise<ClaimResponse> {
    const deadline = this.#clock() + request.waitMs;
    for (;;) {
      // While storage fails, what is applied may not be durable yet: the crawl is not over until it is.
      if (this.#crawl.finished() && this.#storageError === null) {
        this.#toldDone.add(request.fetcherId);
        this.emit('change');
        return { kind: 'done' };
      }
      // A daemon shutting down sends fetchers away to retry, not home: it may be back soon.
      if (this.#closed) return { kind: 'wait' };
      // Its fetcher went away while it waited (woken in the same turn): nothing is cut for no one.
      if (signal?.aborted === true) return { kind: 'wait' };
      const schedule = this.#control === 'active' && this.#storageError === null ? this.#crawl.claim(request, address, this.#clock()) : null;
      if (schedule !== null) {
        this.#afterChange(false);
        return { kind: 'schedule', schedule };
      }
      this.#afterChange(false);
      // This claim's own look may have ended the crawl (its last URLs given up): #afterChange woke the
      // waiters then, before this one waits, and will not again. Without this check it would wait out
      // its whole waitMs, and a one-shot crawl would close before telling the fetcher `done`.
      if (this.#crawl.finished() && this.#storageError === null) continue;
      const remaining = deadline - this.#clock();
      if (remaining <= 0 || signal?.aborted) return { kind: 'wait' };
      if (!(await this.#workAvailable.wait(remaining, signal))) return { kind: 'wait' };
    }
  }

  /**
   * Applies results at once; resolves when they are durable (group commit), so the ack means it.
   * While storage fails it throws StorageUnavailableError (a 503) without applying anything; a post
   * whose commit fails gets the same, and the fetcher posts it again (applied once: see apply-results).
   */
  async results(request: ResultsRequest, address?: string): Promise<ResultsResponse> {
    // A group commit is making its WARC records durable off the event loop: what it commits is what was
    // applied before it began, so results wait for it (they are parsed by then; the next commit takes them).
    while (this.#committing !== null) await this.#committing;
    if (this.#storageError !== null) throw this.#unavailable();
    const response = this.#crawl.applyResults(request, this.#clock(), address);
    this.emit('results', { results: request.results.length, applied: response.applied });
    this.#afterChange(response.applied > 0);
    await this.#durable();
    return response;
  }

  /**
   * Group commit: every results post waits for the next commit, and commits start at least
   * `commitIntervalMs` apart (100 ms by default: a handful of fsyncs a second however busy the crawl),
   * so posts arriving together share one commit. Fetchers do not wait for acknowledgements to go on.
   * The interval counts from the last commit's start, not its end: counted from the end, a commit of
   * 45 ms made a cycle of 145 ms, and a client with a few requests open (a 1,000,000-URL inject, four
   * requests of 1,000 at a time) left the queue server idle 40 % of the time, admitting 27,193 to 27,685
   * URLs a second; from the start, 30,378 to 36,188 (three alternating rounds each,
   * `bench-queue-server inject --in-flight 4`, 2026-12-06).
   *
   * A commit that fails for the file system (CommitFailure: ENOSPC, EIO, ...) rejects every post that
   * waited for it with StorageUnavailableError, keeps what it could not write (each store does), and
   * starts the retries (`#storageFailed`).
   */
  #durable(): Promise<void> {
    // A one-shot crawl these results finished has no more posts to share the commit with: commit
    // now rather than hold the last acknowledgements (and the exit) for the rest of the window, also
    // when earlier posts are already waiting for a commit (it takes these too).
    if (this.#pendingCommit !== null) {
      const pending = this.#pendingCommit;
      if (this.#crawl.finished()) pending.commitNow();
      return pending.done;
    }
    const wait = this.#crawl.finished() ? 0 : Math.max(0, this.#lastCommitAt + this.#commitIntervalMs - this.#clock());
    let settle!: { resolve: () => void; reject: (error: unknown) => void };
    const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    const commitNow = () => {
      clearTimeout(timer);
      if (this.#pendingCommit?.done !== done) return;
      this.#pendingCommit = null;
      // Storage failed meanwhile (a flush): this commit would be a retry out of turn.
      if (this.#storageError !== null) return settle.reject(this.#unavailable());
      const failed = (error: unknown) => {
        if (!(error instanceof CommitFailure)) return settle.reject(error);
        this.#storageFailed(error);
        settle.reject(this.#unavailable());
      };
      const commit = () => {
        // First the WARC records, written now and fsynced on the thread pool (crawl.ts commitArchive),
        // with results held back meanwhile (`results`); then the rest, as Crawl.commit orders it.
        const began = performance.now();
        const beganAt = this.#clock();
        const committing = this.#crawl.commitArchive().then(
          () => {
            try {
              this.#timedCommit(began);
              this.#lastCommitAt = beganAt;
              settle.resolve();
            } catch (error) {
              failed(error);
            }
          },
          (error: unknown) => {
            this.emit('commit', { durationMs: performance.now() - began, ok: false });
            failed(error);
          },
        );
        const gate: Promise<void> = committing.finally(() => {
          if (this.#committing === gate) this.#committing = null;
        });
        this.#committing = gate;
      };
      if (this.#beforeCommit === null) return commit();
      // Nothing is committed when the step before fails: the posts waiting get 503 and come again.
      this.#beforeCommit().then(commit, (error: unknown) => settle.reject(new StorageUnavailableError(`the queue server cannot forward links to the cluster now (${(error as Error).message}); post again later`, 1000)));
    };
    const timer = setTimeout(commitNow, wait);
    this.#pendingCommit = { done, commitNow };
    return done;
  }

  /** Crawl.commit, timed by the monotonic clock for the `commit` event (from `began`, when its WARC part started). */
  #timedCommit(began = performance.now()): void {
    let ok = false;
    try {
      this.#crawl.commit();
      ok = true;
    } finally {
      this.emit('commit', { durationMs: performance.now() - began, ok });
    }
  }

  /** Records the failure, pauses the crawl, and retries the commit after a backoff. */
  #storageFailed(failure: CommitFailure): void {
    const now = this.#clock();
    const attempts = (this.#storageError?.attempts ?? 0) + 1;
    const delay = storageRetryDelayMs(attempts);
    this.#storageError = { code: failure.code, message: failure.message, since: this.#storageError?.since ?? now, attempts, retryAt: now + delay };
    this.emit('storage-error', this.#storageError);
    if (this.#storageRetry !== null) clearTimeout(this.#storageRetry);
    this.#storageRetry = this.#closed ? null : setTimeout(() => void this.#retryCommit(), delay);
    this.#afterChange(false);
  }

  /** A retry of the failed commit; on success the crawl resumes (claims are woken). */
  async #retryCommit(): Promise<void> {
    this.#storageRetry = null;
    const failed = this.#storageError;
    if (failed === null) return;
    try {
      await this.#beforeCommit?.();
    } catch {
      this.#storageRetry = this.#closed ? null : setTimeout(() => void this.#retryCommit(), 1000);
      return;
    }
    try {
      this.#timedCommit();
    } catch (error) {
      if (!(error instanceof CommitFailure)) throw error;
      this.#storageFailed(error);
      return;
    }
    this.#storageError = null;
    this.#lastCommitAt = this.#clock();
    this.emit('storage-recovered', { failedForMs: this.#lastCommitAt - failed.since, attempts: failed.attempts });
    this.#afterChange(true);
  }

  #unavailable(): StorageUnavailableError {
    const failed = this.#storageError;
    const retryAfterMs = failed === null ? 1000 : Math.max(1000, failed.retryAt - this.#clock());
    const why = failed === null ? 'the commit failed' : `${failed.code}: ${failed.message}`;
    return new StorageUnavailableError(`the queue server cannot store results now (${why}); keep them and post again later`, retryAfterMs);
  }

  heartbeat(request: HeartbeatRequest, address: string): string[] {
    const unknown = this.#crawl.heartbeat(request, address, this.#clock());
    this.#armTimer();
    return unknown;
  }

  status(): CrawlStatus & { displayState: DisplayState; control: ControlState; storageError: StorageErrorState | null } {
    const status = this.#crawl.status(this.#clock());
    return { ...status, displayState: this.displayState(), control: this.#control, storageError: this.#storageError };
  }

  /** Set while commits fail (the crawl is paused until one succeeds), else null. */
  get storageError(): StorageErrorState | null {
    return this.#storageError;
  }

  /** A schedule the claim's connection could not carry (it closed first): its URLs are claimable again at once. */
  returnSchedule(scheduleId: string, fetcherId: string): void {
    if (this.#crawl.returnSchedule(scheduleId, fetcherId, this.#clock())) this.#afterChange(true);
  }

  /** Every fetcher called `name` is gone (its process exited, `petrel start` saw it): its URLs are claimable again at once. */
  fetcherGone(name: string): number {
    const returned = this.#crawl.fetcherGone(name, this.#clock());
    this.#afterChange(returned > 0);
    return returned;
  }

  /** The counters and the crawl database's URLs by status, as printed when a crawl ends. */
  summary(): CrawlSummary & { urlsByStatus: Record<CrawlDbStatus, number> } {
    return this.#crawl.summary(this.#clock());
  }

  /** The current crawl's settings. */
  /** The cached copy of a URL (Crawl.cachedCopy). */
  cachedCopy(url: string): ReturnType<Crawl['cachedCopy']> {
    return this.#crawl.cachedCopy(url);
  }

  get config(): CrawlConfig {
    return this.#crawl.config;
  }

  displayState(): DisplayState {
    if (this.#control !== 'active') return this.#control;
    if (this.#storageError !== null) return 'storage-error';
    if (this.#crawl.finished()) return 'done';
    return this.#crawl.state();
  }

  /**
   * Commits whatever is applied and not yet durable, at once (a group commit still waiting for its
   * timer runs now: at shutdown nothing is gained by waiting, and the last acknowledgements and the
   * exit would wait up to commitIntervalMs for it); resolves when it is durable, throws CommitFailure
   * if it cannot be.
   */
  async flush(): Promise<void> {
    // A commit under way finishes first (its WARC fsync is on the thread pool).
    while (this.#committing !== null) await this.#committing;
    const pending = this.#pendingCommit;
    // A pending commit that fails rejects its waiters; the commit below fails the same way and says so here.
    if (pending !== null) {
      pending.commitNow();
      await pending.done.catch(() => undefined);
    }
    await this.#beforeCommit?.();
    this.#timedCommit();
    if (this.#storageError !== null) {
      this.#storageError = null;
      if (this.#storageRetry !== null) clearTimeout(this.#storageRetry);
      this.#storageRetry = null;
    }
  }

  /** Resolves after the next group commit (the inbox of a cluster acknowledges its links then); rejects when it failed. */
  committed(): Promise<void> {
    return this.#durable();
  }

  /** Links of this partition's hosts forwarded by other cluster members (Crawl.admitForwarded). */
  admitForwarded(links: readonly (readonly [string, number, number])[]): ReturnType<Crawl['admitForwarded']> {
    const outcome = this.#crawl.admitForwarded(links, this.#clock());
    this.#afterChange(outcome.admitted > 0);
    return outcome;
  }

  /** Resolves once every fetcher heard from recently was answered `done`, or after `timeoutMs`. */
  allFetchersTold(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        const live = this.#crawl.liveFetcherIds(this.#clock());
        if (live.every((id) => this.#toldDone.has(id))) finish();
      };
      const finish = () => {
        clearTimeout(timer);
        this.off('change', check);
        resolve();
      };
      const timer = setTimeout(finish, timeoutMs);
      this.on('change', check);
      check();
    });
  }

  /** Holds all new work; leases out finish. */
  pause(): void {
    this.#control = 'paused';
    this.#afterChange(false);
  }

  resume(): void {
    this.#control = 'active';
    this.#afterChange(true);
  }

  /** Ends the crawl: queued and waiting URLs are dropped (they stay known); leases out finish. */
  stop(): number {
    this.#control = 'stopped';
    const dropped = this.#crawl.stop(this.#clock());
    this.#afterChange(false);
    this.emit('settings', this.#crawl.config, true);
    return dropped;
  }

  /** Resolves after the next group commit (what was applied or admitted so far is durable); rejects as a results post would while storage fails. */
  durable(): Promise<void> {
    if (this.#storageError !== null) return Promise.reject(this.#unavailable());
    return this.#durable();
  }

  inject(urls: readonly string[]): ReturnType<Crawl['inject']> {
    const result = this.#crawl.inject(urls, this.#clock());
    this.#afterChange(true);
    return result;
  }

  /**
   * Starts a new crawl with these settings (Crawl.restart: what is known and not fetched yet in its
   * scope is continued); refused while the current one is running (stop it first).
   */
  restart(config: CrawlConfig): ReturnType<Crawl['restart']> {
    if (this.#control === 'active' && this.#crawl.state() === 'running') {
      throw new Error('a crawl is running: stop it before starting another');
    }
    const loaded = this.#crawl.restart(config, this.#clock());
    this.#control = 'active';
    this.#finishedEmitted = false;
    this.#afterChange(true);
    this.emit('settings', this.#crawl.config, false);
    return loaded;
  }

  get waitingClaims(): number {
    return this.#workAvailable.waiting;
  }

  /** Stops the timer and releases every parked claim (with `wait`, or `done` if the crawl finished). */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#storageRetry !== null) clearTimeout(this.#storageRetry);
    this.#storageRetry = null;
    this.#workAvailable.notifyAll();
    this.emit('closed');
  }

  #afterChange(mayHaveWork: boolean): void {
    if (mayHaveWork) this.#workAvailable.notifyAll();
    this.#armTimer();
    this.emit('change');
    if (!this.#finishedEmitted && this.#storageError === null && this.#crawl.finished()) {
      this.#finishedEmitted = true;
      this.#workAvailable.notifyAll();
      this.emit('finished');
    }
  }

  #armTimer(): void {
    if (this.#closed) return;
    const at = this.#crawl.nextTimerAt(this.#clock());
    if (at === this.#timerAt && this.#timer !== null) return;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = at;
    if (at === null) return;
    const delay = Math.min(Math.max(0, at - this.#clock()), 2 ** 31 - 1);
    this.#timer = setTimeout(() => this.#onTimer(), delay);
  }

  #onTimer(): void {
    this.#timer = null;
    this.#timerAt = null;
    this.#crawl.expireLeases(this.#clock());
    this.#crawl.releaseDue(this.#clock());
    this.#afterChange(true);
  }
}
