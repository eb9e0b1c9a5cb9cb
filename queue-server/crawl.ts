/**
 * The crawl: the queue server's in-process owner of the frontier, the seen-set, robots rules, leases,
 * counters and the page archive. It is driven by three inputs only (claims, results, heartbeats) plus
 * the passage of time, which the caller reports through `now` (ms since epoch) and `tick`.
 *
 * Data path: admit (seed or link) -> frontier -> cutSchedule -> lease -> fetcher -> applyResults ->
 * archive + admit links -> frontier. HTTP, timers and waiting live in http-app.ts and daemon.ts.
 */
import { randomBytes } from 'node:crypto';
import { LIMITS, type ClaimRequest, type HeartbeatRequest, type ItemResult, type ResultsRequest, type ResultsResponse, type Schedule, type FetcherStats } from '../shared/protocol.js';
import { urlHash } from '../shared/url-hash.js';
import { normalizeUrl, type NormalizedUrl } from '../shared/url-normalize.js';
import { CrawlStats, type CrawlSummary } from './crawl-stats.js';
import type { CrawlConfig } from './crawl-config.js';
import { Frontier, type OriginQueue } from './frontier.js';
import { LeaseTable, type LeasedSlot } from './leases.js';
import { classifyPageResult, pageRecordOf, type PageRecord } from './outcome.js';
import type { PageArchive } from './page-archive.js';
import { crawlDelayOf, rulesFromFetch } from './robots.js';
import { cutSchedule } from './schedule-cutter.js';
import { makeScopeFilter, type ScopeFilter } from './scope.js';
import { SeenSet } from './seen-set.js';
import { RecentEvents, type RecentError, type RecentFetch } from './recent-events.js';
import { cacheDecision, recordAfterFullResponse, recordAfterNotModified } from './cache-policy.js';
import type { CacheStore } from './cache-store.js';
import { MinHeap } from './heap.js';
import type { QueuedUrl } from './frontier.js';

export type CrawlState = 'running' | 'idle';

export interface FetcherInfo {
  readonly id: string;
  name: string;
  address: string;
  firstSeen: number;
  lastSeen: number;
  /** As the fetcher last reported them. */
  stats: FetcherStats;
  /** Counted here as its results are applied. */
  resultsApplied: number;
  pagesFetched: number;
}

export interface CrawlStatus extends CrawlSummary {
  state: CrawlState;
  frontierSize: number;
  leasesOut: number;
  itemsLeased: number;
  origins: number;
  fetchers: (FetcherInfo & { itemsLeased: number })[];
  seenSet: ReturnType<SeenSet['stats']>;
  cacheTree: ReturnType<CacheStore['stats']>;
  recentFetches: RecentFetch[];
  recentErrors: RecentError[];
  config: Omit<CrawlConfig, 'seeds'> & { seeds: string[] };
}

export class Crawl {
  #config: CrawlConfig;
  readonly #frontier: Frontier;
  #seen: SeenSet;
  readonly #leases = new LeaseTable(randomBytes(3).toString('hex'));
  readonly #stats = new CrawlStats();
  readonly #archive: PageArchive;
  #seeds: NormalizedUrl[];
  #inScope: ScopeFilter;
  readonly #fetchers = new Map<string, FetcherInfo>();
  readonly #recent = new RecentEvents(100);
  readonly #cache: CacheStore;
  /** Fresh URLs skipped in continuous mode, due again when their stored copy expires. */
  readonly #dueLater = new MinHeap<{ at: number; origin: string; entry: QueuedUrl }>((a, b) => a.at < b.at);
  #pagesCharged = 0;

  constructor(config: CrawlConfig, archive: PageArchive, cache: CacheStore) {
    this.#config = config;
    this.#archive = archive;
    this.#cache = cache;
    this.#frontier = new Frontier({ concurrencyOf: (queue) => this.#concurrencyOf(queue) });
    this.#seen = new SeenSet({ capacity: config.bloomCapacity, falsePositiveRate: config.bloomFalsePositiveRate });
    this.#seeds = config.seeds.map(mustBeSeed);
    this.#inScope = makeScopeFilter(config.scope, this.#seeds);
  }

  get config(): CrawlConfig {
    return this.#config;
  }

  /**
   * Starts a new crawl in this queue server (admin page, API): new settings and seeds, a fresh page
   * budget; what is already known stays known, queued URLs of the old crawl are dropped.
   */
  restart(config: CrawlConfig, now: number): void {
    const seeds = config.seeds.map(mustBeSeed);
    this.#config = config;
    this.#seeds = seeds;
    this.#inScope = makeScopeFilter(config.scope, seeds);
    this.#pagesCharged = 0;
    this.#frontier.clear(now);
    this.#seen = new SeenSet({ capacity: config.bloomCapacity, falsePositiveRate: config.bloomFalsePositiveRate });
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
      this.#seeds.push(result.url);
      const before = this.#stats.counters.urlsDiscovered;
      this.#admit(result.url, result.origin, 0, now);
      if (this.#stats.counters.urlsDiscovered > before) admitted++;
    }
    this.#inScope = makeScopeFilter(this.#config.scope, this.#seeds);
    this.#config = { ...this.#config, seeds: this.#seeds.map(String) };
    this.#stats.start(now);
    return { admitted, rejected };
  }

  /** Drops every queued URL (stop); leases out finish normally. */
  dropQueued(now: number): number {
    return this.#frontier.clear(now);
  }

  /** Admits the seeds at depth 0 (scope does not apply to them: they define it). */
  seed(now: number): void {
    this.#stats.start(now);
    for (const seed of this.#config.seeds) {
      const result = normalizeUrl(seed);
      if (result.ok) this.#admit(result.url, result.origin, 0, now);
    }
  }

  /** Admits a URL known from an earlier pass (a recrawl), if it is still in scope and depth. */
  admitKnown(url: string, depth: number, now: number): void {
    const result = normalizeUrl(url);
    if (!result.ok || depth > this.#config.maxDepth || !this.#inScope(result.url)) return;
    this.#stats.start(now);
    this.#admit(result.url, result.origin, depth, now);
  }

  /** `running` while any URL is due or leased, `idle` when none is. */
  state(): CrawlState {
    if (this.#leases.size > 0) return 'running';
    if (this.#frontier.queued === 0) return 'idle';
    if (this.#budgetLeft() === 0 && this.#frontier.chargedQueued === 0) return 'idle';
    return 'running';
  }

  /** Cuts a schedule for the fetcher, or returns null when nothing may start now. */
  claim(request: ClaimRequest, address: string, now: number): Schedule | null {
    this.#touchFetcher(request.fetcherId, request.name, address, request.stats, now);
    const cut = cutSchedule(
      this.#frontier,
      {
        capacity: request.capacity,
        liveFetchers: this.#liveFetchers(now),
        budget: this.#budgetLeft(),
        userAgentToken: this.#config.robotsToken,
        concurrencyOf: (queue) => this.#concurrencyOf(queue),
        delayOf: (queue) => this.#delayOf(queue),
        slotUrlsOf: () => this.#config.slotUrls,
        cacheDecisionOf: (entry) => cacheDecision(this.#cache.get(entry.hash), now),
      },
      now,
    );
    for (const { entry, until, savedBytes } of cut.skippedFresh) {
      this.#stats.counters.skippedFresh++;
      this.#stats.counters.bytesSaved += savedBytes;
      // A one-shot pass is done with a fresh URL; a continuous crawl takes it up again when it expires.
      if (!this.#config.once) this.#dueLater.push({ at: until, origin: originOfEntry(entry), entry });
    }
    this.#pagesCharged += cut.charged;
    for (const { entry, code } of cut.denied) {
      this.#stats.counters.robotsDenied++;
      this.#recent.error({ url: entry.url, code, at: now });
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
          : slot.entries.map((entry, i) => ({ kind: 'page', entry, url: entry.url, applied: false, validators: slot.validators[i] ?? null })),
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
        items: leasedSlots[index]!.items.map((item, i) => ({
          i,
          url: item.url,
          kind: item.kind,
          depth: item.entry?.depth ?? 0,
          validators: item.validators ?? null,
        })),
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
      if (found.kind === 'duplicate') {
        duplicates++;
        this.#stats.counters.duplicateResults++;
        continue;
      }
      if (found.kind !== 'ok') {
        this.#stats.counters.lateResults++;
        continue;
      }
      const { lease, slot, item } = found;
      if (lease.fetcherId !== request.fetcherId || item.url !== result.url) {
        this.#stats.counters.lateResults++;
        continue;
      }
      this.#countRequest(result);
      const queue = this.#frontier.origin(slot.origin);
      if (item.kind === 'robots') {
        queue.robots = rulesFromFetch(
          { origin: slot.origin, status: result.status, errorCode: result.error?.code ?? null, body: result.robotsTxt },
          { userAgentToken: this.#config.robotsToken, unreachableRetryMs: this.#config.robotsUnreachableRetryMs },
          now,
        );
        queue.robotsState = 'known';
        this.#stats.counters.robotsRequests++;
        if (queue.robots.kind === 'deny-all') {
          queue.robotsFailures++;
          // Keep the origin's URLs and ask again later, until the attempts run out (then they are denied).
          if (queue.robotsFailures < this.#config.robotsAttempts) queue.nextStartAt = Math.max(queue.nextStartAt, queue.robots.expiresAt);
        } else queue.robotsFailures = 0;
      } else {
        const record = this.#applyPage(result, item.entry!, now);
        if (fetcher !== undefined && record.outcome === 'fetched') fetcher.pagesFetched++;
        // A 304 leaves the previous page record standing (RFC 9111 section 4.3.4).
        if (record.outcome !== 'not-modified') records.push(record);
      }
      if (fetcher !== undefined) fetcher.resultsApplied++;
      applied++;
      const { slotDone } = this.#leases.markApplied(lease, slot, item);
      if (slotDone) this.#finishSlot(queue, now);
    }
    this.#archive.append(records);
    this.#checkFinished(now);
    return { applied, duplicates, leaseActive };
  }

  heartbeat(request: HeartbeatRequest, address: string, now: number): string[] {
    this.#touchFetcher(request.fetcherId, request.name, address, request.stats, now);
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
          if (item.kind === 'robots') queue.robotsState = 'unknown';
          else this.#frontier.push(queue, item.entry!, now);
        }
        queue.slotsOut--;
        this.#frontier.reconsider(queue, now);
      }
    }
    return expired.length;
  }

  /** The next instant at which time alone changes something (a politeness wait ends, a lease runs out). */
  nextTimerAt(now: number): number | null {
    const times = [this.#frontier.nextWakeAt(now), this.#leases.nextDeadline(), this.#dueLater.peek()?.at ?? null];
    let next: number | null = null;
    for (const time of times) if (time !== null && (next === null || time < next)) next = time;
    return next;
  }

  /** Puts URLs whose stored copy has expired back into the frontier (continuous mode). */
  releaseDue(now: number): number {
    let released = 0;
    for (let due = this.#dueLater.peek(); due !== undefined && due.at <= now; due = this.#dueLater.peek()) {
      this.#dueLater.pop();
      const { url, hash, depth } = due.entry;
      this.#frontier.push(this.#frontier.origin(due.origin), { url, hash, depth, seq: due.entry.seq, charged: false }, now);
      released++;
    }
    return released;
  }

  /** Makes staged page records and cache records durable (one fsync each). */
  commit(): void {
    this.#archive.sync();
    this.#cache.commit();
  }

  finished(): boolean {
    return this.#config.once && this.state() === 'idle';
  }

  summary(now: number): CrawlSummary {
    return this.#stats.summary(now);
  }

  status(now: number): CrawlStatus {
    const leasedByFetcher = new Map<string, number>();
    let itemsLeased = 0;
    for (const lease of this.#leases.values()) {
      itemsLeased += lease.remaining;
      leasedByFetcher.set(lease.fetcherId, (leasedByFetcher.get(lease.fetcherId) ?? 0) + lease.remaining);
    }
    return {
      state: this.state(),
      ...this.#stats.summary(now),
      frontierSize: this.#frontier.queued,
      leasesOut: this.#leases.size,
      itemsLeased,
      origins: this.#frontier.originCount,
      fetchers: [...this.#fetchers.values()].map((info) => ({ ...info, itemsLeased: leasedByFetcher.get(info.id) ?? 0 })),
      seenSet: this.#seen.stats(),
      cacheTree: this.#cache.stats(),
      recentFetches: this.#recent.fetches(),
      recentErrors: this.#recent.errors(),
      config: { ...this.config, seeds: [...this.#config.seeds] },
    };
  }

  #applyPage(result: ItemResult, entry: QueuedUrl, now: number): PageRecord {
    const depth = entry.depth;
    const outcome = classifyPageResult(result);
    const counters = this.#stats.counters;
    switch (outcome.kind) {
      case 'fetched':
        counters.pagesFetched++;
        this.#cache.stage(entry.hash, recordAfterFullResponse(result, now));
        if (depth < this.#config.maxDepth) this.#admitLinks(result.links, result.url, depth + 1, now);
        break;
      case 'not-modified': {
        counters.notModified++;
        const previous = this.#cache.get(entry.hash);
        counters.bytesSaved += previous?.bodyBytes ?? 0;
        this.#cache.stage(entry.hash, recordAfterNotModified(previous, result, now));
        break;
      }
      case 'redirect':
        counters.redirects++;
        if (outcome.target !== null && depth < this.#config.maxDepth) this.#admitLinks([outcome.target], result.url, depth + 1, now);
        break;
      case 'error':
        this.#stats.countError(outcome.code);
        this.#recent.error({ url: result.url, code: outcome.code, at: now });
        break;
    }
    this.#recent.fetch({ url: result.url, status: result.status, bytes: result.bytes, at: now, durationMs: result.durationMs });
    return pageRecordOf(result, depth, outcome);
  }

  #admitLinks(links: readonly string[], base: string, depth: number, now: number): void {
    for (const link of links.length > LIMITS.linksPerPage ? links.slice(0, LIMITS.linksPerPage) : links) {
      const result = normalizeUrl(link, base);
      if (!result.ok || !this.#inScope(result.url)) continue;
      this.#admit(result.url, result.origin, depth, now);
    }
  }

  #admit(url: NormalizedUrl, origin: string, depth: number, now: number): void {
    const hash = urlHash(url);
    if (this.#frontier.queued >= this.#config.maxQueuedUrls) {
      // Bounded memory: the URL is not marked seen, so a later discovery can still admit it.
      if (!this.#seen.has(hash)) this.#stats.counters.frontierOverflow++;
      return;
    }
    if (!this.#seen.addIfNew(hash)) return;
    this.#stats.counters.urlsDiscovered++;
    this.#stats.resume();
    this.#frontier.add(origin, url, hash, depth, now);
  }

  #countRequest(result: ItemResult): void {
    const counters = this.#stats.counters;
    counters.requests++;
    counters.bytesDownloaded += result.wireBytes;
    if (result.status !== null) this.#stats.countStatus(result.status);
  }

  #finishSlot(queue: OriginQueue, now: number): void {
    queue.slotsOut--;
    // `now` is whole milliseconds (Date.now), up to 1 ms behind the true receipt time: +1 keeps the gap whole.
    const delay = this.#delayOf(queue);
    if (delay > 0) queue.nextStartAt = Math.max(queue.nextStartAt, now + delay + 1);
    this.#frontier.reconsider(queue, now);
  }

  #checkFinished(now: number): void {
    if (this.state() === 'idle') this.#stats.finish(now);
  }

  #budgetLeft(): number | null {
    return this.#config.maxPages === null ? null : Math.max(0, this.#config.maxPages - this.#pagesCharged);
  }

  #concurrencyOf(queue: OriginQueue): number {
    return crawlDelayOf(queue.robots) === null ? this.#config.hostConcurrency : 1;
  }

  #delayOf(queue: OriginQueue): number {
    return Math.max(this.#config.delayMs, crawlDelayOf(queue.robots) ?? 0);
  }

  #liveFetchers(now: number): number {
    let live = 0;
    for (const info of this.#fetchers.values()) if (now - info.lastSeen < this.#config.leaseMs * 2) live++;
    return live;
  }

  #touchFetcher(id: string, name: string, address: string, stats: FetcherStats, now: number): void {
    let info = this.#fetchers.get(id);
    if (info === undefined) {
      info = { id, name, address, firstSeen: now, lastSeen: now, stats, resultsApplied: 0, pagesFetched: 0 };
      this.#fetchers.set(id, info);
    }
    info.name = name;
    info.address = address;
    info.lastSeen = now;
    info.stats = stats;
  }
}

function originOfEntry(entry: QueuedUrl): string {
  return new URL(entry.url).origin;
}

function mustBeSeed(seed: string): NormalizedUrl {
  const result = normalizeUrl(seed);
  if (!result.ok) throw new Error(`seed is not a crawlable URL (${result.code}): ${seed.slice(0, 200)}`);
  return result.url;
}

