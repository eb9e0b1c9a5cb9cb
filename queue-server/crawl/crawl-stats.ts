/**
 * The crawl's counters and the summary built from them (the JSON printed at the end of `petrel
 * crawl`, written by --summary-json and served live at GET /api/status).
 *
 * Definitions:
 *  - requests: every HTTP request a fetcher sent or tried to send, robots.txt included.
 *  - pagesFetched: 2xx answers to page requests whose body was downloaded (robots.txt excluded).
 *  - notModified: 304 answers. skippedFresh: known URLs not requested because still fresh.
 *  - robotsDenied: URLs not requested because robots.txt forbids them or could not be fetched.
 *  - errors: page requests that ended in an HTTP error status or without a response; errorsByCode
 *    breaks them down by stable code.
 *  - byStatus: every HTTP status received, robots.txt included.
 *  - urlsDiscovered: unique in-scope URLs admitted to the frontier (seeds included; URLs beyond
 *    --max-depth are not admitted and not counted).
 *  - bytesDownloaded: body bytes received on the wire.
 *  - sitemapRequests, sitemapsRead, sitemapUrls, sitemapUrlsRefused, sitemapChanged, sitemapsSkipped:
 *    sitemap files are discovery, not pages (queue-server/sitemaps/); their requests are in `requests`.
 *  - pagesTruncated: fetched pages cut short, at --max-body-bytes or at the parser's work bound
 *    (fetcher/parse-budget.ts); links past the cut were not seen.
 *  - linksCut, pagesLinksCut: links of fetched pages past --max-links-per-page (distinct ones, as the
 *    fetcher counted them in `outlinks`), not followed, and the pages that had them.
 *  - warcRecords, warcBytes: WARC records (request, response or revisit) and their compressed bytes
 *    this crawl stored in the web archive, warcinfo records not counted; warcInvalid: captures refused
 *    because their records were not what they said (the result itself is applied).
 */
export interface CrawlCounters {
  pagesFetched: number;
  notModified: number;
  skippedFresh: number;
  robotsDenied: number;
  errors: number;
  redirects: number;
  /** 429 and 503 answers with a Retry-After that was honoured: the URL is asked again, not failed. */
  retriedLater: number;
  requests: number;
  robotsRequests: number;
  urlsDiscovered: number;
  bytesDownloaded: number;
  /** Body bytes not transferred thanks to the cache: stored size of 304s and of fresh skips. */
  bytesSaved: number;
  pagesTruncated: number;
  linksCut: number;
  pagesLinksCut: number;
  duplicateResults: number;
  lateResults: number;
  leasesExpired: number;
  warcRecords: number;
  warcBytes: number;
  warcInvalid: number;
  /** Sitemap files requested (not pages: not in pagesFetched nor against --max-pages; in requests). */
  sitemapRequests: number;
  /** Sitemap files that answered 2xx with a urlset or a sitemap index. */
  sitemapsRead: number;
  /** URLs sitemaps listed that they may list (each time listed; new ones also count in urlsDiscovered). */
  sitemapUrls: number;
  /** Entries a sitemap may not list: another host, or outside the sitemap's directory (sitemaps.org). */
  sitemapUrlsRefused: number;
  /** Known URLs a sitemap's lastmod says changed since their last fetch (fetched again). */
  sitemapChanged: number;
  /** Sitemaps an index listed that were not read: nested too deep, read already, or the origin's 500 spent. */
  sitemapsSkipped: number;
}

export interface CrawlSummary extends CrawlCounters {
  byStatus: Record<string, number>;
  errorsByCode: Record<string, number>;
  elapsedMs: number;
  pagesPerSecond: number;
}

export class CrawlStats {
  readonly counters: CrawlCounters = {
    pagesFetched: 0,
    notModified: 0,
    skippedFresh: 0,
    robotsDenied: 0,
    errors: 0,
    redirects: 0,
    retriedLater: 0,
    requests: 0,
    robotsRequests: 0,
    urlsDiscovered: 0,
    bytesDownloaded: 0,
    bytesSaved: 0,
    pagesTruncated: 0,
    linksCut: 0,
    pagesLinksCut: 0,
    duplicateResults: 0,
    lateResults: 0,
    leasesExpired: 0,
    warcRecords: 0,
    warcBytes: 0,
    warcInvalid: 0,
    sitemapRequests: 0,
    sitemapsRead: 0,
    sitemapUrls: 0,
    sitemapUrlsRefused: 0,
    sitemapChanged: 0,
    sitemapsSkipped: 0,
  };
  readonly #byStatus = new Map<number, number>();
  readonly #errorsByCode = new Map<string, number>();
  /** The crawl's time is the time it had work: from `start` to its first idle moment, then every stretch from `resume` to the next (`finish`). */
  #startedAt: number | null = null;
  #activeSince: number | null = null;
  #activeMs = 0;

  /** A new crawl in the same process: every counter from zero, the clock not started. */
  reset(): void {
    for (const key of Object.keys(this.counters) as (keyof CrawlCounters)[]) this.counters[key] = 0;
    this.#byStatus.clear();
    this.#errorsByCode.clear();
    this.#startedAt = null;
    this.#activeSince = null;
    this.#activeMs = 0;
  }

  /** Work exists (seeds, injected URLs): the clock runs, from now if it never ran. */
  start(now: number): void {
    this.#startedAt ??= now;
    this.#activeSince ??= now;
  }

  /** The crawl is idle (a one-shot crawl is over): the clock stops. */
  finish(now: number): void {
    if (this.#activeSince === null) return;
    this.#activeMs += Math.max(0, now - this.#activeSince);
    this.#activeSince = null;
  }

  /** Work again after an idle stretch (new URLs, or known ones due again in continuous mode): the clock runs on. */
  resume(now: number): void {
    if (this.#startedAt !== null) this.#activeSince ??= now;
  }

  countStatus(status: number): void {
    this.#byStatus.set(status, (this.#byStatus.get(status) ?? 0) + 1);
  }

  countError(code: string): void {
    this.counters.errors++;
    this.#errorsByCode.set(code, (this.#errorsByCode.get(code) ?? 0) + 1);
  }

  summary(now: number): CrawlSummary {
    const elapsedMs = this.#activeMs + (this.#activeSince === null ? 0 : Math.max(0, now - this.#activeSince));
    const byStatus: Record<string, number> = {};
    for (const [status, count] of [...this.#byStatus].sort((a, b) => a[0] - b[0])) byStatus[String(status)] = count;
    const errorsByCode: Record<string, number> = {};
    for (const [code, count] of [...this.#errorsByCode].sort()) errorsByCode[code] = count;
    return {
      ...this.counters,
      byStatus,
      errorsByCode,
      elapsedMs,
      pagesPerSecond: elapsedMs > 0 ? Math.round((this.counters.pagesFetched / elapsedMs) * 1000 * 100) / 100 : 0,
    };
  }
}
