/**
 * How long the URLs queued now will take, for the progress line and the status: a lower bound that
 * ignores URLs not discovered yet. Politeness makes every origin a queue served by at most
 * `concurrency` slots, each fetching one URL after another with `delayMs` between the end of a
 * response and the next request, so an origin needs about queued / concurrency x (delay + response
 * time); origins are fetched side by side, so the crawl needs what its slowest origin needs. Pure.
 */

export interface OriginWork {
  readonly origin: string;
  /** URLs of the origin queued now. */
  readonly queued: number;
  /** The gap between two of its requests, ms (--delay-ms, or its robots.txt Crawl-delay if larger). */
  readonly delayMs: number;
  /** Slots it may have out at once (--host-concurrency; 1 under a Crawl-delay). */
  readonly concurrency: number;
  /** Its robots.txt Crawl-delay sets the gap (no option can shorten it). */
  readonly crawlDelay: boolean;
  /** Time before it may start at all (a politeness gap, Retry-After, a robots.txt retry), ms. */
  readonly waitMs: number;
}

export interface TimeLeft {
  /** Estimated time until the queued URLs are fetched, ms. */
  readonly ms: number;
  /** The origin that takes longest. */
  readonly origin: string;
  /** What makes it take that long: the politeness delay, the host's Crawl-delay, or its slow answers. */
  readonly limitedBy: 'delay' | 'crawl-delay' | 'responses';
}

/** `averageResponseMs`: the mean time a request takes (recent fetches). Null when nothing is queued. */
export function estimateTimeLeft(origins: Iterable<OriginWork>, averageResponseMs: number): TimeLeft | null {
  let slowest: TimeLeft | null = null;
  const response = Math.max(0, averageResponseMs);
  for (const work of origins) {
    if (work.queued <= 0) continue;
    const ms = Math.max(0, work.waitMs) + Math.ceil(work.queued / Math.max(1, work.concurrency)) * (work.delayMs + response);
    if (slowest !== null && ms <= slowest.ms) continue;
    const limitedBy = response > work.delayMs ? 'responses' : work.crawlDelay ? 'crawl-delay' : 'delay';
    slowest = { ms, origin: work.origin, limitedBy };
  }
  return slowest;
}
