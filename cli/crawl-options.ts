/**
 * The crawl-setting options that `petrel queue-server` and `petrel crawl` share, with their
 * defaults (from crawl-config.ts) written into --help.
 */
import { Option, type Command } from 'commander';
import { crawlConfigSchema, type CrawlConfigInput } from '../queue-server/crawl-config.js';
import { SCOPES } from '../queue-server/admission/scope.js';
import { collect, integerOption } from './options.js';

const defaults = crawlConfigSchema.parse({});

export function addCrawlOptions(command: Command): Command {
  return command
    .option('--seed <url>', 'a URL to start from (repeat for several)', collect, [])
    .addOption(
      new Option('--scope <scope>', 'which discovered URLs are followed: prefix (under the seed\'s directory, like wget -np), host (same host name), domain (same registrable domain), any')
        .choices(SCOPES)
        .default(defaults.scope),
    )
    .option('--max-depth <n>', 'follow links at most this many hops from a seed (default: no limit)', integerOption('--max-depth', 0))
    .option('--max-pages <n>', 'request at most this many pages, robots.txt not counted (default: no limit)', integerOption('--max-pages', 1))
    .option('--delay-ms <ms>', 'gap between two requests to one host, end of response to next request; robots.txt Crawl-delay wins if larger', integerOption('--delay-ms', 0), defaults.delayMs)
    .option('--host-concurrency <n>', 'requests one host sees at once, across all fetchers', integerOption('--host-concurrency', 1, 256), defaults.hostConcurrency)
    .option('--lease-ms <ms>', 'a schedule returns to the frontier this long after its fetcher\'s last sign of life', integerOption('--lease-ms', 1000), defaults.leaseMs)
    .option('--robots-retry-ms <ms>', 'how long a host whose robots.txt could not be fetched (5xx, 429, network error) waits before robots.txt is asked again; its URLs wait too', integerOption('--robots-retry-ms', 0), defaults.robotsUnreachableRetryMs)
    .option('--robots-attempts <n>', 'robots.txt fetches that may find a host unreachable in a row before its URLs are given up as robots-unreachable', integerOption('--robots-attempts', 1, 100), defaults.robotsAttempts)
    .option('--slot-urls <n>', 'URLs of one host handed to a fetcher in one go', integerOption('--slot-urls', 1, 1000), defaults.slotUrls)
    .option('--max-pages-per-host <n>', 'URLs of one host admitted at most, so a spider trap costs a bounded number of requests; more are counted as trap-budget', integerOption('--max-pages-per-host', 1), defaults.maxPagesPerHost)
    .option('--max-queued-urls <n>', 'URLs waiting in the frontier at most (memory bound); more are counted as frontierOverflow', integerOption('--max-queued-urls', 1), defaults.maxQueuedUrls)
    .addOption(new Option('--order <order>', 'crawl order: bfs (breadth-first by depth) or opic (page importance: each page shares its score among its outlinks)').choices(['bfs', 'opic']).default(defaults.order))
    .option('--max-retries <n>', 'retries of a URL that failed (5xx, timeout, connection error) before it is gone', integerOption('--max-retries', 0, 20), defaults.maxRetries)
    .option('--retry-base-ms <ms>', 'wait before the first retry; each further retry waits twice as long', integerOption('--retry-base-ms', 0), defaults.retryBaseMs)
    .option('--min-interval-ms <ms>', 'continuous mode: shortest refetch interval of a page that keeps changing', integerOption('--min-interval-ms', 1), defaults.minIntervalMs)
    .option('--initial-interval-ms <ms>', 'continuous mode: refetch interval of a newly fetched page (then +40 % when unchanged, -20 % when changed)', integerOption('--initial-interval-ms', 1), defaults.initialIntervalMs)
    .option('--max-interval-ms <ms>', 'continuous mode: longest refetch interval; gone and robots-denied URLs are rechecked this rarely', integerOption('--max-interval-ms', 1), defaults.maxIntervalMs)
    .option('--expected-urls <n>', 'URLs the seen-set\'s Bloom filter is first sized for (it grows beyond)', integerOption('--expected-urls', 1000), defaults.bloomCapacity);
}

export interface CrawlOptionValues {
  seed: string[];
  scope: (typeof SCOPES)[number];
  maxDepth?: number;
  maxPages?: number;
  delayMs: number;
  hostConcurrency: number;
  leaseMs: number;
  robotsRetryMs: number;
  robotsAttempts: number;
  slotUrls: number;
  maxQueuedUrls: number;
  maxPagesPerHost: number;
  expectedUrls: number;
  order: 'bfs' | 'opic';
  maxRetries: number;
  retryBaseMs: number;
  minIntervalMs: number;
  initialIntervalMs: number;
  maxIntervalMs: number;
}

export function crawlConfigFrom(values: CrawlOptionValues, once: boolean): CrawlConfigInput {
  return {
    seeds: values.seed,
    scope: values.scope,
    maxDepth: values.maxDepth,
    maxPages: values.maxPages ?? null,
    delayMs: values.delayMs,
    hostConcurrency: values.hostConcurrency,
    leaseMs: values.leaseMs,
    robotsUnreachableRetryMs: values.robotsRetryMs,
    robotsAttempts: values.robotsAttempts,
    slotUrls: values.slotUrls,
    maxQueuedUrls: values.maxQueuedUrls,
    maxPagesPerHost: values.maxPagesPerHost,
    bloomCapacity: values.expectedUrls,
    order: values.order,
    maxRetries: values.maxRetries,
    retryBaseMs: values.retryBaseMs,
    minIntervalMs: values.minIntervalMs,
    initialIntervalMs: values.initialIntervalMs,
    maxIntervalMs: values.maxIntervalMs,
    once,
  };
}

/** The same options as command-line arguments, for a child `petrel queue-server`. */
export function crawlArgsFrom(values: CrawlOptionValues): string[] {
  const args = ['--scope', values.scope, '--delay-ms', String(values.delayMs), '--host-concurrency', String(values.hostConcurrency)];
  for (const seed of values.seed) args.push('--seed', seed);
  if (values.maxDepth !== undefined) args.push('--max-depth', String(values.maxDepth));
  if (values.maxPages !== undefined) args.push('--max-pages', String(values.maxPages));
  args.push('--lease-ms', String(values.leaseMs), '--robots-retry-ms', String(values.robotsRetryMs), '--robots-attempts', String(values.robotsAttempts));
  args.push('--slot-urls', String(values.slotUrls), '--max-queued-urls', String(values.maxQueuedUrls), '--max-pages-per-host', String(values.maxPagesPerHost), '--expected-urls', String(values.expectedUrls));
  args.push('--order', values.order, '--max-retries', String(values.maxRetries), '--retry-base-ms', String(values.retryBaseMs));
  args.push('--min-interval-ms', String(values.minIntervalMs), '--initial-interval-ms', String(values.initialIntervalMs), '--max-interval-ms', String(values.maxIntervalMs));
  return args;
}
