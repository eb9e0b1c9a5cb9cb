/**
 * Admission: how a URL enters the crawl. A discovered link is normalized, put through the crawl rules
 * (session ids, spider traps: url-rules.ts) and the scope, checked against the seen-set and the
 * per-host page budget, given a crawl database record and queued in the frontier with its priority
 * (depth for breadth-first, OPIC score for page importance). URLs known from the crawl database
 * (a restart, a new pass) come in through `queueKnown`. The first time an origin is met, its
 * robots.txt may already be on disk.
 */
import { LIMITS } from '../../shared/protocol.js';
import { urlHash, type UrlHash } from '../../shared/url-hash.js';
import { normalizeUrl, type NormalizedUrl } from '../../shared/url-normalize.js';
import type { CrawlConfig } from '../crawl-config.js';
import type { CrawlStats } from '../crawl/crawl-stats.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import type { FetchSchedulePolicy } from '../crawldb/fetch-schedule.js';
import { newCrawlDbRecord, type CrawlDbRecord } from '../crawldb/record.js';
import type { Frontier } from '../frontier/frontier.js';
import type { RecentEvents } from '../crawl/recent-events.js';
import type { RobotsStore } from '../robots/robots-store.js';
import { KnownLinks } from './known-links.js';
import { makeScope, type Scope } from './scope.js';
import { SeenSet } from './seen-set.js';
import type { UrlPlacement } from '../frontier/url-placement.js';
import { applyUrlRules, DEFAULT_URL_RULES } from './url-rules.js';
import { TRAP_SHAPE_CODE, type UrlShapes } from './url-shape.js';
import type { LinkRouter } from '../cluster/link-router.js';

export interface AdmissionParts {
  readonly frontier: Frontier;
  readonly crawlDb: CrawlDb;
  readonly robots: RobotsStore | null;
  readonly placement: UrlPlacement;
  readonly stats: CrawlStats;
  readonly recent: RecentEvents;
  readonly schedule: FetchSchedulePolicy;
  /** URL shapes whose pages keep being the same (url-shape.ts); absent: no shape is refused. */
  readonly shapes?: UrlShapes;
  /** In a cluster, takes the URLs of other partitions' hosts (cluster/link-router.ts); absent: every URL is ours. */
  readonly router?: LinkRouter;
}

export class Admission {
  readonly #parts: AdmissionParts;
  #config: CrawlConfig;
  #seen: SeenSet;
  #seeds: NormalizedUrl[];
  #scope: Scope;
  readonly #urlRules = DEFAULT_URL_RULES;
  /** Link strings already known to be seen (known-links.ts); dropped with the seen-set. */
  readonly #known = new KnownLinks();

  constructor(config: CrawlConfig, parts: AdmissionParts) {
    this.#parts = parts;
    this.#config = config;
    this.#seen = this.#newSeenSet();
    this.#seeds = config.seeds.map(mustBeSeed);
    this.#scope = makeScope(config.scope, this.#seeds);
  }

  get seeds(): readonly NormalizedUrl[] {
    return this.#seeds;
  }

  /** New settings and seeds (a new crawl): the seen-set starts empty again. */
  reconfigure(config: CrawlConfig): void {
    this.#config = config;
    this.#seeds = config.seeds.map(mustBeSeed);
    this.#scope = makeScope(config.scope, this.#seeds);
    this.#seen = this.#newSeenSet();
    this.#known.clear();
  }

  /** Adds a seed to the running crawl (it widens a prefix scope); a seed given twice is kept once. */
  addSeed(seed: NormalizedUrl): void {
    if (this.#scope.add(seed)) this.#seeds.push(seed);
  }

  /** Whether the crawl's scope takes the URL: a seed, or a URL the scope filter accepts. */
  inScope(url: NormalizedUrl): boolean {
    return this.#scope.has(url);
  }

  markSeen(hash: UrlHash): void {
    this.#seen.addIfNew(hash);
  }

  /** Whether the URL may be known (the seen-set; a yes is then confirmed in the crawl database). */
  isSeen(hash: UrlHash): boolean {
    return this.#seen.has(hash);
  }

  seenStats(): ReturnType<SeenSet['stats']> {
    return this.#seen.stats();
  }

  /** Admits the links of a page (or a redirect target) at `depth`, sharing the page's OPIC score among them. */
  admitLinks(links: readonly string[], base: string, depth: number, parentScore: number, now: number, redirectHops = 0): void {
    const capped = links.length > LIMITS.linksPerPage ? links.slice(0, LIMITS.linksPerPage) : links;
    // OPIC: a page's importance is shared out equally among its outlinks.
    const share = capped.length > 0 ? parentScore / capped.length : 0;
    const opic = this.#config.order === 'opic';
    for (const link of capped) {
      const known = this.#known.get(link);
      if (known !== undefined) {
        if (known !== null && share > 0 && opic) this.#addScore(known, share);
        continue;
      }
      const normalized = normalizeUrl(link, base);
      if (!normalized.ok) {
        if (normalized.code === 'url-too-long') this.reject(link, normalized.code, now);
        continue;
      }
      const ruled = applyUrlRules(normalized.url, this.#urlRules);
      if (!ruled.ok) {
        this.reject(normalized.url, ruled.code, now);
        continue;
      }
      if (!this.#scope.has(ruled.url)) continue;
      const hash = urlHash(ruled.url);
      // An infinite space found out (url-shape.ts): its new URLs cost no request.
      const trap = this.#parts.shapes?.trapOf(ruled.url) ?? null;
      if (trap !== null) {
        if (!this.#seen.has(hash)) {
          trap.refused++;
          this.reject(ruled.url, TRAP_SHAPE_CODE, now);
        }
        continue;
      }
      const outcome = this.#admitHashed(ruled.url, hash, normalized.origin, depth, share, now, redirectHops);
      if (outcome !== 'refused') this.#known.add(link, opic ? hash : null);
    }
  }

  /** A discovered URL refused by a crawl rule: counted under its code (a trap costs no request). */
  reject(url: string, code: string, now: number): void {
    this.#parts.stats.countError(code);
    this.#parts.recent.error({ url: url.slice(0, LIMITS.urlChars), code, at: now });
  }

  /** Admits a newly discovered URL; returns false when it was already known. */
  admit(url: NormalizedUrl, origin: string, depth: number, score: number, now: number, redirectHops = 0): boolean {
    const outcome = this.#admitHashed(url, urlHash(url), origin, depth, score, now, redirectHops);
    return outcome === 'admitted' || outcome === 'forwarded';
  }

  /** `admit` with the hash at hand: admitted now, seen before, or refused (and not marked seen). */
  #admitHashed(url: NormalizedUrl, hash: UrlHash, origin: string, depth: number, score: number, now: number, redirectHops: number): 'admitted' | 'seen' | 'refused' | 'forwarded' {
    // Another partition's host: its owner admits it (budget, seen-set, crawl db are all there).
    if (this.#parts.router?.forward(url, depth, score) === true) return 'forwarded';
    if (this.#seen.has(hash)) {
      // OPIC cash reaching a known page is worth a crawl database write only when it decides the order.
      if (score > 0 && this.#config.order === 'opic') this.#addScore(hash, score);
      return 'seen';
    }
    const queue = this.#parts.frontier.origin(origin);
    if (queue.admitted >= this.#config.maxPagesPerHost) {
      // The per-host budget: whatever trap got past the URL rules costs at most this many URLs.
      this.reject(url, 'trap-budget', now);
      return 'refused';
    }
    queue.countAdmitted();
    this.#seen.addIfNew(hash);
    this.#parts.stats.counters.urlsDiscovered++;
    this.#parts.stats.resume();
    this.#parts.crawlDb.put(hash, newCrawlDbRecord(url, depth, score, now, this.#parts.schedule));
    this.#loadRobots(origin, now);
    // The frontier makes it pending (placement) when it is in memory; on disk only it waits there.
    this.#parts.frontier.add(origin, url, hash, depth, now, this.#priorityOf(depth, score), redirectHops);
    return 'admitted';
  }

  /** Frontier order: breadth-first by depth, or page importance (higher OPIC score first). */
  #priorityOf(depth: number, score: number): number {
    return this.#config.order === 'opic' ? -score : depth;
  }

  #addScore(hash: UrlHash, score: number): void {
    const record = this.#parts.crawlDb.get(hash);
    if (record !== null) this.#parts.crawlDb.put(hash, { ...record, score: record.score + score });
  }

  /** Puts a URL known from the crawl database into the frontier; false when out of scope or too deep. */
  queueKnown(hash: UrlHash, record: CrawlDbRecord, now: number): boolean {
    const normalized = normalizeUrl(record.url);
    if (!normalized.ok || (this.#config.maxDepth !== null && record.depth > this.#config.maxDepth) || !this.#scope.has(normalized.url)) return false;
    this.#loadRobots(normalized.origin, now);
    this.#parts.frontier.origin(normalized.origin).countAdmitted();
    this.#parts.frontier.add(normalized.origin, normalized.url, hash, record.depth, now, this.#priorityOf(record.depth, record.score));
    return true;
  }

  /** The first time an origin is met in this process, its robots.txt may already be on disk. */
  #loadRobots(origin: string, now: number): void {
    const policy = { userAgentToken: this.#config.robotsToken, unreachableRetryMs: this.#config.robotsUnreachableRetryMs };
    this.#parts.frontier.origin(origin).robots.consultStore(this.#parts.robots, policy, now);
  }

  #newSeenSet(): SeenSet {
    return new SeenSet({ capacity: this.#config.bloomCapacity, falsePositiveRate: this.#config.bloomFalsePositiveRate });
  }
}

export function mustBeSeed(seed: string): NormalizedUrl {
  const result = normalizeUrl(seed);
  if (!result.ok) throw new Error(`seed is not a crawlable URL (${result.code}): ${seed.slice(0, 200)}`);
  return result.url;
}
