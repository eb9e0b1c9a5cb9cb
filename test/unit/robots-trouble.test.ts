/**
 * Every failed robots.txt attempt is told once, in order, however seldom the status is looked at: the
 * status keeps a host's earlier attempts of the same run of failures (queue-server/crawl/recent-events.ts),
 * and the progress of `petrel crawl` (cli/progress.ts) and the ops log (queue-server/ops/crawl-events.ts)
 * tell the ones they did not see. Progress connects after the first fetcher has started, so with a short
 * --robots-retry-ms its first look may come after the second attempt.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventEmitter } from 'node:events';
import { robotsTroubleLines } from '../../cli/progress.js';
import { RecentEvents, type RobotsTrouble } from '../../queue-server/crawl/recent-events.js';
import { logCrawlEvents } from '../../queue-server/ops/crawl-events.js';
import type { CrawlService } from '../../queue-server/crawl/crawl-service.js';
import type { Logger } from '../../shared/logger.js';

const ORIGIN = 'http://127.0.0.1:1';

/** Attempt `n` of 3 failing at `at`, retried 300 ms later (none after the third). */
const attempt = (n: number, at: number, code = 'connection-refused') => ({ origin: ORIGIN, code, attempt: n, attempts: 3, retryAt: n < 3 ? at + 300 : null, at });

describe('the robots.txt trouble in the status', () => {
  it('keeps the earlier attempts of the same run of failures, oldest first', () => {
    const recent = new RecentEvents(10);
    recent.robotsUnreachable(attempt(1, 1000));
    expect(recent.robotsTrouble()[0]!.earlier).toEqual([]);
    recent.robotsUnreachable(attempt(2, 1300, 'timeout'));
    recent.robotsUnreachable(attempt(3, 1600));
    const [trouble] = recent.robotsTrouble();
    expect(trouble).toMatchObject({ attempt: 3, retryAt: null });
    expect(trouble!.earlier).toEqual([
      { attempt: 1, code: 'connection-refused', at: 1000, retryAt: 1300 },
      { attempt: 2, code: 'timeout', at: 1300, retryAt: 1600 },
    ]);
  });

  it('starts again after the host answered or was given up, and keeps at most ten earlier attempts', () => {
    const recent = new RecentEvents(10);
    recent.robotsUnreachable(attempt(1, 1000));
    recent.robotsReachable(ORIGIN);
    recent.robotsUnreachable(attempt(1, 5000));
    expect(recent.robotsTrouble()[0]!.earlier).toEqual([]);
    recent.robotsUnreachable(attempt(2, 5300));
    recent.robotsUnreachable(attempt(3, 5600));
    recent.robotsUnreachable(attempt(1, 90_000));
    expect(recent.robotsTrouble()[0]!.earlier).toEqual([]);
    for (let n = 2; n <= 15; n++) recent.robotsUnreachable({ ...attempt(1, 90_000 + n * 300), attempt: n, attempts: 20 });
    expect(recent.robotsTrouble()[0]!.earlier.map((earlier) => earlier.attempt)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
  });
});

describe('the progress of petrel crawl', () => {
  /** The status's robotsTrouble after `attempts` attempts. */
  const after = (attempts: number): RobotsTrouble[] => {
    const recent = new RecentEvents(10);
    for (let n = 1; n <= attempts; n++) recent.robotsUnreachable(attempt(n, 1000 + (n - 1) * 300));
    return recent.robotsTrouble();
  };

  it('tells every attempt once and in order when its first look comes after the last attempt', () => {
    const told = new Set<string>();
    expect(robotsTroubleLines(after(3), told, 1700)).toEqual([
      'robots.txt of http://127.0.0.1:1 unreachable (connection-refused), retry 2 of 3 in 300ms; its URLs wait for it',
      'robots.txt of http://127.0.0.1:1 unreachable (connection-refused), retry 3 of 3 in 300ms; its URLs wait for it',
      expect.stringMatching(/unreachable \(connection-refused\) 3 times in a row: its URLs are given up as robots-unreachable/),
    ]);
    expect(robotsTroubleLines(after(3), told, 1800)).toEqual([]);
  });

  it('tells each attempt as it comes when it looks after every one, with the time left', () => {
    const told = new Set<string>();
    expect(robotsTroubleLines(after(1), told, 1100)).toEqual(['robots.txt of http://127.0.0.1:1 unreachable (connection-refused), retry 2 of 3 in 200ms; its URLs wait for it']);
    expect(robotsTroubleLines(after(1), told, 1200)).toEqual([]);
    expect(robotsTroubleLines(after(2), told, 1350)).toEqual(['robots.txt of http://127.0.0.1:1 unreachable (connection-refused), retry 3 of 3 in 250ms; its URLs wait for it']);
    expect(robotsTroubleLines(after(3), told, 1650)).toHaveLength(1);
  });
});

describe('the ops log', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] }));
  afterEach(() => vi.useRealTimers());

  it('logs every attempt once, also those made between two looks', () => {
    let troubles: RobotsTrouble[] = [];
    const service = Object.assign(new EventEmitter(), {
      config: { leaseMs: 1000 },
      summary: () => ({ leasesExpired: 0 }),
      status: () => ({ leasesExpired: 0, fetchers: [], config: { leaseMs: 1000 }, robotsTrouble: troubles }),
    }) as unknown as CrawlService;
    const warnings: { attempt: number; givenUp: boolean }[] = [];
    const logger = { warn: (record: { event: string; attempt: number; givenUp: boolean }) => warnings.push({ attempt: record.attempt, givenUp: record.givenUp }), info: () => undefined, debug: () => undefined } as unknown as Logger;
    const stop = logCrawlEvents(service, logger, () => 0);
    const recent = new RecentEvents(10);
    recent.robotsUnreachable(attempt(1, 1000));
    troubles = recent.robotsTrouble();
    vi.advanceTimersByTime(1000);
    recent.robotsUnreachable(attempt(2, 1300));
    recent.robotsUnreachable(attempt(3, 1600));
    troubles = recent.robotsTrouble();
    vi.advanceTimersByTime(2000);
    stop();
    expect(warnings).toEqual([
      { attempt: 1, givenUp: false },
      { attempt: 2, givenUp: false },
      { attempt: 3, givenUp: true },
    ]);
  });
});
