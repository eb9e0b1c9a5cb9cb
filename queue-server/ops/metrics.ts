/**
 * GET /metrics: the queue server's figures in Prometheus's text exposition format (prom-client).
 *
 * - Counters: the summary's crawl counters (crawl-stats.ts), responses by HTTP status, errors by
 *   stable code, the B-Tree page caches' hits and misses. They are read from the crawl at scrape time,
 *   not counted twice: a new crawl started from the admin page sets them back to zero, which Prometheus
 *   reads as a counter reset (rate() and increase() handle it).
 * - Gauges: frontier size, URLs waiting, leases out and URLs leased, hosts active and waiting, fetchers
 *   alive, URLs in the crawl database by status, the page caches' hit ratio, readiness, storage trouble.
 * - Histograms: group commit duration, claim duration (a long poll included, by answer), results per post.
 * - Per fetcher, as each reported in its last claim or heartbeat (live fetchers only, so the label set
 *   stays bounded by the fleet): memory, downloads in flight, pages, errors, bytes.
 * - Node's default process metrics (CPU, memory, heap, event loop lag, GC), prom-client's set.
 *
 * Each queue server has a registry of its own (no global state: tests run several in one process).
 * Access is decided in app.ts (metrics.token or admin.token as bearer token; README says why).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CrawlService } from '../crawl/crawl-service.js';
import type { CrawlCounters } from '../crawl/crawl-stats.js';

/** Fetchers heard from within this many lease times count as alive (as the schedule cutter counts them). */
const ALIVE_LEASES = 2;

/** Summary counters exposed as Prometheus counters: name suffix and help. */
const COUNTERS: Record<Exclude<keyof CrawlCounters, 'errors'>, string> = {
  pagesFetched: '2xx answers to page requests whose body was downloaded',
  notModified: '304 answers (revalidated, unchanged)',
  skippedFresh: 'known URLs not requested because still fresh',
  robotsDenied: 'URLs not requested because robots.txt forbids them',
  redirects: 'redirect answers followed as new URLs',
  retriedLater: '429 and 503 answers whose Retry-After was honoured',
  requests: 'HTTP requests sent by fetchers, robots.txt included',
  robotsRequests: 'robots.txt requests',
  urlsDiscovered: 'unique in-scope URLs admitted to the frontier',
  bytesDownloaded: 'body bytes received on the wire',
  bytesSaved: 'body bytes not transferred thanks to 304s and fresh skips',
  pagesTruncated: 'fetched pages cut at the body limit or the HTML parser work bound',
  linksCut: 'links of fetched pages past --max-links-per-page (not followed)',
  pagesLinksCut: 'fetched pages with more links than --max-links-per-page',
  duplicateResults: 'results posted again for URLs already applied (refused, not applied twice)',
  lateResults: 'results for leases that had expired and been handed out again',
  leasesExpired: 'leases that ran out before their fetcher finished',
  warcRecords: 'WARC records written to the web archive',
  warcBytes: 'bytes written to the web archive (gzip members)',
  warcInvalid: 'captures the web archive refused (the result stood, unarchived)',
  sitemapRequests: 'sitemap file requests (discovery, not pages)',
  sitemapsRead: 'sitemap files read (a urlset or a sitemap index)',
  sitemapUrls: 'URLs sitemaps listed under their own host and directory',
  sitemapUrlsRefused: 'sitemap entries of another host or outside the sitemap directory (ignored)',
  sitemapChanged: 'known URLs a sitemap lastmod said changed since their last fetch',
  sitemapsSkipped: 'sitemaps an index listed that were not read (too deep, read already, per-host bound)',
};

export interface QueueServerMetrics {
  readonly registry: Registry;
  /** Prometheus text format 0.0.4. */
  readonly contentType: string;
  /** The exposition text of every metric now. */
  scrape(): Promise<string>;
  /** Stops listening to the service (the default metrics' timers stop with the process). */
  close(): void;
}

export function createMetrics(service: CrawlService, options: { clock: () => number; ready: () => boolean }): QueueServerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // Gauges named like counters, which promtool's linter refuses ("non-counter metrics should not have
  // _total suffix"); each is the sum over `type` of its label-split sibling (nodejs_active_handles{type}).
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  const registers = [registry];

  /** The status, read once per scrape (every collector below shares it). */
  let snapshot: ReturnType<CrawlService['status']> | null = null;
  const status = () => (snapshot ??= service.status());

  for (const [key, help] of Object.entries(COUNTERS) as [keyof typeof COUNTERS, string][]) {
    new Counter({
      name: `petrel_${snake(key)}_total`,
      help,
      registers,
      collect() {
        this.reset();
        this.inc(status()[key]);
      },
    });
  }
  new Counter({
    name: 'petrel_errors_total',
    help: 'page requests that ended in an error, by stable code (http-404, timeout, robots-unreachable, ...)',
    labelNames: ['code'],
    registers,
    collect() {
      this.reset();
      for (const [code, count] of Object.entries(status().errorsByCode)) this.inc({ code }, count);
    },
  });
  new Counter({
    name: 'petrel_responses_total',
    help: 'HTTP answers received by fetchers, by status code (robots.txt included)',
    labelNames: ['status'],
    registers,
    collect() {
      this.reset();
      for (const [code, count] of Object.entries(status().byStatus)) this.inc({ status: code }, count);
    },
  });

  const trees = () => {
    const now = status();
    return [
      ['crawldb', now.crawlDbTree],
      ['cache', now.cacheTree],
    ] as const;
  };
  new Counter({
    name: 'petrel_btree_cache_hits_total',
    help: 'B-Tree page cache hits (tree: crawldb.btree, cache.btree)',
    labelNames: ['tree'],
    registers,
    collect() {
      this.reset();
      for (const [tree, stats] of trees()) this.inc({ tree }, stats.cacheHits);
    },
  });
  new Counter({
    name: 'petrel_btree_cache_misses_total',
    help: 'B-Tree page cache misses (pages read from the file)',
    labelNames: ['tree'],
    registers,
    collect() {
      this.reset();
      for (const [tree, stats] of trees()) this.inc({ tree }, stats.cacheMisses);
    },
  });
  new Gauge({
    name: 'petrel_btree_cache_hit_ratio',
    help: 'B-Tree page cache hits / (hits + misses) since the queue server started (0 before any lookup)',
    labelNames: ['tree'],
    registers,
    collect() {
      for (const [tree, stats] of trees()) {
        const lookups = stats.cacheHits + stats.cacheMisses;
        this.set({ tree }, lookups === 0 ? 0 : stats.cacheHits / lookups);
      }
    },
  });

  const gauge = (name: string, help: string, read: (now: ReturnType<typeof status>) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(read(status()));
      },
    });
  gauge('petrel_frontier_urls', 'URLs queued in the frontier', (now) => now.frontierSize);
  gauge('petrel_waiting_urls', 'URLs waiting for a retry or their next fetch time', (now) => now.waitingUrls);
  gauge('petrel_leases_out', 'schedules handed to fetchers and not finished', (now) => now.leasesOut);
  gauge('petrel_leased_urls', 'URLs of the leases out not yet reported', (now) => now.itemsLeased);
  gauge('petrel_hosts_active', 'origins with a slot out on a lease now', (now) => now.hosts.active);
  gauge('petrel_hosts_waiting', 'origins with queued URLs and no slot out (politeness delay, robots.txt, no free fetcher)', (now) => now.hosts.waiting);
  gauge('petrel_fetchers_alive', `fetchers heard from within ${ALIVE_LEASES} lease times`, (now) => aliveFetchers(now, options.clock()).length);
  gauge('petrel_storage_error', '1 while group commits fail (the crawl is paused), else 0', (now) => (now.storageError === null ? 0 : 1));
  gauge('petrel_ready', '1 when the queue server serves (stores open, storage writable, not draining), else 0', () => (options.ready() && service.storageError === null ? 1 : 0));
  new Gauge({
    name: 'petrel_urls',
    help: 'URLs in the crawl database by Nutch status',
    labelNames: ['status'],
    registers,
    collect() {
      this.reset();
      for (const [name, count] of Object.entries(status().urlsByStatus)) this.set({ status: name }, count);
    },
  });
  new Gauge({
    name: 'petrel_crawl_state',
    help: 'the crawl state shown on the admin page: 1 for the current one',
    labelNames: ['state'],
    registers,
    collect() {
      this.reset();
      this.set({ state: status().displayState }, 1);
    },
  });

  const perFetcher = (name: string, help: string, read: (stats: FetcherView) => number, kind: 'gauge' | 'counter') => {
    const spec = {
      name,
      help,
      labelNames: ['fetcher', 'id'] as const,
      registers,
      collect(this: Gauge<'fetcher' | 'id'> | Counter<'fetcher' | 'id'>) {
        this.reset();
        for (const fetcher of aliveFetchers(status(), options.clock())) {
          const labels = { fetcher: fetcher.name, id: fetcher.id };
          if (this instanceof Gauge) this.set(labels, read(fetcher));
          else this.inc(labels, read(fetcher));
        }
      },
    };
    return kind === 'gauge' ? new Gauge(spec) : new Counter(spec);
  };
  perFetcher('petrel_fetcher_rss_bytes', 'resident memory of the fetcher process, as it reported', (f) => f.stats.rssBytes, 'gauge');
  perFetcher('petrel_fetcher_in_flight', 'downloads in flight at the fetcher, as it reported', (f) => f.stats.inFlight, 'gauge');
  perFetcher('petrel_fetcher_pages_fetched_total', 'pages the fetcher fetched since it started, as it reported', (f) => f.stats.pagesFetched, 'counter');
  perFetcher('petrel_fetcher_errors_total', 'failed fetches of the fetcher since it started, as it reported', (f) => f.stats.errors, 'counter');
  perFetcher('petrel_fetcher_bytes_downloaded_total', 'body bytes the fetcher downloaded since it started, as it reported', (f) => f.stats.bytesDownloaded, 'counter');
  perFetcher('petrel_fetcher_results_applied_total', "the fetcher's results applied by this queue server", (f) => f.resultsApplied, 'counter');
  perFetcher('petrel_fetcher_leased_urls', 'URLs leased to the fetcher and not yet reported', (f) => f.itemsLeased, 'gauge');
  perFetcher('petrel_fetcher_last_seen_seconds', 'seconds since the fetcher was last heard from', (f) => Math.max(0, options.clock() - f.lastSeen) / 1000, 'gauge');

  const commitSeconds = new Histogram({
    name: 'petrel_commit_duration_seconds',
    help: 'group commit duration (WARC, page records, robots.txt, cache and crawl database, fsynced), by outcome',
    labelNames: ['outcome'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers,
  });
  const claimSeconds = new Histogram({
    name: 'petrel_claim_duration_seconds',
    help: 'time from a claim to its answer (a long poll waits for work), by answer: schedule, wait, done',
    labelNames: ['answer'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30],
    registers,
  });
  const resultsPerPost = new Histogram({
    name: 'petrel_results_per_post',
    help: 'results carried by one results post',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 2000],
    registers,
  });
  const onCommit = ({ durationMs, ok }: { durationMs: number; ok: boolean }) => commitSeconds.observe({ outcome: ok ? 'ok' : 'failed' }, durationMs / 1000);
  const onClaim = ({ kind, durationMs }: { kind: string; durationMs: number }) => claimSeconds.observe({ answer: kind }, durationMs / 1000);
  const onResults = ({ results }: { results: number }) => resultsPerPost.observe(results);
  service.on('commit', onCommit);
  service.on('claim', onClaim);
  service.on('results', onResults);

  return {
    registry,
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    async scrape() {
      snapshot = null;
      try {
        return await registry.metrics();
      } finally {
        snapshot = null;
      }
    },
    close() {
      service.off('commit', onCommit);
      service.off('claim', onClaim);
      service.off('results', onResults);
    },
  };
}

type FetcherView = ReturnType<CrawlService['status']>['fetchers'][number];

function aliveFetchers(status: ReturnType<CrawlService['status']>, now: number): FetcherView[] {
  const leaseMs = status.config.leaseMs;
  return status.fetchers.filter((fetcher) => now - fetcher.lastSeen < leaseMs * ALIVE_LEASES);
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}
