/**
 * The crawl: the queue server's owner of the frontier, the seen-set, the crawl database, robots
 * rules, leases, counters and the page archive. It is driven by three inputs (claims, results,
 * heartbeats) plus the passage of time, which the caller reports as `now` (ms since epoch).
 *
 * Data path: admit (seed or link, admission/) -> crawl db record + frontier -> cutSchedule -> lease
 * (frontier/) -> fetcher -> applyResults (apply-results.ts: crawl db transition, cache record, page
 * record, links admitted -> frontier). The status it shows is built in crawl-status.ts. On start,
 * `load` rebuilds the frontier and seen-set from the crawl database: what was leased when the previous
 * process died is simply due again. HTTP lives in app.ts; the clock, timers and waiting in
 * crawl-service.ts, the only way in.
 */
import { randomBytes } from 'node:crypto';
import type { ClaimRequest, HeartbeatRequest, ResultsRequest, ResultsResponse, Schedule } from '../../shared/protocol.js';
import { RESULTS_FRAME_VERSION } from '../../shared/results-frame.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';
import { hostnameOf, normalizeUrl, type NormalizedUrl } from '../../shared/url-normalize.js';
import { Admission } from '../admission/admission.js';
import type { LinkRouter } from '../cluster/link-router.js';
import { applyUrlRules, DEFAULT_URL_RULES } from '../admission/url-rules.js';
import { cacheDecision } from '../cache/cache-policy.js';
import type { CacheStore } from '../cache/cache-store.js';
import type { CrawlConfig } from '../crawl-config.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import type { FetchSchedulePolicy } from '../crawldb/fetch-schedule.js';
import type { CrawlDbRecord, CrawlDbStatus } from '../crawldb/record.js';
import { Frontier, type OriginQueue, type QueuedUrl } from '../frontier/frontier.js';
import { LeaseTable, scheduleOf, type Lease } from '../frontier/leases.js';
import { cutSchedule } from '../frontier/schedule-cutter.js';
import { HOST_FAILING_CODE, HostBackoff, hostBackoffPolicyOf } from '../frontier/host-backoff.js';
import { TRAP_SHAPE_CODE, UrlShapes } from '../admission/url-shape.js';
import { UrlPlacement } from '../frontier/url-placement.js';
import type { FrontierStore } from '../frontier/frontier-store.js';
import type { RobotsStore } from '../robots/robots-store.js';
import { crawlDelayOf, robotsVerdict } from '../robots/robots.js';
import { SitemapDiscovery, type PendingSitemap } from '../sitemaps/sitemaps.js';
import { sitemapRequestOf } from '../sitemaps/sitemap-revisit.js';
import { PolitenessGroups } from '../frontier/politeness-group.js';
import { ResultApplier } from './apply-results.js';
import { dueAt, type CrawlPass, type PassPolicy } from './crawl-pass.js';
import { CrawlStats, type CrawlSummary } from './crawl-stats.js';
import { crawlStatus, crawlSummary, type CrawlStatus } from './crawl-status.js';
import { FetcherRegistry } from './fetcher-registry.js';
import type { PageArchive } from './page-archive.js';
import type { WarcArchive } from '../warc/warc-archive.js';
import type { CachedCopy } from '../warc/cached-copy.js';
import type { IndexStore } from './index-store.js';
import { RecentEvents } from './recent-events.js';
import { CommitFailure, isStorageFailure } from './storage-error.js';

export type CrawlState = 'running' | 'idle';

/** What `load` found in the crawl database. */
export interface LoadedCrawl {
  /** Records in the crawl database. */
  readonly known: number;
  /** URLs already fetched in the current pass (a one-shot crawl), not due again. */
  readonly fetched: number;
  /** URLs queued now. */
  readonly queued: number;
  /** URLs waiting for a later time (retry backoff; in continuous mode, the next fetch). */
  readonly waiting: number;
  /**
   * Known URLs due now that the crawl's settings leave out: outside the scope of its seeds (seeds given
   * again replace the saved ones) or deeper than --max-depth. They stay as they are: not fetched,
   * still in the crawl database and the search index. 0 when a pass resumes (its queues are on disk).
   */
  readonly leftOut: number;
}

/** An injected URL that was not added, and why. */
export interface InjectRefusal {
  readonly url: string;
  readonly code: string;
  readonly reason: string;
}

const FETCHED_STATUSES: ReadonlySet<string> = new Set(['fetched', 'notmodified', 'duplicate', 'redir_temp', 'redir_perm']);

export interface CrawlStores {
  readonly archive: PageArchive;
  /** The web archive (WARC files); null when archiving is off. */
  readonly warc: WarcArchive | null;
  readonly cache: CacheStore;
  readonly crawlDb: CrawlDb;
  readonly robots: RobotsStore | null;
  /** The search index (data directory index/); absent or null: not kept (tests of other parts). */
  readonly index?: IndexStore | null;
  /** The frontier's queues and waiting URLs on disk (frontier.btree); absent or null: in memory only. */
  readonly frontier?: FrontierStore | null;
}

/** The crawl's parts, for the modules that do one job each for it (apply-results.ts, crawl-status.ts). */
export interface CrawlParts {
  readonly config: CrawlConfig;
  readonly stores: CrawlStores;
  readonly schedule: FetchSchedulePolicy;
  readonly frontier: Frontier;
  readonly leases: LeaseTable;
  readonly stats: CrawlStats;
  readonly admission: Admission;
  readonly fetchers: FetcherRegistry;
  readonly recent: RecentEvents;
  readonly placement: UrlPlacement;
  /** Hosts whose requests keep failing: backed off, or given up for the pass (frontier/host-backoff.ts). */
  readonly hostBackoff: HostBackoff;
  /** URL shapes and the infinite spaces found among them (admission/url-shape.ts). */
  readonly shapes: UrlShapes;
  /** Sitemaps still to be read, and known URLs their lastmod says changed (sitemaps/sitemaps.ts). */
  readonly sitemaps: SitemapDiscovery;
  /** Origins grouped by the address their responses come from: one politeness queue per address (frontier/politeness-group.ts). */
  readonly politeness: PolitenessGroups;
  /** The gap between two requests to the origin, ms: --delay-ms or its robots.txt Crawl-delay, the larger. */
  delayOf(queue: OriginQueue): number;
  /** Slots the origin may have out at once: --host-concurrency, 1 under a Crawl-delay. */
  concurrencyOf(queue: OriginQueue): number;
  /** Pages this pass may still hand out under --max-pages; null without a limit. */
  budgetLeft(): number | null;
}

export class Crawl {
  #config: CrawlConfig;
  readonly #stores: CrawlStores;
  readonly #frontier: Frontier;
  readonly #leases = new LeaseTable(randomBytes(3).toString('hex'));
  readonly #stats = new CrawlStats();
  readonly #admission: Admission;
  readonly #fetchers = new FetcherRegistry();
  readonly #recent = new RecentEvents(100);
  readonly #placement: UrlPlacement;
  readonly #hostBackoff: HostBackoff;
  readonly #shapes = new UrlShapes();
  readonly #sitemaps = new SitemapDiscovery();
  readonly #politeness = new PolitenessGroups();
  readonly #parts: CrawlParts;
  readonly #results: ResultApplier;
  #pass: CrawlPass | null;
  #pagesCharged = 0;
  /** The `now` of the call being served, for checks of URLs read back from the frontier store. */
  #now = 0;

  constructor(config: CrawlConfig, stores: CrawlStores, schedule: FetchSchedulePolicy, pass: CrawlPass | null, cluster: { router?: LinkRouter } = {}) {
    this.#config = config;
    this.#stores = stores;
    this.#pass = pass;
    this.#hostBackoff = new HostBackoff(hostBackoffPolicyOf(config));
    this.#placement = new UrlPlacement(stores.frontier ?? null);
    this.#frontier = new Frontier(
      { concurrencyOf: (queue) => this.#concurrencyOf(queue) },
      {
        store: stores.frontier ?? null,
        memoryUrls: config.frontierMemoryUrls,
        onResident: (entry) => this.#placement.pending(entry),
        validate: (entry) => this.#stillDue(entry),
        isPending: (hash) => this.#placement.pendingEntry(hash) !== undefined,
        urlOf: (hash) => stores.crawlDb.get(hash)?.url ?? null,
      },
    );
    this.#admission = new Admission(config, {
      frontier: this.#frontier,
      crawlDb: stores.crawlDb,
      robots: stores.robots,
      placement: this.#placement,
      stats: this.#stats,
      recent: this.#recent,
      schedule,
      shapes: this.#shapes,
      router: cluster.router,
    });
    const crawl = this;
    this.#parts = {
      get config() {
        return crawl.#config;
      },
      stores,
      schedule,
      frontier: this.#frontier,
      leases: this.#leases,
      stats: this.#stats,
      admission: this.#admission,
      fetchers: this.#fetchers,
      recent: this.#recent,
      placement: this.#placement,
      hostBackoff: this.#hostBackoff,
      shapes: this.#shapes,
      sitemaps: this.#sitemaps,
      politeness: this.#politeness,
      delayOf: (queue) => this.#delayOf(queue),
      concurrencyOf: (queue) => this.#concurrencyOf(queue),
      budgetLeft: () => this.#budgetLeft(),
    };
    this.#results = new ResultApplier(this.#parts);
  }

  get config(): CrawlConfig {
    return this.#config;
  }

  get pass(): CrawlPass | null {
    return this.#pass;
  }

  /**
   * Rebuilds the seen-set and frontier from the crawl database (queue server start, a new crawl). URLs
   * that were out on lease when the previous process stopped have no committed result, so they are
   * due again. Returns what was found, for the "resuming pass 1: 93 fetched, 954 queued" line.
   */
  load(now: number): LoadedCrawl {
    this.#now = now;
    const store = this.#stores.frontier ?? null;
    const passNumber = this.#pass?.number ?? null;
    if (store !== null && store.holds(passNumber, this.#config.once)) {
      // The queues and waiting URLs are on disk (frontier.btree): only their origins are read now, their
      // URLs when each origin comes up. The crawl database is read for the seen-set and the counts.
      const robotsPolicy = { userAgentToken: this.#config.robotsToken, unreachableRetryMs: this.#config.robotsUnreachableRetryMs };
      const restored = new Map<string, OriginQueue>();
      this.#frontier.restore(now, (queue) => {
        if (queue.robots.storeUnconsulted) restored.set(queue.origin, queue);
      });
      // Their robots.txt kept on disk, in one ordered pass over robots.btree, not a look-up each; an origin
      // whose rules became known is filed again (a Crawl-delay changes its concurrency and its group).
      const robots = this.#stores.robots;
      if (robots !== null) {
        robots.loadMany([...restored.keys()], (origin, stored) => {
          const queue = restored.get(origin)!;
          queue.robots.consultStored(stored, robots, robotsPolicy, now);
          if (queue.robotsState === 'known') this.#frontier.reconsider(queue, now);
        });
      }
      let fetched = 0;
      const pass = this.#pass;
      const known = this.#stores.crawlDb.load((hash, record) => {
        this.#admission.markSeen(hash);
        // Fetched in this pass (under --max-pages, pages of earlier passes that are not due are not done by it).
        if (record.lastFetchAt !== null && pass !== null && record.lastFetchAt >= pass.startedAt && FETCHED_STATUSES.has(record.status) && dueAt(record, pass, this.#passPolicy(), now) === null) fetched++;
      });
      return { known, fetched, queued: this.#frontier.queued, waiting: this.#placement.waiting, leftOut: 0 };
    }
    // A new frontier file, or one of another pass or mode: the queues are derived from the crawl database.
    if (store !== null) {
      store.clearUrls();
      store.clearWaiting();
      this.#frontier.adoptDirectory(now);
      store.claimFor(passNumber, this.#config.once);
    }
    return this.#queueKnownUrls(now, (visit) => this.#stores.crawlDb.load(visit));
  }

  #passPolicy(): PassPolicy {
    return { once: this.#config.once, pageLimit: this.#config.maxPages !== null };
  }

  /** A URL read back from the frontier store that an earlier process wrote: still due, in scope and not too deep. */
  #stillDue(entry: QueuedUrl): boolean {
    const hash = entry.hash;
    const record = this.#stores.crawlDb.get(hash);
    if (record === null) return false;
    // A kill between the cache's commit and the crawl database's leaves a cache record of a fetch the crawl
    // database never recorded: it must not make the URL "fresh" (skipped, and never recorded fetched).
    if (record.lastFetchAt === null && this.#stores.cache.get(hash) !== null) this.#stores.cache.stage(hash, null);
    const at = dueAt(record, this.#pass, this.#passPolicy(), this.#now);
    if (at === null || at > this.#now) return false;
    if (this.#config.maxDepth !== null && record.depth > this.#config.maxDepth) return false;
    return this.#admission.inScope(entry.url);
  }

  #queueKnownUrls(now: number, records: (visit: (hash: UrlHash, record: CrawlDbRecord) => void) => number): LoadedCrawl {
    let fetched = 0;
    let leftOut = 0;
    const pass = this.#pass;
    // A crawl started again (restart) while fetchers still hold leases: those URLs are placed again by
    // their results (or expiry), not here as well (an operations review counted 1,813 URLs placed of 1,800 known).
    const anyPending = this.#placement.pendingCount > 0;
    const known = records((hash, record) => {
      this.#admission.markSeen(hash);
      if (anyPending && this.#placement.pendingEntry(hash) !== undefined) return;
      const at = dueAt(record, pass, this.#passPolicy(), now);
      if (at === null) {
        if (record.lastFetchAt !== null && FETCHED_STATUSES.has(record.status)) fetched++;
        return;
      }
      if (at > now) this.#placement.later(hash, at);
      else if (!this.#admission.queueKnown(hash, record, now)) leftOut++;
    });
    return { known, fetched, queued: this.#frontier.queued, waiting: this.#placement.waiting, leftOut };
  }

  /** Admits the seeds at depth 0 (scope does not apply to them: they define it); the clock of the crawl starts. */
  seed(now: number): void {
    if (this.#admission.seeds.length > 0) this.#stats.start(now);
    for (const seed of this.#admission.seeds) this.#admission.admit(seed, new URL(seed).origin, 0, 1, now);
  }

  /**
   * Starts a new crawl in this queue server (admin page, API): new settings and seeds, a fresh page
   * budget, counters from zero. What is known stays known and is taken up as a queue server start
   * would: URLs not fetched yet (or waiting for a retry) that are in the new scope are queued again,
   * so a crawl stopped and started again continues where it was; fetched URLs wait for their next
   * fetch time; the seeds are (re)fetched now.
   */
  restart(config: CrawlConfig, now: number): LoadedCrawl {
    this.#config = config;
    this.#admission.reconfigure(config);
    this.#stores.warc?.setSettings(config);
    this.#pagesCharged = 0;
    this.dropQueued(now);
    this.#placement.dropWaiting();
    this.#frontier.resetBudgets();
    this.#frontier.forgetTrusted();
    this.#stats.reset();
    this.#recent.clear();
    this.#hostBackoff.reset(hostBackoffPolicyOf(config));
    this.#results.resetRetries();
    this.#shapes.clear();
    this.#sitemaps.clear();
    this.#politeness.clear(now);
    this.#stores.frontier?.claimFor(this.#pass?.number ?? null, config.once);
    // What was admitted since the last group commit is in the crawl database too, before it is read.
    this.commit();
    // Known seeds are queued now, first: the walk over what is known then leaves them (pending) alone,
    // instead of also placing them for their next fetch time (each was placed twice).
    for (const seed of this.#admission.seeds) {
      const hash = urlHash(seed);
      const record = this.#stores.crawlDb.get(hash);
      if (record === null) continue;
      if (this.#placement.pendingEntry(hash) === undefined) this.#admission.queueKnown(hash, record, now);
    }
    const loaded = this.#queueKnownUrls(now, (visit) => this.#stores.crawlDb.each(visit));
    this.seed(now);
    return { ...loaded, queued: this.#frontier.queued, waiting: this.#placement.waiting };
  }

  /**
   * Links another cluster member found for this partition's hosts (cluster/link-inbox.ts): each is
   * admitted as a link of ours would be (crawl rules, scope, trap shapes, seen-set, budgets). Returns
   * how many were new, and the URLs now known here (new or seen before) for the cluster's Bloom filter.
   */
  admitForwarded(links: readonly (readonly [string, number, number])[], now: number): { admitted: number; known: string[] } {
    let admitted = 0;
    const known: string[] = [];
    for (const [url, depth, score] of links) {
      const normalized = normalizeUrl(url);
      if (!normalized.ok) continue;
      const ruled = applyUrlRules(normalized.url, DEFAULT_URL_RULES);
      if (!ruled.ok || !this.#admission.inScope(ruled.url)) continue;
      if (this.#config.maxDepth !== null && depth > this.#config.maxDepth) continue;
      if (this.#shapes.trapOf(ruled.url) !== null) continue;
      const hash = urlHash(ruled.url);
      const before = this.#admission.seenAmong([hash])[0]!;
      if (this.#admission.admit(ruled.url, normalized.origin, depth, score, now)) admitted++;
      else if (!before) continue;
      known.push(ruled.url);
    }
    return { admitted, known };
  }

  /**
   * Adds URLs to the running crawl at depth 0. A URL is refused, with its reason, when it is no
   * crawlable URL, a crawl rule refuses it, it lies outside the crawl's scope (inject does not widen
   * the scope: start a crawl with it as a seed for that), or it is queued already. An accepted URL
   * is queued (a known one at rest is queued again); it does not join the seeds, so an inject costs
   * the same however many came before it.
   */
  inject(urls: readonly string[], now: number): { admitted: number; rejected: InjectRefusal[] } {
    const rejected: InjectRefusal[] = [];
    let admitted = 0;
    const refuse = (url: string, code: string, reason: string) => rejected.push({ url: url.slice(0, 200), code, reason });
    // First every URL is checked on its own; then the seen-set answers for the whole batch at once.
    const checked: ({ readonly url: string; readonly refusal: InjectRefusal } | { readonly url: string; readonly normalized: NormalizedUrl; readonly origin: string; readonly hash: UrlHash })[] = [];
    const hashes: UrlHash[] = [];
    for (const url of urls) {
      const refusal = (code: string, reason: string) => checked.push({ url, refusal: { url: url.slice(0, 200), code, reason } });
      const result = normalizeUrl(url);
      if (!result.ok) {
        refusal(result.code, 'not a crawlable http(s) URL');
        continue;
      }
      const ruled = applyUrlRules(result.url, DEFAULT_URL_RULES);
      if (!ruled.ok) {
        refusal(ruled.code, 'refused by the crawl rules (a spider-trap pattern)');
        continue;
      }
      if (this.#admission.seeds.length === 0) {
        refusal('no-crawl', 'no crawl to add it to: start a crawl with it as a seed');
        continue;
      }
      if (!this.#admission.inScope(ruled.url)) {
        refusal('out-of-scope', `outside the crawl's scope (${this.#config.scope} of ${this.#scopeExample()}): start a crawl with it as a seed to crawl it`);
        continue;
      }
      const hash = urlHash(ruled.url);
      checked.push({ url, normalized: ruled.url, origin: result.origin, hash });
      hashes.push(hash);
    }
    const seen = hashes.length > 0 ? this.#admission.seenAmong(hashes) : [];
    // URLs admitted from this batch: the same URL twice in one batch is queued already the second time.
    const admittedNow = new Set<NormalizedUrl>();
    const seedHosts = this.#seedHosts();
    let next = 0;
    for (const item of checked) {
      if ('refusal' in item) {
        rejected.push(item.refusal);
        continue;
      }
      const { url, normalized, origin, hash } = item;
      const wasSeen = seen[next++]! || (admittedNow.size > 0 && admittedNow.has(normalized));
      const known = wasSeen ? this.#stores.crawlDb.get(hash) : null;
      if (known !== null) {
        // Queued: pending (in memory or leased), or never fetched while its origin has URLs on disk
        // only (the store has no index by URL; an unfetched known URL is queued or waiting there, as
        // frontier-store.ts's crash model keeps it). Queuing it again would fetch it twice.
        if (this.#placement.pendingEntry(hash) !== undefined || (known.lastFetchAt === null && this.#frontier.onDiskOf(origin) > 0)) {
          refuse(url, 'already-queued', 'queued already');
          continue;
        }
        this.#admission.queueKnown(hash, known, now);
      } else if (!this.#admission.admitNew(normalized, hash, false, origin, 0, 1, now)) {
        refuse(url, 'not-admitted', `not admitted: the host's budget is spent (--max-pages-per-host)`);
        continue;
      } else {
        admittedNow.add(normalized);
      }
      // Not a seed: the seeds stay the crawl's settings (crawl.json), whatever is injected, and an
      // injected URL in scope cannot widen it. Its origin is trusted as a seed's host is (private
      // addresses), kept in frontier.btree with the URLs (frontier.ts `trust`).
      if (!seedHosts.has(hostnameOf(origin))) this.#frontier.trust(origin);
      admitted++;
    }
    if (admitted > 0) this.#stats.start(now);
    return { admitted, rejected };
  }

  #scopeExample(): string {
    const seeds = this.#admission.seeds;
    return seeds.length === 1 ? seeds[0]! : `${seeds[0]} and ${seeds.length - 1} more seed${seeds.length === 2 ? '' : 's'}`;
  }

  /** Ends the crawl: queued and waiting URLs are dropped (they stay known in the crawl database); leases out finish. */
  stop(now: number): number {
    this.#placement.dropWaiting();
    return this.dropQueued(now);
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
    return this.#fetchers.live(now, this.#config.leaseMs * 2).map((info) => info.id);
  }

  finished(): boolean {
    return this.#config.once && this.state() === 'idle';
  }

  /** Cuts a schedule for the fetcher, or returns null when nothing may start now. */
  claim(request: ClaimRequest, address: string, now: number): Schedule | null {
    this.#now = now;
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
        cacheDecisionOf: (entry) => {
          const hash = entry.hash;
          const stored = this.#stores.cache.get(hash);
          // A sitemap's lastmod newer than the last fetch: the stored copy is stale, whatever it said.
          return cacheDecision(stored, stored !== null && this.#sitemaps.isChanged(hash) ? Math.max(now, stored.freshUntil) : now);
        },
        sitemapsOf: (queue) => (!this.#config.sitemaps ? [] : this.#sitemapsToRead(queue, now)),
        givenUpOf: (queue) => (this.#hostBackoff.gaveUp(queue.origin) ? HOST_FAILING_CODE : null),
        refusalOf: (entry) => this.#refusalOf(entry),
      },
      now,
    );
    this.#pagesCharged += cut.charged;
    for (const { entry, until, savedBytes } of cut.skippedFresh) {
      this.#stats.counters.skippedFresh++;
      this.#stats.counters.bytesSaved += savedBytes;
      this.#placement.settled(entry);
      this.#frontier.settle(entry);
      // A pass is done with a fresh URL; a continuous crawl takes it up again when it expires.
      if (!this.#config.once) this.#placement.later(entry.hash, until);
    }
    for (const { entry, code } of cut.denied) {
      // A host whose robots.txt stayed unreachable is an error (nothing could be asked), not a refusal.
      if (code === 'robots-unreachable') this.#stats.countError(code);
      else this.#stats.counters.robotsDenied++;
      this.#recent.error({ url: entry.url, code, at: now });
      this.#placement.settled(entry);
      this.#frontier.settle(entry);
      this.#results.settle(entry, { kind: 'robots-denied', code }, now);
    }
    for (const { entry, code } of cut.givenUp) {
      // Its host kept failing and the pass gave it up, or its shape is a trap: recorded without a request.
      this.#stats.countError(code);
      this.#recent.error({ url: entry.url, code, at: now });
      if (code === HOST_FAILING_CODE) this.#hostBackoff.countGivenUp(new URL(entry.url).origin);
      this.#placement.settled(entry);
      this.#frontier.settle(entry);
      this.#results.settle(entry, { kind: 'given-up', code }, now);
    }
    if (cut.slots.length === 0) {
      this.#checkFinished(now);
      return null;
    }
    for (const slot of cut.slots) for (const item of slot.items) if (item.entry !== null) item.entry.leased = true;
    // Work handed out: in continuous mode, after an idle stretch, known URLs fell due.
    this.#stats.resume(now);
    const lease = this.#leases.issue(request.fetcherId, cut.slots, now, this.#config.leaseMs);
    const seedHosts = this.#seedHosts();
    // Results come back as binary frames (shared/results-frame.ts) from fetchers that write them.
    return { ...scheduleOf(lease, this.#config.leaseMs, (origin) => seedHosts.has(hostnameOf(origin)) || this.#frontier.isTrusted(origin), this.archiving, this.#config.index), resultsFrame: RESULTS_FRAME_VERSION, maxLinks: this.#config.maxLinksPerPage };
  }

  /**
   * The cached copy of a URL: its latest capture in the web archive (warc/cached-copy.ts), or null
   * when the URL is not known, has none, or the archive is not open. WarcError when the records are
   * not readable (not yet written: a commit is at most 100 ms away).
   */
  cachedCopy(url: string): CachedCopy | null {
    const normalized = normalizeUrl(url);
    if (!normalized.ok || this.#stores.warc === null) return null;
    const location = this.#stores.crawlDb.get(urlHash(normalized.url))?.warc ?? null;
    return location === null ? null : this.#stores.warc.cachedCopy(location);
  }

  /** Whether results are archived (WARC): the archive is open and the settings do not say --no-warc. */
  get archiving(): boolean {
    return this.#stores.warc !== null && this.#config.warc;
  }

  /**
   * The host names of the seeds (given at start or in the admin form): the fetcher may connect to them
   * on any address, private ones included (so may it to an injected URL's origin: `Frontier.isTrusted`).
   * Rebuilt when the seeds change.
   */
  #seedHosts(): ReadonlySet<string> {
    const seeds = this.#admission.seeds;
    if (this.#seedHostsOf?.seeds !== seeds || this.#seedHostsOf.count !== seeds.length) {
      this.#seedHostsOf = { seeds, count: seeds.length, hosts: new Set(seeds.map((seed) => new URL(seed).hostname)) };
    }
    return this.#seedHostsOf.hosts;
  }

  #seedHostsOf: { seeds: readonly string[]; count: number; hosts: Set<string> } | null = null;

  applyResults(request: ResultsRequest, now: number, address?: string): ResultsResponse {
    const response = this.#results.apply(request, now, address);
    this.#checkFinished(now);
    return response;
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
      this.#returnUnapplied(lease, now);
    }
    return expired.length;
  }

  /**
   * A schedule its fetcher never received (the claim's connection closed before the answer could be
   * written): its URLs go back to the frontier now, not when its lease would have run out. False when
   * the lease is not out (any more) to that fetcher.
   */
  returnSchedule(scheduleId: string, fetcherId: string, now: number): boolean {
    const lease = this.#leases.take(scheduleId, fetcherId);
    if (lease === undefined) return false;
    this.#returnUnapplied(lease, now);
    this.#checkFinished(now);
    return true;
  }

  /**
   * Every fetcher called `name` is gone (its process exited: `petrel start` saw it): their schedules go
   * back to the frontier now, not when their leases would have run out, and they are no longer listed.
   * Returns the number of schedules taken back.
   */
  fetcherGone(name: string, now: number): number {
    let returned = 0;
    for (const info of this.#fetchers.list()) {
      if (info.name !== name) continue;
      for (const lease of this.#leases.takeAllOf(info.id)) {
        this.#returnUnapplied(lease, now);
        returned++;
      }
      this.#fetchers.forget(info.id);
    }
    this.#checkFinished(now);
    return returned;
  }

  /** A lease's items not yet applied go back where they came from; its slots end. */
  #returnUnapplied(lease: Lease, now: number): void {
    for (const slot of lease.slots) {
      if (slot.remaining === 0) continue;
      const queue = slot.queue;
      for (const item of slot.items) {
        if (item.applied) continue;
        if (item.kind === 'robots') queue.robots.fetchLost();
        else if (item.kind === 'sitemap') this.#sitemaps.lost(queue.origin, item.sitemap!);
        else if (item.entry!.settled !== true) {
          item.entry!.leased = false;
          this.#frontier.push(queue, item.entry!, now);
        }
      }
      queue.finishSlot(now);
    }
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
    this.#now = now;
    let released = 0;
    for (const hash of this.#placement.takeDue(now)) {
      const record = this.#stores.crawlDb.get(hash);
      if (record === null || this.#placement.pendingEntry(hash) !== undefined) continue;
      if (record.nextFetchAt > now) continue; // a newer schedule for this URL superseded this entry
      if (this.#admission.queueKnown(hash, record, now)) released++;
    }
    return released;
  }

  /**
   * Makes everything applied so far durable: WARC records first (a crawl db record may name them), then
   * page records, the frontier's queues, robots.txt files, cache records, the search index, and the crawl database (the
   * authority on what is done, so last). The index before the crawl database: a kill between the two
   * leaves the URL not done in the crawl database, so it is fetched again and its entry replaced; the
   * other way round a page the crawl database calls done could stay missing from the index for good. Each store keeps what it could not write when this throws (a full disk, an I/O
   * error), and calling it again writes the rest: a store that committed is not written twice.
   */
  commit(): void {
    commitStore('warc/', () => this.#stores.warc?.commit());
    commitStore('pages.jsonl', () => this.#stores.archive.commit());
    // The frontier's queues before the crawl database (all they need): a URL the crawl database calls due
    // is queued or waiting on disk by then; the queued URLs settled in this window leave the file only at
    // the next commit, after the crawl database has them (frontier/frontier-store.ts). Not between the
    // cache and the crawl database: a kill between those two is to stay as unlikely as before.
    commitStore('frontier.btree', () => this.#stores.frontier?.commit((id, count) => this.#frontier.storeDeleted(id, count)));
    commitStore('robots.btree', () => this.#stores.robots?.commit());
    commitStore('cache.btree', () => this.#stores.cache.commit());
    commitStore('index/', () => this.#stores.index?.commit());
    // The crawl database records the index's commit count with its own commit: a start that finds the
    // index holding fewer knows it lost acknowledged commits (daemon.ts openStores).
    if (this.#stores.index != null) this.#stores.crawlDb.noteIndexCommits(this.#stores.index.commits);
    commitStore('crawldb.btree', () => this.#stores.crawlDb.commit());
    this.#stores.frontier?.crawlDbCommitted();
  }

  /**
   * The first step of `commit` on its own, with the WARC files' fsync on the thread pool (the event loop
   * goes on meanwhile; crawl-service.ts applies no results until it settles). `commit` afterwards finds
   * the records durable, so the order of the stores stays what `commit` says. CommitFailure on failure.
   */
  async commitArchive(): Promise<void> {
    const warc = this.#stores.warc;
    if (warc == null) return;
    try {
      await warc.syncRecords();
    } catch (error) {
      throw isStorageFailure(error) ? new CommitFailure('warc/', error) : error;
    }
  }

  summary(now: number): ReturnType<typeof crawlSummary> {
    return crawlSummary(this.#parts, now);
  }

  status(now: number): CrawlStatus {
    return crawlStatus(this.#parts, this.state(), this.#pass, now);
  }

  /**
   * The origin's sitemaps to read now: robots.txt must allow them, one that answered 404 or 410 is not
   * asked again before its time (counted as skipped), the others go out with their last validators
   * (sitemaps/sitemap-revisit.ts).
   */
  #sitemapsToRead(queue: OriginQueue, now: number): PendingSitemap[] {
    const rules = queue.robots.rules;
    const allowed = (url: NormalizedUrl): boolean => {
      if (rules !== null && !robotsVerdict(rules, url, this.#config.robotsToken).allowed) return false;
      if (sitemapRequestOf(this.#stores.cache.get(urlHash(url)), now).kind === 'request') return true;
      this.#stats.counters.sitemapsSkipped++;
      return false;
    };
    return this.#sitemaps.take(queue.origin, rules, allowed).map((sitemap) => {
      const request = sitemapRequestOf(this.#stores.cache.get(urlHash(sitemap.url)), now);
      return request.kind === 'request' && request.validators !== null ? { ...sitemap, validators: request.validators } : sitemap;
    });
  }

  /** A queued URL whose shape turned out to be a trap after it was admitted is refused at the cut. */
  #refusalOf(entry: QueuedUrl): string | null {
    const trap = this.#shapes.trapOf(entry.url);
    if (trap === null) return null;
    trap.refused++;
    return TRAP_SHAPE_CODE;
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

/** Runs one store's commit; a failure of the file system becomes a CommitFailure naming the store. */
function commitStore(store: string, commit: () => void): void {
  try {
    commit();
  } catch (error) {
    throw isStorageFailure(error) ? new CommitFailure(store, error) : error;
  }
}
