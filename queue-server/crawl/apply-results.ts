/**
 * Applying a fetcher's results to the crawl: each (schedule, slot, item) once. A robots.txt result
 * makes its origin's rules known (robots/origin-robots.ts); a page result is classified once
 * (outcome.ts) and then counted, cached (the cache record replaced on 2xx, merged on 304), followed
 * (links and redirect targets admitted at depth + 1 with an OPIC share of the page's score), and
 * settled in the crawl database through the Nutch transition (crawldb/transition.ts); its page record
 * goes to the archive. A finished slot frees its origin for the next one after the politeness delay.
 * Results without a live lease are duplicates, or, after a queue server restart, applied when their
 * URL is pending and not out on another lease.
 */
import type { ItemResult, ResultsRequest, ResultsResponse } from '../../shared/protocol.js';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { normalizeUrl, type NormalizedUrl } from '../../shared/url-normalize.js';
import { listedUrl } from '../sitemaps/sitemap-rules.js';
import type { PendingSitemap } from '../sitemaps/sitemaps.js';
import { sitemapRecordAfter } from '../sitemaps/sitemap-revisit.js';
import { recordAfterFullResponse, recordAfterNotModified } from '../cache/cache-policy.js';
import { belowLimit } from '../crawl-config.js';
import { relationsOf } from '../crawldb/crawl-db.js';
import { newCrawlDbRecord, type CrawlDbRecord } from '../crawldb/record.js';
import { applyFetch, holdsNoPage, type FetchOutcome } from '../crawldb/transition.js';
import type { OriginQueue, QueuedUrl } from '../frontier/frontier.js';
import type { CrawlParts } from './crawl.js';
import { indexChangeOf } from './index-change.js';
import { classifyResult, crawlDbOutcomeOf, pageRecordOf, type PageRecord } from './outcome.js';
import { MAX_RETRY_AFTER_MS, UrlRetryBudget } from './retry-after.js';
import { honouredRetryAfter, isHostFailure } from '../../shared/fetch-codes.js';
import { ONE_SHOT_MAX_WAIT_MS } from '../frontier/host-backoff.js';
import { WarcError } from '../../shared/warc/errors.js';
import type { CaptureLocation } from '../warc/location.js';

/** Redirects followed one after another from one link, at most (browsers allow about 20; crawlers fewer). */
export const MAX_REDIRECT_HOPS = 10;


export class ResultApplier {
  readonly #parts: CrawlParts;
  readonly #retries = new UrlRetryBudget();

  constructor(parts: CrawlParts) {
    this.#parts = parts;
  }

  /**
   * `address`: where the post came from. A fetcher not heard from before (the queue server restarted
   * and its first word from it is results it held) is registered by it, under its id until it says its
   * name, so that a one-shot crawl that ends now tells it `done` before exiting (allFetchersTold).
   */
  apply(request: ResultsRequest, now: number, address?: string): ResultsResponse {
    const { leases, fetchers, placement, stats, stores } = this.#parts;
    let applied = 0;
    let duplicates = 0;
    const records: PageRecord[] = [];
    const leaseActive = leases.renew(request.scheduleId, request.fetcherId, now, this.#parts.config.leaseMs);
    const known = fetchers.get(request.fetcherId);
    if (known !== undefined) known.lastSeen = now;
    const fetcher = known ?? (address === undefined ? undefined : fetchers.touch(request.fetcherId, request.fetcherId, address, null, now));
    for (const result of request.results) {
      const found = leases.lookup(request.scheduleId, result.slot, result.i);
      let entry: QueuedUrl;
      if (found.kind === 'ok') {
        const { lease, slot, item } = found;
        if (lease.fetcherId !== request.fetcherId || item.url !== result.url) {
          stats.counters.lateResults++;
          continue;
        }
        // Its origin shares politeness with every other origin on the address it answered from.
        if (result.address != null) this.#parts.politeness.learned(slot.queue, result.address, now);
        if (item.kind === 'sitemap') {
          // A sitemap is discovery: no crawl database record, not a page; its capture is archived.
          const { slotDone } = leases.markApplied(lease, slot, item);
          if (result.error?.code === 'not-requested') this.#parts.sitemaps.lost(slot.queue.origin, item.sitemap!);
          else {
            this.#countRequest(result);
            this.#applySitemap(slot.queue.origin, item.sitemap!, result, now);
            this.#archive(result, null, now);
          }
          if (slotDone) this.#finishSlot(slot.queue, now);
          applied++;
          continue;
        }
        if (item.kind === 'page' && result.error?.code === 'not-requested') {
          // The fetcher handed it back unrequested (its host kept failing): queued again as it was.
          const { slotDone } = leases.markApplied(lease, slot, item);
          item.entry!.leased = false;
          if (item.entry!.settled !== true) this.#parts.frontier.push(slot.queue, item.entry!, now);
          if (slotDone) this.#finishSlot(slot.queue, now);
          applied++;
          continue;
        }
        this.#countRequest(result);
        const { slotDone } = leases.markApplied(lease, slot, item);
        if (item.kind === 'robots') {
          this.#applyRobots(slot.queue, result, now);
          // robots.txt has no crawl database record: its capture is archived, its location not kept.
          this.#archive(result, null, now);
        }
        if (slotDone) this.#finishSlot(slot.queue, now);
        if (item.kind === 'robots') {
          applied++;
          continue;
        }
        entry = item.entry!;
      } else {
        // No live lease: a retried post (duplicate), or results held across a queue server restart.
        // An item handed back unrequested is still queued (or was re-leased): nothing to apply.
        const orphan = found.kind === 'duplicate' || result.error?.code === 'not-requested' ? undefined : this.#orphanEntry(result);
        if (orphan === undefined) {
          duplicates++;
          stats.counters.duplicateResults++;
          continue;
        }
        this.#countRequest(result);
        orphan.settled = true;
        entry = orphan;
      }
      entry.leased = false;
      placement.settled(entry);
      this.#parts.frontier.settle(entry);
      const { record, previousStands } = this.#applyPage(result, entry, now);
      if (fetcher !== undefined) {
        fetcher.resultsApplied++;
        if (record.outcome === 'fetched') fetcher.pagesFetched++;
      }
      if (!previousStands) records.push(record);
      applied++;
    }
    stores.archive.append(records);
    return { applied, duplicates, leaseActive };
  }

  /** A new crawl: every URL's request count starts over. */
  resetRetries(): void {
    this.#retries.clear();
  }

  /**
   * Stores the crawl database transition of a URL for `outcome` (a fetch, or a robots.txt denial),
   * and what that verdict changes in the search index (index-change.ts; nothing under --no-index).
   * `result`: the fetch's result, whose capture (if any) is archived and its location kept in the record.
   */
  settle(entry: QueuedUrl, outcome: FetchOutcome, now: number, result: ItemResult | null = null): CrawlDbRecord {
    const { crawlDb, index } = this.#parts.stores;
    const hash = entry.hash;
    const known = crawlDb.get(hash);
    // A copy whose original no longer stands (it went: 404, 410, a redirect): the 304 says its body is
    // what it was, but that body is nobody's copy now, and no result shows it. Its validators are
    // dropped, so its next request is a full one, whose body decides again: an original (searchable),
    // or a copy of another page.
    if (outcome.kind === 'not-modified' && known != null && known.duplicateOf !== null && !crawlDb.originalStands(known)) this.#parts.stores.cache.stage(hash, null);
    const old = known ?? newCrawlDbRecord(entry.url, entry.depth, 0, now, this.#parts.schedule);
    const { record } = applyFetch(old, outcome, now, this.#parts.schedule);
    const warc = result === null ? null : this.#archive(result, old.warc, now);
    // A failure to be retried (a 5xx, a timeout) is archived as what it was, but the URL's capture stays
    // its last one with content: the page is still what that says, and a 304 next time refers to it.
    const next = warc === null || (record.status === 'retry' && old.warc !== null) ? record : { ...record, warc };
    // A URL that now redirects, is gone or is denied holds no page any more (the index drops it too): the
    // validators of the page it was go with it, so that a page coming back is fetched whole. Kept, they
    // got a 304 that made the URL `notmodified` while the index, the export and the archive kept it gone.
    if (holdsNoPage(next.status)) this.#parts.stores.cache.stage(hash, null);
    // A noindex page is nobody's original (crawl-db.ts put).
    crawlDb.put(hash, next, known, { indexable: result?.page?.noindex !== true });
    if (index != null && this.#parts.config.index) {
      const change = indexChangeOf(entry.url, next, result, (target) => crawlDb.get(target)?.url ?? null);
      if (change !== null) index.stage(change);
    }
    return next;
  }

  /**
   * Stages a result's capture in the web archive (queue-server/warc/warc-archive.ts decides: a 304
   * becomes a server-not-modified revisit of `previous`, a payload stored before an
   * identical-payload-digest revisit) and returns the URL's location to keep, or null when nothing
   * was archived. A capture whose records are not what they say is counted and left out; the result
   * stands.
   */
  #archive(result: ItemResult, previous: CaptureLocation | null, now: number): CaptureLocation | null {
    const { stores, config, stats } = this.#parts;
    const capture = result.capture ?? null;
    if (capture === null || stores.warc === null || !config.warc) return null;
    try {
      const stored = stores.warc.store(capture, previous, now);
      stats.counters.warcRecords += 2;
      stats.counters.warcBytes += stored.written.length;
      return stored.location;
    } catch (error) {
      if (!(error instanceof WarcError) || error.code !== 'WARC_CAPTURE_INVALID') throw error;
      stats.counters.warcInvalid++;
      return null;
    }
  }

  #applyRobots(queue: OriginQueue, result: ItemResult, now: number): void {
    const { config, stats, stores } = this.#parts;
    const policy = {
      userAgentToken: config.robotsToken,
      unreachableRetryMs: config.robotsUnreachableRetryMs,
      attempts: config.robotsAttempts,
      maxRetryAfterMs: config.once ? ONE_SHOT_MAX_WAIT_MS : MAX_RETRY_AFTER_MS,
    };
    stats.counters.robotsRequests++;
    // An unreachable robots.txt keeps the origin's URLs, asked again later until the attempts run out.
    const fetched = { status: result.status, errorCode: result.error?.code ?? null, body: result.robotsTxt, retryAfterMs: honouredRetryAfter(result.status, result.retryAfterMs) };
    const { retryAt, unreachable } = queue.robots.fetched(fetched, policy, stores.robots, now);
    if (retryAt !== null) queue.delayUntil(retryAt, now);
    // A robots.txt fetched again (its day is over): the origin's sitemaps are read again too.
    this.#parts.sitemaps.renew(queue.origin);
    const rules = queue.robots.rules;
    if (unreachable !== null && rules?.kind === 'deny-all') {
      // The next attempt waits for the retry time and for the politeness gap after this slot, whichever is later.
      const nextAttemptAt = retryAt === null ? null : Math.max(retryAt, now + this.#parts.delayOf(queue) + 1);
      this.#parts.recent.robotsUnreachable({ origin: queue.origin, code: rules.errorCode, attempt: unreachable.attempt, attempts: config.robotsAttempts, retryAt: nextAttemptAt, at: now });
    } else this.#parts.recent.robotsReachable(queue.origin);
  }

  /**
   * What one sitemap file says (sitemaps.org protocol 0.9): an index's sitemaps are read next, one
   * level down; a urlset's URLs are admitted as links at depth 1 (as if the site's root linked them),
   * and a known URL whose lastmod is newer than its last fetch is marked changed, so it is fetched in
   * this pass even while its stored copy is fresh (in a continuous crawl it is queued now). Entries a
   * sitemap may not list (another host, outside its directory: sitemap-rules.ts) are counted and left.
   */
  #applySitemap(origin: string, sitemap: PendingSitemap, result: ItemResult, now: number): void {
    const { stats, admission, stores, config, placement, sitemaps } = this.#parts;
    const counters = stats.counters;
    counters.sitemapRequests++;
    const data = result.status !== null && result.status >= 200 && result.status < 300 ? (result.sitemap ?? null) : null;
    if (data !== null && data.kind !== 'none') {
      counters.sitemapsRead++;
      const urls: NormalizedUrl[] = [];
      for (const entry of data.entries) {
        const url = listedUrl(sitemap.url, entry.loc);
        if (url === null) {
          counters.sitemapUrlsRefused++;
          continue;
        }
        if (data.kind === 'index') {
          if (!sitemaps.listed(origin, url, sitemap.level + 1)) counters.sitemapsSkipped++;
          continue;
        }
        counters.sitemapUrls++;
        urls.push(url);
        const hash = urlHash(url);
        if (entry.lastmod === null || !admission.seenAmong([hash])[0]!) continue;
        const record = stores.crawlDb.get(hash);
        if (record === null || record.lastFetchAt === null || entry.lastmod <= record.lastFetchAt) continue;
        counters.sitemapChanged++;
        sitemaps.changed(hash, entry.lastmod);
        if (!config.once && placement.pendingEntry(hash) === undefined) admission.queueKnown(hash, record, now);
      }
      if (belowLimit(0, config.maxDepth)) {
        const step = config.maxLinksPerPage;
        for (let i = 0; i < urls.length; i += step) admission.admitLinks(urls.slice(i, i + step), sitemap.url, 1, 0, now);
      }
    }
    // What the next pass asks of this sitemap: a conditional request, or none for a while after a 404
    // (sitemaps/sitemap-revisit.ts).
    const key = urlHash(sitemap.url);
    const kept = sitemapRecordAfter(stores.cache.get(key), result, now, config.initialIntervalMs);
    if (kept !== undefined) stores.cache.stage(key, kept);
    // A sitemap that failed is not asked again in the pass; like robots.txt, it does not count in the
    // host's health (frontier/host-backoff.ts), which its page requests decide.
    sitemaps.read(origin);
  }

  /**
   * `previousStands`: the URL's previous page record (the page archive's, which export reads) is still
   * what the page is: after a 304 (RFC 9111 section 4.3.4), and after a failure that will be retried
   * of a page whose content was fetched before. Otherwise `record` replaces it.
   */
  #applyPage(result: ItemResult, entry: QueuedUrl, now: number): { readonly record: PageRecord; readonly previousStands: boolean } {
    const { config, stats, recent, admission, frontier, stores } = this.#parts;
    const depth = entry.depth;
    const outcome = classifyResult(result);
    const counters = stats.counters;
    const cache = stores.cache;
    // Read once: a queued URL held in memory makes its 8 bytes when asked (frontier.ts ResidentUrl).
    const hash = entry.hash;
    const key = urlHashHex(hash);
    // A sitemap's mark that the page changed is spent by this request.
    this.#parts.sitemaps.fetched(hash);
    // A URL's requests per pass are bounded whatever it answers (retry-after.ts).
    const retry =
      outcome.kind === 'error' && outcome.recorded.kind === 'transient'
        ? this.#retries.failed(key, honouredRetryAfter(result.status, result.retryAfterMs), config.once ? ONE_SHOT_MAX_WAIT_MS : MAX_RETRY_AFTER_MS)
        : null;
    const retryAfterMs = retry?.retryAfterMs ?? null;
    const score = (): number => stores.crawlDb.get(hash)?.score ?? 0;
    switch (outcome.kind) {
      case 'fetched': {
        counters.pagesFetched++;
        if (result.truncated) counters.pagesTruncated++;
        // Links the page has past --max-links-per-page: the fetcher counted them (`outlinks`), not sent.
        const kept = Math.min(result.links.length, config.maxLinksPerPage);
        const found = Math.max(result.page?.outlinks ?? 0, result.links.length);
        if (found > kept) {
          counters.pagesLinksCut++;
          counters.linksCut += found - kept;
        }
        cache.stage(hash, recordAfterFullResponse(result, now));
        if (belowLimit(depth, config.maxDepth)) {
          // What the page's links lead to joins its URL shape's fan-out window (url-shape.ts).
          const fanOut = this.#parts.shapes.fanOutOf(entry.url);
          admission.admitLinks(result.links, result.url, depth + 1, score(), now, 0, fanOut);
          if (fanOut !== null) this.#parts.shapes.recordLinks(fanOut, now);
        }
        break;
      }
      case 'not-modified': {
        counters.notModified++;
        const previous = cache.get(hash);
        counters.bytesSaved += previous?.bodyBytes ?? 0;
        // (A copy whose original went loses these validators again in `settle`.)
        cache.stage(hash, recordAfterNotModified(previous, result, now));
        break;
      }
      case 'redirect': {
        counters.redirects++;
        // A chain or a loop of redirects is followed for at most MAX_REDIRECT_HOPS hops.
        const hops = (entry.redirectHops ?? 0) + 1;
        if (hops > MAX_REDIRECT_HOPS) admission.reject(outcome.target ?? result.url, 'too-many-redirects', now);
        else if (outcome.target !== null && belowLimit(depth, config.maxDepth)) admission.admitLinks([outcome.target], result.url, depth + 1, 0, now, hops);
        break;
      }
      case 'error':
        // A 429 or 503 whose Retry-After is honoured is a wait, not a failure (it is asked again later).
        if (retryAfterMs !== null) counters.retriedLater++;
        else stats.countError(outcome.code);
        recent.error({ url: result.url, code: outcome.code, at: now });
        break;
    }
    recent.fetch({ url: result.url, status: result.status, title: result.page?.title ?? null, bytes: result.bytes, at: now, durationMs: result.durationMs });

    const simhash = outcome.kind === 'fetched' ? (result.page?.simhash ?? null) : null;
    const relations = relationsOf(stores.crawlDb, hash, {
      url: entry.url,
      signature: outcome.kind === 'fetched' ? result.signature : null,
      simhash,
      canonical: result.page?.canonical ?? null,
      redirectTo: outcome.kind === 'redirect' ? outcome.target : null,
    });
    // A page's text joins its URL shape's statistics: a shape whose pages keep being the same is a trap.
    const excerpt = outcome.kind === 'fetched' ? (result.page?.excerpt ?? '') : '';
    if (excerpt.length > 0) this.#parts.shapes.recordPage(entry.url, excerpt, now);
    // 429 and 503 with Retry-After slow the whole host down, not only this URL.
    const origin = new URL(entry.url).origin;
    if (retryAfterMs !== null) frontier.origin(origin).delayUntil(now + retryAfterMs, now);
    // A host whose requests keep failing is backed off as a whole (frontier/host-backoff.ts).
    // A Retry-After longer than a one-shot crawl waits gives the host up: it asked not to be asked again before the crawl ends.
    const failed = isHostFailure(result.status, result.error?.code ?? null, result.retryAfterMs);
    const health = this.#parts.hostBackoff.record(origin, { failed, code: outcome.kind === 'error' ? outcome.code : '', waitTooLongMs: retry?.waitTooLongMs ?? null }, now);
    if (health?.until != null) frontier.origin(origin).delayUntil(health.until, now);
    let fetchOutcome = crawlDbOutcomeOf(result, outcome, { ...relations, freshUntil: cache.get(hash)?.freshUntil ?? null, simhash, retryAfterMs });
    if (fetchOutcome.kind === 'transient' && retry?.giveUp === true) fetchOutcome = { ...fetchOutcome, giveUp: true };
    const next = this.settle(entry, fetchOutcome, now, result);
    if (next.status !== 'retry') this.#retries.settled(key);
    if (next.status === 'retry' || !config.once) this.#parts.placement.later(hash, next.nextFetchAt);
    // A retried failure keeps the signature of the content fetched before (crawldb/transition.ts).
    const previousStands = outcome.kind === 'not-modified' || (next.status === 'retry' && next.signature !== null);
    return { record: pageRecordOf(result, depth, outcome), previousStands };
  }

  /** A result without a lease is applied if its URL is queued and not out on another lease. */
  #orphanEntry(result: ItemResult): QueuedUrl | undefined {
    const normalized = normalizeUrl(result.url);
    if (!normalized.ok || normalized.url !== result.url) return undefined;
    const entry = this.#parts.placement.pendingEntry(urlHash(normalized.url));
    return entry !== undefined && entry.leased !== true && entry.settled !== true ? entry : undefined;
  }

  #countRequest(result: ItemResult): void {
    const { stats } = this.#parts;
    stats.counters.requests++;
    stats.counters.bytesDownloaded += result.wireBytes;
    if (result.status !== null) stats.countStatus(result.status);
  }

  #finishSlot(queue: OriginQueue, now: number): void {
    // `now` is whole milliseconds, up to 1 ms behind the true receipt time: +1 keeps the gap whole.
    const delay = this.#parts.delayOf(queue);
    queue.finishSlot(now, delay > 0 ? now + delay + 1 : 0);
  }
}
