/**
 * The crawl's time (`elapsedMs`, and `pagesPerSecond` over it) is the time it had work: the clock stops
 * when the crawl goes idle and runs on when work comes back (continuous mode: known URLs due again).
 */
import { describe, expect, it } from 'vitest';
import { CrawlStats } from '../../queue-server/crawl/crawl-stats.js';

describe('CrawlStats time', () => {
  it('counts only the stretches with work, and pages per second over them', () => {
    const stats = new CrawlStats();
    expect(stats.summary(500).elapsedMs).toBe(0);
    stats.start(1_000);
    stats.counters.pagesFetched = 30;
    expect(stats.summary(2_000).elapsedMs).toBe(1_000);
    stats.finish(4_000);
    expect(stats.summary(90_000).elapsedMs).toBe(3_000);
    // Idle again, or finished twice: nothing more is counted.
    stats.finish(95_000);
    stats.resume(100_000);
    stats.resume(100_500);
    expect(stats.summary(103_000)).toMatchObject({ elapsedMs: 6_000, pagesPerSecond: 5 });
    stats.finish(104_000);
    expect(stats.summary(200_000).elapsedMs).toBe(7_000);
  });

  it('does not start the clock on a resume before any start, and starts over on reset', () => {
    const stats = new CrawlStats();
    stats.resume(1_000);
    expect(stats.summary(5_000).elapsedMs).toBe(0);
    stats.start(5_000);
    stats.reset();
    expect(stats.summary(9_000).elapsedMs).toBe(0);
  });
});
