/**
 * The fleet's doors, against a real queue server listening on 127.0.0.1 port 0 (startQueueServer with a
 * temporary data directory): every request to the fetcher API is signed (shared/request-signing.ts),
 * and a replayed request, a forged signature, a stale timestamp, a body altered in flight, an oversized
 * body, a wrong secret and a bare bearer token are each refused with a clear 4xx and its code, with
 * nothing changed (the status counters compared before and after). The real fetcher client signs every
 * attempt anew and never sends the secret. Over TLS, a real `petrel fetcher` process verifies the queue
 * server with --ca and claims work; without --ca it refuses the server with a clear error.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueClient } from '../../fetcher/queue-client.js';
import { startQueueServer, type RunningQueueServer } from '../../queue-server/daemon.js';
import type { CrawlStatus } from '../../queue-server/crawl/crawl-status.js';
import { LIMITS, PROTOCOL_VERSION, ROUTES, type ClaimRequest, type ItemResult, type Schedule } from '../../shared/protocol.js';
import { MAX_CLOCK_SKEW_MS, SIGNATURE_HEADERS } from '../../shared/request-signing.js';
import { encodeResultsFrame, RESULTS_FRAME_TYPE, RESULTS_FRAME_VERSION } from '../../shared/results-frame.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { instanceOf, signatureFor } from '../support/signed-request.js';

const HOST = '127.0.0.1';
/** Nothing listens on the discard port: fetching it fails fast, and robots.txt is what a fetcher gets first. */
const SEED = 'http://127.0.0.1:9/start.html';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };
const FETCHER_ID = 'fleet-test-1';

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  killStartedPetrels();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function queueServer(options: { tls?: { cert: Buffer; key: Buffer } } = {}): Promise<{ server: RunningQueueServer; dir: string; instance: string }> {
  const dir = tempDir('fleet-auth');
  const server = await startQueueServer({ dataDir: join(dir, 'data'), host: HOST, port: 0, tls: options.tls, crawl: { seeds: [SEED], delayMs: 0, bloomCapacity: 1000 } });
  cleanups.push(async () => {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  // Over TLS the tests run real fetchers, which learn the instance themselves.
  return { server, dir, instance: options.tls === undefined ? await instanceOf(server.url) : '' };
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: { error?: { code: string; message: string; serverTime?: number; skewMs?: number } } & Record<string, unknown>;
}

/** Sends exactly these bytes with exactly these headers (what a captured request looks like). */
function send(base: string, path: string, headers: Record<string, string>, body: Buffer, method = 'POST'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers: { 'Content-Type': 'application/json', ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as Answer['body'] }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A request as a fetcher signs it, kept as headers and bytes so that it can be sent again. */
function signed(secret: string, instance: string, path: string, payload: unknown, options: { now?: number; fetcherId?: string } = {}) {
  const body = Buffer.from(JSON.stringify(payload));
  return { path, body, headers: signatureFor('POST', path, body, { secret, instance, fetcherId: options.fetcherId ?? FETCHER_ID, now: options.now }) };
}

function claimBody(): ClaimRequest {
  return { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER_ID, name: 'fleet test', capacity: 4, waitMs: 0, stats: STATS };
}

function robotsResult(schedule: Schedule, status: number): ItemResult {
  const slot = schedule.slots[0]!;
  return {
    slot: slot.slot, i: 0, url: slot.items[0]!.url, fetchedAt: Date.now(), durationMs: 1, status, error: null, contentType: null, bytes: 0, wireBytes: 0,
    truncated: false, redirectTo: null, retryAfterMs: null, signature: null, page: null, links: [], robotsTxt: null, index: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
  };
}

/** The status without what moves by itself (clocks, rates, memory). */
function counters(status: CrawlStatus): unknown {
  const { elapsedMs: _e, pagesPerSecond: _p, fetchers, hosts: _h, seenSet: _s, cacheTree: _c, crawlDbTree: _d, ...rest } = status;
  return { ...rest, fetchers: fetchers.map(({ id, name, resultsApplied, pagesFetched, itemsLeased }) => ({ id, name, resultsApplied, pagesFetched, itemsLeased })) };
}

async function claimRobots(server: RunningQueueServer, instance: string): Promise<Schedule> {
  const claim = signed(server.token, instance, ROUTES.claim, claimBody());
  const answer = await send(server.url, claim.path, claim.headers, claim.body);
  expect(answer.status).toBe(200);
  expect(answer.body.kind).toBe('schedule');
  return answer.body.schedule as Schedule;
}

describe('signed requests to a real queue server', () => {
  it('accepts a request once: the same headers and body again are refused as a replay, and change nothing', async () => {
    const { server, instance } = await queueServer();
    const claim = signed(server.token, instance, ROUTES.claim, claimBody());
    const first = await send(server.url, claim.path, claim.headers, claim.body);
    expect(first.status).toBe(200);
    expect(first.body.kind).toBe('schedule');
    const schedule = first.body.schedule as Schedule;
    const afterClaim = counters(server.service.status());
    const replayedClaim = await send(server.url, claim.path, claim.headers, claim.body);
    expect(replayedClaim.status).toBe(401);
    expect(replayedClaim.body.error!.code).toBe('replayed-nonce');
    expect(counters(server.service.status())).toEqual(afterClaim);

    const post = signed(server.token, instance, ROUTES.results, { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER_ID, scheduleId: schedule.id, results: [robotsResult(schedule, 404)] });
    const applied = await send(server.url, post.path, post.headers, post.body);
    expect(applied.status).toBe(200);
    expect(applied.body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });
    const afterResults = counters(server.service.status());
    expect(afterResults).toMatchObject({ robotsRequests: 1, duplicateResults: 0 });
    // Were the replay let through, the idempotent apply would count it as a duplicate: it is not even counted.
    const replayedResults = await send(server.url, post.path, post.headers, post.body);
    expect(replayedResults.status).toBe(401);
    expect(replayedResults.body.error!.code).toBe('replayed-nonce');
    expect(counters(server.service.status())).toEqual(afterResults);
  });

  it('refuses a forged signature, a stale or future timestamp, a wrong secret and a bare bearer token, changing nothing', async () => {
    const { server, instance } = await queueServer();
    const before = counters(server.service.status());
    const good = signed(server.token, instance, ROUTES.claim, claimBody());
    const refusals: [string, Record<string, string>, Buffer, string][] = [];

    const sig = good.headers[SIGNATURE_HEADERS.signature]!;
    const flipped = `${sig[0] === 'A' ? 'B' : 'A'}${sig.slice(1)}`;
    refusals.push(['forged signature', { ...good.headers, [SIGNATURE_HEADERS.signature]: flipped }, good.body, 'bad-signature']);
    refusals.push(['no signature', { [SIGNATURE_HEADERS.timestamp]: good.headers[SIGNATURE_HEADERS.timestamp]! }, good.body, 'bad-signature']);
    const stale = signed(server.token, instance, ROUTES.claim, claimBody(), { now: Date.now() - MAX_CLOCK_SKEW_MS - 60_000 });
    refusals.push(['stale timestamp', stale.headers, stale.body, 'stale-timestamp']);
    const future = signed(server.token, instance, ROUTES.claim, claimBody(), { now: Date.now() + MAX_CLOCK_SKEW_MS + 60_000 });
    refusals.push(['future timestamp', future.headers, future.body, 'stale-timestamp']);
    const otherSecret = signed('another-fleet-secret-0123456789', instance, ROUTES.claim, claimBody());
    refusals.push(['wrong secret, named by its key id', otherSecret.headers, otherSecret.body, 'unknown-key']);
    const { [SIGNATURE_HEADERS.keyId]: _keyId, ...withoutKeyId } = otherSecret.headers;
    refusals.push(['wrong secret, no key id', withoutKeyId, otherSecret.body, 'bad-signature']);
    refusals.push(['the right token as a bearer token', { Authorization: `Bearer ${server.token}` }, good.body, 'bad-signature']);
    const otherSender = { ...good.headers, [SIGNATURE_HEADERS.fetcherId]: 'someone-else' };
    refusals.push(['another fetcher id than signed', otherSender, good.body, 'bad-signature']);
    const otherInstance = signed(server.token, 'anotherQueueServer0000', ROUTES.claim, claimBody());
    refusals.push(['signed for another queue server instance', otherInstance.headers, otherInstance.body, 'unknown-instance']);
    const { [SIGNATURE_HEADERS.instance]: _instance, ...noInstance } = good.headers;
    refusals.push(['signed without an instance', noInstance, good.body, 'unknown-instance']);
    const { [SIGNATURE_HEADERS.contentDigest]: _digest, ...noDigest } = good.headers;
    refusals.push(['a body without its Content-Digest', noDigest, good.body, 'bad-signature']);

    for (const [what, headers, body, code] of refusals) {
      const answer = await send(server.url, ROUTES.claim, headers, body);
      expect(answer.status, what).toBe(401);
      expect(answer.body.error!.code, what).toBe(code);
      expect(answer.body.error!.message.length, what).toBeGreaterThan(20);
    }
    expect(counters(server.service.status())).toEqual(before);

    // A skewed clock is told what the queue server's clock says, and by how much they differ.
    const answer = await send(server.url, ROUTES.claim, stale.headers, stale.body);
    expect(answer.body.error!.serverTime).toBeGreaterThanOrEqual(Number(stale.headers[SIGNATURE_HEADERS.timestamp]) + MAX_CLOCK_SKEW_MS);
    expect(answer.body.error!.skewMs).toBeLessThan(-MAX_CLOCK_SKEW_MS);
    expect(answer.body.error!.message).toMatch(/behind the queue server's clock/);

    // The untouched request still works: none of the refusals burned its nonce.
    expect((await send(server.url, ROUTES.claim, good.headers, good.body)).status).toBe(200);
  });

  it('refuses a body altered in flight, and a request sent to another route than signed', async () => {
    const { server, instance } = await queueServer();
    const schedule = await claimRobots(server, instance);
    const before = counters(server.service.status());
    const honest = { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER_ID, scheduleId: schedule.id, results: [robotsResult(schedule, 404)] };
    const post = signed(server.token, instance, ROUTES.results, honest);
    // Same length, one byte different: the status 404 becomes 200.
    const altered = Buffer.from(post.body.toString().replace('"status":404', '"status":200'));
    expect(altered.length).toBe(post.body.length);
    const answer = await send(server.url, ROUTES.results, post.headers, altered);
    expect(answer.status).toBe(401);
    // The headers are the signed ones, so the signature holds; the body is not the one its Content-Digest declares.
    expect(answer.body.error!.code).toBe('bad-digest');
    // Compressed bodies are signed as sent: inflating to the same JSON does not make other bytes right.
    const zipped = gzipSync(post.body);
    // (Signed anew: the altered body above burned its nonce, its headers being right.)
    const plainSigned = signed(server.token, instance, ROUTES.results, honest);
    const zipAnswer = await send(server.url, ROUTES.results, { ...plainSigned.headers, 'Content-Encoding': 'gzip' }, zipped);
    expect(zipAnswer.body.error!.code).toBe('bad-signature');
    const heartbeat = signed(server.token, instance, ROUTES.heartbeat, { protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER_ID, name: 'x', scheduleIds: [schedule.id], stats: STATS });
    const moved = await send(server.url, ROUTES.claim, heartbeat.headers, heartbeat.body);
    expect(moved.body.error!.code).toBe('bad-signature');
    expect(counters(server.service.status())).toEqual(before);
    // The honest bytes, gzip-compressed and signed as such, are accepted.
    const zippedPost = { ...signed(server.token, instance, ROUTES.results, honest), body: zipped };
    zippedPost.headers = signatureFor('POST', ROUTES.results, zipped, { secret: server.token, instance, fetcherId: FETCHER_ID, contentEncoding: 'gzip' });
    const accepted = await send(server.url, ROUTES.results, { ...zippedPost.headers, 'Content-Encoding': 'gzip' }, zipped);
    expect(accepted.body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });
  });

  it('takes results as a binary frame, signed over its exact bytes like a JSON post, and says it reads them in every schedule', async () => {
    const { server, instance } = await queueServer();
    const schedule = await claimRobots(server, instance);
    expect(schedule.resultsFrame).toBe(RESULTS_FRAME_VERSION);
    const before = counters(server.service.status());
    const frame = encodeResultsFrame({ protocolVersion: PROTOCOL_VERSION, fetcherId: FETCHER_ID, scheduleId: schedule.id, results: [robotsResult(schedule, 404)] });
    const asFrame = { 'Content-Type': RESULTS_FRAME_TYPE };
    const headers = signatureFor('POST', ROUTES.results, frame, { secret: server.token, instance, fetcherId: FETCHER_ID, contentType: RESULTS_FRAME_TYPE });
    // One byte of the frame changed after signing: refused before it is decoded.
    const altered = Buffer.from(frame);
    altered[altered.length - 1] = altered[altered.length - 1]! ^ 1;
    const alteredAnswer = await send(server.url, ROUTES.results, { ...headers, ...asFrame }, altered);
    expect(alteredAnswer.body).toMatchObject({ error: { code: 'bad-digest' } });
    // Sent as JSON under a frame's signature (the Content-Type is signed): refused.
    const json = signatureFor('POST', ROUTES.results, frame, { secret: server.token, instance, fetcherId: FETCHER_ID, contentType: RESULTS_FRAME_TYPE });
    expect((await send(server.url, ROUTES.results, { ...json, 'content-type': 'application/json' }, frame)).body).toMatchObject({ error: { code: 'bad-signature' } });
    // A malformed frame, rightly signed: a 400 with the frame's code, nothing applied.
    const cut = frame.subarray(0, frame.length - 3);
    const cutHeaders = signatureFor('POST', ROUTES.results, cut, { secret: server.token, instance, fetcherId: FETCHER_ID, contentType: RESULTS_FRAME_TYPE });
    const refused = await send(server.url, ROUTES.results, { ...cutHeaders, ...asFrame }, cut);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'invalid-frame', frameCode: 'FRAME_TRUNCATED' });
    expect(counters(server.service.status())).toEqual(before);
    // The honest frame as signed, and gzip-compressed and signed as such: applied once.
    const zipped = gzipSync(frame);
    const zippedHeaders = signatureFor('POST', ROUTES.results, zipped, { secret: server.token, instance, fetcherId: FETCHER_ID, contentType: RESULTS_FRAME_TYPE, contentEncoding: 'gzip' });
    expect((await send(server.url, ROUTES.results, { ...zippedHeaders, ...asFrame, 'Content-Encoding': 'gzip' }, zipped)).body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });
    const again = signatureFor('POST', ROUTES.results, frame, { secret: server.token, instance, fetcherId: FETCHER_ID, contentType: RESULTS_FRAME_TYPE });
    // (Its lease ended with its only item, so the repeat is a duplicate of a finished lease.)
    expect((await send(server.url, ROUTES.results, { ...again, ...asFrame }, frame)).body).toEqual({ applied: 0, duplicates: 1, leaseActive: false });
  });

  it('refuses an oversized body with 413 before reading it or checking anything else', async () => {
    const { server, instance } = await queueServer();
    const before = counters(server.service.status());
    const headers = signatureFor('POST', ROUTES.results, Buffer.alloc(0), { secret: server.token, instance });
    const answer = await new Promise<{ status: number; connection: string | undefined; body: Answer['body'] }>((resolve, reject) => {
      const req = httpRequest(`${server.url}${ROUTES.results}`, {
        method: 'POST',
        headers: { ...headers, 'Content-Type': 'application/json', 'Content-Length': String(LIMITS.requestBodyBytes + 1) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, body: JSON.parse(text) as Answer['body'] });
        });
      });
      req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
      // Only the first kilobyte of the announced 64 MiB is ever sent.
      req.write(Buffer.alloc(1024, 0x20));
    });
    expect(answer.status).toBe(413);
    expect(answer.body.error!.code).toBe('body-too-large');
    expect(answer.connection).toBe('close');
    // Without a valid signature too: size is checked first.
    const unsigned = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${server.url}${ROUTES.claim}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(LIMITS.requestBodyBytes + 1) } }, (res) => {
        res.resume();
        res.on('end', () => {
          req.destroy();
          resolve(res.statusCode ?? 0);
        });
      });
      req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
      req.write('{');
    });
    expect(unsigned).toBe(413);
    expect(counters(server.service.status())).toEqual(before);
  });
});

describe('the fetcher client', () => {
  it('signs every attempt anew and never sends the secret', async () => {
    const secret = 'client-side-secret-0123456789abcdef';
    const seen: { headers: IncomingHttpHeaders; raw: string }[] = [];
    const instance = 'captureServerInstance0';
    let healthChecks = 0;
    const capture = createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        res.setHeader(SIGNATURE_HEADERS.instance, instance);
        // The client learns the instance to sign for from an unauthenticated answer first.
        if (req.url === '/healthz') return void (healthChecks++, res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"ok":true}'));
        seen.push({ headers: req.headers, raw: `${req.method} ${req.url}\n${JSON.stringify(req.rawHeaders)}\n${body}` });
        // The first attempt fails as a queue server in trouble would; the client retries.
        if (seen.length === 1) res.writeHead(503).end('busy');
        else res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"kind":"wait"}');
      });
    });
    await new Promise<void>((resolve) => capture.listen(0, HOST, resolve));
    cleanups.push(() => new Promise<void>((resolve) => capture.close(() => resolve())));
    const stop = new AbortController();
    const client = new QueueClient({ serverUrl: `http://${HOST}:${(capture.address() as AddressInfo).port}`, token: secret, signal: stop.signal });
    cleanups.push(() => client.close());
    expect(await client.claim(claimBody())).toEqual({ kind: 'wait' });
    expect(seen).toHaveLength(2);
    expect(healthChecks).toBe(1);
    for (const { headers, raw } of seen) {
      expect(raw).not.toContain(secret);
      expect(headers.authorization).toBeUndefined();
      expect(headers[SIGNATURE_HEADERS.fetcherId]).toBe(FETCHER_ID);
      expect(headers[SIGNATURE_HEADERS.instance]).toBe(instance);
      expect(headers[SIGNATURE_HEADERS.contentDigest]).toMatch(/^sha-256=:[A-Za-z0-9+/]{43}=:$/);
      expect(headers['content-length']).toBe(String(Buffer.byteLength(raw.slice(raw.lastIndexOf('\n') + 1))));
      expect(headers[SIGNATURE_HEADERS.signature]).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
    expect(seen[0]!.headers[SIGNATURE_HEADERS.nonce]).not.toBe(seen[1]!.headers[SIGNATURE_HEADERS.nonce]);
    expect(seen[0]!.headers[SIGNATURE_HEADERS.signature]).not.toBe(seen[1]!.headers[SIGNATURE_HEADERS.signature]);
  });
});

describe('status for fetchers and petrel crawl', () => {
  it('reads the status and follows its stream with signed requests (the fetcher client)', async () => {
    const { server } = await queueServer();
    const stop = new AbortController();
    const client = new QueueClient({ serverUrl: server.url, token: server.token, signal: stop.signal });
    cleanups.push(() => client.close());
    expect(await client.status('status-reader')).toMatchObject({ state: 'running', frontierSize: 1 });
    let first = '';
    for await (const chunk of await client.openStatusStream('status-reader', stop.signal)) {
      first += chunk.toString();
      if (first.includes('\n\n')) break;
    }
    expect(first).toMatch(/^event: status\ndata: \{/);
    stop.abort();
  });

  it('shows petrel crawl\'s progress, which follows the status stream with a signed request', async () => {
    assertBuilt();
    const dir = tempDir('fleet-progress');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    // Nothing listens at the seed: its robots.txt fails once and the host is given up, so the crawl ends at once.
    const child = startPetrel(['crawl', '--seed', SEED, '--data', join(dir, 'data'), '--fetchers', '1', '--robots-attempts', '1']);
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const finished = await child.output;
    clearTimeout(timer);
    // Nothing could be fetched: exit status 3 (cli/exit-codes.ts), after a normal end.
    expect(finished.code, finished.stderr).toBe(3);
    expect(finished.stderr).toMatch(/^petrel crawl: finished, but nothing could be fetched/m);
    // The first status event is printed at once (without a terminal, then every 5 s).
    expect(finished.stderr).toMatch(/^\[\d+\.\ds\] fetched 0 \(/m);
  });
});

const hasOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!hasOpenssl)('HTTPS between fetchers and the queue server', () => {
  let tlsDir: string;
  let tls: { cert: Buffer; key: Buffer };
  let certFile: string;

  beforeAll(() => {
    assertBuilt();
    tlsDir = tempDir('fleet-tls');
    certFile = join(tlsDir, 'cert.pem');
    const made = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(tlsDir, 'key.pem'), '-out', certFile,
      '-days', '2', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=IP:${HOST}`,
    ], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`openssl could not make a test certificate: ${made.stderr}`);
    tls = { cert: readFileSync(certFile), key: readFileSync(join(tlsDir, 'key.pem')) };
    return () => rmSync(tlsDir, { recursive: true, force: true });
  });

  it('serves HTTPS to a fetcher that verifies it with --ca, and the fetcher claims work', async () => {
    const { server } = await queueServer({ tls });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const fetcher = startPetrel(['fetcher', '--server', server.url, '--token-file', server.tokenFile, '--ca', certFile, '--name', 'tls-fetcher', '--concurrency', '2']);
    cleanups.push(async () => {
      if (fetcher.exitCode === null && fetcher.signalCode === null) fetcher.kill('SIGKILL');
      await fetcher.output;
    });
    // It claimed the robots.txt of the seed's host, fetched it (nothing listens there) and reported back.
    const deadline = Date.now() + 20_000;
    while (server.service.status().robotsRequests < 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const status = server.service.status();
    expect(status.robotsRequests).toBeGreaterThanOrEqual(1);
    expect(status.fetchers.map((f) => f.name)).toContain('tls-fetcher');
    fetcher.kill('SIGTERM');
    const finished = await fetcher.output;
    expect(finished.stderr).not.toMatch(/TLS|certificate/);

    // The admin page over TLS: a Secure cookie would follow, and browsers are told to stay on HTTPS.
    const login = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      httpsRequest(`${server.url}/admin/login`, { ca: tls.cert }, (res) => {
        res.resume();
        resolve(res.headers);
      }).on('error', reject).end();
    });
    expect(login['strict-transport-security']).toBe('max-age=31536000');
  });

  it('refuses a queue server whose certificate it cannot verify (no --ca), with a clear error', async () => {
    const { server } = await queueServer({ tls });
    const fetcher = startPetrel(['fetcher', '--server', server.url, '--token-file', server.tokenFile, '--name', 'untrusting']);
    const timer = setTimeout(() => fetcher.kill('SIGKILL'), 20_000);
    const finished = await fetcher.output;
    clearTimeout(timer);
    expect(finished.code).toBe(1);
    expect(finished.stderr).toContain('TLS certificate cannot be verified');
    expect(finished.stderr).toContain('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(finished.stderr).toContain('--ca FILE');
    expect(server.service.status().fetchers).toEqual([]);
  });

  it('serves HTTPS from petrel start --tls-cert --tls-key, its local fetcher trusting the certificate', async () => {
    const dir = tempDir('fleet-tls-start');
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const child = startPetrel(['start', '--data', join(dir, 'data'), '--fetchers', '1', '--port', '0', '--tls-cert', certFile, '--tls-key', join(tlsDir, 'key.pem'), '--seed', SEED]);
    cleanups.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await child.output;
    });
    const exit = child.output.then((finished): never => {
      throw new Error(`petrel start exited (${finished.code ?? finished.signal}): ${finished.stderr.slice(0, 2000)}`);
    });
    const started = await Promise.race([waitForEvent(child, 'started'), exit]);
    expect(String(started.url)).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const adminToken = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const status = () =>
      new Promise<{ fetchers: { name: string }[]; robotsRequests: number }>((resolve, reject) => {
        httpsRequest(`${String(started.url)}${ROUTES.status}`, { ca: tls.cert, headers: { authorization: `Bearer ${adminToken}` } }, (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve(JSON.parse(text) as { fetchers: { name: string }[]; robotsRequests: number }));
        }).on('error', reject).end();
      });
    await expect
      .poll(
        async () => {
          const now = await status();
          return { names: now.fetchers.map((f) => f.name), claimed: now.robotsRequests >= 1 };
        },
        { timeout: 15_000 },
      )
      .toEqual({ names: ['local-1'], claimed: true });
    child.kill('SIGTERM');
    const finished = await child.output;
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stderr).toContain(`--ca ${certFile}`);
  });

  it('refuses --ca with a plain http:// queue server', async () => {
    // A token of the form the queue server writes (the fetcher checks it first).
    const tokenFile = join(dirname(certFile), 'some.token');
    writeFileSync(tokenFile, `${'t'.repeat(43)}\n`, { mode: 0o600 });
    const finished = await startPetrel(['fetcher', '--server', 'http://127.0.0.1:9', '--token-file', tokenFile, '--ca', certFile]).output;
    expect(finished.code).toBe(2);
    expect(finished.stderr).toContain('--ca verifies an https:// queue server');
  });
});
