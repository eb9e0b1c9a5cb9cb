/**
 * The crawl's status as GET /api/status, the status stream and the admin page show it: the summary's
 * counters plus what is queued, leased and waiting, the fetchers, the storage, recent fetches and
 * errors, the hosts, and the settings. Built from the crawl's parts at `now`; changes nothing.
 */
import type { CacheStore } from '../cache/cache-store.js';
import type { CrawlConfig } from '../crawl-config.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import type { CrawlDbStatus } from '../crawldb/record.js';
import type { SeenSet } from '../admission/seen-set.js';
import type { CrawlParts, CrawlState } from './crawl.js';
import type { CrawlPass } from './crawl-pass.js';
import type { CrawlSummary } from './crawl-stats.js';
import { crawlDelayOf } from '../robots/robots.js';
import { estimateTimeLeft, type OriginWork, type TimeLeft } from './time-left.js';
import type { FetcherInfo } from './fetcher-registry.js';
import type { HostsOverview } from './host-activity.js';
import type { HostHealth } from '../frontier/host-backoff.js';
import type { TrapShape } from '../admission/url-shape.js';
import type { RecentError, RecentFetch, RobotsTrouble } from './recent-events.js';

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
  /** Hosts whose robots.txt could not be fetched: waiting for the next attempt, or given up. */
  robotsTrouble: RobotsTrouble[];
  /** Hosts whose requests keep failing: backed off until `until`, or given up for the pass (frontier/host-backoff.ts), at most 50. */
  backedOffHosts: HostHealth[];
  /** URL shapes found to be infinite spaces (admission/url-shape.ts), at most 50. */
  trapShapes: TrapShape[];
  hosts: HostsOverview;
  /** How long the URLs queued now take at the politeness settings (time-left.ts); null when none is queued. */
  timeLeft: TimeLeft | null;
  config: Omit<CrawlConfig, 'seeds'> & { seeds: string[] };
}

/** The summary printed at the end of a crawl: the counters and the crawl database's URLs by status. */
export function crawlSummary(parts: CrawlParts, now: number): CrawlSummary & { urlsByStatus: Record<CrawlDbStatus, number>; backedOffHosts: HostHealth[]; trapShapes: TrapShape[]; pageLimit: PageLimitReached | null } {
  return { ...parts.stats.summary(now), urlsByStatus: parts.stores.crawlDb.countsByStatus(), backedOffHosts: parts.hostBackoff.list(), trapShapes: parts.shapes.list(), pageLimit: pageLimitReached(parts) };
}

/**
 * --max-pages spent with URLs still queued: they wait for the next pass, which has the same limit
 * unless it is changed (the setting is saved with the crawl). A pass over a known crawl spends it on
 * the URLs due first, revalidations included, so the ones never fetched can wait pass after pass.
 */
export interface PageLimitReached {
  readonly maxPages: number;
  /** URLs queued and not handed out this pass (revalidations and never fetched alike). */
  readonly queuedLeft: number;
}

function pageLimitReached(parts: CrawlParts): PageLimitReached | null {
  const maxPages = parts.config.maxPages;
  if (maxPages === null || parts.budgetLeft() !== 0 || parts.frontier.queued === 0) return null;
  return { maxPages, queuedLeft: parts.frontier.queued };
}

export function crawlStatus(parts: CrawlParts, state: CrawlState, pass: CrawlPass | null, now: number): CrawlStatus {
  const { leases, fetchers, frontier, placement, admission, stores, recent, config } = parts;
  const leasedByFetcher = new Map<string, number>();
  const slotsByFetcher = new Map<string, number>();
  let itemsLeased = 0;
  const activeOrigins = new Set<string>();
  for (const lease of leases.values()) {
    itemsLeased += lease.remaining;
    let slotsOut = 0;
    for (const slot of lease.slots) {
      if (slot.remaining === 0) continue;
      activeOrigins.add(slot.queue.origin);
      slotsOut++;
    }
    leasedByFetcher.set(lease.fetcherId, (leasedByFetcher.get(lease.fetcherId) ?? 0) + lease.remaining);
    slotsByFetcher.set(lease.fetcherId, (slotsByFetcher.get(lease.fetcherId) ?? 0) + slotsOut);
  }
  // A fetcher's figures are those of its last claim or heartbeat; a claim parked for work carries the
  // slots it had running when it was made, and shows them after they ended (nothing else reports while
  // it is idle). A slot it runs holds a lease here until its results are applied: it has at most those.
  const withLeases = (info: FetcherInfo) => {
    const slots = slotsByFetcher.get(info.id) ?? 0;
    const stats = info.stats.inFlight <= slots ? info.stats : { ...info.stats, inFlight: slots };
    return { ...info, stats, itemsLeased: leasedByFetcher.get(info.id) ?? 0 };
  };
  return {
    state,
    ...crawlSummary(parts, now),
    frontierSize: frontier.queued,
    leasesOut: leases.size,
    itemsLeased,
    waitingUrls: placement.waiting,
    origins: frontier.originCount,
    fetchers: fetchers.list().map(withLeases),
    seenSet: admission.seenStats(),
    cacheTree: stores.cache.stats(),
    crawlDbTree: stores.crawlDb.stats(),
    pass,
    recentFetches: recent.fetches(),
    recentErrors: recent.errors(),
    robotsTrouble: recent.robotsTrouble(),
    hosts: recent.hosts(activeOrigins, frontier),
    timeLeft: timeLeftOf(parts, now),
    config: { ...config, seeds: [...config.seeds] },
  };
}

/** Origins per Crawl-delay the time-left estimate looks at: those with the most queued URLs (their waits differ). */
const TIME_LEFT_CANDIDATES = 16;

function timeLeftOf(parts: CrawlParts, now: number): TimeLeft | null {
  if (parts.frontier.queued === 0) return null;
  // The page limit is reached: what is queued is not handed out in this pass (crawl.ts `state`), so no time is left for it.
  if (parts.budgetLeft() === 0 && parts.frontier.chargedQueued === 0) return null;
  // No fetcher heard from within two lease times (crawl.ts liveFetcherIds): nothing is fetched, so no time is known.
  if (parts.fetchers.live(now, parts.config.leaseMs * 2).length === 0) return null;
  const fetches = parts.recent.fetches();
  const averageResponseMs = fetches.length === 0 ? 0 : fetches.reduce((sum, fetch) => sum + fetch.durationMs, 0) / fetches.length;
  // The origins with the most queued URLs per Crawl-delay, never every origin (frontier/biggest-queues.ts).
  const work = function* (): Generator<OriginWork> {
    for (const queue of parts.frontier.biggestQueues(TIME_LEFT_CANDIDATES)) {
      if (queue.queuedUrls === 0) continue;
      const crawlDelay = crawlDelayOf(queue.robots.rules);
      yield {
        origin: queue.origin,
        queued: queue.queuedUrls,
        delayMs: parts.delayOf(queue),
        concurrency: parts.concurrencyOf(queue),
        crawlDelay: crawlDelay !== null && crawlDelay > parts.config.delayMs,
        waitMs: queue.nextStartAt - now,
      };
    }
  };
  return estimateTimeLeft(work(), averageResponseMs);
}
