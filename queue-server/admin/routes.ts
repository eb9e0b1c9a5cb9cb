/**
 * The admin page's routes, mounted at /admin by app.ts. Programs use the bearer-token API
 * (/api/status, /api/control/*); browsers use these, authenticated by a session cookie:
 *
 *   GET  /admin                 the page (index.html), or a redirect to the login form
 *   GET  /admin/login           the login form                      POST /admin/login   token -> cookie
 *   POST /admin/logout          ends the session
 *   GET  /admin/api/session     the session's CSRF token, for the page's script
 *   GET  /admin/api/status      the status JSON                     GET  /admin/api/stream  the same, live (SSE)
 *   GET  /admin/api/history     pages fetched over the last minutes, for the chart
 *   GET  /admin/search          search results, a server-rendered page (api/search-api.ts)
 *   GET  /admin/api/search      the same as JSON
 *   GET  /admin/api/settings    the "start a crawl" form's settings: bounds, defaults, choices (crawl-config.ts)
 *   GET  /admin/cache?url=URL   the cached copy of a fetched page (warc/cached-copy.ts), sandboxed
 *   POST /admin/api/{pause,resume,stop,inject,crawl}   crawl control (crawl-control.ts, as the bearer routes)
 *   GET  /admin/static/...      the page's script, style sheet and uPlot (served from this package)
 *
 * Every POST passes three checks, in order: same origin (security.ts), a live session, and the
 * session's CSRF token in `X-CSRF-Token` (login, which has no session yet, only the first, then the
 * rate limit of login-limiter.ts, counted before its body is read). Every response carries the
 * security headers of security.ts.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { tokensEqual } from '../auth/tokens.js';
import { formSettings } from '../crawl-config.js';
import { CONTROL_ACTIONS, runControl } from '../api/crawl-control.js';
import type { ClusterMember } from '../cluster/cluster-member.js';
import { systemClock, type CrawlService } from '../crawl/crawl-service.js';
import { HttpError } from '../api/http-errors.js';
import { SEARCH_ROUTES, searchJson, searchPage, type Searcher } from '../api/search-api.js';
import { streamStatus } from '../api/status-stream.js';
import { CounterHistory } from './counter-history.js';
import { LoginLimiter } from '../auth/login-limiter.js';
import { loginPage, type LoginMessage } from './login-page.js';
import { clearedSessionCookie, cookieValue, requireSameOrigin, securityHeaders, SESSION_COOKIE, sessionCookie } from './security.js';
import { SessionStore, type Session } from './sessions.js';
import { cachedCopyRoute } from '../api/cached-copy-route.js';

export const ADMIN_BASE = '/admin';

export const ADMIN_ROUTES = {
  page: '/admin',
  login: '/admin/login',
  logout: '/admin/logout',
  session: '/admin/api/session',
  status: '/admin/api/status',
  stream: '/admin/api/stream',
  history: '/admin/api/history',
  settings: '/admin/api/settings',
  cache: '/admin/cache',
  control: (action: (typeof CONTROL_ACTIONS)[number]) => `/admin/api/${action}`,
} as const;

export const CSRF_HEADER = 'x-csrf-token';

const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url));
const require = createRequire(import.meta.url);
const VENDOR_FILES = new Map<string, string>([
  ['uplot.js', require.resolve('uplot/dist/uPlot.esm.js')],
  ['uplot.css', require.resolve('uplot/dist/uPlot.min.css')],
]);

/** Body limits: the admin page's control posts, and the login form (read before any check). */
export const CONTROL_BODY_BYTES = 256 * 1024;
export const LOGIN_BODY_BYTES = 4 * 1024;

export interface AdminOptions {
  readonly service: CrawlService;
  readonly adminToken: string;
  readonly sessions?: SessionStore;
  /** Failed logins per address at the login form (the bearer routes keep their own, app.ts). A fresh one by default. */
  readonly loginLimiter?: LoginLimiter;
  /** ms since epoch; the sessions' idle time is measured with it. */
  readonly clock?: () => number;
  /** A page's status stream that has not read for this long is closed, ms (default 60 s). */
  readonly streamStallLimitMs?: number;
  /** Searching the crawl's index (/admin/search, /admin/api/search); absent: no search routes. */
  readonly search?: Searcher;
  /** A cluster member: the page shows the cluster (/admin/api/cluster), and pause, resume and stop reach every member. */
  readonly cluster?: Pick<ClusterMember, 'view' | 'publishControl' | 'publishCrawl' | 'injectElsewhere'>;
}

/** Pages-fetched samples for the chart are at least this far apart, ms. */
const HISTORY_GAP_MS = 1000;

const loginSchema = z.object({ token: z.string().min(1).max(512) });
const LOGIN_MESSAGES = new Set<LoginMessage>(['wrong-token', 'logged-out', 'expired']);

/** The form's settings as the page reads them: everything of the table but the schema object. */
const FORM_SETTINGS = formSettings().map(([name, { schema: _schema, option: _option, form: _form, ...setting }]) => {
  // How the CLI spells a duration is not the form's business: it takes milliseconds.
  const { duration: _duration, ...shown } = setting as typeof setting & { duration?: boolean };
  return { name, ...shown };
});

/** A request that passed the session check. */
type SessionRequest = Request & { session?: Session; sessionCookie?: string };

export function adminRouter(options: AdminOptions): Router {
  if (!existsSync(`${STATIC_DIR}index.html`)) {
    throw new Error(`admin page assets missing in ${STATIC_DIR}: run \`npm run build\` (it copies queue-server/admin/static)`);
  }
  const { service, adminToken } = options;
  const sessions = options.sessions ?? new SessionStore();
  const clock = options.clock ?? systemClock;
  const loginLimiter = options.loginLimiter ?? new LoginLimiter();
  const router = express.Router();
  const json = express.json({ limit: CONTROL_BODY_BYTES, strict: true });
  // The login's body is read before its token is checked (by anyone, without a session): a token is
  // at most 512 characters, so 4 KiB of form or JSON is plenty.
  const form = express.urlencoded({ extended: false, limit: LOGIN_BODY_BYTES, parameterLimit: 10 });
  const loginJson = express.json({ limit: LOGIN_BODY_BYTES, strict: true });

  router.use(securityHeaders);

  // Pages fetched over time: one sample at most a second after the crawl changes; no change, no timer.
  const history = new CounterHistory();
  history.record(clock(), service.summary().pagesFetched);
  let sampleTimer: NodeJS.Timeout | null = null;
  service.on('change', () => {
    if (sampleTimer !== null) return;
    sampleTimer = setTimeout(() => {
      sampleTimer = null;
      history.record(clock(), service.summary().pagesFetched);
    }, HISTORY_GAP_MS);
    sampleTimer.unref();
  });

  const sessionOf = (req: Request): Session | null => sessions.use(cookieValue(req.headers.cookie, SESSION_COOKIE), clock());

  /** API routes: a live session or 401 (the page then goes to the login form). */
  const requireSession = (req: SessionRequest, _res: Response, next: NextFunction) => {
    const session = sessionOf(req);
    if (session === null) return next(new HttpError(401, 'no-session', 'log in first: no live admin session (it ended, or this browser never logged in)'));
    req.session = session;
    req.sessionCookie = cookieValue(req.headers.cookie, SESSION_COOKIE);
    next();
  };
  const requireCsrf = (req: SessionRequest, _res: Response, next: NextFunction) => {
    const presented = req.headers[CSRF_HEADER];
    if (typeof presented !== 'string' || req.session === undefined || !tokensEqual(presented, req.session.csrfToken)) {
      return next(new HttpError(403, 'csrf', `missing or wrong ${CSRF_HEADER} header: reload the admin page`));
    }
    next();
  };

  router.get('/', (req, res) => {
    if (sessionOf(req) === null) return res.redirect(303, ADMIN_ROUTES.login);
    res.set('Content-Type', 'text/html; charset=utf-8');
    res.sendFile('index.html', { root: STATIC_DIR, cacheControl: false, lastModified: false, etag: false });
  });

  router.get('/login', (req, res) => {
    if (sessionOf(req) !== null) return res.redirect(303, ADMIN_ROUTES.page);
    const asked = typeof req.query.m === 'string' ? (req.query.m as LoginMessage) : null;
    res.type('html').send(loginPage(asked !== null && LOGIN_MESSAGES.has(asked) ? asked : null));
  });

  /**
   * Counts the attempt the moment its headers are in, before anything is awaited (the body may come
   * seconds later). An address past its failures is noted (`res.locals.loginWaitMs`): its wrong tokens
   * get 429 with Retry-After, but the right token still logs in. Every local user shares 127.0.0.1 with
   * the operator (and every client of a reverse proxy shares its address): refusing the right token
   * too let any of them lock the operator out with five wrong ones, and it slowed no guesser of a
   * 256-bit token (as for the bearer routes, app.ts).
   */
  const beginLogin = (req: Request, res: Response, next: NextFunction) => {
    res.locals.loginWaitMs = loginLimiter.begin(clientAddress(req), clock());
    next();
  };

  router.post('/login', requireSameOrigin, beginLogin, form, loginJson, (req, res) => {
    const wantsJson = req.is('application/json') === 'application/json';
    const parsed = loginSchema.safeParse(req.body);
    if (!parsed.success || !tokensEqual(parsed.data.token.trim(), adminToken)) {
      // Already counted as a failure by beginLogin.
      const waitMs = res.locals.loginWaitMs as number;
      if (waitMs > 0) {
        const retryAfter = String(Math.ceil(waitMs / 1000));
        res.set('Connection', 'close');
        if (wantsJson) throw new HttpError(429, 'too-many-logins', `too many failed logins from this address: try again in ${retryAfter} s`, { headers: { 'Retry-After': retryAfter } });
        return res.status(429).set('Retry-After', retryAfter).type('html').send(loginPage('rate-limited'));
      }
      if (wantsJson) throw new HttpError(401, 'wrong-token', 'that is not the admin token');
      return res.status(401).type('html').send(loginPage('wrong-token'));
    }
    // The attempt beginLogin counted is given back; one past the limit was not counted.
    if ((res.locals.loginWaitMs as number) <= 0) loginLimiter.succeeded(clientAddress(req), clock());
    // A login replaces this browser's earlier session, if any.
    sessions.delete(cookieValue(req.headers.cookie, SESSION_COOKIE));
    const { cookieValue: value, session } = sessions.create(clock());
    res.set('Set-Cookie', sessionCookie(value, { secure: req.secure }));
    if (wantsJson) return res.json({ csrfToken: session.csrfToken });
    res.redirect(303, ADMIN_ROUTES.page);
  });

  router.post('/logout', requireSameOrigin, requireSession, requireCsrf, (req: SessionRequest, res) => {
    sessions.delete(req.sessionCookie);
    res.set('Set-Cookie', clearedSessionCookie(req.secure));
    res.json({ loggedOut: true });
  });

  router.get('/api/session', requireSession, (req: SessionRequest, res) => {
    res.json({ csrfToken: req.session!.csrfToken, idleMs: sessions.idleMs });
  });

  const snapshot = () => ({ ...service.status(), serverNow: clock() });

  router.get('/api/status', requireSession, (_req, res) => {
    res.json(snapshot());
  });

  router.get('/api/history', requireSession, (_req, res) => {
    res.json({ pagesFetched: history.samples(), serverNow: clock() });
  });

  router.get('/api/settings', requireSession, (_req, res) => {
    res.json({ settings: FORM_SETTINGS });
  });

  router.get('/api/stream', requireSession, (req: SessionRequest, res) => {
    const cookie = req.sessionCookie;
    // An open page's stream keeps its session alive; a logout (or expiry) ends the stream.
    streamStatus(service, req, res, {
      clock,
      snapshot,
      pingEvents: true,
      retryMs: 2000,
      stallLimitMs: options.streamStallLimitMs,
      stillAllowed: () => sessions.use(cookie, clock()) !== null,
    });
  });

  // A fetched page's cached copy, behind the session (api/cached-copy-route.ts serves it sandboxed).
  const cachedCopy = cachedCopyRoute(service, ADMIN_ROUTES.cache);
  router.get('/cache', (req, res, next) => (sessionOf(req) === null ? res.redirect(303, ADMIN_ROUTES.login) : cachedCopy(req, res, next)));

  for (const action of CONTROL_ACTIONS) {
    router.post(`/api/${action}`, requireSameOrigin, requireSession, requireCsrf, json, async (req, res) => {
      res.json(await runControl(service, action, req.body, options.cluster));
    });
  }

  router.get('/api/cluster', requireSession, async (_req, res) => {
    if (options.cluster === undefined) return res.json(null);
    res.json(await options.cluster.view());
  });

  router.get('/static/vendor/:file', (req, res, next) => {
    // A Map, not an object: `constructor`, `__proto__` or `toString` must name no file.
    const file = VENDOR_FILES.get(req.params.file);
    if (file === undefined) return next();
    res.sendFile(file, { cacheControl: false, lastModified: false, etag: false });
  });
  router.use('/static', express.static(STATIC_DIR, { index: false, redirect: false, cacheControl: false, etag: false, lastModified: false, dotfiles: 'ignore' }));

  // Search behind the session: the admin page's search box (a GET form) and its JSON (search-api.ts).
  const searcher = options.search;
  if (searcher !== undefined) {
    const page = searchPage(searcher, SEARCH_ROUTES.adminPage, ADMIN_ROUTES.cache);
    router.get('/search', (req, res, next) => (sessionOf(req) === null ? res.redirect(303, ADMIN_ROUTES.login) : page(req, res, next)));
    router.get('/api/search', requireSession, searchJson(searcher));
  }

  router.use('/api', (_req, _res, next) => next(new HttpError(404, 'not-found', 'no such admin API route')));
  return router;
}

function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
