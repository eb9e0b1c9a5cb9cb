/**
 * The admin page's HTTP side (queue-server/admin/) and the bearer-token control API, driven through
 * supertest against a real queue server (startQueueServer on port 0, temporary data directory).
 * What is protected: only the admin token logs in; the session cookie is HttpOnly and SameSite=Strict;
 * every page API needs a live session; every POST needs the same origin and the session's CSRF token;
 * logout ends the session and its live stream; bad input gets a 400 naming the field and changes
 * nothing; starting a crawl while one runs is a 409; every admin response carries the security headers;
 * sessions end at their idle time and at their maximum age; failed logins are rate limited per
 * address, counted before the body is read; wrong bearer tokens are counted apart and never lock out
 * the right one.
 */
import { readFileSync, rmSync } from 'node:fs';
import { get as httpGet, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import request from 'supertest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientKey, LoginLimiter } from '../../queue-server/auth/login-limiter.js';
import { SessionStore } from '../../queue-server/admin/sessions.js';
import { CONTROL_ACTIONS } from '../../queue-server/api/crawl-control.js';
import { startQueueServer, type RunningQueueServer } from '../../queue-server/daemon.js';
import { CONTROL_ROUTES, createApp } from '../../queue-server/app.js';
import { tempDir } from '../support/petrel-process.js';

const HOST = '127.0.0.1';
const SEED = 'http://127.0.0.1:9/start.html';

interface Harness {
  server: RunningQueueServer;
  app: ReturnType<typeof createApp>;
  adminToken: string;
  fetcherToken: string;
  /** The Origin a browser on the admin page sends (supertest's Host header is 127.0.0.1:<port>). */
  origin: string;
}

let h: Harness;
let dir: string;
const cleanups: (() => void | Promise<void>)[] = [];

beforeEach(async () => {
  dir = tempDir('admin-api');
  // No fetchers: the seed stays queued, so the crawl is `running` until paused or stopped.
  const server = await startQueueServer({ dataDir: join(dir, 'data'), host: HOST, port: 0, crawl: { seeds: [SEED], delayMs: 250, hostConcurrency: 2, bloomCapacity: 1000 } });
  const adminToken = readFileSync(server.adminTokenFile, 'utf8').trim();
  const app = createApp({ service: server.service, token: server.token, adminToken });
  const listening: Server = await new Promise((resolve) => {
    const s = app.listen(0, HOST, () => resolve(s));
  });
  const origin = `http://${HOST}:${(listening.address() as AddressInfo).port}`;
  cleanups.push(async () => {
    listening.closeAllConnections();
    await new Promise<void>((resolve) => listening.close(() => resolve()));
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });
  h = { server, app: listening as unknown as ReturnType<typeof createApp>, adminToken, fetcherToken: server.token, origin };
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Logs in through the form as a browser would; returns the cookie header and the CSRF token. */
async function login(): Promise<{ cookie: string; csrf: string }> {
  const res = await request(h.app).post('/admin/login').set('Origin', h.origin).type('form').send({ token: h.adminToken }).expect(303);
  expect(res.headers.location).toBe('/admin');
  const cookie = sessionCookieOf(res);
  const session = await request(h.app).get('/admin/api/session').set('Cookie', cookie).expect(200);
  return { cookie, csrf: session.body.csrfToken as string };
}

function sessionCookieOf(res: request.Response): string {
  const setCookie = res.headers['set-cookie'] as unknown as string[] | undefined;
  const cookie = setCookie?.find((line) => line.startsWith('petrel_admin='));
  if (cookie === undefined) throw new Error('no session cookie set');
  return cookie.split(';')[0]!;
}

/** The same token with its first character changed: wrong, and as long as the right one. */
function otherFirstChar(token: string): string {
  return `${token[0] === 'A' ? 'B' : 'A'}${token.slice(1)}`;
}

function adminPost(path: string, auth: { cookie: string; csrf: string }, body: unknown = {}) {
  return request(h.app).post(path).set('Origin', h.origin).set('Cookie', auth.cookie).set('X-CSRF-Token', auth.csrf).send(body as object);
}

function expectSecurityHeaders(res: request.Response): void {
  const csp = res.headers['content-security-policy'];
  expect(csp).toContain("default-src 'self'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
  expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
  expect(res.headers['cross-origin-embedder-policy']).toBe('require-corp');
  expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
  expect(res.headers['x-permitted-cross-domain-policies']).toBe('none');
  // Plain HTTP here: Strict-Transport-Security is only sent over TLS (test/integration/fleet-auth.test.ts).
  expect(res.headers['strict-transport-security']).toBeUndefined();
}

describe('login and sessions', () => {
  it('sends a browser without a session from /admin to the login form', async () => {
    const res = await request(h.app).get('/admin').expect(303);
    expect(res.headers.location).toBe('/admin/login');
    const form = await request(h.app).get('/admin/login').expect(200);
    expect(form.headers['content-type']).toMatch(/^text\/html/);
    expect(form.text).toContain('<form method="post" action="/admin/login">');
    expect(form.text).not.toMatch(/<script/i);
  });

  it('logs in with the admin token: an HttpOnly, SameSite=Strict session cookie, then the page', async () => {
    const res = await request(h.app).post('/admin/login').set('Origin', h.origin).type('form').send({ token: h.adminToken }).expect(303);
    const line = (res.headers['set-cookie'] as unknown as string[]).find((l) => l.startsWith('petrel_admin='))!;
    expect(line).toMatch(/^petrel_admin=[A-Za-z0-9_-]{43}; /);
    expect(line).toContain('HttpOnly');
    expect(line).toContain('SameSite=Strict');
    expect(line).toContain('Path=/admin');
    expect(line).not.toContain(h.adminToken);
    const page = await request(h.app).get('/admin').set('Cookie', line.split(';')[0]!).expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<script type="module" src="/admin/static/admin.js"></script>');
    // No inline script and no inline style: every <script> has a src, no style attribute or element.
    expect(page.text.match(/<script\b[^>]*>/g)!.every((tag) => /\ssrc="/.test(tag))).toBe(true);
    expect(page.text).not.toMatch(/\sstyle=|<style/i);
    expectSecurityHeaders(page);
  });

  it('logs in a JSON client and answers its CSRF token', async () => {
    const res = await request(h.app).post('/admin/login').set('Origin', h.origin).send({ token: h.adminToken }).expect(200);
    expect(res.body.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const session = await request(h.app).get('/admin/api/session').set('Cookie', sessionCookieOf(res)).expect(200);
    expect(session.body.csrfToken).toBe(res.body.csrfToken);
  });

  it.each([
    ['a wrong token', { token: 'not-the-admin-token-0123456789' }],
    ['the fetcher token', 'fetcher'],
    ['an empty token', { token: '' }],
    ['no token', {}],
  ])('refuses a login with %s: 401, no cookie', async (_name, body) => {
    const sent = body === 'fetcher' ? { token: h.fetcherToken } : body;
    const res = await request(h.app).post('/admin/login').set('Origin', h.origin).type('form').send(sent).expect(401);
    expect(res.headers['set-cookie']).toBeUndefined();
    expect(res.text).toContain('That is not the admin token');
    expectSecurityHeaders(res);
    const json = await request(h.app).post('/admin/login').set('Origin', h.origin).send(sent).expect(401);
    expect(json.body.error.code).toBe('wrong-token');
  });

  it('refuses a login posted from another origin, or with no origin at all', async () => {
    const cross = await request(h.app).post('/admin/login').set('Origin', 'https://evil.example').type('form').send({ token: h.adminToken }).expect(403);
    expect(cross.body.error.code).toBe('cross-origin');
    expect(cross.headers['set-cookie']).toBeUndefined();
    const none = await request(h.app).post('/admin/login').type('form').send({ token: h.adminToken }).expect(403);
    expect(none.body.error.code).toBe('cross-origin');
    const nullOrigin = await request(h.app).post('/admin/login').set('Origin', 'null').type('form').send({ token: h.adminToken }).expect(403);
    expect(nullOrigin.body.error.code).toBe('cross-origin');
    const crossSite = await request(h.app).post('/admin/login').set('Origin', 'null').set('Sec-Fetch-Site', 'cross-site').type('form').send({ token: h.adminToken }).expect(403);
    expect(crossSite.body.error.code).toBe('cross-origin');
    // A form on a no-referrer page posts Origin: null; Sec-Fetch-Site (browsers set it, scripts cannot) decides.
    await request(h.app).post('/admin/login').set('Origin', 'null').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token: h.adminToken }).expect(303);
    await request(h.app).post('/admin/login').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token: h.adminToken }).expect(303);
    // A foreign Origin is refused whatever Sec-Fetch-Site claims.
    await request(h.app).post('/admin/login').set('Origin', 'https://evil.example').set('Sec-Fetch-Site', 'same-origin').type('form').send({ token: h.adminToken }).expect(403);
  });

  it.each([['/admin/api/status'], ['/admin/api/session'], ['/admin/api/stream'], ['/admin/api/history']])('refuses GET %s without a live session: 401 no-session', async (path) => {
    const none = await request(h.app).get(path).expect(401);
    expect(none.body.error.code).toBe('no-session');
    expectSecurityHeaders(none);
    const forged = await request(h.app).get(path).set('Cookie', `petrel_admin=${'A'.repeat(43)}`).expect(401);
    expect(forged.body.error.code).toBe('no-session');
    // The admin bearer token is for the /api routes, not a session.
    await request(h.app).get(path).set('Authorization', `Bearer ${h.adminToken}`).expect(401);
  });

  it('serves the status to a session, with the admin page extras', async () => {
    const auth = await login();
    const res = await request(h.app).get('/admin/api/status').set('Cookie', auth.cookie).expect(200);
    expect(res.body).toMatchObject({ displayState: 'running', control: 'active', frontierSize: 1, hosts: { active: 0, waiting: 1, busiest: [] } });
    expect(typeof res.body.serverNow).toBe('number');
    expect(res.body.config.seeds).toEqual([SEED]);
    expectSecurityHeaders(res);
    const history = await request(h.app).get('/admin/api/history').set('Cookie', auth.cookie).expect(200);
    expect(history.body.pagesFetched).toEqual([[expect.any(Number), 0]]);
  });

  it('logging in again replaces the browser\'s earlier session', async () => {
    const first = await login();
    const again = await request(h.app).post('/admin/login').set('Origin', h.origin).set('Cookie', first.cookie).type('form').send({ token: h.adminToken }).expect(303);
    const second = sessionCookieOf(again);
    expect(second).not.toBe(first.cookie);
    await request(h.app).get('/admin/api/status').set('Cookie', first.cookie).expect(401);
    await request(h.app).get('/admin/api/status').set('Cookie', second).expect(200);
  });

  it('logout ends the session: the cookie no longer works, and the cookie is cleared', async () => {
    const auth = await login();
    const refused = await request(h.app).post('/admin/logout').set('Origin', h.origin).set('Cookie', auth.cookie).expect(403);
    expect(refused.body.error.code).toBe('csrf');
    const res = await adminPost('/admin/logout', auth).expect(200);
    expect((res.headers['set-cookie'] as unknown as string[])[0]).toMatch(/^petrel_admin=; .*Max-Age=0/);
    await request(h.app).get('/admin/api/status').set('Cookie', auth.cookie).expect(401);
    await request(h.app).get('/admin').set('Cookie', auth.cookie).expect(303);
    const control = await adminPost('/admin/api/pause', auth).expect(401);
    expect(control.body.error.code).toBe('no-session');
    expect(h.server.service.displayState()).toBe('running');
  });

  it('streams the status to a session as server-sent events, and ends the stream at logout', async () => {
    const auth = await login();
    const response: IncomingMessage = await new Promise((resolve, reject) => {
      httpGet(`${h.origin}/admin/api/stream`, { headers: { Cookie: auth.cookie } }, resolve).on('error', reject);
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/event-stream');
    expect(response.headers['content-security-policy']).toContain("default-src 'self'");
    let text = '';
    const ended = new Promise<void>((resolve) => response.on('end', resolve));
    response.setEncoding('utf8');
    const firstStatus = new Promise<Record<string, unknown>>((resolve) => {
      response.on('data', (chunk: string) => {
        text += chunk;
        const match = /event: status\ndata: (.*)\n\n/.exec(text);
        if (match !== null) resolve(JSON.parse(match[1]!));
      });
    });
    expect(await firstStatus).toMatchObject({ displayState: 'running', frontierSize: 1 });
    expect(text.startsWith('event: status\n')).toBe(true);
    await adminPost('/admin/logout', auth).expect(200);
    // The next change would be written to a logged-out browser: the stream ends instead.
    h.server.service.pause();
    await ended;
  });
});

describe('session store', () => {
  it('forgets a session unused for its idle time, and keeps one in use', () => {
    const store = new SessionStore({ idleMs: 1000 });
    const a = store.create(0);
    const b = store.create(0);
    expect(store.use(a.cookieValue, 900)).toBe(a.session);
    expect(store.use(a.cookieValue, 1800)).toBe(a.session);
    expect(store.use(b.cookieValue, 1800)).toBeNull();
    expect(store.peek(a.cookieValue, 2799)).toBe(a.session);
    expect(store.peek(a.cookieValue, 2800)).toBeNull();
    expect(store.size).toBe(0);
  });

  it('holds at most maxSessions, evicting the least recently used', () => {
    const store = new SessionStore({ idleMs: 10_000, maxSessions: 3 });
    const sessions = [store.create(0), store.create(1), store.create(2)];
    store.use(sessions[0]!.cookieValue, 3);
    const fourth = store.create(4);
    expect(store.size).toBe(3);
    expect(store.peek(sessions[1]!.cookieValue, 5)).toBeNull();
    for (const kept of [sessions[0]!, sessions[2]!, fourth]) expect(store.peek(kept.cookieValue, 5)).not.toBeNull();
  });

  it('ends a session at its maximum age even while it is in use', () => {
    const store = new SessionStore({ idleMs: 1000, maxAgeMs: 5000 });
    const a = store.create(0);
    for (let now = 500; now < 5000; now += 500) expect(store.use(a.cookieValue, now)).toBe(a.session);
    expect(store.use(a.cookieValue, 5000)).toBeNull();
    expect(store.size).toBe(0);
  });

  it('refuses malformed cookie values and gives every session its own CSRF token', () => {
    const store = new SessionStore();
    const a = store.create(0);
    const b = store.create(0);
    expect(a.session.csrfToken).not.toBe(b.session.csrfToken);
    expect(a.cookieValue).not.toBe(a.session.csrfToken);
    for (const bad of [undefined, '', 'x', `${a.cookieValue}x`, a.cookieValue.slice(1)]) expect(store.use(bad, 1)).toBeNull();
    expect(store.delete(a.cookieValue)).toBe(true);
    expect(store.use(a.cookieValue, 1)).toBeNull();
  });
});

describe('admin control routes (session and CSRF)', () => {
  const bodies: Record<(typeof CONTROL_ACTIONS)[number], object> = {
    pause: {},
    resume: {},
    stop: {},
    inject: { urls: ['http://127.0.0.1:9/injected.html'] },
    crawl: { seeds: ['http://127.0.0.1:9/other.html'] },
  };

  it.each(CONTROL_ACTIONS)('refuses POST /admin/api/%s without the CSRF token, with a wrong one, or with another session\'s', async (action) => {
    const auth = await login();
    const other = await login();
    const before = h.server.service.status();
    const missing = await request(h.app).post(`/admin/api/${action}`).set('Origin', h.origin).set('Cookie', auth.cookie).send(bodies[action]).expect(403);
    expect(missing.body.error.code).toBe('csrf');
    expect((await adminPost(`/admin/api/${action}`, { ...auth, csrf: otherFirstChar(auth.csrf) }, bodies[action]).expect(403)).body.error.code).toBe('csrf');
    expect((await adminPost(`/admin/api/${action}`, { ...auth, csrf: other.csrf }, bodies[action]).expect(403)).body.error.code).toBe('csrf');
    expect((await adminPost(`/admin/api/${action}`, { ...auth, csrf: '' }, bodies[action]).expect(403)).body.error.code).toBe('csrf');
    expect(h.server.service.status().control).toBe(before.control);
    expect(h.server.service.status().frontierSize).toBe(before.frontierSize);
  });

  it.each(CONTROL_ACTIONS)('refuses POST /admin/api/%s from another origin even with session and CSRF token', async (action) => {
    const auth = await login();
    const res = await request(h.app).post(`/admin/api/${action}`).set('Origin', 'http://127.0.0.1:1').set('Cookie', auth.cookie).set('X-CSRF-Token', auth.csrf).send(bodies[action]).expect(403);
    expect(res.body.error.code).toBe('cross-origin');
    const sameSiteOnly = await request(h.app).post(`/admin/api/${action}`).set('Sec-Fetch-Site', 'same-site').set('Cookie', auth.cookie).set('X-CSRF-Token', auth.csrf).send(bodies[action]).expect(403);
    expect(sameSiteOnly.body.error.code).toBe('cross-origin');
    expect(h.server.service.displayState()).toBe('running');
  });

  it('pauses, resumes, injects, stops and starts a new crawl', async () => {
    const auth = await login();
    expect((await adminPost('/admin/api/pause', auth).expect(200)).body).toEqual({ state: 'paused' });
    expect(h.server.service.status().control).toBe('paused');
    expect((await adminPost('/admin/api/resume', auth).expect(200)).body).toEqual({ state: 'running' });
    const injected = await adminPost('/admin/api/inject', auth, { urls: ['http://127.0.0.1:9/a.html', 'mailto:x@example.org'] }).expect(200);
    expect(injected.body).toEqual({ state: 'running', admitted: 1, rejected: [{ url: 'mailto:x@example.org', code: expect.any(String), reason: expect.stringContaining('not a crawlable') }] });
    expect(h.server.service.status().frontierSize).toBe(2);
    expect((await adminPost('/admin/api/stop', auth).expect(200)).body).toEqual({ state: 'stopped', dropped: 2 });
    const started = await adminPost('/admin/api/crawl', auth, { seeds: ['http://127.0.0.1:9/new.html'], scope: 'prefix', maxDepth: 2, maxPages: 10, order: 'opic' }).expect(200);
    // The new seed and the two URLs the stopped crawl left unfetched (they are in its scope) are queued.
    expect(started.body).toEqual({ state: 'running', queued: 3, waiting: 0 });
    const { config } = h.server.service.status();
    expect(config).toMatchObject({ seeds: ['http://127.0.0.1:9/new.html'], scope: 'prefix', maxDepth: 2, maxPages: 10, order: 'opic' });
    // Settings left out keep the queue server's values, not the schema defaults.
    expect(config).toMatchObject({ delayMs: 250, hostConcurrency: 2 });
  });

  it('injects only URLs in the crawl\'s scope, says why it refuses the others, and queues the accepted ones without making them seeds', async () => {
    const auth = await login();
    const queuedBefore = h.server.service.status().frontierSize;
    const outside = 'http://127.0.0.2:9/elsewhere.html';
    const answer = await adminPost('/admin/api/inject', auth, { urls: [outside, SEED, 'http://127.0.0.1:9/b.html', 'http://127.0.0.1:9/b.html'] }).expect(200);
    expect(answer.body).toEqual({
      state: 'running',
      admitted: 1,
      rejected: [
        { url: outside, code: 'out-of-scope', reason: `outside the crawl's scope (host of ${SEED}): start a crawl with it as a seed to crawl it` },
        { url: SEED, code: 'already-queued', reason: 'queued already' },
        { url: 'http://127.0.0.1:9/b.html', code: 'already-queued', reason: 'queued already' },
      ],
    });
    // Queued, not a seed: the seeds are the crawl's settings, and an inject's cost may not grow with the injects before it.
    expect(h.server.service.status().frontierSize).toBe(queuedBefore + 1);
    expect(h.server.service.status().config.seeds).toEqual([SEED]);
  });

  it('refuses to start a crawl while one is running: 409 crawl-running, nothing changes', async () => {
    const auth = await login();
    const res = await adminPost('/admin/api/crawl', auth, { seeds: ['http://127.0.0.1:9/other.html'] }).expect(409);
    expect(res.body.error).toEqual({ code: 'crawl-running', message: expect.stringContaining('stop it') });
    expect(h.server.service.status().config.seeds).toEqual([SEED]);
  });

  it.each([
    ['inject without urls', 'inject', {}, 'invalid-body', 'urls'],
    ['inject with an empty list', 'inject', { urls: [] }, 'invalid-body', 'urls'],
    ['inject with a non-string URL', 'inject', { urls: [42] }, 'invalid-body', 'urls.0'],
    ['crawl without seeds', 'crawl', { seeds: [] }, 'invalid-body', 'seeds'],
    ['crawl with a seed that is no URL', 'crawl', { seeds: ['not a url'] }, 'invalid-seed', 'seeds.0'],
    ['crawl with an unknown scope', 'crawl', { seeds: [SEED], scope: 'planet' }, 'invalid-body', 'scope'],
    ['crawl with a negative delay', 'crawl', { seeds: [SEED], delayMs: -1 }, 'invalid-body', 'delayMs'],
    ['crawl with a fractional depth', 'crawl', { seeds: [SEED], maxDepth: 1.5 }, 'invalid-body', 'maxDepth'],
    ['crawl with host concurrency 0', 'crawl', { seeds: [SEED], hostConcurrency: 0 }, 'invalid-body', 'hostConcurrency'],
    ['crawl with an unknown setting', 'crawl', { seeds: [SEED], once: true }, 'invalid-body', 'once'],
    ['crawl with an unknown order', 'crawl', { seeds: [SEED], order: 'random' }, 'invalid-body', 'order'],
  ])('answers %s with 400 naming the field, changing nothing', async (_name, action, body, code, field) => {
    const auth = await login();
    await adminPost('/admin/api/stop', auth).expect(200);
    const before = h.server.service.status();
    const res = await adminPost(`/admin/api/${action}`, auth, body).expect(400);
    expect(res.body.error.code).toBe(code);
    expect(res.body.error.message).toContain(field);
    const after = h.server.service.status();
    expect(after.config).toEqual(before.config);
    expect(after.frontierSize).toBe(before.frontierSize);
  });

  it('answers malformed JSON with 400 invalid-json', async () => {
    const auth = await login();
    const res = await request(h.app).post('/admin/api/inject').set('Origin', h.origin).set('Cookie', auth.cookie).set('X-CSRF-Token', auth.csrf).set('Content-Type', 'application/json').send('{"urls": [').expect(400);
    expect(res.body.error.code).toBe('invalid-json');
  });
});

describe('static assets and headers', () => {
  it('serves the page script, style sheet and uPlot locally, with the security headers', async () => {
    for (const [path, type] of [
      ['/admin/static/admin.js', /javascript/],
      ['/admin/static/admin.css', /text\/css/],
      ['/admin/static/vendor/uplot.js', /javascript/],
      ['/admin/static/vendor/uplot.css', /text\/css/],
    ] as const) {
      const res = await request(h.app).get(path).expect(200);
      expect(res.headers['content-type']).toMatch(type);
      expectSecurityHeaders(res);
    }
    await request(h.app).get('/admin/static/vendor/other.js').expect(404);
    await request(h.app).get('/admin/static/../routes.ts').expect(404);
  });

  it('builds the page from text only: the script never assigns markup', () => {
    const script = readFileSync(new URL('../../queue-server/admin/static/admin.js', import.meta.url), 'utf8');
    expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
  });
});

describe('bearer-token control routes', () => {
  const actions = Object.entries(CONTROL_ROUTES) as [keyof typeof CONTROL_ROUTES, string][];

  it.each(actions)('refuses %s (%s) without the admin token, or with the fetcher token: 401', async (_action, route) => {
    const before = h.server.service.status();
    for (const authorization of [undefined, `Bearer ${h.fetcherToken}`, `Bearer ${h.adminToken}x`, h.adminToken]) {
      const req = request(h.app).post(route).send({ urls: [SEED], seeds: [SEED] });
      const res = await (authorization === undefined ? req : req.set('Authorization', authorization)).expect(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
    expect(h.server.service.status().control).toBe(before.control);
    expect(h.server.service.status().frontierSize).toBe(before.frontierSize);
  });

  it('pauses, resumes, injects, refuses a second crawl, stops and starts one with the admin token', async () => {
    const auth = `Bearer ${h.adminToken}`;
    expect((await request(h.app).post(CONTROL_ROUTES.pause).set('Authorization', auth).expect(200)).body).toEqual({ state: 'paused' });
    expect((await request(h.app).post(CONTROL_ROUTES.resume).set('Authorization', auth).expect(200)).body).toEqual({ state: 'running' });
    const injected = await request(h.app).post(CONTROL_ROUTES.inject).set('Authorization', auth).send({ urls: ['http://127.0.0.1:9/b.html'] }).expect(200);
    expect(injected.body).toMatchObject({ admitted: 1, rejected: [] });
    const running = await request(h.app).post(CONTROL_ROUTES.crawl).set('Authorization', auth).send({ seeds: ['http://127.0.0.1:9/c.html'] }).expect(409);
    expect(running.body.error.code).toBe('crawl-running');
    expect((await request(h.app).post(CONTROL_ROUTES.stop).set('Authorization', auth).expect(200)).body).toEqual({ state: 'stopped', dropped: 2 });
    expect((await request(h.app).post(CONTROL_ROUTES.crawl).set('Authorization', auth).send({ seeds: ['http://127.0.0.1:9/c.html'] }).expect(200)).body).toEqual({ state: 'running', queued: 3, waiting: 0 });
    // No Origin or CSRF token needed here: programs hold the admin token itself.
  });

  it.each([
    [CONTROL_ROUTES.inject, { urls: 'http://127.0.0.1:9/' }, 'urls'],
    [CONTROL_ROUTES.crawl, { seeds: ['ftp://127.0.0.1/'] }, 'seeds.0'],
    [CONTROL_ROUTES.crawl, { seed: [SEED] }, 'seed'],
  ])('answers bad input to %s with 400 naming the field', async (route, body, field) => {
    const res = await request(h.app).post(route).set('Authorization', `Bearer ${h.adminToken}`).send(body).expect(400);
    expect(res.body.error.message).toContain(field);
    expect(h.server.service.status().config.seeds).toEqual([SEED]);
  });
});

describe('login rate limit', () => {
  /** An app on the harness's queue server with a clock the test moves. */
  async function limitedApp(): Promise<{ app: Server; origin: string; advance: (ms: number) => void }> {
    let now = 1_700_000_000_000;
    const app = createApp({ service: h.server.service, token: h.fetcherToken, adminToken: h.adminToken, clock: () => now });
    const listening: Server = await new Promise((resolve) => {
      const s = app.listen(0, HOST, () => resolve(s));
    });
    cleanups.push(async () => {
      listening.closeAllConnections();
      await new Promise<void>((resolve) => listening.close(() => resolve()));
    });
    return { app: listening, origin: `http://${HOST}:${(listening.address() as AddressInfo).port}`, advance: (ms) => (now += ms) };
  }

  it('answers wrong logins from an address 429 with Retry-After after 5 failures within a minute, until the minute has passed, yet lets the right token in', async () => {
    const { app, origin, advance } = await limitedApp();
    const wrong = { token: otherFirstChar(h.adminToken) };
    for (let i = 0; i < 5; i++) {
      await request(app).post('/admin/login').set('Origin', origin).type('form').send(wrong).expect(401);
      advance(1000);
    }
    const blocked = await request(app).post('/admin/login').set('Origin', origin).type('form').send(wrong).expect(429);
    expect(blocked.headers['retry-after']).toBe('55');
    expect(blocked.headers['set-cookie']).toBeUndefined();
    expect(blocked.text).toContain('Too many failed logins');
    expectSecurityHeaders(blocked);
    const json = await request(app).post('/admin/login').set('Origin', origin).send(wrong).expect(429);
    expect(json.body.error.code).toBe('too-many-logins');
    // Any local user shares this address with the operator: five wrong tokens must not lock the operator out.
    const operator = await request(app).post('/admin/login').set('Origin', origin).type('form').send({ token: h.adminToken }).expect(303);
    expect(operator.headers['set-cookie']).toBeDefined();
    await request(app).post('/admin/login').set('Origin', origin).send({ token: h.adminToken }).expect(200);
    await request(app).post('/admin/login').set('Origin', origin).type('form').send(wrong).expect(429);
    advance(55_000);
    const res = await request(app).post('/admin/login').set('Origin', origin).type('form').send({ token: h.adminToken }).expect(303);
    expect(res.headers['set-cookie']).toBeDefined();
    // A right token is not a failure: four more failures are still only failures.
    for (let i = 0; i < 4; i++) await request(app).post('/admin/login').set('Origin', origin).type('form').send(wrong).expect(401);
    await request(app).post('/admin/login').set('Origin', origin).type('form').send({ token: h.adminToken }).expect(303);
  });

  it('answers wrong bearer tokens 429 after five from an address, yet always serves the right admin token and leaves the login form alone', async () => {
    const { app, origin, advance } = await limitedApp();
    const before = h.server.service.status();
    const wrong = `Bearer ${otherFirstChar(h.adminToken)}`;
    for (let i = 0; i < 5; i++) {
      const res = await request(app).post(CONTROL_ROUTES.pause).set('Authorization', wrong).expect(401);
      expect(res.body.error.code).toBe('unauthorized');
    }
    const blocked = await request(app).post(CONTROL_ROUTES.pause).set('Authorization', wrong).expect(429);
    expect(blocked.body.error.code).toBe('too-many-logins');
    expect(blocked.headers['retry-after']).toBe('60');
    await request(app).get('/api/status').set('Authorization', wrong).expect(429);
    expect(h.server.service.status().control).toBe(before.control);
    // Any local user shares this address with the admin's programs: five wrong tokens must not lock them out.
    await request(app).get('/api/status').set('Authorization', `Bearer ${h.adminToken}`).expect(200);
    expect((await request(app).post(CONTROL_ROUTES.pause).set('Authorization', `Bearer ${h.adminToken}`).expect(200)).body).toEqual({ state: 'paused' });
    // Nor the browser's login: the form keeps its own count.
    await request(app).post('/admin/login').set('Origin', origin).type('form').send({ token: h.adminToken }).expect(303);
    advance(60_000);
    await request(app).post(CONTROL_ROUTES.resume).set('Authorization', wrong).expect(401);
  });

  it('keeps a bounded number of addresses and counts an IPv6 client by its /64', () => {
    const limiter = new LoginLimiter({ maxFailures: 2, windowMs: 1000, maxAddresses: 3 });
    for (const address of ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4']) limiter.recordFailure(address, 0);
    expect(limiter.size).toBe(3);
    limiter.recordFailure('10.0.0.4', 1);
    expect(limiter.blockedForMs('10.0.0.4', 1)).toBe(999);
    expect(limiter.blockedForMs('10.0.0.4', 1000)).toBe(0);
    expect(clientKey('::ffff:192.0.2.7')).toBe('192.0.2.7');
    expect(clientKey('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(clientKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientKey('::1')).toBe('0:0:0:0::/64');
  });
});
