/**
 * One crawl of the hostile host with real processes, with no depth limit: Petrel meets every hostile
 * case in one crawl and keeps crawling; nothing disallowed is requested, every failure is recorded with
 * its stable code, each infinite space costs at most TRAP_REQUEST_BUDGET requests while every page
 * outside them is fetched, and the crawl finishes. (The per-case fetcher outcomes are tested in hostile-fetch.test.ts; peak memory
 * is measured by scripts/bench-hostile.ts.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISALLOWED_PREFIX } from '../../scripts/test-web/hostile/cases.js';
import { HOSTILE_TRAPS, TRAP_REQUEST_BUDGET, trapOf } from '../../scripts/test-web/hostile/traps.js';
import { canonicalUrl } from '../../scripts/test-web/canonical.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

interface Summary {
  requests: number;
  pagesFetched: number;
  errorsByCode: Record<string, number>;
  retriedLater: number;
  elapsedMs: number;
  trapShapes: { shape: string; reason: string; pages: number; nearDuplicates: number; onwardPages: number; newOfShape: number; refused: number }[];
}

describe('a crawl of the hostile host', () => {
  let web: TestWeb;
  let summary: Summary;
  let code: number | null;
  let stderr: string;
  let dataDir: string;
  let signal: NodeJS.Signals | null;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 5 });
    const dir = tempDir('hostile-crawl');
    dataDir = join(dir, 'data');
    const summaryFile = join(dir, 'summary.json');
    // 170 s only stops a hung crawl (runPetrel kills it); how long the crawl takes is measured by
    // scripts/bench-hostile.ts, not asserted here.
    const run = await runPetrel([
      'crawl', '--seed', `${web.hostile.origin}/index.html`, '--data', dataDir, '--scope', 'host', '--delay-ms', '0',
      '--host-concurrency', '4', '--max-retries', '1', '--retry-base-ms', '100', '--timeout-ms', '3000', '--summary-json', summaryFile, '--no-progress',
    ], 170_000);
    code = run.code;
    signal = run.signal;
    stderr = run.stderr;
    summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as Summary;
  }, 180_000);

  afterAll(async () => {
    await web?.close();
  });

  it('finishes by itself, with exit status 0', () => {
    expect({ code, signal }, stderr.slice(-2000)).toEqual({ code: 0, signal: null });
  });

  it('never requests the path the 600 KiB robots.txt disallows in its first rule', () => {
    const hostileHost = new URL(web.hostile.origin).host;
    const disallowed = web.log.filter((entry) => entry.host === hostileHost && entry.path.startsWith(DISALLOWED_PREFIX));
    expect(disallowed).toEqual([]);
  });

  it('records every failure under a stable code', () => {
    for (const expected of ['timeout', 'headers-too-large', 'bad-content-encoding', 'connection-reset', 'content-length-mismatch', 'bad-http-response', 'http-404', 'http-410', 'trap-repeated-segment']) {
      expect(summary.errorsByCode, expected).toHaveProperty(expected);
    }
    expect(summary.retriedLater).toBeGreaterThan(0);
    for (const code of Object.keys(summary.errorsByCode)) expect(code).toMatch(/^[a-z0-9-]{1,48}$/);
  });

  const hostileRequests = () => {
    const hostileHost = new URL(web.hostile.origin).host;
    return web.log.filter((entry) => entry.host === hostileHost).map((entry) => (canonicalUrl(`${web.hostile.origin}${entry.path}`) ?? entry.path).slice(web.hostile.origin.length));
  };

  it('spends at most TRAP_REQUEST_BUDGET requests on each infinite space, refusing the rest as trap-shape', () => {
    const byTrap = new Map<string, number>();
    for (const path of hostileRequests()) {
      const trap = trapOf(path);
      if (trap !== null) byTrap.set(trap, (byTrap.get(trap) ?? 0) + 1);
    }
    for (const trap of HOSTILE_TRAPS) {
      expect(byTrap.get(trap.name) ?? 0, trap.name).toBeGreaterThan(0);
      expect(byTrap.get(trap.name) ?? 0, trap.name).toBeLessThanOrEqual(TRAP_REQUEST_BUDGET);
    }
    expect(summary.errorsByCode['trap-shape']).toBeGreaterThan(0);
    expect(summary.trapShapes.length).toBeGreaterThan(0);
    const monthCalendar = hostileRequests().filter((path) => path.startsWith('/trap/calendar/')).length;
    console.log(`hostile-crawl: requests per trap ${JSON.stringify(Object.fromEntries(byTrap))}, month calendar ${monthCalendar}; trap shapes ${JSON.stringify(summary.trapShapes.map((t) => [t.shape.slice(t.shape.indexOf('/')), t.reason, t.pages, t.reason === 'fan-out' ? t.onwardPages : t.nearDuplicates, t.refused]))}; ${summary.requests} requests in ${summary.elapsedMs} ms`);
  });

  it('stops the tarpit, whose stories all differ, by the fan-out rule: its links only lead on to new stories', () => {
    const stories = summary.trapShapes.filter((t) => t.shape.endsWith('/stories/{n}.html'));
    expect(stories.map((t) => t.reason)).toEqual(['fan-out']);
    // Its pages are no near-duplicates of each other: only the fan-out rule could have stopped it.
    expect(stories[0]!.nearDuplicates).toBeLessThan(stories[0]!.pages / 2);
    expect(stories[0]!.onwardPages).toBeGreaterThanOrEqual(0.9 * stories[0]!.pages);
    expect(stories[0]!.refused).toBeGreaterThan(0);
  });

  it('still requests every page of the hostile host outside the traps (no false positive)', () => {
    const requested = new Set(hostileRequests());
    const missing = web.hostile.cases.filter((c) => c.linked && trapOf(c.path) === null && !c.path.startsWith(DISALLOWED_PREFIX) && !requested.has(c.path)).map((c) => c.path);
    expect(missing).toEqual([]);
  });

  it('leaves a consistent crawl database', async () => {
    const check = await runPetrel(['db', 'check', '--data', dataDir, '--json']);
    expect(check.code, check.stdout.slice(0, 2000)).toBe(0);
    const report = JSON.parse(check.stdout) as { byStatus: Record<string, number> };
    expect(report.byStatus.unfetched).toBe(0);
    expect(report.byStatus.retry).toBe(0);
  });
});
