/**
 * The crawl: the queue server's owner of the frontier, the seen-set, the crawl database, robots
 * rules, leases, counters and the page archive. It is driven by three inputs (claims, results,
 * heartbeats) plus the passage of time, which the caller reports as `now` (ms since epoch).
 *
 * Data path: admit (seed or link) -> crawl db record + frontier -> cutSchedule -> lease -> fetcher ->
 * applyResults -> crawl db transition (crawldb/transition.ts), cache record, page record, links
 * admitted -> frontier. On start, `load` rebuilds the frontier and seen-set from the crawl database:
 * what was leased when the previous process died is simply due again. HTTP, timers and waiting live
 * in http-app.ts and crawl-service.ts.
 */
import { randomBytes } from 'node:crypto';
import { type ClaimRequest, type HeartbeatRequest, type ItemResult, type ResultsRequest, type ResultsResponse, type Schedule } from '../../shared/protocol.js';
import { urlHash, urlHashHex, type UrlHash } from '../../shared/url-hash.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { cacheDecision, recordAfterFullResponse, recordAfterNotModified } from '../cache/cache-policy.js';
import type { CacheStore } from '../cache/cache-store.js';
import { belowLimit, type CrawlConfig } from '../crawl-config.js';
import { dueAt, type CrawlPass } from './crawl-pass.js';
import { CrawlStats, type CrawlSummary } from './crawl-stats.js';
import { relationsOf, type CrawlDb } from '../crawldb/crawl-db.js';
import type { FetchSchedulePolicy } from '../crawldb/fetch-schedule.js';
import { newCrawlDbRecord, type CrawlDbRecord, type CrawlDbStatus } from '../crawldb/record.js';
import { applyFetch } from '../crawldb/transition.js';
import { FetcherRegistry, type FetcherInfo } from './fetcher-registry.js';
import { Frontier, type OriginQueue, type QueuedUrl } from '../frontier/frontier.js';
import { LeaseTable, type LeasedSlot } from '../frontier/leases.js';
import { classifyPageResult, crawlDbOutcomeOf, pageRecordOf, type PageRecord } from './outcome.js';
import type { PageArchive } from './page-archive.js';
import { RetryAfterBudget } from './retry-after.js';
import { RecentEvents, type RecentError, type RecentFetch } from './recent-events.js';
import type { HostsOverview } from './host-activity.js';
import { crawlDelayOf } from '../robots/robots.js';
import type { RobotsStore } from '../robots/robots-store.js';
import { cutSchedule } from '../frontier/schedule-cutter.js';
import type { SeenSet } from '../admission/seen-set.js';
import { UrlPlacement } from '../frontier/url-placement.js';
import { Admission } from '../admission/admission.js';

export type CrawlState = 'running' | 'idle';

/** Redirects followed one after another from one link, at most (browsers allow about 20; crawlers fewer). */
export const MAX_REDIRECT_HOPS = 10;

export interface CrawlStores {
  readonly archive: PageArchive;
  readonly cache: CacheStore;
  readonly crawlDb: CrawlDb;
  readonly robots: RobotsStore | null;
}

export interface CrawlStatus extends CrawlSummary {
  state: CrawlState;
  frontierSize: number;
  leasesOut: number;
  itemsLeased: number;
  waitingUrls: number;
  origins: number;
  urlsByStatus: Record<CrawlDbStatus, number>;
  fetchers: (FetcherInfo & { itemsLeased: number })[];
  seenSet: ReturnType<SeenSet['stats']>;
  cacheTree: ReturnType<CacheStore['stats']>;
  crawlDbTree: ReturnType<CrawlDb['stats']>;
  pass: CrawlPass | null;
  recentFetches: RecentFetch[];
  recentErrors: RecentError[];
  hosts: HostsOverview;
  config: Omit<CrawlConfig, 'seeds'> & { seeds: string[] };
}

export class Crawl {
  #config: CrawlConfig;
  readonly #stores: CrawlStores;
  readonly #schedule: FetchSchedulePolicy;
  readonly #frontier: Frontier;
  readonly #leases = new LeaseTable(randomBytes(3).toString('hex'));
  readonly #stats = new CrawlStats();
  readonly #admission: Admission;
  readonly #fetchers = new FetcherRegistry();
  readonly #recent = new RecentEvents(100);
  readonly #placement = new UrlPlacement();
  readonly #retryAfter = new RetryAfterBudget();
  #pass: CrawlPass | null;
  #pagesCharged = 0;

  constructor(config: CrawlConfig, stores: CrawlStores, schedule: FetchSchedulePolicy, pass: CrawlPass | null) {
    this.#config = config;
    this.#stores = stores;
    this.#schedule = schedule;
    this.#pass = pass;
    this.#frontier = new Frontier({ concurrencyOf: (queue) => this.#concurrencyOf(queue) });
    this.#admission = new Admission(config, {
      frontier: this.#frontier,
      crawlDb: stores.crawlDb,
      robots: stores.robots,
      placement: this.#placement,
      stats: this.#stats,
      recent: this.#recent,
      schedule,
    });
  }

  get config(): CrawlConfig {
    return this.#config;
  }

  get pass(): CrawlPass | null {
    return this.#pass;
  }

  /**
   * Rebuilds the seen-set and frontier from the crawl database (queue server start). URLs that were
   * out on lease when the previous process stopped have no committed result, so they are due again.
   */
  load(now: number): number {
    return this.#stores.crawlDb.load((hash, record) => {
      this.#admission.markSeen(hash);
      const at = dueAt(record, this.#pass, this.#config.once, now);
      if (at === null) return;
      if (at > now) this.#placement.later(hash, at);
      else this.#admission.queueKnown(hash, record, now);
    });
  }

  /** Admits the seeds at depth 0 (scope does not apply to them: they define it). */
  seed(now: number): void {
    this.#stats.start(now);
    for (const seed of this.#admission.seeds) this.#admission.admit(seed, new URL(seed).origin, 0, 1, now);
  }

  /**
   * Starts a new crawl in this queue server (admin page, API): new settings and seeds, a fresh page
   * budget; what is already known stays known, queued URLs of the old crawl are dropped.
   */
  restart(config: CrawlConfig, now: number): void {
    this.#config = config;
    this.#admission.reconfigure(config);
    this.#pagesCharged = 0;
    this.dropQueued(now);
    for (const seed of this.#admission.seeds) {
      const hash = urlHash(seed);
      const record = this.#stores.crawlDb.get(hash);
      if (record === null) continue;
      this.#admission.markSeen(hash);
      if (this.#placement.pendingEntry(hash) === undefined) this.#admission.queueKnown(hash, record, now);
    }
    this.seed(now);
  }

  /** Adds URLs to the running crawl as further seeds (depth 0, and they widen the scope). */
  inject(urls: readonly string[], now: number): { admitted: number; rejected: { url: string; code: string }[] } {
    const rejected: { url: string; code: string }[] = [];
    let admitted = 0;
    for (const url of urls) {
      const result = normalizeUrl(url);
      if (!result.ok) {
        rejected.push({ url: url.slice(0, 200), code: result.code });
        continue;
      }
      this.#admission.addSeed(result.url);
      if (this.#admission.admit(result.url, result.origin, 0, 1, now)) admitted++;
    }
    this.#config = { ...this.#config, seeds: this.#admission.seeds.map(String) };
    this.#stats.start(now);
    return { admitted, rejected };
  }

  /** Drops every queued URL (stop); they stay known in the crawl database. Leases out finish. */
  dropQueued(now: number): number {
    this.#placement.dropQueued();
    return this.#frontier.clear(now);
  }

  /** `running` while any URL is due or leased, `idle` when none is. */
  state(): CrawlState {
    if (this.#leases.size > 0) return 'running';
    if (this.#config.once && this.#placement.waiting > 0) return 'running';
    if (this.#frontier.queued === 0) return 'idle';
    if (this.#budgetLeft() === 0 && this.#frontier.chargedQueued === 0) return 'idle';
    return 'running';
  }

  /** Fetchers heard from within two lease times. */
  liveFetcherIds(now: number): string[] {
    return this.#fetchers.list().filter((info) => now - info.lastSeen < this.#config.leaseMs * 2).map((info) => info.id);
  }

  finished(): boolean {
    return this.#config.once && this.state() === 'idle';
  }

  /** Cuts a schedule for the fetcher, or returns null when nothing may start now. */
  claim(request: ClaimRequest, address: string, now: number): Schedule | null {
    this.#fetchers.touch(request.fetcherId, request.name, address, request.stats, now);
    const cut = cutSchedule(
      this.#frontier,
      {
        capacity: request.capacity,
        liveFetchers: this.liveFetcherIds(now).length,
        budget: this.#budgetLeft(),
        userAgentToken: this.#config.robotsToken,
        concurrencyOf: (queue) => this.#concurrencyOf(queue),
        delayOf: (queue) => this.#delayOf(queue),
        slotUrlsOf: () => this.#config.slotUrls,
        cacheDecisionOf: (entry) => cacheDecision(this.#stores.cache.get(entry.hash), now),
      },
      now,
    );
    this.#pagesCharged += cut.charged;
    for (const { entry, until, savedBytes } of cut.skippedFresh) {
      this.#stats.counters.skippedFresh++;
      this.#stats.counters.bytesSaved += savedBytes;
      this.#placement.settled(entry);
      // A pass is done with a fresh URL; a continuous crawl takes it up again when it expires.
      if (!this.#config.once) this.#placement.later(entry.hash, until);
    }
    for (const { entry, code } of cut.denied) {
      this.#stats.counters.robotsDenied++;
      this.#recent.error({ url: entry.url, code, at: now });
      this.#placement.settled(entry);
      this.#record(entry.hash, this.#recordOf(entry), { kind: 'robots-denied' }, now);
    }
    if (cut.slots.length === 0) {
      this.#checkFinished(now);
      return null;
    }
    const leasedSlots: LeasedSlot[] = cut.slots.map((slot) => ({
      origin: slot.queue.origin,
      delayMs: slot.delayMs,
      remaining: slot.kind === 'robots' ? 1 : slot.entries.length,
      items:
        slot.kind === 'robots'
          ? [{ kind: 'robots', entry: null, url: `${slot.queue.origin}/robots.txt`, applied: false }]
          : slot.entries.map((entry, i) => {
              entry.leased = true;
              return { kind: 'page', entry, url: entry.url, applied: false, validators: slot.validators[i] ?? null };
            }),
    }));
    const lease = this.#leases.issue(request.fetcherId, leasedSlots, now, this.#config.leaseMs);
    return {
      id: lease.id,
      leaseMs: this.#config.leaseMs,
      slots: cut.slots.map((slot, index) => ({
        slot: index,
        origin: slot.queue.origin,
        startAfterMs: slot.startAfterMs,
        delayMs: slot.delayMs,
        items: leasedSlots[index]!.items.map((item, i) => ({ i, url: item.url, kind: item.kind, depth: item.entry?.depth ?? 0, validators: item.validators ?? null })),
      })),
    };
  }

  applyResults(request: ResultsRequest, now: number): ResultsResponse {
    let applied = 0;
    let duplicates = 0;
    const records: PageRecord[] = [];
    const leaseActive = this.#leases.renew(request.scheduleId, request.fetcherId, now, this.#config.leaseMs);
    const fetcher = this.#fetchers.get(request.fetcherId);
    if (fetcher !== undefined) fetcher.lastSeen = now;
    for (const result of request.results) {
      const found = this.#leases.lookup(request.scheduleId, result.slot, result.i);
      let entry: QueuedUrl;
      if (found.kind === 'ok') {
        const { lease, slot, item } = found;
        if (lease.fetcherId !== request.fetcherId || item.url !== result.url) {
          this.#stats.counters.lateResults++;
          continue;
        }
        this.#countRequest(result);
        const queue = this.#frontier.origin(slot.origin);
        const { slotDone } = this.#leases.markApplied(lease, slot, item);
        if (item.kind === 'robots') this.#applyRobots(queue, result, now);
        if (slotDone) this.#finishSlot(queue, now);
        if (item.kind === 'robots') {
          applied++;
          continue;
        }
        entry = item.entry!;
      } else {
        // No live lease: a retried post (duplicate), or results held across a queue server restart.
        const orphan = found.kind === 'duplicate' ? undefined : this.#orphanEntry(result);
        if (orphan === undefined) {
          duplicates++;
          this.#stats.counters.duplicateResults++;
          continue;
        }
        this.#countRequest(result);
        orphan.settled = true;
        entry = orphan;
      }
      entry.leased = false;
      this.#placement.settled(entry);
      const record = this.#applyPage(result, entry, now);
      if (fetcher !== undefined) {
        fetcher.resultsApplied++;
        if (record.outcome === 'fetched') fetcher.pagesFetched++;
      }
      // A 304 leaves the previous page record standing (RFC 9111 section 4.3.4).
      if (record.outcome !== 'not-modified') records.push(record);
      applied++;
    }
    this.#stores.archive.append(records);
    this.#checkFinished(now);
    return { applied, duplicates, leaseActive };
  }

  heartbeat(request: HeartbeatRequest, address: string, now: number): string[] {
    this.#fetchers.touch(request.fetcherId, request.name, address, request.stats, now);
    return request.scheduleIds.filter((id) => !this.#leases.renew(id, request.fetcherId, now, this.#config.leaseMs));
  }

  /** Returns expired leases' URLs to the frontier. Returns the number of leases expired. */
  expireLeases(now: number): number {
    const expired = this.#leases.expire(now);
    for (const lease of expired) {
      this.#stats.counters.leasesExpired++;
      for (const slot of lease.slots) {
        if (slot.remaining === 0) continue;
        const queue = this.#frontier.origin(slot.origin);
        for (const item of slot.items) {
          if (item.applied) continue;
          if (item.kind === 'robots') queue.robots.fetchLost();
          else if (item.entry!.settled !== true) {
            item.entry!.leased = false;
            this.#frontier.push(queue, item.entry!, now);
          }
        }
        queue.finishSlot(now);
      }
    }
    return expired.length;
  }

  /** The next instant at which time alone changes something (a politeness wait ends, a lease runs out, a URL falls due). */
  nextTimerAt(now: number): number | null {
    const times = [this.#frontier.nextWakeAt(now), this.#leases.nextDeadline(), this.#placement.nextDueAt()];
    let next: number | null = null;
    for (const time of times) if (time !== null && (next === null || time < next)) next = time;
    return next;
  }

  /** Queues the URLs whose time has come (retry backoff over, next fetch time reached). */
  releaseDue(now: number): number {
    let released = 0;
    for (const hash of this.#placement.takeDue(now)) {
      const record = this.#stores.crawlDb.get(hash);
      if (record === null || this.#placement.pendingEntry(hash) !== undefined) continue;
      const at = this.#config.once ? record.nextFetchAt : record.nextFetchAt;
      if (at > now) continue; // a newer schedule for this URL superseded this entry
      if (this.#admission.queueKnown(hash, record, now)) released++;
    }
    return released;
  }

  /** Makes everything applied so far durable: page records, then cache records, then the crawl database. */
  commit(): void {
    this.#stores.archive.sync();
    this.#stores.cache.commit();
    this.#stores.crawlDb.commit();
  }

  summary(now: number): CrawlSummary & { urlsByStatus: Record<CrawlDbStatus, number> } {
    return { ...this.#stats.summary(now), urlsByStatus: this.#stores.crawlDb.countsByStatus() };
  }

  status(now: number): CrawlStatus {
    const leasedByFetcher = new Map<string, number>();
    let itemsLeased = 0;
    const activeOrigins = new Set<string>();
    for (const lease of this.#leases.values()) {
      itemsLeased += lease.remaining;
      for (const slot of lease.slots) if (slot.remaining > 0) activeOrigins.add(slot.origin);
      leasedByFetcher.set(lease.fetcherId, (leasedByFetcher.get(lease.fetcherId) ?? 0) + lease.remaining);
    }
    return {
      state: this.state(),
      ...this.summary(now),
      frontierSize: this.#frontier.queued,
      leasesOut: this.#leases.size,
      itemsLeased,
      waitingUrls: this.#placement.waiting,
      origins: this.#frontier.originCount,
      fetchers: this.#fetchers.list().map((info) => ({ ...info, itemsLeased: leasedByFetcher.get(info.id) ?? 0 })),
      seenSet: this.#admission.seenStats(),
      cacheTree: this.#stores.cache.stats(),
      crawlDbTree: this.#stores.crawlDb.stats(),
      pass: this.#pass,
      recentFetches: this.#recent.fetches(),
      recentErrors: this.#recent.errors(),
      hosts: this.#recent.hosts(activeOrigins, this.#frontier),
      config: { ...this.#config, seeds: [...this.#config.seeds] },
    };
  }

  #applyRobots(queue: OriginQueue, result: ItemResult, now: number): void {
    const policy = { userAgentToken: this.#config.robotsToken, unreachableRetryMs: this.#config.robotsUnreachableRetryMs, attempts: this.#config.robotsAttempts };
    const fetched = { status: result.status, errorCode: result.error?.code ?? null, body: result.robotsTxt };
    this.#stats.counters.robotsRequests++;
    // An unreachable robots.txt keeps the origin's URLs, asked again later until the attempts run out.
    const retryAt = queue.robots.fetched(fetched, policy, this.#stores.robots, now);
    if (retryAt !== null) queue.delayUntil(retryAt, now);
  }

  #applyPage(result: ItemResult, entry: QueuedUrl, now: number): PageRecord {
    const depth = entry.depth;
    const outcome = classifyPageResult(result);
    const counters = this.#stats.counters;
    const cache = this.#stores.cache;
    const retryAfterMs = this.#retryAfter.honour(urlHashHex(entry.hash), result.retryAfterMs);
    switch (outcome.kind) {
      case 'fetched':
        counters.pagesFetched++;
        cache.stage(entry.hash, recordAfterFullResponse(result, now));
        if (belowLimit(depth, this.#config.maxDepth)) this.#admission.admitLinks(result.links, result.url, depth + 1, this.#recordOf(entry).score, now);
        break;
      case 'not-modified': {
        counters.notModified++;
        const previous = cache.get(entry.hash);
        counters.bytesSaved += previous?.bodyBytes ?? 0;
        cache.stage(entry.hash, recordAfterNotModified(previous, result, now));
        break;
      }
      case 'redirect': {
        counters.redirects++;
        // A chain or a loop of redirects is followed for at most MAX_REDIRECT_HOPS hops.
        const hops = (entry.redirectHops ?? 0) + 1;
        if (hops > MAX_REDIRECT_HOPS) this.#admission.reject(outcome.target ?? result.url, 'too-many-redirects', now);
        else if (outcome.target !== null && belowLimit(depth, this.#config.maxDepth)) this.#admission.admitLinks([outcome.target], result.url, depth + 1, 0, now, hops);
        break;
      }
      case 'error':
        // A 429 or 503 whose Retry-After is honoured is a wait, not a failure (it is asked again later).
        if (retryAfterMs !== null) counters.retriedLater++;
        else this.#stats.countError(outcome.code);
        this.#recent.error({ url: result.url, code: outcome.code, at: now });
        break;
    }
    this.#recent.fetch({ url: result.url, status: result.status, title: result.page?.title ?? null, bytes: result.bytes, at: now, durationMs: result.durationMs });

    const simhash = outcome.kind === 'fetched' ? (result.page?.simhash ?? null) : null;
    const relations = relationsOf(this.#stores.crawlDb, entry.hash, {
      url: entry.url,
      signature: outcome.kind === 'fetched' ? result.signature : null,
      simhash,
      canonical: result.page?.canonical ?? null,
      redirectTo: outcome.kind === 'redirect' ? outcome.target : null,
    });
    if (retryAfterMs !== null) {
      // 429 and 503 with Retry-After slow the whole host down, not only this URL.
      this.#frontier.origin(new URL(entry.url).origin).delayUntil(now + retryAfterMs, now);
    }
    const fetchOutcome = crawlDbOutcomeOf({ ...result, retryAfterMs }, outcome, { ...relations, freshUntil: cache.get(entry.hash)?.freshUntil ?? null, simhash });
    const next = this.#record(entry.hash, this.#recordOf(entry), fetchOutcome, now);
    if (next.status === 'retry' || !this.#config.once) this.#placement.later(entry.hash, next.nextFetchAt);
    return pageRecordOf(result, depth, outcome);
  }

  #record(hash: UrlHash, old: CrawlDbRecord, outcome: Parameters<typeof applyFetch>[1], now: number): CrawlDbRecord {
    const { record } = applyFetch(old, outcome, now, this.#schedule);
    this.#stores.crawlDb.put(hash, record);
    return record;
  }

  #recordOf(entry: QueuedUrl): CrawlDbRecord {
    return this.#stores.crawlDb.get(entry.hash) ?? newCrawlDbRecord(entry.url, entry.depth, 0, Date.now(), this.#schedule);
  }

  /** A result without a lease is applied if its URL is queued and not out on another lease. */
  #orphanEntry(result: ItemResult): QueuedUrl | undefined {
    const normalized = normalizeUrl(result.url);
    if (!normalized.ok || normalized.url !== result.url) return undefined;
    const entry = this.#placement.pendingEntry(urlHash(normalized.url));
    return entry !== undefined && entry.leased !== true && entry.settled !== true ? entry : undefined;
  }

  #countRequest(result: ItemResult): void {
    const counters = this.#stats.counters;
    counters.requests++;
    counters.bytesDownloaded += result.wireBytes;
    if (result.status !== null) this.#stats.countStatus(result.status);
  }

  #finishSlot(queue: OriginQueue, now: number): void {
    // `now` is whole milliseconds (Date.now), up to 1 ms behind the true receipt time: +1 keeps the gap whole.
    const delay = this.#delayOf(queue);
    queue.finishSlot(now, delay > 0 ? now + delay + 1 : 0);
  }

  #checkFinished(now: number): void {
    if (this.state() === 'idle') this.#stats.finish(now);
  }

  #budgetLeft(): number | null {
    return this.#config.maxPages === null ? null : Math.max(0, this.#config.maxPages - this.#pagesCharged);
  }

  #concurrencyOf(queue: OriginQueue): number {
    return crawlDelayOf(queue.robots.rules) === null ? this.#config.hostConcurrency : 1;
  }

  #delayOf(queue: OriginQueue): number {
    return Math.max(this.#config.delayMs, crawlDelayOf(queue.robots.rules) ?? 0);
  }
}
