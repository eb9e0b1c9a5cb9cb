/**
 * Admission: how a URL enters the crawl. A discovered link is normalized, put through the crawl rules
 * (session ids, spider traps: url-rules.ts) and the scope, checked against the seen-set and the
 * per-host page budget, given a crawl database record and queued in the frontier with its priority
 * (depth for breadth-first, OPIC score for page importance). URLs known from the crawl database
 * (a restart, a new pass) come in through `queueKnown`. The first time an origin is met, its
 * robots.txt may already be on disk.
 */
import { LIMITS } from '../../shared/protocol.js';
import { urlHash, urlHashHex, type UrlHash } from '../../shared/url-hash.js';
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
import { crawlDbExactStore, SeenSet } from './seen-set.js';
import type { UrlPlacement } from '../frontier/url-placement.js';
import { applyUrlRules, DEFAULT_URL_RULES } from './url-rules.js';
import { TRAP_SHAPE_CODE, type PageFanOut, type UrlShapes } from './url-shape.js';
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
  readonly #seen: SeenSet;
  #seeds: NormalizedUrl[];
  #scope: Scope;
  readonly #urlRules = DEFAULT_URL_RULES;
  /** Link strings already known to be seen (known-links.ts); dropped with the seen-set. */
  readonly #known = new KnownLinks();

  constructor(config: CrawlConfig, parts: AdmissionParts) {
    this.#parts = parts;
    this.#config = config;
    this.#seen = new SeenSet({ capacity: config.bloomCapacity, falsePositiveRate: config.bloomFalsePositiveRate }, crawlDbExactStore(parts.crawlDb));
    this.#seeds = config.seeds.map(mustBeSeed);
    this.#scope = makeScope(config.scope, this.#seeds);
  }

  get seeds(): readonly NormalizedUrl[] {
    return this.#seeds;
  }

  /**
   * New settings and seeds (a new crawl). The seen-set stays: its exact part is the crawl database,
   * which keeps what is known, and its Bloom filter holds every key of it.
   */
  reconfigure(config: CrawlConfig): void {
    this.#config = config;
    this.#seeds = config.seeds.map(mustBeSeed);
    this.#scope = makeScope(config.scope, this.#seeds);
    this.#known.clear();
  }

  /** Whether the crawl's scope takes the URL: a seed, or a URL the scope filter accepts. */
  inScope(url: NormalizedUrl): boolean {
    return this.#scope.has(url);
  }

  /** A URL known from the crawl database (start, a new crawl): into the seen-set's Bloom filter. */
  markSeen(hash: UrlHash): void {
    this.#seen.markKnown(hash);
  }

  /**
   * The batch seam of the seen-set: which of `hashes` are known, in one sorted pass over the crawl
   * database for the Bloom filter's "maybe" answers (seen-set.ts `seenAmong`).
   */
  seenAmong(hashes: readonly UrlHash[]): boolean[] {
    return this.#seen.seenAmong(hashes);
  }

  seenStats(): ReturnType<SeenSet['stats']> {
    return this.#seen.stats();
  }

  /**
   * Admits the links of a page (or a redirect target) at `depth`, sharing the page's OPIC score among
   * them. In two steps: every link is normalized, ruled, scoped and hashed, then the seen-set answers
   * for all of them in one batch, then each is admitted in the page's order. `fanOut` (a fetched page's,
   * url-shape.ts) is told which in-scope links were new and which known, for the fan-out rule.
   */
  admitLinks(links: readonly string[], base: string, depth: number, parentScore: number, now: number, redirectHops = 0, fanOut: PageFanOut | null = null): void {
    const max = this.#config.maxLinksPerPage;
    const capped = links.length > max ? links.slice(0, max) : links;
    // OPIC: a page's importance is shared out equally among its outlinks.
    const share = capped.length > 0 ? parentScore / capped.length : 0;
    const opic = this.#config.order === 'opic';
    const candidates: { link: string; url: NormalizedUrl; origin: string }[] = [];
    const hashes: UrlHash[] = [];
    for (const link of capped) {
      const known = this.#known.get(link);
      if (known !== undefined) {
        if (known !== null && share > 0 && opic) this.#addScore(known, share);
        fanOut?.link(link, false);
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
      candidates.push({ link, url: ruled.url, origin: normalized.origin });
      hashes.push(urlHash(ruled.url));
    }
    if (candidates.length === 0) return;
    const seen = this.#seen.seenAmong(hashes);
    // Hashes admitted from this batch: a URL spelled twice on one page is seen the second time.
    const admitted = new Set<string>();
    for (let i = 0; i < candidates.length; i++) {
      const { link, url, origin } = candidates[i]!;
      const hash = hashes[i]!;
      const again = !seen[i]! && admitted.size > 0 && admitted.has(urlHashHex(hash));
      const wasSeen = seen[i]! || again;
      // An infinite space found out (url-shape.ts): its new URLs cost no request.
      const trap = this.#parts.shapes?.trapOf(url) ?? null;
      if (trap !== null) {
        if (!wasSeen) {
          trap.refused++;
          this.reject(url, TRAP_SHAPE_CODE, now);
        }
        continue;
      }
      const outcome = this.#admitHashed(url, hash, wasSeen, origin, depth, share, now, redirectHops);
      if (outcome === 'admitted') admitted.add(urlHashHex(hash));
      if (outcome !== 'refused') this.#known.add(link, opic ? hash : null);
      // A URL spelled twice on one page is not a link back to a known one.
      if (fanOut !== null && outcome !== 'refused' && !again) fanOut.link(url, outcome !== 'seen');
    }
  }

  /** A discovered URL refused by a crawl rule: counted under its code (a trap costs no request). */
  reject(url: string, code: string, now: number): void {
    this.#parts.stats.countError(code);
    this.#parts.recent.error({ url: url.slice(0, LIMITS.urlChars), code, at: now });
  }

  /** Admits a newly discovered URL; returns false when it was already known. */
  admit(url: NormalizedUrl, origin: string, depth: number, score: number, now: number, redirectHops = 0): boolean {
    const hash = urlHash(url);
    return this.admitNew(url, hash, this.#seen.seenAmong([hash])[0]!, origin, depth, score, now, redirectHops);
  }

  /** `admit` for a URL whose seen-set answer the caller has from a batch (`seenAmong`); a URL forwarded to its partition's owner counts as admitted. */
  admitNew(url: NormalizedUrl, hash: UrlHash, seen: boolean, origin: string, depth: number, score: number, now: number, redirectHops = 0): boolean {
    const outcome = this.#admitHashed(url, hash, seen, origin, depth, score, now, redirectHops);
    return outcome === 'admitted' || outcome === 'forwarded';
  }

  /** `admit` with the hash at hand: admitted now, seen before, refused (and not marked seen), or forwarded to another partition. */
  #admitHashed(url: NormalizedUrl, hash: UrlHash, seen: boolean, origin: string, depth: number, score: number, now: number, redirectHops: number): 'admitted' | 'seen' | 'refused' | 'forwarded' {
    // Another partition's host: its owner admits it (budget, seen-set, crawl db are all there).
    if (this.#parts.router?.forward(url, depth, score) === true) return 'forwarded';
    if (seen) {
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
    this.#seen.addNew(hash);
    this.#parts.stats.counters.urlsDiscovered++;
    this.#parts.stats.resume(now);
    // New by the seen-set's exact answer: there is no previous record to read back.
    this.#parts.crawlDb.put(hash, newCrawlDbRecord(url, depth, score, now, this.#parts.schedule), null);
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

}

export function mustBeSeed(seed: string): NormalizedUrl {
  const result = normalizeUrl(seed);
  if (!result.ok) throw new Error(`seed is not a crawlable URL (${result.code}): ${seed.slice(0, 200)}`);
  return result.url;
}
