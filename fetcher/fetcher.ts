/**
 * A fetcher process's work loop. It keeps one long-poll claim open whenever it has free slots, runs
 * each leased slot as a serial, paced sequence of requests to one origin, and posts results back in
 * batches: when 64 are waiting, 200 ms after the first one waits, or at once when a slot finishes
 * (so the queue server can give the origin its next slot). Posts are retried until they succeed:
 * results are never dropped because the queue server was briefly away.
 *
 * Life cycle: runs until the queue server answers a claim with `done` (a one-shot crawl ended),
 * `stop()` is called (each held slot finishes the request it is on, its results are delivered, and
 * the rest of the slot goes back to the queue server when its lease runs out), or, with `giveUpAfterMs`,
 * the queue server has been unreachable that long.
 *
 * A queue server that does not answer is said so: when a request to it fails a second time, then every
 * STILL_WAITING_EVERY_MS (or a third of giveUpAfterMs) while it stays away, and once it is back.
 */
import { setMaxListeners } from 'node:events';
import type { Dispatcher } from 'undici';
import { LIMITS, PROTOCOL_VERSION, type FetcherStats, type ItemResult, type Schedule } from '../shared/protocol.js';
import { addressOf, TrustedOrigins, type AddressPolicy } from './address-guard.js';
import { createCrawlAgent, TIMER_SLACK_MS, type DownloadOptions } from './download.js';
import { fetchItem, notRequestedResult, preloadExtractor } from './fetch-item.js';
import { asksToStop, HOST_FAILURES_IN_ROW, isHostFailure } from '../shared/fetch-codes.js';
import { QueueClient, QueueServerError, StoppedError } from './queue-client.js';
import { STILL_WAITING_EVERY_MS } from './defaults.js';
import { SlotBudget, type BudgetMember } from './slot-budget.js';
import { formatApproxDuration, formatDuration } from '../shared/duration.js';

export interface FetcherOptions {
  readonly serverUrl: string;
  readonly token: string;
  /** PEM CA certificate(s) that verify an HTTPS queue server (default: the system's CAs). */
  readonly ca?: string | Buffer;
  readonly name: string;
  readonly fetcherId: string;
  /** Slots (origins) fetched at once: the size of `budget` when none is given. */
  readonly concurrency: number;
  /**
   * The process's slots, shared with the claim loops of the other queue servers it serves
   * (server-pool.ts, slot-budget.ts); absent: a budget of `concurrency` of this loop's own.
   */
  readonly budget?: SlotBudget;
  readonly download: DownloadOptions;
  /** How long a claim may wait at the queue server, ms. */
  readonly claimWaitMs: number;
  /** Which addresses crawl requests may connect to (address-guard.ts); seeds' hosts are added from schedules. */
  readonly addressPolicy: AddressPolicy;
  /** Give up (run() resolves `gave-up`) when the queue server has been unreachable this long, ms; null: wait for ever. */
  readonly giveUpAfterMs?: number | null;
  readonly log: (message: string) => void;
}

export type FetcherEnd = 'done' | 'stopped' | 'gave-up';

interface ActiveSchedule {
  readonly schedule: Schedule;
  slotsLeft: number;
  pending: ItemResult[];
  /** About how many bytes `pending` holds (resultBytes): captures, links, index data. */
  pendingBytes: number;
  flushTimer: NodeJS.Timeout | null;
  posting: Promise<void>;
}

const FLUSH_COUNT = 64;
const FLUSH_DELAY_MS = 200;
/**
 * Results are posted before they pass this many bytes (resultBytes), so that a post stays far below the
 * queue server's 64 MiB in either form (one capture is at most fetch-item.ts MAX_ARCHIVED_BODY_BYTES,
 * 24 MiB, 32 MiB in the base64 of a JSON post, plus its heads) and results of large pages, or of pages
 * of thousands of long links, are not held in memory 64 at a time.
 */
const FLUSH_BYTES = 12 * 1024 * 1024;
/**
 * Results held and not yet acknowledged (pending in slots, or posted), at most (bytes, resultBytes):
 * past it, slots ask nothing more until deliveries drain. A queue server that answers 503 busy, or is
 * away, would otherwise let a fetcher fetch on and hold every result: pages of 5,000 long links took
 * one to 3.8 GB of RSS (452 MB with this bound; the measurement is in the commit that added it).
 */
const MAX_UNDELIVERED_BYTES = 64 * 1024 * 1024;

/** About how many bytes a result takes in memory and on the wire: its capture, its links (and their anchor terms), its index data. */
function resultBytes(result: ItemResult): number {
  let bytes = 1024;
  if (result.capture) bytes += result.capture.requestRecord.length + result.capture.responseRecord.length + result.capture.responseHead.length;
  for (const link of result.links) bytes += 2 * link.length + 16;
  if (result.index !== null) bytes += 32 * 1024;
  return bytes;
}

export class Fetcher {
  readonly #options: FetcherOptions;
  readonly #client: QueueClient;
  readonly #agent: Dispatcher;
  readonly #stopping = new AbortController();
  readonly #active = new Map<string, ActiveSchedule>();
  readonly #slotRuns = new Set<Promise<void>>();
  /** Result deliveries of finished schedules still in flight. */
  readonly #deliveries = new Set<Promise<void>>();
  readonly #budget: SlotBudget;
  readonly #member: BudgetMember;
  /** Slots running now (each holds one unit of the budget). */
  #running = 0;
  /** The last claim came back without work: the next asks for one unit only while other loops share the budget. */
  #idle = false;
  /** Abandons the claim in flight (it asked for more than one unit and has to be retried). */
  #shrinkClaim: (() => void) | null = null;
  #heartbeatTimer: NodeJS.Timeout | null = null;
  readonly #stats: Omit<FetcherStats, 'rssBytes' | 'inFlight'> = { pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

  constructor(options: FetcherOptions) {
    this.#options = options;
    // Every request in flight listens on the stop signal; there are legitimately more than ten.
    setMaxListeners(0, this.#stopping.signal, this.#claimAbort.signal);
    this.#budget = options.budget ?? new SlotBudget(options.concurrency);
    this.#member = this.#budget.join();
    this.#client = new QueueClient({
      serverUrl: options.serverUrl,
      token: options.token,
      ca: options.ca,
      signal: this.#stopping.signal,
      connections: Math.max(8, options.concurrency * 2),
      onRetry: (what, attempt, error) => {
        if (what === 'results') this.#deliveryTrouble = true;
        // A claim that failed holds its units while it is retried: hand them back, ask again for one.
        if (what === 'claim') this.#shrinkClaim?.();
        this.#unreachable(attempt, error);
      },
      maxRetryWaitMs: () => Math.max(0, this.#dueAt - performance.now()),
    });
    // Slots of other hosts never use a connection opened while a seed's host was trusted: the guard
    // checks a connection when it is opened, and a pooled one (kept 30 s) would reach a private address
    // after the trust ended (a new crawl with other seeds). So the trusted slots have an agent of their own.
    this.#agent = this.#newAgent({ ...options.addressPolicy, trustedOrigins: new TrustedOrigins() });
  }

  #newAgent(addressPolicy: AddressPolicy): Dispatcher {
    return createCrawlAgent({ ...this.#options.download, connectionsPerOrigin: Math.max(1, this.#options.concurrency), addressPolicy });
  }

  /** The agent of slots the queue server marked `allowPrivateAddresses` (a seed's host), made when first needed. */
  #trustedAgent: Dispatcher | null = null;

  #agentFor(slot: Schedule['slots'][number]): Dispatcher {
    if (!slot.allowPrivateAddresses) return this.#agent;
    return (this.#trustedAgent ??= this.#newAgent(this.#options.addressPolicy));
  }

  /** Resolves with why the loop ended, after every held slot's results were delivered. */
  async run(): Promise<FetcherEnd> {
    let reason: FetcherEnd = 'stopped';
    try {
      reason = await this.#claimLoop();
      if (this.#gaveUp) reason = 'gave-up';
    } finally {
      await Promise.allSettled([...this.#slotRuns]);
      await Promise.allSettled([...this.#active.values()].map((active) => this.#flush(active)));
      await Promise.allSettled([...this.#deliveries]);
      if (this.#heartbeatTimer !== null) clearInterval(this.#heartbeatTimer);
      await this.#client.close().catch(() => undefined);
      await this.#agent.close().catch(() => undefined);
      await this.#trustedAgent?.close().catch(() => undefined);
      this.#budget.leave(this.#member);
    }
    return reason;
  }

  /** Stops claiming (a claim waiting at the queue server is abandoned); each held slot stops after its request in flight, and what was fetched is delivered. */
  stop(): void {
    this.#stopClaiming = true;
    this.#claimAbort.abort();
  }

  /** Stops at once: pending posts are abandoned (their leases will expire and be re-issued). */
  abort(): void {
    this.stop();
    this.#stopping.abort();
  }

  #stopClaiming = false;
  #gaveUp = false;
  /** ms (performance.now) since the queue server stopped answering, or null while it answers. */
  #unreachableSince: number | null = null;
  /** When the last "waiting for the queue server" line went out (performance.now), or null. */
  #lastNotice: number | null = null;

  /**
   * When the next notice or the give-up is due (performance.now), while the queue server is away:
   * retries wait no longer (maxRetryWaitMs). Both are decided when a retry fails, and a backoff (up to
   * 2 s while refused, 10 s otherwise) would put them off: with --give-up-after 3s, the notice due
   * every second could come never, and the give-up seconds late.
   */
  #dueAt = Number.POSITIVE_INFINITY;

  /** A request to the queue server failed (it is retried): say so now and then, and give up when told to. */
  #unreachable(attempt: number, error: unknown): void {
    const now = performance.now();
    this.#unreachableSince ??= now;
    const away = now - this.#unreachableSince;
    const giveUp = this.#options.giveUpAfterMs ?? null;
    const every = giveUp === null ? STILL_WAITING_EVERY_MS : Math.min(STILL_WAITING_EVERY_MS, Math.max(1000, giveUp / 3));
    const why = ((error as Error).message ?? String(error)).split('\n')[0]!.slice(0, 200);
    const server = this.#options.serverUrl;
    if (giveUp !== null && away >= giveUp) {
      if (!this.#gaveUp) this.#options.log(`giving up: the queue server at ${server} has not answered for ${formatApproxDuration(away)} (--give-up-after ${formatDuration(giveUp)}; last: ${why})`);
      this.#gaveUp = true;
      this.abort();
      return;
    }
    this.#dueAt = giveUp === null ? Number.POSITIVE_INFINITY : this.#unreachableSince + giveUp;
    // One failure is no news (a connection the queue server closed, a restart): say so from the second.
    if (this.#lastNotice === null && attempt < 2) return;
    // A 5xx answer (busy, storage unavailable) is a queue server that is there but cannot take work now.
    const answering = error instanceof QueueServerError;
    if (this.#lastNotice === null) {
      const trouble = answering ? `the queue server at ${server} cannot take requests now` : `cannot reach the queue server at ${server}`;
      this.#options.log(`${trouble} (${why}); waiting for it${giveUp === null ? '' : `, for at most ${formatDuration(giveUp)}`}`);
      this.#lastNotice = now;
    } else if (now - this.#lastNotice >= every) {
      this.#options.log(`still waiting for the queue server at ${server}: ${answering ? 'refusing work' : 'no answer'} for ${formatApproxDuration(away)} (${why})${giveUp === null ? '' : `; giving up after ${formatDuration(giveUp)}`}`);
      this.#lastNotice = now;
    }
    this.#dueAt = Math.min(this.#dueAt, this.#lastNotice + every);
  }

  /** The queue server answered. */
  #reachable(): void {
    if (this.#lastNotice !== null) this.#options.log(`the queue server at ${this.#options.serverUrl} answers again`);
    this.#unreachableSince = null;
    this.#lastNotice = null;
    this.#dueAt = Number.POSITIVE_INFINITY;
  }
  /** A results post had to be retried: deliver what is held before claiming more (the queue server was away). */
  #deliveryTrouble = false;
  readonly #claimAbort = new AbortController();

  async #claimLoop(): Promise<'done' | 'stopped'> {
    while (!this.#stopClaiming) {
      if (this.#deliveryTrouble) {
        // Results first: a queue server that was away applies them before it leases those URLs again.
        await Promise.allSettled([...this.#active.values()].map((active) => active.posting));
        await Promise.allSettled([...this.#deliveries]);
        this.#deliveryTrouble = false;
        if (this.#stopClaiming) break;
      }
      // A parked claim at a queue server without work holds what it asked for: one unit, while other
      // loops share the budget (slot-budget.ts); a loop of its own asks for everything free, as before.
      const ask = this.#idle && this.#budget.members > 1 ? 1 : Math.min(this.#budget.total, LIMITS.slotsPerSchedule);
      const capacity = await this.#budget.acquire(this.#member, ask, this.#claimAbort.signal);
      if (capacity === 0) break;
      let response;
      // A queue server that does not answer would keep what this claim holds for as long as it is
      // away: on its first failure the claim is abandoned and asked again for one unit (slot-budget.ts).
      const attempt = new AbortController();
      const stopAttempt = () => attempt.abort();
      this.#claimAbort.signal.addEventListener('abort', stopAttempt, { once: true });
      let shrunk = false;
      if (capacity > 1 && this.#budget.members > 1) {
        this.#shrinkClaim = () => {
          shrunk = true;
          attempt.abort();
        };
      }
      try {
        response = await this.#client.claim({
          protocolVersion: PROTOCOL_VERSION,
          fetcherId: this.#options.fetcherId,
          name: this.#options.name,
          capacity,
          waitMs: this.#options.claimWaitMs,
          stats: this.#currentStats(),
        }, attempt.signal);
      } catch (error) {
        this.#budget.release(this.#member, capacity);
        if (error instanceof StoppedError && shrunk && !this.#stopClaiming) {
          this.#idle = true;
          continue;
        }
        if (error instanceof StoppedError) return 'stopped';
        throw error;
      } finally {
        this.#shrinkClaim = null;
        this.#claimAbort.signal.removeEventListener('abort', stopAttempt);
      }
      this.#reachable();
      const slots = response.kind === 'schedule' ? response.schedule.slots.length : 0;
      // A queue server that answers with more slots than asked for breaks the protocol: they are refused below.
      this.#budget.release(this.#member, Math.max(0, capacity - slots));
      this.#idle = slots === 0;
      if (response.kind === 'done') return 'done';
      if (response.kind === 'schedule' && slots > capacity) {
        this.#budget.release(this.#member, capacity);
        this.#options.log(`the queue server at ${this.#options.serverUrl} answered a claim for ${capacity} slots with ${slots}: ignored (its lease will run out)`);
        continue;
      }
      if (response.kind === 'schedule') {
        this.#start(response.schedule);
        // Its first requests are out (a new origin's first is its robots.txt): load the extractor while
        // they are answered, not before the first claim, which would delay it (see fetch-item.ts).
        void preloadExtractor();
      }
    }
    return 'stopped';
  }

  #start(schedule: Schedule): void {
    const active: ActiveSchedule = { schedule, slotsLeft: schedule.slots.length, pending: [], pendingBytes: 0, flushTimer: null, posting: Promise.resolve() };
    this.#active.set(schedule.id, active);
    this.#running += schedule.slots.length;
    this.#ensureHeartbeat(schedule.leaseMs);
    // A seed's host may be on a private address (the operator chose to crawl it): its connections skip
    // the guard while the slot runs (address-guard.ts TrustedOrigins), and no longer.
    const trusted = this.#options.addressPolicy.trustedOrigins;
    for (const slot of schedule.slots) {
      if (slot.allowPrivateAddresses) trusted.hold(slot.origin);
      const run = this.#runSlot(active, slot).finally(() => {
        if (slot.allowPrivateAddresses) trusted.release(slot.origin);
        this.#slotRuns.delete(run);
        this.#running--;
        this.#budget.release(this.#member, 1);
      });
      this.#slotRuns.add(run);
    }
  }

  async #runSlot(active: ActiveSchedule, slot: Schedule['slots'][number]): Promise<void> {
    const stopping = this.#claimAbort.signal;
    if (slot.startAfterMs > 0) await sleepAtLeast(slot.startAfterMs + TIMER_SLACK_MS, stopping);
    const policy = this.#options.addressPolicy;
    const ctx = { dispatcher: this.#agentFor(slot), download: this.#options.download, archive: active.schedule.warc, index: active.schedule.index, maxLinks: active.schedule.maxLinks, addressOf: (hostname: string) => addressOf(policy, hostname) };
    let failuresInRow = 0;
    /** Why the rest of the slot is not requested, once the host said to stop or kept failing; null: go on. */
    let stopped: string | null = null;
    for (let index = 0; index < slot.items.length; index++) {
      if (index > 0 && slot.delayMs > 0 && stopped === null) await sleepAtLeast(slot.delayMs + TIMER_SLACK_MS, stopping);
      // Too much fetched and not yet delivered: wait for the queue server to take it (bounded memory).
      if (stopped === null && this.#undeliveredBytes > MAX_UNDELIVERED_BYTES) await this.#delivered(stopping);
      // Stopping: the request in flight was finished; the rest of the slot returns with its lease.
      if (this.#stopClaiming) break;
      // A host whose requests keep failing, or that said to come back later, is not asked the rest of the
      // slot: the queue server holds it back as a whole (queue-server/frontier/host-backoff.ts, the
      // Retry-After wait in apply-results.ts) instead of each URL failing or waiting on its own.
      const result: ItemResult = stopped !== null ? notRequestedResult(slot.slot, slot.items[index]!, stopped) : await fetchItem(ctx, slot.slot, slot.items[index]!);
      if (result.error?.code !== 'not-requested') {
        failuresInRow = isHostFailure(result.status, result.error?.code ?? null, result.retryAfterMs) ? failuresInRow + 1 : 0;
        if (failuresInRow >= HOST_FAILURES_IN_ROW) stopped = `the slot's last ${failuresInRow} requests to this host failed`;
        else if (asksToStop(result.status, result.retryAfterMs)) stopped = `the host answered ${result.status}${result.retryAfterMs === null ? '' : ' with Retry-After'}: asked nothing more until the queue server says`;
        this.#count(result);
      }
      active.pending.push(result);
      const bytes = resultBytes(result);
      active.pendingBytes += bytes;
      this.#undeliveredBytes += bytes;
      // A sitemap's entries (up to 8 MiB of URLs) go out on their own, so a post stays small.
      if (active.pending.length >= FLUSH_COUNT || active.pendingBytes >= FLUSH_BYTES || result.sitemap) void this.#flush(active);
      else if (active.flushTimer === null) active.flushTimer = setTimeout(() => void this.#flush(active), FLUSH_DELAY_MS);
    }
    active.slotsLeft--;
    // The slot's capacity is free at once; its results go out now (so the queue server can give the
    // origin its next slot) and are delivered in the background, in order, retried until accepted.
    const posted = this.#flush(active);
    if (active.slotsLeft === 0) {
      const done = posted.then(() => {
        this.#active.delete(active.schedule.id);
        this.#deliveries.delete(done);
      });
      this.#deliveries.add(done);
    }
  }

  /**
   * Posts what is pending for the schedule. Posts go out at once, side by side: each is applied on its
   * own (and only once), and an acknowledgement waits for the queue server's group commit, so queueing
   * them one behind another would delay the last results of a schedule by a commit per post.
   * `active.posting` settles when every post made so far has.
   */
  #flush(active: ActiveSchedule): Promise<void> {
    if (active.flushTimer !== null) clearTimeout(active.flushTimer);
    active.flushTimer = null;
    if (active.pending.length === 0) return active.posting;
    const results = active.pending;
    const bytes = active.pendingBytes;
    active.pending = [];
    active.pendingBytes = 0;
    const post = (async () => {
      try {
        await this.#client.results({ protocolVersion: PROTOCOL_VERSION, fetcherId: this.#options.fetcherId, scheduleId: active.schedule.id, results }, { frame: active.schedule.resultsFrame ?? 0 });
        this.#reachable();
      } catch (error) {
        if (error instanceof StoppedError) return;
        // A 4xx: this batch can never be accepted. Say so loudly; the lease will expire and re-issue.
        if (error instanceof QueueServerError) this.#options.log(`results for ${active.schedule.id} refused: ${error.message}`);
        else throw error;
      } finally {
        this.#undeliveredBytes -= bytes;
        if (this.#undeliveredBytes <= MAX_UNDELIVERED_BYTES) for (const wake of this.#drainWaiters.splice(0)) wake();
      }
    })();
    active.posting = Promise.all([active.posting, post]).then(() => undefined);
    return active.posting;
  }

  /** Bytes of results held and not yet acknowledged: pending in slots, or posted (MAX_UNDELIVERED_BYTES). */
  #undeliveredBytes = 0;
  /** Slots waiting for deliveries to drain below MAX_UNDELIVERED_BYTES. */
  readonly #drainWaiters: (() => void)[] = [];

  /** Resolves once deliveries are below MAX_UNDELIVERED_BYTES again, or when the fetcher stops. */
  #delivered(stopping: AbortSignal): Promise<void> {
    if (stopping.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        stopping.removeEventListener('abort', done);
        resolve();
      };
      this.#drainWaiters.push(done);
      stopping.addEventListener('abort', done, { once: true });
    });
  }

  #ensureHeartbeat(leaseMs: number): void {
    if (this.#heartbeatTimer !== null) return;
    this.#heartbeatTimer = setInterval(() => {
      if (this.#active.size === 0) return;
      this.#client
        .heartbeat({
          protocolVersion: PROTOCOL_VERSION,
          fetcherId: this.#options.fetcherId,
          name: this.#options.name,
          scheduleIds: [...this.#active.keys()].slice(0, 1024),
          stats: this.#currentStats(),
        })
        .then((response) => {
          this.#reachable();
          const lost = leasesLost(response.unknownScheduleIds, (id) => this.#active.get(id)?.slotsLeft ?? 0);
          if (lost.length > 0) this.#options.log(`leases lost: ${lost.join(', ')}`);
        })
        .catch((error) => {
          if (!(error instanceof StoppedError)) this.#options.log(`heartbeat failed: ${(error as Error).message}`);
        });
    }, Math.max(500, Math.floor(leaseMs / 3)));
    this.#heartbeatTimer.unref();
  }

  #count(result: ItemResult): void {
    this.#stats.bytesDownloaded += result.wireBytes;
    if (result.status !== null && result.status >= 200 && result.status < 300) this.#stats.pagesFetched++;
    else if (result.error !== null || (result.status !== null && result.status >= 400)) this.#stats.errors++;
  }

  #currentStats(): FetcherStats {
    return {
      ...this.#stats,
      rssBytes: process.memoryUsage.rss(),
      inFlight: this.#running,
    };
  }
}

/**
 * Of the schedules a heartbeat's answer says the queue server does not know, those whose loss matters:
 * the ones this fetcher still has URLs of to fetch (`slotsLeftOf` > 0), which the queue server may hand
 * to another fetcher. A schedule whose slots are all done only waits for the acknowledgement of its
 * last results; the queue server releases its lease as soon as it has applied them, before their group
 * commit acknowledges them, so a heartbeat sent in between names it unknown in a crawl that is fine.
 */
export function leasesLost(unknownIds: readonly string[], slotsLeftOf: (id: string) => number): string[] {
  return unknownIds.filter((id) => slotsLeftOf(id) > 0);
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * Politeness waits must never be short. A timer is measured from the event loop's cached clock, which
 * lags after synchronous work (parsing a page), so it can fire early; check the monotonic clock and
 * wait out the remainder.
 */
async function sleepAtLeast(ms: number, signal?: AbortSignal): Promise<void> {
  const until = performance.now() + ms;
  for (let left = ms; left > 0 && signal?.aborted !== true; left = until - performance.now()) await sleep(Math.ceil(left), signal);
}
