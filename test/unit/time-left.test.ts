/**
 * The estimate of the time the queued URLs take (queue-server/crawl/time-left.ts) and how the progress
 * line says it (cli/progress.ts): the slowest origin decides, and the line names what would shorten it.
 */
import { describe, expect, it } from 'vitest';
import { formatProgress, formatRobotsTrouble, formatTimeLeft } from '../../cli/progress.js';
import { estimateTimeLeft, type OriginWork } from '../../queue-server/crawl/time-left.js';

const origin = (name: string, queued: number, extra: Partial<OriginWork> = {}): OriginWork => ({ origin: `http://${name}`, queued, delayMs: 1000, concurrency: 1, crawlDelay: false, waitMs: 0, ...extra });

describe('the time left', () => {
  it('is what the slowest origin needs: its queue over its slots, each URL a delay plus a response', () => {
    // 1,147 pages of one host at the default 1 s delay and 0 ms answers: about 19 minutes.
    expect(estimateTimeLeft([origin('docs.example', 1147)], 0)).toEqual({ ms: 1_147_000, origin: 'http://docs.example', limitedBy: 'delay' });
    const left = estimateTimeLeft([origin('a', 10), origin('b', 100, { concurrency: 4 }), origin('c', 30, { delayMs: 2000 })], 100)!;
    expect(left.origin).toBe('http://c');
    expect(left.ms).toBe(30 * 2100);
  });

  it('adds the wait before an origin may start, and says when slow answers or a Crawl-delay set the pace', () => {
    expect(estimateTimeLeft([origin('a', 2, { waitMs: 60_000 })], 0)!.ms).toBe(62_000);
    expect(estimateTimeLeft([origin('a', 5, { delayMs: 100 })], 800)!.limitedBy).toBe('responses');
    expect(estimateTimeLeft([origin('a', 5, { delayMs: 5000, crawlDelay: true })], 0)!.limitedBy).toBe('crawl-delay');
    expect(estimateTimeLeft([origin('a', 0)], 0)).toBeNull();
    expect(estimateTimeLeft([], 0)).toBeNull();
  });

  it('is on the progress line, with the option that shortens it once it is long', () => {
    const status = { elapsedMs: 12_000, pagesFetched: 93, pagesPerSecond: 1, notModified: 0, errors: 0, robotsDenied: 0, frontierSize: 954, itemsLeased: 1, fetchers: [], urlsDiscovered: 1047 };
    const line = formatProgress({ ...status, timeLeft: { ms: 1_147_000, origin: 'https://docs.example', limitedBy: 'delay' }, config: { delayMs: 1000, hostConcurrency: 1 } });
    expect(line).toMatch(/, ~19min left for the queued URLs \(1s between requests to docs\.example: --delay-ms or --host-concurrency shortens it\)$/);
    expect(formatTimeLeft({ ms: 20_000, origin: 'http://a', limitedBy: 'delay' }, { delayMs: 1000, hostConcurrency: 1 })).toBe(', ~20s left for the queued URLs');
    expect(formatTimeLeft({ ms: 600_000, origin: 'http://a:81', limitedBy: 'crawl-delay' }, undefined)).toContain('the robots.txt of a:81 asks for a Crawl-delay');
    expect(formatProgress({ ...status, timeLeft: null })).not.toContain('left');
    // While the queue server cannot store results, the crawl is paused: no time left is promised.
    const paused = formatProgress({ ...status, timeLeft: { ms: 10_000, origin: 'http://a', limitedBy: 'delay' }, storageError: { code: 'ENOSPC', attempts: 3 } });
    expect(paused).toMatch(/, paused: the queue server cannot store results \(ENOSPC, attempt 3\); it goes on by itself once it can$/);
    expect(paused).not.toContain('left');
    // URLs waiting for a retry are said, so a crawl that waits for them says why it has not ended.
    expect(formatProgress({ ...status, frontierSize: 0, itemsLeased: 0, waitingUrls: 31 })).toContain(', queued 0, leased 0, waiting 31 (retries, Retry-After, hosts backed off), fetchers 0');
    expect(formatProgress({ ...status, waitingUrls: 0 })).not.toContain('waiting');
  });

  it('says what waiting on an unreachable robots.txt means', () => {
    const waiting = { origin: 'http://127.0.0.1:1', code: 'connection-refused', attempt: 1, attempts: 3, retryAt: 61_000, at: 1000 };
    expect(formatRobotsTrouble(waiting, 1000)).toBe('robots.txt of http://127.0.0.1:1 unreachable (connection-refused), retry 2 of 3 in 1min; its URLs wait for it');
    expect(formatRobotsTrouble({ ...waiting, attempt: 3, retryAt: null }, 1000)).toMatch(/unreachable \(connection-refused\) 3 times in a row: its URLs are given up as robots-unreachable/);
  });
});
