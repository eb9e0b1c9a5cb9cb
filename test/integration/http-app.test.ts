/**
 * The queue server's HTTP interface (queue-server/app.ts), driven through supertest and, for
 * concurrency and streaming, through a real server on 127.0.0.1 port 0. Everything behind it is real:
 * Crawl, CrawlService, PageArchive on a temporary file. The service clock is fixed, so a status
 * snapshot taken before a bad request can be compared whole with one taken after it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { Crawl } from '../../queue-server/crawl/crawl.js';
import { crawlConfigSchema, fetchScheduleOf, type CrawlConfigInput } from '../../queue-server/crawl-config.js';
import { CrawlService } from '../../queue-server/crawl/crawl-service.js';
import { createApp } from '../../queue-server/app.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';
import { CacheStore } from '../../queue-server/cache/cache-store.js';
import { PageArchive } from '../../queue-server/crawl/page-archive.js';
import { claimResponseSchema, LIMITS, PROTOCOL_VERSION, ROUTES, type ClaimResponse, type ItemResult, type Schedule } from '../../shared/protocol.js';
import { signatureFor, signedGet, signedPost } from '../support/signed-request.js';

const TOKEN = 'test-token-0123456789abcdef';
const ADMIN_TOKEN = 'admin-token-for-tests-0123456789';
/** The status routes take the admin token as bearer token; the fetcher routes need signed requests. */
const AUTH = `Bearer ${ADMIN_TOKEN}`;
/** The app's instance id, fixed so requests can be signed for it without asking. */
const INSTANCE = 'httpAppTestInstance000';
const T0 = 1_700_000_000_000;
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

interface Harness {
  readonly service: CrawlService;
  readonly archive: PageArchive;
  readonly app: ReturnType<typeof createApp>;
  clock: number;
}

const cleanups: (() => void | Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** `realClock`: the service reads Date.now (a long poll ends when the clock passes its deadline). */
function harness(config: CrawlConfigInput = {}, { realClock = false }: { realClock?: boolean } = {}): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'petrel-http-app-'));
  const archive = PageArchive.open(join(dir, 'pages.jsonl'));
  const cache = CacheStore.open(join(dir, 'cache.btree'));
  const crawlDb = CrawlDb.open(join(dir, 'crawldb.btree'));
  // These tests play the fetcher by hand, robots.txt then pages; the sitemap slot between them has a test of its own.
  const crawlConfig = crawlConfigSchema.parse({ delayMs: 0, bloomCapacity: 1000, sitemaps: false, ...config });
  const crawl = new Crawl(crawlConfig, { archive, warc: null, cache, crawlDb, robots: null }, fetchScheduleOf(crawlConfig), null);
  const h: Harness = { service: undefined as unknown as CrawlService, archive, app: undefined as unknown as ReturnType<typeof createApp>, clock: T0 };
  const service = new CrawlService(crawl, { clock: realClock ? Date.now : () => h.clock });
  service.start();
  Object.assign(h, { service, app: createApp({ service, token: TOKEN, adminToken: ADMIN_TOKEN, instance: INSTANCE }) });
  cleanups.push(() => {
    service.close();
    archive.close();
    cache.close();
    crawlDb.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return h;
}

async function listen(h: Harness): Promise<string> {
  const server: Server = await new Promise((resolve) => {
    const s = h.app.listen(0, '127.0.0.1', () => resolve(s));
  });
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A signed POST to a fetcher route, as a fetcher sends it. */
function post(target: Harness['app'] | string, route: string, body: unknown) {
  return signedPost(target, route, body, { secret: TOKEN, instance: INSTANCE });
}

function claimBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { protocolVersion: PROTOCOL_VERSION, fetcherId: 'fetcher-1', name: 'test fetcher', capacity: 4, waitMs: 0, stats: STATS, ...overrides };
}

function itemResult(overrides: Partial<ItemResult> & Pick<ItemResult, 'slot' | 'i' | 'url'>): ItemResult {
  return {
    fetchedAt: T0,
    durationMs: 5,
    status: 200,
    error: null,
    contentType: 'text/html',
    bytes: 100,
    wireBytes: 100,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
    signature: '0123456789abcdef',
    page: null,
    links: [],
    robotsTxt: null,
    index: null,
    ...overrides,
  };
}

function resultsBody(scheduleId: string, results: ItemResult[], fetcherId = 'fetcher-1'): Record<string, unknown> {
  return { protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId, results };
}

async function claim(target: Harness['app'] | string, overrides: Record<string, unknown> = {}): Promise<ClaimResponse> {
  const res = await post(target, ROUTES.claim, claimBody(overrides)).expect(200);
  return claimResponseSchema.parse(res.body);
}

async function claimSchedule(target: Harness['app'] | string, overrides: Record<string, unknown> = {}): Promise<Schedule> {
  const response = await claim(target, overrides);
  if (response.kind !== 'schedule') throw new Error(`expected a schedule, got ${response.kind}`);
  return response.schedule;
}

/** Answers every robots.txt item of a schedule with a 404 (allow everything). */
async function answerRobots(h: Harness, schedule: Schedule, fetcherId = 'fetcher-1'): Promise<void> {
  const results = schedule.slots.flatMap((slot) =>
    slot.items.filter((item) => item.kind === 'robots').map((item) => itemResult({ slot: slot.slot, i: item.i, url: item.url, status: 404 })),
  );
  await post(h.app, ROUTES.results, resultsBody(schedule.id, results, fetcherId)).expect(200);
}

/** Route, and the code of its refusal: the fetcher routes take signed requests only, the status routes a bearer token too. */
const ROUTE_CASES = [
  ['POST', ROUTES.claim, 'bad-signature'],
  ['POST', ROUTES.results, 'bad-signature'],
  ['POST', ROUTES.heartbeat, 'bad-signature'],
  ['GET', ROUTES.status, 'unauthorized'],
  ['GET', ROUTES.statusStream, 'unauthorized'],
] as const;

function send(app: Harness['app'], method: 'GET' | 'POST', path: string) {
  return method === 'GET' ? request(app).get(path) : request(app).post(path).send(claimBody());
}

describe('authentication', () => {
  it('answers /healthz without a token', async () => {
    const h = harness();
    const res = await request(h.app).get('/healthz').expect(200);
    expect(res.body).toEqual({ ok: true });
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it.each(ROUTE_CASES)('refuses %s %s without credentials: 401 %s', async (method, path, code) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    const res = await send(h.app, method, path).expect(401);
    expect(res.body.error.code).toBe(code);
    expect(h.service.status()).toEqual(before);
  });

  it.each(ROUTE_CASES)('refuses %s %s with a wrong bearer token: 401 %s', async (method, path, code) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    for (const authorization of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, `bearer ${TOKEN}`, TOKEN, 'Bearer ', `Basic ${TOKEN}`]) {
      const res = await send(h.app, method, path).set('Authorization', authorization).expect(401);
      expect(res.body.error.code).toBe(code);
    }
    expect(h.service.status()).toEqual(before);
  });

  it.each(ROUTE_CASES.filter(([method]) => method === 'POST'))('refuses %s %s with the right bearer token: the fetcher API takes signed requests only', async (method, path) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    for (const authorization of [`Bearer ${TOKEN}`, AUTH]) {
      const res = await send(h.app, method, path).set('Authorization', authorization).expect(401);
      expect(res.body.error.code).toBe('bad-signature');
      expect(res.body.error.message).toContain('X-Petrel-Signature');
    }
    expect(h.service.status()).toEqual(before);
  });

  it('serves the status to a holder of the admin token, and to a signed request', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const res = await request(h.app).get(ROUTES.status).set('Authorization', AUTH).expect(200);
    expect(res.body).toMatchObject({ state: 'running', frontierSize: 1, urlsDiscovered: 1, leasesOut: 0 });
    const signed = await signedGet(h.app, ROUTES.status, { secret: TOKEN, instance: INSTANCE }).expect(200);
    expect(signed.body).toMatchObject({ state: 'running', frontierSize: 1 });
    // Signature headers are checked whenever present, even beside a valid bearer token.
    const forged = await signedGet(h.app, ROUTES.status, { secret: 'not-the-secret-0123456789', instance: INSTANCE }).set('Authorization', AUTH).expect(401);
    expect(forged.body.error.code).toBe('unknown-key');
  });

  it.each([ROUTES.status, ROUTES.statusStream])('refuses fetcher.token as a bearer token on %s: it is the signing key and never crosses the wire', async (path) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const res = await request(h.app).get(path).set('Authorization', `Bearer ${TOKEN}`).expect(401);
    expect(res.body.error.code).toBe('unauthorized');
    expect(res.body.error.message).toContain('fetcher.token is not one');
  });

  it('refuses a signed status request that carries a body, and one signed for another instance', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const withBody = await signedGet(h.app, ROUTES.status, { secret: TOKEN, instance: INSTANCE }).set('Content-Length', '2').send('{}').expect(400);
    expect(withBody.body.error.code).toBe('bad-request');
    const other = await signedGet(h.app, ROUTES.status, { secret: TOKEN, instance: 'anotherInstance0000000' }).expect(401);
    expect(other.body.error.code).toBe('unknown-instance');
    expect(other.body.error.instance).toBe(INSTANCE);
  });

  it('answers an unknown route with 404 not-found', async () => {
    const h = harness();
    const res = await request(h.app).get('/api/v1/nothing').set('Authorization', AUTH).expect(404);
    expect(res.body.error.code).toBe('not-found');
  });
});

describe('validation: a bad request gets a 4xx with a stable code and changes nothing', () => {
  it('refuses a claim without capacity, naming the field', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    const body = claimBody();
    delete body.capacity;
    const res = await post(h.app, ROUTES.claim, body).expect(400);
    expect(res.body.error.code).toBe('invalid-body');
    expect(res.body.error.message).toContain('capacity');
    expect(h.service.status()).toEqual(before);
  });

  it.each([
    ['capacity', 0],
    ['capacity', LIMITS.slotsPerSchedule + 1],
    ['capacity', 1.5],
    ['waitMs', -1],
    ['waitMs', 60_001],
    ['fetcherId', 'has space'],
    ['fetcherId', ''],
    ['name', 'n'.repeat(LIMITS.nameChars + 1)],
  ])('refuses a claim with %s = %j, naming the field', async (field, value) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    const res = await post(h.app, ROUTES.claim, claimBody({ [field]: value })).expect(400);
    expect(res.body.error.code).toBe('invalid-body');
    expect(res.body.error.message).toContain(field);
    expect(h.service.status()).toEqual(before);
  });

  it.each([[ROUTES.claim], [ROUTES.results], [ROUTES.heartbeat]])('refuses a wrong protocolVersion on %s', async (route) => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    const body = { ...claimBody(), scheduleId: 'x-1', results: [], scheduleIds: [], protocolVersion: PROTOCOL_VERSION + 1 };
    const res = await post(h.app, route, body).expect(400);
    expect(res.body.error.code).toBe('invalid-body');
    expect(res.body.error.message).toContain('protocolVersion');
    expect(h.service.status()).toEqual(before);
  });

  it('refuses results holding a 3000-character URL, naming the field', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const schedule = await claimSchedule(h.app);
    const before = h.service.status();
    const long = `http://example.com/${'a'.repeat(3000)}`;
    const res = await post(h.app, ROUTES.results, resultsBody(schedule.id, [itemResult({ slot: 0, i: 0, url: `${schedule.slots[0]!.origin}/robots.txt`, status: 404, links: [long] })]))
      .expect(400);
    expect(res.body.error.code).toBe('invalid-body');
    expect(res.body.error.message).toContain('results.0.links.0');
    const res2 = await post(h.app, ROUTES.results, resultsBody(schedule.id, [itemResult({ slot: 0, i: 0, url: long })]))
      .expect(400);
    expect(res2.body.error.code).toBe('invalid-body');
    expect(res2.body.error.message).toContain('results.0.url');
    expect(h.service.status()).toEqual(before);
  });

  it('refuses a post of more than LIMITS.resultsPerPost results as a whole', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const schedule = await claimSchedule(h.app);
    const before = h.service.status();
    const robotsUrl = `${schedule.slots[0]!.origin}/robots.txt`;
    // The first result is a valid answer to the leased robots.txt: it must not be applied either.
    const results = Array.from({ length: LIMITS.resultsPerPost + 1 }, (_, i) => itemResult({ slot: 0, i: i === 0 ? 0 : i, url: robotsUrl, status: 404 }));
    const res = await post(h.app, ROUTES.results, resultsBody(schedule.id, results)).expect(400);
    expect(res.body.error.code).toBe('invalid-body');
    expect(res.body.error.message).toContain('results');
    expect(h.service.status()).toEqual(before);
  });

  it('refuses malformed JSON with 400 invalid-json', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    for (const route of [ROUTES.claim, ROUTES.results, ROUTES.heartbeat]) {
      const res = await post(h.app, route, '{"protocolVersion": 1,').expect(400);
      expect(res.body.error.code).toBe('invalid-json');
    }
    // Strict JSON: a bare value is not a request either.
    const bare = await post(h.app, ROUTES.claim, '42').expect(400);
    expect(bare.body.error.code).toBe('invalid-json');
    expect(h.service.status()).toEqual(before);
  });

  it('refuses a body that is not sent as JSON with 400 bad-request', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const before = h.service.status();
    const res = await signedPost(h.app, ROUTES.claim, JSON.stringify(claimBody()), { secret: TOKEN, instance: INSTANCE, contentType: 'text/plain' }).expect(400);
    expect(res.body.error.code).toBe('bad-request');
    expect(h.service.status()).toEqual(before);
  });

  it('refuses with 413 body-too-large a compressed body that inflates beyond LIMITS.requestBodyBytes', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const base = await listen(h);
    const before = h.service.status();
    // 65 gzip members of 1 MiB of JSON whitespace each: 65 MiB once inflated, about 65 KiB on the wire.
    const member = gzipSync(Buffer.alloc(1024 * 1024, 0x20));
    const bomb = Buffer.concat(Array.from({ length: LIMITS.requestBodyBytes / (1024 * 1024) + 1 }, () => member));
    // To the results route, whose limit (64 MiB) the 65 KiB on the wire are well inside: only inflating finds it too large.
    const signature = signatureFor('POST', ROUTES.results, bomb, { secret: TOKEN, instance: INSTANCE, fetcherId: 'fetcher-1', contentEncoding: 'gzip' });
    const res = await rawPost(`${base}${ROUTES.results}`, bomb, signature);
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error.code).toBe('body-too-large');
    expect(JSON.parse(res.body).error.message).toContain(`${LIMITS.requestBodyBytes} bytes`);
    expect(h.service.status()).toEqual(before);
  });
});

/** POSTs bytes exactly as given (supertest would re-encode a Buffer sent as JSON). */
function rawPost(url: string, body: Buffer, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('claims', () => {
  it('answers wait to a claim with waitMs 0 when there is nothing to do', async () => {
    const h = harness();
    expect(await claim(h.app)).toEqual({ kind: 'wait' });
  });

  it('answers done to a claim against a one-shot crawl with nothing to do', async () => {
    const h = harness({ once: true });
    expect(await claim(h.app)).toEqual({ kind: 'done' });
  });

  it('hands out the robots.txt of a seeded origin first', async () => {
    const h = harness({ seeds: ['http://Example.com/start#x'] });
    const schedule = await claimSchedule(h.app);
    expect(schedule.leaseMs).toBe(60_000);
    expect(schedule.slots).toHaveLength(1);
    expect(schedule.slots[0]).toMatchObject({ slot: 0, origin: 'http://example.com', startAfterMs: 0 });
    expect(schedule.slots[0]!.items).toEqual([{ i: 0, url: 'http://example.com/robots.txt', kind: 'robots', depth: 0, validators: null }]);
    // Nothing else of that origin until its robots.txt is known.
    expect(await claim(h.app)).toEqual({ kind: 'wait' });
    await answerRobots(h, schedule);
    const pages = await claimSchedule(h.app);
    expect(pages.slots[0]!.items).toEqual([{ i: 0, url: 'http://example.com/start', kind: 'page', depth: 0, validators: null }]);
  });

  it('hands out an origin\'s sitemaps after its robots.txt and before its pages, and not as pages', async () => {
    const h = harness({ seeds: ['http://example.com/start'], sitemaps: true, maxPages: 1 });
    const robots = await claimSchedule(h.app);
    await answerRobots(h, robots);
    const sitemaps = await claimSchedule(h.app);
    expect(sitemaps.slots.map((slot) => slot.items)).toEqual([[{ i: 0, url: 'http://example.com/sitemap.xml', kind: 'sitemap', depth: 0, validators: null }]]);
    const listed = { kind: 'urlset' as const, truncated: false, entries: [{ loc: 'http://example.com/listed.html', lastmod: null }, { loc: 'http://other.example/x.html', lastmod: null }] };
    const result = { ...itemResult({ slot: 0, i: 0, url: 'http://example.com/sitemap.xml', status: 200 }), sitemap: listed };
    await post(h.app, ROUTES.results, resultsBody(sitemaps.id, [result], 'fetcher-1')).expect(200);
    // The budget of one page is not spent by the sitemap: the seed still goes out.
    const pages = await claimSchedule(h.app);
    expect(pages.slots.flatMap((slot) => slot.items.map((item) => [item.kind, item.url]))).toEqual([['page', 'http://example.com/start']]);
    expect(h.service.status()).toMatchObject({ sitemapRequests: 1, sitemapsRead: 1, sitemapUrls: 1, sitemapUrlsRefused: 1, urlsDiscovered: 2 });
  });

  it('holds a long poll until its waitMs passes when there is no work', async () => {
    const h = harness({}, { realClock: true });
    const started = Date.now();
    expect(await claim(h.app, { waitMs: 150 })).toEqual({ kind: 'wait' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  });

  it('never gives two concurrent claims the same URL', async () => {
    const seeds: string[] = [];
    for (const host of ['a', 'b', 'c', 'd', 'e']) for (let i = 0; i < 8; i++) seeds.push(`http://${host}.example/${i}`);
    const h = harness({ seeds, hostConcurrency: 4, slotUrls: 2, scope: 'any' });
    const base = await listen(h);
    const fetchers = ['f1', 'f2', 'f3', 'f4'];

    const overlap = (schedules: Schedule[]) => {
      const urls = schedules.flatMap((s) => s.slots.flatMap((slot) => slot.items.map((item) => item.url)));
      expect(new Set(urls).size).toBe(urls.length);
      return urls;
    };

    // Round one: four fetchers ask at once, robots.txt goes out once per origin.
    const robotsRound = await Promise.all(fetchers.map((id) => claim(base, { fetcherId: id, capacity: 3 })));
    const robotsSchedules = robotsRound.flatMap((r) => (r.kind === 'schedule' ? [r.schedule] : []));
    expect(overlap(robotsSchedules).sort()).toEqual(['a', 'b', 'c', 'd', 'e'].map((host) => `http://${host}.example/robots.txt`));
    await Promise.all(robotsRound.map((r, i) => (r.kind === 'schedule' ? answerRobots(h, r.schedule, fetchers[i]) : undefined)));

    // Round two: page URLs, again all at once, again disjoint, and each a seed.
    const pageRound = await Promise.all(fetchers.map((id) => claim(base, { fetcherId: id, capacity: 10 })));
    const pageSchedules = pageRound.flatMap((r) => (r.kind === 'schedule' ? [r.schedule] : []));
    const pageUrls = overlap(pageSchedules);
    expect(pageUrls.length).toBeGreaterThan(0);
    for (const url of pageUrls) expect(seeds).toContain(url);
    // Across fetchers, no origin has more than its concurrency of slots out.
    const slotsPerOrigin = new Map<string, number>();
    for (const slot of pageSchedules.flatMap((s) => s.slots)) slotsPerOrigin.set(slot.origin, (slotsPerOrigin.get(slot.origin) ?? 0) + 1);
    for (const count of slotsPerOrigin.values()) expect(count).toBeLessThanOrEqual(4);

  });
});

describe('results', () => {
  it('applies a result once: the same post again reports duplicates and changes no counter', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    await answerRobots(h, await claimSchedule(h.app));
    const schedule = await claimSchedule(h.app);
    const item = schedule.slots[0]!.items[0]!;
    expect(item.url).toBe('http://example.com/');
    const body = resultsBody(schedule.id, [
      itemResult({
        slot: 0,
        i: 0,
        url: item.url,
        links: ['http://example.com/a', '/b', 'http://elsewhere.example/out-of-scope'],
        page: { title: 'Home', description: null, language: 'en', excerpt: 'hello', canonical: null, noindex: false, nofollow: false, outlinks: 3, simhash: null },
      }),
    ]);

    const first = await post(h.app, ROUTES.results, body).expect(200);
    expect(first.body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });
    const afterFirst = h.service.status();
    expect(afterFirst).toMatchObject({ pagesFetched: 1, urlsDiscovered: 3, frontierSize: 2, leasesOut: 0, duplicateResults: 0 });
    expect(h.archive.recordsWritten).toBe(1);

    const second = await post(h.app, ROUTES.results, body).expect(200);
    expect(second.body).toEqual({ applied: 0, duplicates: 1, leaseActive: false });
    const afterSecond = h.service.status();
    expect(afterSecond.duplicateResults).toBe(1);
    expect({ ...afterSecond, duplicateResults: 0 }).toEqual(afterFirst);
    expect(h.archive.recordsWritten).toBe(1);
  });

  it('reports a repeated item of a lease that is still out as a duplicate, with the lease active', async () => {
    const h = harness({ seeds: ['http://example.com/1', 'http://example.com/2'], slotUrls: 2 });
    await answerRobots(h, await claimSchedule(h.app));
    const schedule = await claimSchedule(h.app);
    expect(schedule.slots[0]!.items).toHaveLength(2);
    const item = schedule.slots[0]!.items[0]!;
    const body = resultsBody(schedule.id, [itemResult({ slot: 0, i: item.i, url: item.url })]);
    expect((await post(h.app, ROUTES.results, body).expect(200)).body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });
    const before = h.service.status();
    expect((await post(h.app, ROUTES.results, body).expect(200)).body).toEqual({ applied: 0, duplicates: 1, leaseActive: true });
    const after = h.service.status();
    expect({ ...after, duplicateResults: before.duplicateResults }).toEqual(before);
  });

  it('does not apply a result whose URL is not the leased one', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const schedule = await claimSchedule(h.app);
    const res = await post(h.app, ROUTES.results, resultsBody(schedule.id, [itemResult({ slot: 0, i: 0, url: 'http://example.com/not-robots.txt', status: 404 })]))
      .expect(200);
    expect(res.body).toEqual({ applied: 0, duplicates: 0, leaseActive: true });
    expect(h.service.status()).toMatchObject({ lateResults: 1, robotsRequests: 0, leasesOut: 1 });
  });
});

describe('heartbeat and status stream', () => {
  it('renews the leases it names and reports the ones it does not know', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const schedule = await claimSchedule(h.app);
    const res = await post(h.app, ROUTES.heartbeat, { protocolVersion: PROTOCOL_VERSION, fetcherId: 'fetcher-1', name: 'test fetcher', scheduleIds: [schedule.id, 'gone-1'], stats: STATS })
      .expect(200);
    expect(res.body).toEqual({ unknownScheduleIds: ['gone-1'] });
    const other = await post(h.app, ROUTES.heartbeat, { protocolVersion: PROTOCOL_VERSION, fetcherId: 'fetcher-2', name: 'other', scheduleIds: [schedule.id], stats: STATS })
      .expect(200);
    expect(other.body).toEqual({ unknownScheduleIds: [schedule.id] });
  });

  it('streams a status snapshot as its first server-sent event', async () => {
    const h = harness({ seeds: ['http://example.com/'] });
    const base = await listen(h);
    const firstEvent = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(`${base}${ROUTES.statusStream}`, { headers: { Authorization: AUTH } }, (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('text/event-stream');
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          const end = text.indexOf('\n\n');
          if (end >= 0) {
            req.destroy();
            resolve(text.slice(0, end));
          }
        });
      });
      req.on('error', reject);
      req.end();
    });
    const [eventLine, dataLine] = firstEvent.split('\n');
    expect(eventLine).toBe('event: status');
    expect(JSON.parse(dataLine!.replace(/^data: /, ''))).toMatchObject({ state: 'running', frontierSize: 1 });
  });
});
