/**
 * The queue server's doors tried as an attacker would, against real `petrel queue-server` processes
 * (and real fetcher processes crawling the test web where the point is that they keep working):
 *  - a signed request captured before a restart is refused after it (the nonce memory is gone, the
 *    instance it was signed for is too);
 *  - 300 logins that send their headers at once and their bodies two seconds later get at most five
 *    guesses evaluated, and the right token among them does not clear the count;
 *  - 30 connections posting forged 60 MiB bodies over and over cost the queue server no body memory
 *    (refused from the headers, connection closed) while two fetchers crawl on;
 *  - a signed 40 MB body of nested or of countless tiny arrays is refused before JSON.parse builds it;
 *  - names of Object.prototype under /admin/static/vendor/ are a plain 404 with nothing on stderr, and
 *    every 413 names the limit of its route.
 * Memory is read from /proc/PID/status (VmHWM, the peak resident set since the process started).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QueueClient } from '../../fetcher/queue-client.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { LIMITS, PROTOCOL_VERSION, ROUTES, type ClaimRequest, type ItemResult, type Schedule } from '../../shared/protocol.js';
import { newNonce, SIGNATURE_HEADERS } from '../../shared/request-signing.js';
import { JSON_BOUNDS } from '../../queue-server/api/bounded-json.js';
import { SIGNED_BODY_LIMITS } from '../../queue-server/app.js';
import { CONTROL_BODY_BYTES, LOGIN_BODY_BYTES } from '../../queue-server/admin/routes.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { instanceOf, signatureFor } from '../support/signed-request.js';

const HOST = '127.0.0.1';
/** Nothing listens on the discard port: a seed whose robots.txt is what a claim gets first. */
const SEED = 'http://127.0.0.1:9/start.html';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };
const MIB = 1024 * 1024;

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  killStartedPetrels();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => assertBuilt());

interface QueueServerProcess {
  readonly child: ReturnType<typeof startPetrel>;
  readonly url: string;
  readonly pid: number;
  readonly token: string;
  readonly adminToken: string;
  readonly tokenFile: string;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
}

async function startQueueServerProcess(dataDir: string, args: string[]): Promise<QueueServerProcess> {
  const child = startPetrel(['queue-server', '--data', dataDir, '--host', HOST, ...args]);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = child.output.then((finished): never => {
    throw new Error(`queue server exited (${finished.code ?? finished.signal}): ${finished.stderr.slice(0, 2000)}`);
  });
  const listening = await Promise.race([waitForEvent(child, 'listening'), exited]);
  // The line for people follows the event on stdout: wait for it, so that stderr holds nothing unexpected later.
  await Promise.race([
    new Promise<void>((resolve) => {
      const check = () => (stderr.includes('listening on') ? resolve() : child.stderr!.once('data', () => setImmediate(check)));
      check();
    }),
    exited,
  ]);
  exited.catch(() => undefined);
  const tokenFile = String(listening.tokenFile);
  return {
    child,
    url: String(listening.url),
    pid: Number(listening.pid),
    token: readFileSync(tokenFile, 'utf8').trim(),
    adminToken: readFileSync(String(listening.adminTokenFile), 'utf8').trim(),
    tokenFile,
    stderr: () => stderr,
  };
}

function dataDir(prefix: string): string {
  const dir = tempDir(prefix);
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'data');
}

/** VmHWM of a live process, bytes (the peak of its resident set so far); null once it is gone. */
function peakRss(pid: number): number | null {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? null : Number(match[1]) * 1024;
  } catch {
    return null;
  }
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: { error?: { code: string; message: string } } & Record<string, unknown>;
}

/** Sends exactly these bytes with exactly these headers (what a captured request looks like). */
function send(base: string, path: string, headers: Record<string, string>, body: Buffer | null, method = 'POST'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { method, headers: body === null ? headers : { ...headers, 'Content-Length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as Answer['body'] }));
    });
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

/** A signed POST kept as headers and bytes, so that it can be sent again. */
function signedPost(secret: string, instance: string, path: string, payload: unknown, fetcherId: string) {
  const body = Buffer.from(JSON.stringify(payload));
  return { path, body, headers: signatureFor('POST', path, body, { secret, instance, fetcherId }) };
}

function claimBody(fetcherId: string): ClaimRequest {
  return { protocolVersion: PROTOCOL_VERSION, fetcherId, name: 'defences test', capacity: 4, waitMs: 0, stats: STATS };
}

function robotsResult(schedule: Schedule): ItemResult {
  const slot = schedule.slots[0]!;
  return { ...robotsResultFor(slot.items[0]!.url), slot: slot.slot };
}

function robotsResultFor(url: string): ItemResult {
  return {
    slot: 0, i: 0, url, fetchedAt: Date.now(), durationMs: 1, status: 404, error: null, contentType: null, bytes: 0, wireBytes: 0,
    truncated: false, redirectTo: null, retryAfterMs: null, signature: null, page: null, links: [], robotsTxt: null, index: null,
    cache: { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null },
  };
}

interface StatusFields {
  leasesOut: number;
  robotsRequests: number;
  fetchers: unknown[];
}

async function status(server: QueueServerProcess): Promise<StatusFields> {
  const answer = await send(server.url, ROUTES.status, { Authorization: `Bearer ${server.adminToken}` }, null, 'GET');
  expect(answer.status).toBe(200);
  return answer.body as unknown as StatusFields;
}

describe('replay after a restart', () => {
  it('refuses a claim and a results post captured before a restart of the queue server, and changes nothing', async () => {
    const dir = dataDir('defences-restart');
    const port = await freePort();
    const args = ['--port', String(port), '--seed', SEED, '--delay-ms', '0'];
    let server = await startQueueServerProcess(dir, args);
    const fetcherId = 'captured-fetcher';
    const before = await instanceOf(server.url);
    // Captured in flight: a claim, and the results post answering it; both accepted once.
    const claim = signedPost(server.token, before, ROUTES.claim, claimBody(fetcherId), fetcherId);
    const claimed = await send(server.url, claim.path, claim.headers, claim.body);
    expect(claimed.status).toBe(200);
    expect(claimed.body.kind).toBe('schedule');
    const schedule = claimed.body.schedule as Schedule;
    const results = signedPost(server.token, before, ROUTES.results, { protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId: schedule.id, results: [robotsResult(schedule)] }, fetcherId);
    expect((await send(server.url, results.path, results.headers, results.body)).body).toEqual({ applied: 1, duplicates: 0, leaseActive: true });

    // A crash and a restart on the same port and data directory, well within the five minutes a timestamp is good for.
    server.child.kill('SIGKILL');
    await server.child.output;
    server = await startQueueServerProcess(dir, args);
    const after = await instanceOf(server.url);
    expect(after).not.toBe(before);
    const statusBefore = await status(server);

    for (const captured of [claim, results]) {
      const replayed = await send(server.url, captured.path, captured.headers, captured.body);
      expect(replayed.status, captured.path).toBe(401);
      expect(replayed.body.error!.code, captured.path).toBe('unknown-instance');
      // The refusal names the new instance (not a secret): an honest fetcher signs its next attempt for it.
      expect((replayed.body.error as unknown as { instance: string }).instance).toBe(after);
    }
    const statusAfter = await status(server);
    expect(statusAfter.leasesOut).toBe(0);
    expect({ leasesOut: statusAfter.leasesOut, robotsRequests: statusAfter.robotsRequests, fetchers: statusAfter.fetchers.length }).toEqual({
      leasesOut: statusBefore.leasesOut,
      robotsRequests: statusBefore.robotsRequests,
      fetchers: statusBefore.fetchers.length,
    });

    // The same claim signed anew for the new instance is served.
    const fresh = signedPost(server.token, after, ROUTES.claim, claimBody(fetcherId), fetcherId);
    const served = await send(server.url, fresh.path, fresh.headers, fresh.body);
    expect(served.status).toBe(200);
  });
});

describe('a fetcher across a restart', () => {
  it('signs anew for the restarted queue server, even a 20 MB results post whose refusal may be lost with its connection', async () => {
    const dir = dataDir('defences-client-restart');
    const port = await freePort();
    const args = ['--port', String(port), '--seed', SEED];
    let server = await startQueueServerProcess(dir, args);
    const retries: unknown[] = [];
    const stop = new AbortController();
    const client = new QueueClient({ serverUrl: server.url, token: server.token, signal: stop.signal, onRetry: (_what, _attempt, error) => retries.push(error) });
    cleanups.push(() => client.close());
    const fetcherId = 'restart-fetcher';
    expect(await client.heartbeat({ protocolVersion: PROTOCOL_VERSION, fetcherId, name: 'x', scheduleIds: [], stats: STATS })).toEqual({ unknownScheduleIds: [] });
    server.child.kill('SIGKILL');
    await server.child.output;
    server = await startQueueServerProcess(dir, args);
    // Two results of 5,000 links of 2,000 characters: 20 MB, refused unread (wrong instance) and the connection closed.
    const links = Array.from({ length: 5000 }, (_, i) => `http://127.0.0.1:9/${String(i).padStart(1990, 'x')}`);
    const result = (i: number): ItemResult => ({ ...robotsResultFor('http://127.0.0.1:9/robots.txt'), i, links });
    const answer = await client.results({ protocolVersion: PROTOCOL_VERSION, fetcherId, scheduleId: 'before-restart-1', results: [result(0), result(1)] });
    // Delivered and read (its lease is unknown to the new process, so nothing is applied).
    expect(answer).toMatchObject({ applied: 0, leaseActive: false });
    // At most one lost answer (an EPIPE while the refused body was still being sent), after which the
    // client asks for the new instance instead of signing for the old one again. How often the answer
    // is lost depends on timing (about half the time for 20 MB here), so this alone does not catch a
    // client that would sign for the old instance again; delivery is what it protects.
    expect(retries.length).toBeLessThanOrEqual(1);
  }, 60_000);
});

describe('the login limit', () => {
  it('evaluates at most five of 300 logins sent headers first and bodies two seconds later, and the right token among them does not clear the count', async () => {
    const server = await startQueueServerProcess(dataDir('defences-login'), ['--port', '0', '--seed', SEED]);
    const { port } = new URL(server.url);
    const origin = server.url;
    const wrongToken = `${server.adminToken[0] === 'A' ? 'B' : 'A'}${server.adminToken.slice(1)}`;
    const bodyOf = (token: string) => `token=${encodeURIComponent(token)}`;
    const COUNT = 300;

    /** One login: its status, once its answer's status line is in. */
    interface Login {
      readonly socket: Socket;
      readonly body: string;
      readonly answered: Promise<number>;
    }
    const open = (token: string): Promise<Login> =>
      new Promise((resolve, reject) => {
        const body = bodyOf(token);
        const socket = connect(Number(port), HOST);
        let head = '';
        const answered = new Promise<number>((done) => {
          socket.on('data', (chunk: Buffer) => {
            head += chunk.toString('latin1');
            const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
            if (match !== null) done(Number(match[1]));
          });
          socket.on('close', () => done(/^HTTP\/1\.1 (\d{3})/.exec(head) === null ? 0 : Number(/^HTTP\/1\.1 (\d{3})/.exec(head)![1])));
        });
        socket.on('error', () => undefined);
        socket.once('connect', () => {
          const headers = [
            'POST /admin/login HTTP/1.1',
            `Host: ${HOST}:${port}`,
            `Origin: ${origin}`,
            'Content-Type: application/x-www-form-urlencoded',
            `Content-Length: ${Buffer.byteLength(body)}`,
            'Connection: close',
            '',
            '',
          ].join('\r\n');
          socket.write(headers, (error) => (error ? reject(error) : resolve({ socket, body, answered })));
        });
      });
    // The right token first, so that it is among the attempts evaluated; then 299 wrong ones.
    const logins = [await open(server.adminToken)];
    await new Promise((resolve) => setTimeout(resolve, 100));
    logins.push(...(await Promise.all(Array.from({ length: COUNT - 1 }, () => open(wrongToken)))));
    // Every header section is in; the bodies follow two seconds later.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    for (const login of logins) if (!login.socket.destroyed) login.socket.write(login.body, () => undefined);
    const statuses = await Promise.all(logins.map((login) => login.answered));
    for (const login of logins) login.socket.destroy();

    const byStatus = Object.fromEntries(countBy(statuses, String));
    const evaluated = (byStatus['303'] ?? 0) + (byStatus['401'] ?? 0);
    expect(evaluated, JSON.stringify(byStatus)).toBeLessThanOrEqual(5);
    expect(byStatus['429'], JSON.stringify(byStatus)).toBe(COUNT - evaluated);
    expect(statuses[0], 'the right token, sent first').toBe(303);

    // Five failures a minute, all told: a right token gives back its own attempt, never the others'.
    let failuresAfter = 0;
    for (;;) {
      const answer = await new Promise<number>((resolve, reject) => {
        const req = httpRequest(`${server.url}/admin/login`, { method: 'POST', headers: { Origin: origin, 'Content-Type': 'application/x-www-form-urlencoded' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end(bodyOf(wrongToken));
      });
      if (answer !== 401) {
        expect(answer).toBe(429);
        break;
      }
      failuresAfter++;
      expect(failuresAfter).toBeLessThanOrEqual(5);
    }
    expect((byStatus['401'] ?? 0) + failuresAfter).toBe(5);
  });
});

describe('memory without the secret', () => {
  let web: TestWeb;
  beforeAll(async () => {
    web = await startTestWeb({ pagesPerHost: 60, hosts: 1, profile: 'bench' });
  });
  afterAll(async () => {
    await web?.close();
  });

  /** Peak resident set the queue server may reach: about twice what it measured here (130 MiB under the flood, 156 MiB for the nesting bodies), far below the 1.8 GB that 30 bodies of 60 MiB read into memory would take. */
  const RSS_BOUND = 256 * MIB;

  it(`keeps the queue server under ${RSS_BOUND / MIB} MiB while 30 connections post forged 60 MiB bodies, and two fetchers crawl on`, async () => {
    const main = web.hostByRole.main;
    const server = await startQueueServerProcess(dataDir('defences-flood'), ['--port', '0', '--once', '--seed', `${main}/index.html`, '--scope', 'host', '--delay-ms', '0']);
    const instance = await instanceOf(server.url);
    const { port } = new URL(server.url);
    const finished = waitForEvent(server.child, 'finished', 120_000);

    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, peakRss(server.pid) ?? 0);
    }, 100);
    cleanups.push(() => clearInterval(sampler));

    // The flood: each connection announces 60 MiB under fresh, well-formed but forged signature headers
    // for the right instance, then writes as fast as the socket takes it; again and again until the crawl ends.
    const FORGED_BYTES = 60 * MIB;
    const chunk = Buffer.alloc(MIB, 0x20);
    let flooding = true;
    const answers: number[] = [];
    const forgedPost = () =>
      new Promise<void>((resolve) => {
        const socket = connect(Number(port), HOST);
        let head = '';
        let written = 0;
        const finish = () => {
          socket.destroy();
          const match = /^HTTP\/1\.1 (\d{3})/.exec(head);
          if (match !== null) answers.push(Number(match[1]));
          resolve();
        };
        socket.on('data', (data: Buffer) => (head += data.toString('latin1')));
        socket.on('error', finish);
        socket.on('close', finish);
        socket.once('connect', () => {
          socket.write(
            [
              `POST ${ROUTES.results} HTTP/1.1`,
              `Host: ${HOST}:${port}`,
              'Content-Type: application/json',
              `Content-Length: ${FORGED_BYTES}`,
              `Content-Digest: sha-256=:${Buffer.alloc(32, 7).toString('base64')}:`,
              `${SIGNATURE_HEADERS.timestamp}: ${Date.now()}`,
              `${SIGNATURE_HEADERS.nonce}: ${newNonce()}`,
              `${SIGNATURE_HEADERS.fetcherId}: forger`,
              `${SIGNATURE_HEADERS.instance}: ${instance}`,
              `${SIGNATURE_HEADERS.signature}: ${randomBytes(32).toString('base64url')}`,
              '',
              '',
            ].join('\r\n'),
          );
          const pump = () => {
            while (written < FORGED_BYTES && !socket.destroyed) {
              written += chunk.length;
              if (!socket.write(chunk)) return void socket.once('drain', pump);
            }
          };
          pump();
        });
      });
    const attacker = async () => {
      while (flooding) await forgedPost();
    };
    const attackers = Array.from({ length: 30 }, () => attacker());

    const fetchers = ['one', 'two'].map((name) =>
      startPetrel(['fetcher', '--server', server.url, '--token-file', server.tokenFile, '--name', name, '--concurrency', '4']),
    );
    const done = await finished;
    flooding = false;
    await Promise.all(attackers);
    clearInterval(sampler);
    const fetcherExits = await Promise.all(fetchers.map((fetcher) => fetcher.output));

    // The crawl completed meanwhile: every page of the site fetched once, both fetchers exited cleanly.
    for (const exit of fetcherExits) expect(exit.code, exit.stderr).toBe(0);
    const requested = countBy(pageRequests(web.log), urlOf);
    expect(requested.size).toBe(60);
    expect((done.summary as { pagesFetched: number }).pagesFetched).toBe(60);
    // The forged posts were answered (401 from their headers), not merely failing to connect.
    expect(answers.length).toBeGreaterThanOrEqual(30);
    expect(new Set(answers)).toEqual(new Set([401]));
    expect(peak).toBeGreaterThan(0);
    if (process.env.PETREL_PRINT_PEAKS === '1') console.log(`flood: queue server VmHWM ${Math.round(peak / MIB)} MiB, ${answers.length} forged posts answered`);
    expect(peak, `queue server VmHWM ${Math.round(peak / MIB)} MiB`).toBeLessThan(RSS_BOUND);
  }, 150_000);

  it(`refuses a signed 40 MB body of nested arrays, and one of 13 million empty ones, before parsing, staying under ${RSS_BOUND / MIB} MiB`, async () => {
    const server = await startQueueServerProcess(dataDir('defences-nesting'), ['--port', '0', '--seed', SEED]);
    const instance = await instanceOf(server.url);
    const half = 20 * 1000 * 1000;
    const nested = Buffer.alloc(2 * half);
    nested.fill(0x5b, 0, half);
    nested.fill(0x5d, half);
    // [[],[],...,[]]: 13 million empty arrays.
    const arrays = 13_000_000;
    const flat = Buffer.alloc(3 * arrays + 1);
    flat[0] = 0x5b;
    flat.fill('[],', 1);
    flat[flat.length - 1] = 0x5d;
    for (const [what, body, problem] of [['nested', nested, `deeper than ${JSON_BOUNDS.maxDepth} levels`], ['flat', flat, `more than ${JSON_BOUNDS.maxTokens} JSON values`]] as const) {
      const headers = signatureFor('POST', ROUTES.results, body, { secret: server.token, instance, fetcherId: 'nester' });
      const answer = await send(server.url, ROUTES.results, headers, body);
      expect(answer.status, what).toBe(413);
      expect(answer.body.error!.code, what).toBe('json-too-complex');
      expect(answer.body.error!.message, what).toContain(problem);
    }
    const peak = peakRss(server.pid)!;
    if (process.env.PETREL_PRINT_PEAKS === '1') console.log(`nesting: queue server VmHWM ${Math.round(peak / MIB)} MiB`);
    expect(peak, `queue server VmHWM ${Math.round(peak / MIB)} MiB`).toBeLessThan(RSS_BOUND);
  });
});

describe('small doors', () => {
  it('answers names of Object.prototype under /admin/static/vendor/ with a plain 404, without login, writing nothing to stderr', async () => {
    const server = await startQueueServerProcess(dataDir('defences-vendor'), ['--port', '0', '--seed', SEED]);
    const stderrBefore = server.stderr();
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const answer = await send(server.url, `/admin/static/vendor/${name}`, {}, null, 'GET');
      expect(answer.status, name).toBe(404);
      expect(answer.body.error!.code, name).toBe('not-found');
    }
    // The real vendor file is still served.
    const css = await new Promise<number>((resolve, reject) => {
      httpRequest(`${server.url}/admin/static/vendor/uplot.css`, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject).end();
    });
    expect(css).toBe(200);
    // Give a late stack trace time to arrive before looking.
    await send(server.url, '/healthz', {}, null, 'GET');
    expect(server.stderr()).toBe(stderrBefore);
  });

  it('states the real limit of its route in every 413', async () => {
    const server = await startQueueServerProcess(dataDir('defences-413'), ['--port', '0', '--seed', SEED]);
    const instance = await instanceOf(server.url);
    const over = (limit: number) => Buffer.alloc(limit + 1, 0x20);
    const cases: [string, string, Record<string, string>, Buffer, number][] = [
      ['login form', '/admin/login', { Origin: server.url, 'Content-Type': 'application/x-www-form-urlencoded' }, Buffer.from(`token=${'x'.repeat(LOGIN_BODY_BYTES)}`), LOGIN_BODY_BYTES],
      ['login JSON', '/admin/login', { Origin: server.url, 'Content-Type': 'application/json' }, Buffer.from(JSON.stringify({ token: 'x'.repeat(LOGIN_BODY_BYTES) })), LOGIN_BODY_BYTES],
      ['control post', '/api/control/inject', { Authorization: `Bearer ${server.adminToken}`, 'Content-Type': 'application/json' }, over(CONTROL_BODY_BYTES), CONTROL_BODY_BYTES],
    ];
    for (const [route, limit] of [[ROUTES.claim, SIGNED_BODY_LIMITS.claim], [ROUTES.heartbeat, SIGNED_BODY_LIMITS.heartbeat]] as const) {
      const body = over(limit);
      cases.push([route, route, signatureFor('POST', route, body, { secret: server.token, instance }), body, limit]);
    }
    for (const [what, path, headers, body, limit] of cases) {
      const answer = await send(server.url, path, headers, body);
      expect(answer.status, what).toBe(413);
      expect(answer.body.error!.code, what).toBe('body-too-large');
      expect(answer.body.error!.message, what).toContain(`larger than ${limit} bytes`);
    }
    // The largest route's, announced but never sent.
    const announced = await new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(`${server.url}${ROUTES.results}`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(LIMITS.requestBodyBytes + 1) } }, (res) => {
        let text = '';
        res.on('data', (data: Buffer) => (text += data.toString()));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as Answer['body'] });
        });
      });
      req.on('error', (error) => ((error as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(error)));
      req.write('{');
    });
    expect(announced.status).toBe(413);
    expect(announced.body.error!.message).toContain(`larger than ${LIMITS.requestBodyBytes} bytes`);
  });
});
