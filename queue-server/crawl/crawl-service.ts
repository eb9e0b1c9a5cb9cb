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

/** ms since epoch. */
export type Clock = () => number;

/** The system clock: the one read of the wall clock in the queue server. */
export const systemClock: Clock = () => Date.now();

/** What the admin has asked for: `active` hands out work, `paused` holds it, `stopped` dropped the queue. */
export type ControlState = 'active' | 'paused' | 'stopped';

/** The state shown to people: the crawl's own state, unless the admin paused or stopped it. */
export type DisplayState = 'running' | 'idle' | 'paused' | 'stopped' | 'done';

export class CrawlService extends EventEmitter<{ change: []; finished: [] }> {
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
  #lastCommitAt = 0;
  readonly #commitIntervalMs: number;

  constructor(crawl: Crawl, options: { clock?: Clock; commitIntervalMs?: number } = {}) {
    super();
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
    const deadline = this.#clock() + request.waitMs;
    for (;;) {
      if (this.#crawl.finished()) {
        this.#toldDone.add(request.fetcherId);
        this.emit('change');
        return { kind: 'done' };
      }
      // A daemon shutting down sends fetchers away to retry, not home: it may be back soon.
      if (this.#closed) return { kind: 'wait' };
      const schedule = this.#control === 'active' ? this.#crawl.claim(request, address, this.#clock()) : null;
      if (schedule !== null) {
        this.#afterChange(false);
        return { kind: 'schedule', schedule };
      }
      this.#afterChange(false);
      const remaining = deadline - this.#clock();
      if (remaining <= 0 || signal?.aborted) return { kind: 'wait' };
      if (!(await this.#workAvailable.wait(remaining, signal))) return { kind: 'wait' };
    }
  }

  /** Applies results at once; resolves when they are durable (group commit), so the ack means it. */
  async results(request: ResultsRequest): Promise<ResultsResponse> {
    const response = this.#crawl.applyResults(request, this.#clock());
    this.#afterChange(response.applied > 0);
    await this.#durable();
    return response;
  }

  /**
   * Group commit: every results post waits for the next commit, and commits are at least
   * `commitIntervalMs` apart (100 ms by default: a handful of fsyncs a second however busy the crawl),
   * so posts arriving together share one commit. Fetchers do not wait for acknowledgements to go on.
   */
  #durable(): Promise<void> {
    if (this.#pendingCommit !== null) return this.#pendingCommit.done;
    const wait = Math.max(0, this.#lastCommitAt + this.#commitIntervalMs - this.#clock());
    let settle!: { resolve: () => void; reject: (error: unknown) => void };
    const done = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    const commitNow = () => {
      clearTimeout(timer);
      this.#pendingCommit = null;
      try {
        this.#crawl.commit();
        this.#lastCommitAt = this.#clock();
        settle.resolve();
      } catch (error) {
        settle.reject(error);
      }
    };
    const timer = setTimeout(commitNow, wait);
    this.#pendingCommit = { done, commitNow };
    return done;
  }

  heartbeat(request: HeartbeatRequest, address: string): string[] {
    const unknown = this.#crawl.heartbeat(request, address, this.#clock());
    this.#armTimer();
    return unknown;
  }

  status(): CrawlStatus & { displayState: DisplayState; control: ControlState } {
    const status = this.#crawl.status(this.#clock());
    return { ...status, displayState: this.displayState(), control: this.#control };
  }

  /** The counters and the crawl database's URLs by status, as printed when a crawl ends. */
  summary(): CrawlSummary & { urlsByStatus: Record<CrawlDbStatus, number> } {
    return this.#crawl.summary(this.#clock());
  }

  /** The current crawl's settings. */
  get config(): CrawlConfig {
    return this.#crawl.config;
  }

  displayState(): DisplayState {
    if (this.#control !== 'active') return this.#control;
    if (this.#crawl.finished()) return 'done';
    return this.#crawl.state();
  }

  /**
   * Commits whatever is applied and not yet durable, at once (a group commit still waiting for its
   * timer runs now: at shutdown nothing is gained by waiting, and the last acknowledgements and the
   * exit would wait up to commitIntervalMs for it); resolves when it is durable.
   */
  async flush(): Promise<void> {
    const pending = this.#pendingCommit;
    if (pending === null) this.#crawl.commit();
    else {
      pending.commitNow();
      await pending.done;
    }
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

  /** Ends the crawl: queued URLs are dropped (they stay known); leases out finish. */
  stop(): number {
    this.#control = 'stopped';
    const dropped = this.#crawl.dropQueued(this.#clock());
    this.#afterChange(false);
    return dropped;
  }

  inject(urls: readonly string[]): ReturnType<Crawl['inject']> {
    const result = this.#crawl.inject(urls, this.#clock());
    this.#afterChange(true);
    return result;
  }

  /** Starts a new crawl with these settings; refused while the current one is running (stop it first). */
  restart(config: CrawlConfig): void {
    if (this.#control === 'active' && this.#crawl.state() === 'running') {
      throw new Error('a crawl is running: stop it before starting another');
    }
    this.#crawl.restart(config, this.#clock());
    this.#control = 'active';
    this.#finishedEmitted = false;
    this.#afterChange(true);
  }

  get waitingClaims(): number {
    return this.#workAvailable.waiting;
  }

  /** Stops the timer and releases every parked claim (with `wait`, or `done` if the crawl finished). */
  close(): void {
    this.#closed = true;
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    this.#workAvailable.notifyAll();
  }

  #afterChange(mayHaveWork: boolean): void {
    if (mayHaveWork) this.#workAvailable.notifyAll();
    this.#armTimer();
    this.emit('change');
    if (!this.#finishedEmitted && this.#crawl.finished()) {
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
