/**
 * SIGTERM drains a queue server (a real `petrel queue-server` process): it stops handing out schedules,
 * lets the results posts in flight arrive, applies and commits them before it answers, and exits 0.
 * A simulated fetcher (signed requests over HTTP, results made up: no web is contacted) holds leases,
 * begins several results posts (headers and half of each body sent), then the queue server is sent
 * SIGTERM, and the bodies are finished while it drains. Every result whose post was acknowledged must
 * be in the crawl database and the page archive afterwards, and every post in flight must have been
 * acknowledged (the drain waited for it).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION, ROUTES, type ClaimResponse, type ItemResult, type Schedule } from '../../shared/protocol.js';
import { SIGNATURE_HEADERS } from '../../shared/request-signing.js';
import { signatureFor } from '../support/signed-request.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const ORIGIN = 'http://127.0.1.1';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };
const FETCHER = 'drain-test';

function result(slot: number, i: number, url: string, links: string[] = []): ItemResult {
  const robots = url.endsWith('/robots.txt');
  return {
    slot,
    i,
    url,
    fetchedAt: Date.now(),
    durationMs: 2,
    status: robots ? 404 : 200,
    error: null,
    contentType: 'text/html; charset=utf-8',
    bytes: 100,
    wireBytes: 100,
    truncated: false,
    redirectTo: null,
    retryAfterMs: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
    signature: robots ? null : createSignature(url),
    page: robots ? null : { title: `t ${url}`, description: null, language: 'en', excerpt: 'x', canonical: null, noindex: false, nofollow: false, outlinks: links.length, simhash: createSignature(`${url}#s`) },
    links,
    robotsTxt: null,
    index: null,
  };
}

function createSignature(text: string): string {
  let h = 0n;
  for (const c of Buffer.from(text)) h = (h * 1099511628211n + BigInt(c)) & 0xffffffffffffffffn;
  return h.toString(16).padStart(16, '0');
}

describe('SIGTERM', () => {
  beforeAll(() => assertBuilt());
  afterAll(() => killStartedPetrels());

  it('drains: no new schedules, posts in flight are applied and acknowledged, nothing acknowledged is lost, exit 0', async () => {
    const dataDir = join(tempDir('drain'), 'data');
    const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0', '--seed', `${ORIGIN}/index.html`, '--delay-ms', '0', '--host-concurrency', '8', '--slot-urls', '10', '--lease-ms', '10min', '--log-format', 'json', '--no-sitemaps']);
    const listening = await waitForEvent(server, 'listening');
    const url = String(listening.url);
    const { port } = new URL(url);
    const secret = readFileSync(String(listening.tokenFile), 'utf8').trim();
    const instance = (await fetch(new URL('/healthz', url))).headers.get(SIGNATURE_HEADERS.instance)!;

    /** One signed POST; `hold` resolves when the request may send the second half of its body. */
    const post = (route: string, body: unknown, hold?: Promise<void>): Promise<{ status: number; json: unknown }> => {
      const bytes = Buffer.from(JSON.stringify(body));
      const headers = { ...signatureFor('POST', route, bytes, { secret, instance, fetcherId: FETCHER }), 'content-length': String(bytes.length) };
      return new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: route, method: 'POST', headers, agent: false }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, json: text === '' ? null : JSON.parse(text) }));
        });
        req.on('error', reject);
        if (hold === undefined) return req.end(bytes);
        const half = Math.floor(bytes.length / 2);
        req.write(bytes.subarray(0, half));
        void hold.then(() => req.end(bytes.subarray(half)));
      });
    };
    const claim = async (waitMs = 0): Promise<ClaimResponse> => {
      const answer = await post(ROUTES.claim, { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER, name: FETCHER, capacity: 8, waitMs, stats: STATS });
      expect(answer.status).toBe(200);
      return answer.json as ClaimResponse;
    };
    const postResults = (schedule: Schedule, results: ItemResult[], hold?: Promise<void>) =>
      post(ROUTES.results, { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER, scheduleId: schedule.id, results }, hold);

    // robots.txt (404: everything allowed), then the seed page with 80 links: a frontier to lease from
    // (--no-sitemaps: no sitemap slot between the two, this test plays the fetcher by hand).
    const first = await claim();
    if (first.kind !== 'schedule') throw new Error(`expected a schedule, got ${first.kind}`);
    const robots = first.schedule.slots[0]!;
    expect((await postResults(first.schedule, [result(robots.slot, 0, robots.items[0]!.url)])).status).toBe(200);
    const second = await claim(5000);
    if (second.kind !== 'schedule') throw new Error(`expected a schedule, got ${second.kind}`);
    const seedSlot = second.schedule.slots[0]!;
    const links = Array.from({ length: 80 }, (_, n) => `${ORIGIN}/p/${n}.html`);
    expect((await postResults(second.schedule, [result(seedSlot.slot, 0, seedSlot.items[0]!.url, links)])).status).toBe(200);
    const leased = await claim(5000);
    if (leased.kind !== 'schedule') throw new Error(`expected a schedule, got ${leased.kind}`);
    const items = leased.schedule.slots.flatMap((slot) => slot.items.map((item) => ({ slot: slot.slot, ...item })));
    expect(items.length).toBeGreaterThanOrEqual(16);

    // Posts in flight: headers and half of each body sent before SIGTERM, the rest while draining.
    let release!: () => void;
    const drainingNow = new Promise<void>((resolve) => (release = resolve));
    const inFlight = items.slice(0, 8).map((item) => ({ url: item.url, answer: postResults(leased.schedule, [result(item.slot, item.i, item.url)], drainingNow) }));
    // A claim parked before the shutdown: answered `wait`, never a schedule, while draining.
    const parked = claim(30_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (stderr.includes('"event":"draining"')) release();
    });
    server.kill('SIGTERM');
    // Posts begun after SIGTERM on new connections: refused or acknowledged, never acknowledged and lost.
    const late = items.slice(8, 16).map((item) => ({ url: item.url, answer: postResults(leased.schedule, [result(item.slot, item.i, item.url)]).catch(() => ({ status: 0, json: null })) }));

    expect((await parked).kind).toBe('wait');
    const exit = await server.output;
    expect(exit.code).toBe(0);
    expect(exit.stdout).toContain('"event":"stopped"');

    const acknowledged: string[] = [];
    for (const { url: page, answer } of inFlight) {
      const { status, json } = await answer;
      expect({ page, status }).toEqual({ page, status: 200 });
      expect((json as { applied: number }).applied).toBe(1);
      acknowledged.push(page);
    }
    for (const { url: page, answer } of late) {
      const { status, json } = await answer;
      if (status === 200 && (json as { applied: number }).applied === 1) acknowledged.push(page);
    }

    // Every acknowledged result is durable: fetched in the crawl database, a record in pages.jsonl.
    const dump = spawnSync(process.execPath, [PETREL_BIN, 'db', 'dump', '--data', dataDir], { encoding: 'utf8' });
    expect(dump.status).toBe(0);
    const fetched = new Set(dump.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { url: string; status: string }).filter((r) => r.status === 'fetched').map((r) => r.url));
    const archived = new Set(readFileSync(join(dataDir, 'pages.jsonl'), 'utf8').split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { url: string }).url));
    for (const page of acknowledged) {
      expect(fetched.has(page), `${page} acknowledged but not fetched in the crawl database`).toBe(true);
      expect(archived.has(page), `${page} acknowledged but not in pages.jsonl`).toBe(true);
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(8);
  }, 60_000);
});
