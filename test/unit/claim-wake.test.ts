/**
 * Waking parked claims (seed 001: a scheduler woken by a condition variable, never a sleep loop).
 * Timers are fake here, so "answered without any timer running" is exact: a claim answered while no
 * timer was allowed to fire was woken by the event that made work, not found by a poll; and a timeout
 * ends a wait exactly at its deadline, not a millisecond before.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Condition } from '../../queue-server/crawl/condition.js';
import { CrawlService } from '../../queue-server/crawl/crawl-service.js';
import { PROTOCOL_VERSION, type ClaimRequest, type ClaimResponse, type ItemResult } from '../../shared/protocol.js';
import { tempCrawlService } from '../support/temp-crawl-service.js';

/** Loopback origins that nothing here ever connects to: no fetcher runs in these tests. */
const ORIGIN_A = 'http://127.0.0.2:8080';
const ORIGIN_B = 'http://127.0.0.3:8080';
const ORIGIN_SEED = 'http://127.0.0.4:8080';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

beforeEach(() => {
  // setImmediate stays real: one turn of it lets every promise already resolved run, and no more.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

/** Lets pending promise callbacks run (one event loop turn); no fake timer fires. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** The promise's value once settled, else 'pending'. */
function track<T>(promise: Promise<T>): { readonly value: T | 'pending' } {
  const state: { value: T | 'pending' } = { value: 'pending' };
  void promise.then((value) => (state.value = value));
  return state;
}

describe('Condition', () => {
  it('wakes every waiter at notifyAll, and clears their timeouts', async () => {
    const condition = new Condition();
    const first = track(condition.wait(60_000));
    const second = track(condition.wait(60_000));
    expect(condition.waiting).toBe(2);
    condition.notifyAll();
    await settle();
    expect([first.value, second.value]).toEqual([true, true]);
    expect(condition.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('ends a wait with false when its timeout passes, not a millisecond before', async () => {
    const condition = new Condition();
    const waited = track(condition.wait(1_000));
    await vi.advanceTimersByTimeAsync(999);
    expect(waited.value).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(waited.value).toBe(false);
    expect(condition.waiting).toBe(0);
  });

  it('ends a wait with false when its signal aborts, and does not wait at all on an aborted one', async () => {
    const condition = new Condition();
    const controller = new AbortController();
    const waited = track(condition.wait(60_000, controller.signal));
    controller.abort();
    await settle();
    expect(waited.value).toBe(false);
    expect(await condition.wait(60_000, controller.signal)).toBe(false);
    expect(condition.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not remember a notify nobody waited for: a later waiter waits (it checks for work first)', async () => {
    const condition = new Condition();
    condition.notifyAll();
    const waited = track(condition.wait(1_000));
    await settle();
    expect(waited.value).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(waited.value).toBe(false);
  });
});

describe('CrawlService, parked claims', () => {
  const cleanups: (() => void)[] = [];
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  });

  /**
   * A crawl with nothing to do now, on temporary files; the service reads the (fake) clock. Inject
   * adds to a crawl only (one with a seed): the seed's robots.txt is leased to a fetcher that never
   * answers, for longer than any test runs, so its origin waits and no other work exists.
   */
  async function idleService(): Promise<CrawlService> {
    const crawl = tempCrawlService('claim-wake', { seeds: [`${ORIGIN_SEED}/index.html`], scope: 'any', delayMs: 0, leaseMs: 600_000, bloomCapacity: 1000, sitemaps: false }, () => Date.now());
    const { service } = crawl;
    cleanups.push(() => crawl.close());
    robotsSlotOf(await service.claim(claimOf('seed-holder', 0), '127.0.0.1'), ORIGIN_SEED);
    return service;
  }

  function claimOf(fetcherId: string, waitMs = 30_000): ClaimRequest {
    return { protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: 1, waitMs, stats: STATS };
  }

  function robotsSlotOf(response: ClaimResponse | 'pending', origin: string): void {
    expect(response).toMatchObject({ kind: 'schedule', schedule: { slots: [{ origin, items: [{ i: 0, kind: 'robots', url: `${origin}/robots.txt` }] }] } });
  }

  it('answers a parked claim with a schedule when URLs are injected, with no timer run: woken, not polled', async () => {
    const service = await idleService();
    const claim = track(service.claim(claimOf('f1'), '127.0.0.1'));
    await settle();
    expect(claim.value).toBe('pending');
    expect(service.waitingClaims).toBe(1);

    service.inject([`${ORIGIN_A}/index.html`]);
    await settle();
    robotsSlotOf(claim.value, ORIGIN_A);
    expect(service.waitingClaims).toBe(0);
  });

  it('a woken claim that finds the work taken waits again, and is answered wait at its own deadline', async () => {
    const service = await idleService();
    const claims = [track(service.claim(claimOf('f1'), '127.0.0.1')), track(service.claim(claimOf('f2'), '127.0.0.1'))];
    await settle();
    expect(service.waitingClaims).toBe(2);

    service.inject([`${ORIGIN_A}/index.html`]);
    await settle();
    const answered = claims.filter((claim) => claim.value !== 'pending');
    expect(answered).toHaveLength(1);
    robotsSlotOf(answered[0]!.value, ORIGIN_A);
    const other = claims.find((claim) => claim.value === 'pending')!;
    expect(service.waitingClaims).toBe(1);

    // Its deadline counts from its own start, not from the wake.
    await vi.advanceTimersByTimeAsync(30_000 - 1);
    expect(other.value).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(other.value).toEqual({ kind: 'wait' });
  });

  it('wakes a parked claim when results make an origin\'s pages claimable (robots.txt known)', async () => {
    const service = await idleService();
    service.inject([`${ORIGIN_A}/index.html`]);
    const first = await service.claim(claimOf('f1', 0), '127.0.0.1');
    robotsSlotOf(first, ORIGIN_A);
    const parked = track(service.claim(claimOf('f2'), '127.0.0.1'));
    await settle();
    expect(parked.value).toBe('pending');

    if (first.kind !== 'schedule') throw new Error('unreachable');
    // robots.txt 404: everything allowed. The results are applied at once; their commit waits for a timer.
    void service.results({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'f1', scheduleId: first.schedule.id, results: [robotsResult(`${ORIGIN_A}/robots.txt`)] });
    await settle();
    expect(parked.value).toMatchObject({ kind: 'schedule', schedule: { slots: [{ origin: ORIGIN_A, items: [{ kind: 'page', url: `${ORIGIN_A}/index.html` }] }] } });
  });

  it('cuts nothing for a parked claim whose fetcher went away in the same turn as the work came: the next claim gets it', async () => {
    const service = await idleService();
    const gone = new AbortController();
    const claim = track(service.claim(claimOf('f1'), '127.0.0.1', gone.signal));
    await settle();
    // Work and the closed connection in one turn: the claim is woken by both.
    service.inject([`${ORIGIN_A}/index.html`]);
    gone.abort();
    await settle();
    expect(claim.value).toEqual({ kind: 'wait' });
    robotsSlotOf(await service.claim(claimOf('f2', 0), '127.0.0.1'), ORIGIN_A);
  });

  it('takes back at once a schedule its claim could not deliver, not when its lease runs out; another fetcher\'s is not its to return', async () => {
    const service = await idleService();
    service.inject([`${ORIGIN_A}/index.html`]);
    const undelivered = await service.claim(claimOf('f1', 0), '127.0.0.1');
    robotsSlotOf(undelivered, ORIGIN_A);
    if (undelivered.kind !== 'schedule') throw new Error('unreachable');
    expect(await service.claim(claimOf('f2', 0), '127.0.0.1')).toEqual({ kind: 'wait' });
    const parked = track(service.claim(claimOf('f2'), '127.0.0.1'));
    await settle();
    service.returnSchedule(undelivered.schedule.id, 'f2');
    await settle();
    expect(parked.value).toBe('pending');
    service.returnSchedule(undelivered.schedule.id, 'f1');
    await settle();
    // Woken by the return, with no timer run; the same robots.txt, now f2's.
    robotsSlotOf(parked.value, ORIGIN_A);
    expect(service.status().leasesExpired).toBe(0);
  });

  it('hands a gone fetcher\'s schedules to the next claim at once, and lists it no more', async () => {
    const service = await idleService();
    service.inject([`${ORIGIN_A}/index.html`]);
    robotsSlotOf(await service.claim(claimOf('f1', 0), '127.0.0.1'), ORIGIN_A);
    expect(await service.claim(claimOf('f2', 0), '127.0.0.1')).toEqual({ kind: 'wait' });
    expect(service.fetcherGone('nobody')).toBe(0);
    expect(service.fetcherGone('f1')).toBe(1);
    robotsSlotOf(await service.claim(claimOf('f2', 0), '127.0.0.1'), ORIGIN_A);
    expect(service.status().fetchers.map((info) => info.name)).not.toContain('f1');
    expect(service.status().leasesExpired).toBe(0);
  });

  it('holds parked claims while paused and wakes them on resume', async () => {
    const service = await idleService();
    service.pause();
    service.inject([`${ORIGIN_B}/index.html`]);
    const claim = track(service.claim(claimOf('f1'), '127.0.0.1'));
    await settle();
    expect(claim.value).toBe('pending');
    service.resume();
    await settle();
    robotsSlotOf(claim.value, ORIGIN_B);
  });

  it('tells a parked claim `done` at once when a one-shot crawl ends, also when that claim\'s own look ended it', async () => {
    // A dead seed host: its robots.txt fails once (--robots-attempts 1), and its URL is given up as
    // robots-unreachable when the frontier is next looked at: by a claim.
    const crawl = tempCrawlService('claim-done', { seeds: [`${ORIGIN_SEED}/index.html`], scope: 'any', delayMs: 0, leaseMs: 600_000, bloomCapacity: 1000, sitemaps: false, once: true, robotsAttempts: 1 }, () => Date.now());
    cleanups.push(() => crawl.close());
    const { service } = crawl;
    const first = await service.claim(claimOf('f1', 0), '127.0.0.1');
    robotsSlotOf(first, ORIGIN_SEED);
    if (first.kind !== 'schedule') throw new Error('unreachable');
    const parked = track(service.claim(claimOf('f2'), '127.0.0.1'));
    await settle();
    expect(parked.value).toBe('pending');
    void service.results({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'f1', scheduleId: first.schedule.id, results: [{ ...robotsResult(`${ORIGIN_SEED}/robots.txt`), status: null, error: { code: 'connection-refused', message: 'refused' } }] });
    await settle();
    await settle();
    expect(parked.value).toEqual({ kind: 'done' });
  });

  it('waits, at the end of a one-shot crawl, to tell `done` to a fetcher it heard from only by its results (held across a restart)', async () => {
    const crawl = tempCrawlService('told-done', { seeds: [`${ORIGIN_SEED}/index.html`], scope: 'any', delayMs: 0, leaseMs: 600_000, bloomCapacity: 1000, sitemaps: false, once: true, robotsAttempts: 1 }, () => Date.now());
    cleanups.push(() => crawl.close());
    const { service } = crawl;
    const first = await service.claim(claimOf('f1', 0), '127.0.0.1');
    if (first.kind !== 'schedule') throw new Error('unreachable');
    // Results for a schedule of the queue server before the restart: nothing to apply, but a fetcher to tell.
    void service.results({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'held', scheduleId: 'before-restart-1', results: [robotsResult(`${ORIGIN_A}/robots.txt`)] }, '127.0.0.9');
    void service.results({ protocolVersion: PROTOCOL_VERSION, fetcherId: 'f1', scheduleId: first.schedule.id, results: [{ ...robotsResult(`${ORIGIN_SEED}/robots.txt`), status: null, error: { code: 'connection-refused', message: 'refused' } }] }, '127.0.0.1');
    await settle();
    expect(await service.claim(claimOf('f1', 0), '127.0.0.1')).toEqual({ kind: 'done' });
    const told = track(service.allFetchersTold(60_000));
    await settle();
    expect(told.value).toBe('pending');
    expect(await service.claim(claimOf('held', 0), '127.0.0.9')).toEqual({ kind: 'done' });
    await settle();
    expect(told.value).toBeUndefined();
  });

  it('acknowledges at once, with no timer run, the results that end a one-shot crawl and those waiting for the same commit', async () => {
    const [a, b] = [ORIGIN_A, ORIGIN_B];
    const crawl = tempCrawlService('commit-at-end', { seeds: [`${a}/index.html`, `${b}/index.html`], scope: 'any', delayMs: 0, leaseMs: 600_000, bloomCapacity: 1000, sitemaps: false, once: true }, () => Date.now());
    cleanups.push(() => crawl.close());
    const { service } = crawl;
    const post = (fetcherId: string, response: ClaimResponse, url: string) => {
      if (response.kind !== 'schedule') throw new Error(`expected a schedule, got ${response.kind}`);
      return track(service.results({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId: response.schedule.id, results: [robotsResult(url)] }));
    };
    // Both robots.txt answer 404 (everything allowed); their commit runs when its timer fires.
    const robotsA = await service.claim(claimOf('f1', 0), '127.0.0.1');
    const robotsB = await service.claim(claimOf('f2', 0), '127.0.0.1');
    robotsSlotOf(robotsA, a);
    robotsSlotOf(robotsB, b);
    const robotsAcks = [post('f1', robotsA, `${a}/robots.txt`), post('f2', robotsB, `${b}/robots.txt`)];
    await vi.runOnlyPendingTimersAsync();
    expect(robotsAcks.map((ack) => ack.value)).toMatchObject([{ applied: 1 }, { applied: 1 }]);

    // The two pages, each a 404. The first result leaves the crawl going: its commit waits for a timer.
    const pageA = await service.claim(claimOf('f1', 0), '127.0.0.1');
    const pageB = await service.claim(claimOf('f2', 0), '127.0.0.1');
    const first = post('f1', pageA, `${a}/index.html`);
    await settle();
    expect(first.value).toBe('pending');
    expect(vi.getTimerCount()).toBeGreaterThan(0);
    // The last one ends the crawl: nothing is left to share the commit with, so it runs now.
    const last = post('f2', pageB, `${b}/index.html`);
    await settle();
    await settle();
    expect([first.value, last.value]).toMatchObject([{ applied: 1 }, { applied: 1 }]);
    expect(await service.claim(claimOf('f3', 0), '127.0.0.1')).toEqual({ kind: 'done' });
  });

  it('releases every parked claim with wait when it closes', async () => {
    const service = await idleService();
    const claims = [track(service.claim(claimOf('f1'), '127.0.0.1')), track(service.claim(claimOf('f2'), '127.0.0.1'))];
    await settle();
    service.close();
    await settle();
    expect(claims.map((claim) => claim.value)).toEqual([{ kind: 'wait' }, { kind: 'wait' }]);
  });
});

function robotsResult(url: string): ItemResult {
  return {
    slot: 0,
    i: 0,
    url,
    fetchedAt: Date.now(),
    durationMs: 1,
    status: 404,
    error: null,
    contentType: null,
    bytes: 0,
    wireBytes: 0,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
    signature: null,
    page: null,
    links: [],
    robotsTxt: null,
    index: null,
  };
}
