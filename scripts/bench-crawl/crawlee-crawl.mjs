/**
 * The Crawlee peer: a CheerioCrawler with ordinary settings, crawling the test web from its seeds and
 * following only links on the test web's origins. Run by run.mjs under /usr/bin/time, one process.
 *
 *   node crawlee-crawl.mjs <result.json> <maxConcurrency> <maxRequests, 0: no limit> <origin>... -- <seed>...
 *
 * maxConcurrency is what run.mjs computes as Petrel's total requests in flight, so both crawlers may have
 * the same number of requests out at once. Crawlee's autoscaled pool starts lower and ramps up to it
 * (its default minConcurrency, 1), and scales down when it finds the CPU busy: that is Crawlee's own
 * behaviour, kept; peakConcurrency in the result says how far it got.
 *
 * Storage is Crawlee's in-memory MemoryStorage with persistence off (CRAWLEE_PERSIST_STORAGE=false and
 * CRAWLEE_STORAGE_DIR pointing at a temporary directory, both set by run.mjs, so nothing lands in the
 * work tree even if a code path still writes). Writes its own counts to <result.json>.
 */
import { writeFileSync } from 'node:fs';
import { CheerioCrawler, Configuration, log, LogLevel } from '@crawlee/cheerio';

const [resultFile, concurrencyText, maxRequestsText, ...rest] = process.argv.slice(2);
const split = rest.indexOf('--');
const origins = rest.slice(0, split);
const seeds = rest.slice(split + 1);
const maxConcurrency = Number(concurrencyText);
const maxRequests = Number(maxRequestsText);

// Crawlee logs every retry and a periodic statistics line at INFO; warnings and errors still show.
log.setLevel(LogLevel.WARNING);

const inTestWeb = (url) => origins.some((origin) => url.startsWith(`${origin}/`));
let handled = 0;
/** Handled requests answered 2xx: Crawlee also hands 404s to the request handler (rust-doc has 28). */
let pages2xx = 0;
let failed = 0;
/** Highest number of requests in flight seen by a handler: Crawlee's autoscaling starts low and ramps. */
let peakConcurrency = 0;
const started = performance.now();

const crawler = new CheerioCrawler(
  {
    maxConcurrency,
    respectRobotsTxtFile: true,
    // No per-minute limit, no delay: crawl everything reachable as fast as Crawlee will; a page limit
    // only when run.mjs was given --max.
    ...(maxRequests > 0 ? { maxRequestsPerCrawl: maxRequests } : {}),
    async requestHandler({ enqueueLinks, response }) {
      handled++;
      if (response.statusCode >= 200 && response.statusCode < 300) pages2xx++;
      peakConcurrency = Math.max(peakConcurrency, crawler.autoscaledPool?.currentConcurrency ?? 0);
      await enqueueLinks({
        // 'all' so links to the other test-web hosts are followed; the filter keeps it on the test web.
        strategy: 'all',
        transformRequestFunction: (request) => (inTestWeb(request.url) ? request : false),
      });
    },
    failedRequestHandler() {
      failed++;
    },
  },
  new Configuration({ persistStorage: false, purgeOnStart: true }),
);

const stats = await crawler.run(seeds);
const elapsedMs = performance.now() - started;
writeFileSync(
  resultFile,
  `${JSON.stringify({
    pagesFetched: pages2xx,
    handled,
    failed,
    requestsFinished: stats.requestsFinished,
    requestsFailed: stats.requestsFailed,
    requestsRetries: stats.retryHistogram?.reduce?.((sum, count, retries) => sum + (count ?? 0) * retries, 0) ?? null,
    elapsedMs,
    maxConcurrency,
    peakConcurrency,
  })}\n`,
);
