/**
 * The settings of one crawl, validated once at the boundary (CLI or API) and then trusted.
 * Every default is stated here and shown by --help.
 */
import { z } from 'zod';
import { SCOPES } from './admission/scope.js';

export const crawlConfigSchema = z.object({
  seeds: z.array(z.string().min(1)).default([]),
  scope: z.enum(SCOPES).default('host'),
  /** Seeds are depth 0; links and redirect targets one more than the page they were found on. */
  maxDepth: z.number().int().nonnegative().default(Number.MAX_SAFE_INTEGER),
  /** Page URLs handed out at most (robots.txt not counted); null: no limit. */
  maxPages: z.number().int().positive().nullable().default(null),
  /** Gap between two requests to one origin, ms (end of response to next request). */
  delayMs: z.number().int().nonnegative().default(1000),
  /** Requests one origin sees at once, across all fetchers. */
  hostConcurrency: z.number().int().min(1).max(256).default(1),
  /** How long a schedule stays leased after the fetcher's last sign of life, ms. */
  leaseMs: z.number().int().min(1000).default(60_000),
  /** Product token looked up in robots.txt User-agent lines. */
  robotsToken: z.string().regex(/^[A-Za-z_-]+$/).default('petrel'),
  /** How long an origin whose robots.txt was unreachable stays closed before asking again, ms. */
  robotsUnreachableRetryMs: z.number().int().nonnegative().default(60_000),
  /** robots.txt fetches that may find an origin unreachable in a row before its URLs are denied. */
  robotsAttempts: z.number().int().min(1).max(100).default(3),
  /** URLs per slot at most (fetched serially by one fetcher). */
  slotUrls: z.number().int().min(1).max(1000).default(32),
  /** Seen-set Bloom filter: first-stage capacity and overall false-positive bound. */
  bloomCapacity: z.number().int().min(1000).default(1_000_000),
  bloomFalsePositiveRate: z.number().gt(0).lt(0.5).default(0.001),
  /** URLs of one host admitted at most (a spider trap costs no more); more are counted as `trap-budget`. */
  maxPagesPerHost: z.number().int().positive().default(100_000),
  /** URLs waiting in the frontier at most; further discoveries are counted in frontierOverflow. */
  maxQueuedUrls: z.number().int().min(1).default(2_000_000),
  /** Retries of a failed URL (5xx, timeout, connection error) before it is gone; the n-th waits retryBaseMs * 2^(n-1). */
  maxRetries: z.number().int().min(0).max(20).default(3),
  retryBaseMs: z.number().int().nonnegative().default(30_000),
  /** Adaptive refetch interval (continuous mode): first interval and bounds, ms. Nutch: 30 d, 1 min, 90 d. */
  initialIntervalMs: z.number().int().positive().default(30 * 24 * 3600 * 1000),
  minIntervalMs: z.number().int().positive().default(60 * 1000),
  maxIntervalMs: z.number().int().positive().default(90 * 24 * 3600 * 1000),
  /** Crawl order: breadth-first, or page importance (OPIC cash shared from a page to its outlinks). */
  order: z.enum(['bfs', 'opic']).default('bfs'),
  /** Exit when nothing is due or leased (one-shot `petrel crawl`); otherwise keep serving. */
  once: z.boolean().default(false),
});

export type CrawlConfig = z.infer<typeof crawlConfigSchema>;
export type CrawlConfigInput = z.input<typeof crawlConfigSchema>;
