/**
 * The queue server's HTTP interface: the fetcher API (claim, results, heartbeat) and the status API.
 * Building the app is separate from listening (daemon.ts), so tests start it on port 0 or drive it
 * with supertest. Every route but /healthz is authenticated: the fetcher routes by a signed request
 * only (api/request-auth.ts; a bearer token is refused there), the status routes by a signed request
 * (fetchers, `petrel crawl`'s progress) or the admin bearer token (programs), the control routes by
 * the admin bearer token. fetcher.token is never accepted as a bearer token: it is the key of the
 * signatures, and sent as a bearer token it would cross the wire. Every body is validated against the
 * protocol schema and a bad one gets a 4xx with a clear message and changes nothing.
 *
 * Every answer names this process's instance (X-Petrel-Instance, 128 random bits drawn here): signed
 * requests are signed for it, so one captured before a restart is refused after it.
 *
 * Wrong bearer tokens are counted per address (their own limiter, not the login form's); after five
 * in a minute, wrong ones are answered 429 with Retry-After, so a program with a stale token backs
 * off. A right token is always served. Why not lock the address out, as the login form does: every
 * local user shares 127.0.0.1 with the admin's own scripts, so a lockout keyed on the address lets any
 * of them lock the admin out with five wrong tokens; and a lockout that lets the right token through
 * slows no guesser (200 or 429 tells as much as 200 or 401). What protects the tokens is their 256
 * random bits (auth/tokens.ts): at a million guesses a second, about 10^63 years on average.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { claimRequestSchema, heartbeatRequestSchema, LIMITS, ROUTES } from '../shared/protocol.js';
import { RESULTS_FRAME_TYPE } from '../shared/results-frame.js';
import { hasSignatureHeaders, newInstanceId } from '../shared/request-signing.js';
import { adminRouter, ADMIN_BASE, ADMIN_ROUTES, CONTROL_BODY_BYTES } from './admin/routes.js';
import { LoginLimiter } from './auth/login-limiter.js';
import type { SessionStore } from './admin/sessions.js';
import { bearerToken, tokensEqual } from './auth/tokens.js';
import { runControl, type ControlAction } from './api/crawl-control.js';
import { systemClock, type CrawlService } from './crawl/crawl-service.js';
import { HttpError, jsonErrorHandler, parseBody } from './api/http-errors.js';
import { BodyBudget } from './api/body-budget.js';
import { INSTANCE_HEADER, RequestAuth, type SignedRequest } from './api/request-auth.js';
import { readResultsBody } from './api/results-body.js';
import { streamStatus } from './api/status-stream.js';
import { accessLog } from './ops/access-log.js';
import type { Logger } from '../shared/logger.js';
import { cachedCopyRoute, publicCopiesOnly } from './api/cached-copy-route.js';
import { rateLimited, SEARCH_ROUTES, searchJson, searchPage, searchPageRefusal, searchStyle, type SearchAnswer, type Searcher } from './api/search-api.js';
import { securityHeaders } from './admin/security.js';

export { HttpError } from './api/http-errors.js';
import type { ClusterMember } from './cluster/cluster-member.js';

export interface AppOptions {
  readonly service: CrawlService;
  /** The fetcher API secret (fetcher.token): the key of request signatures. */
  readonly token: string;
  /** The admin secret (admin.token): crawl control, status, and the admin page's login. */
  readonly adminToken: string;
  /** Admin page sessions; a fresh store by default (tests pass one with their own clock). */
  readonly sessions?: SessionStore;
  /** Failed logins per address at the login form; a fresh one by default. */
  readonly loginLimiter?: LoginLimiter;
  /** Wrong bearer tokens per address; a fresh one by default. */
  readonly bearerLimiter?: LoginLimiter;
  /** ms since epoch, for signature timestamps and login rate limits (the system clock by default). */
  readonly clock?: () => number;
  /** This process's instance id (default: drawn now). */
  readonly instance?: string;
  /** Request body bytes held at once across all requests (default DEFAULT_BODY_BYTES_IN_FLIGHT, 128 MiB). */
  readonly bodyBytesInFlight?: number;
  /** A status stream whose client has not read for this long is closed, ms (default 60 s). */
  readonly streamStallLimitMs?: number;
  /** GET /metrics (ops/metrics.ts), for metrics.token or admin.token as bearer token; absent: no such route. */
  readonly metrics?: { readonly token: string; readonly contentType: string; scrape(): Promise<string> };
  /** The access log (debug level, ops/access-log.ts); none when absent. */
  readonly logger?: Logger;
  /** A data file found damaged while serving (http-errors.ts isDamagedData): called once; the caller stops the daemon. */
  readonly onDamagedData?: (error: Error) => void;
  /** What GET /readyz answers: false (503) while the queue server drains; true when absent. */
  readonly ready?: () => boolean;
  /**
   * Searching the crawl (api/search-api.ts). `public`: /search and /api/search without login, rate
   * limited per address (`limiter`: 60 a minute by default); else /api/search takes the admin bearer
   * token and /search sends browsers to /admin/search, behind the session. Absent: no search routes.
   */
  readonly search?: { readonly searcher: Searcher; readonly public: boolean; readonly limiter?: LoginLimiter };
  /** A cluster member (cluster/cluster-member.ts): GET /api/cluster, and pause, resume and stop go to the whole cluster. */
  readonly cluster?: Pick<ClusterMember, 'view' | 'publishControl' | 'publishCrawl' | 'injectElsewhere'>;
}

/**
 * Body limits of the signed routes, on the wire and inflated: a claim is a few hundred bytes, a
 * heartbeat names at most LIMITS.slotsPerSchedule schedule ids, a results post is the large one.
 */
export const SIGNED_BODY_LIMITS = {
  claim: 16 * 1024,
  heartbeat: 256 * 1024,
  results: LIMITS.requestBodyBytes,
} as const;

export const CONTROL_ROUTES = {
  pause: '/api/control/pause',
  resume: '/api/control/resume',
  stop: '/api/control/stop',
  inject: '/api/control/inject',
  crawl: '/api/control/crawl',
} as const satisfies Record<ControlAction, string>;

export function createApp(options: AppOptions): express.Express {
  const { service, token, adminToken, sessions, loginLimiter = new LoginLimiter(), bearerLimiter = new LoginLimiter(), clock = systemClock } = options;
  const instance = options.instance ?? newInstanceId();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (options.logger !== undefined) app.use(accessLog(options.logger));
  app.use((_req, res, next) => {
    // JSON answers are never to be rendered or framed; the admin router sets its own page policy.
    res.set({
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
      [INSTANCE_HEADER]: instance,
    });
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });

  // Liveness is /healthz (the process answers); readiness is /readyz: stores open, storage writable and
  // not draining (ops/readiness.ts answers it 503 before the stores are open). While a commit fails
  // (ENOSPC, EIO) no work is handed out and results are refused with 503: not ready, and saying why.
  app.get('/readyz', (_req, res) => {
    if (!(options.ready?.() ?? true)) return res.status(503).json({ ready: false, reason: 'draining' });
    const storage = service.storageError;
    if (storage !== null) return res.status(503).json({ ready: false, reason: 'storage', code: storage.code });
    res.json({ ready: true });
  });

  /** One of `accepted` as bearer token. Wrong ones are counted (see the header comment); a right one always passes. */
  const requireBearer = (accepted: readonly string[], which: string) => (req: Request, _res: Response, next: NextFunction) => {
    const presented = bearerToken(req.headers.authorization);
    // Every token compared, so the time taken does not say which one matched.
    if (presented !== null && accepted.map((token) => tokensEqual(presented, token)).includes(true)) return next();
    if (presented === null) return next(new HttpError(401, 'unauthorized', `missing bearer token (Authorization: Bearer <${which}>)`));
    const address = clientAddress(req);
    const waitMs = bearerLimiter.blockedForMs(address, clock());
    if (waitMs > 0) {
      const retryAfter = String(Math.ceil(waitMs / 1000));
      return next(new HttpError(429, 'too-many-logins', `too many wrong tokens from this address: try again in ${retryAfter} s`, { headers: { 'Retry-After': retryAfter } }));
    }
    bearerLimiter.recordFailure(address, clock());
    next(new HttpError(401, 'unauthorized', `wrong bearer token: ${which} expected (fetcher.token is not one: fetchers sign their requests)`));
  };
  const requireAdmin = requireBearer([adminToken], 'admin.token');
  // The fetcher routes: signed requests only (request-auth.ts checks the headers before reading the body).
  const auth = new RequestAuth({ secret: token, instance, clock, ...(options.bodyBytesInFlight === undefined ? {} : { budget: new BodyBudget(options.bodyBytesInFlight) }) });
  /** The status routes: a signed request (fetchers, `petrel crawl`'s progress), or the admin bearer token (programs). */
  const requireStatusAuth = (req: Request, res: Response, next: NextFunction) =>
    hasSignatureHeaders(req.headers) ? auth.signedNoBody(req, res, next) : requireAdmin(req, res, next);
  const smallJson = express.json({ limit: CONTROL_BODY_BYTES, strict: true });

  app.post(ROUTES.claim, auth.signedJson(SIGNED_BODY_LIMITS.claim), async (req, res) => {
    const request = parseBody(claimRequestSchema, req.body);
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const response = await service.claim(request, clientAddress(req), aborted.signal);
    if (!aborted.signal.aborted && !res.headersSent && !res.writableEnded) res.json(response);
    // Cut after the fetcher went away (the claim was woken in the same turn as its connection closed):
    // no one holds it, so it must not wait out its lease.
    else if (response.kind === 'schedule') service.returnSchedule(response.schedule.id, request.fetcherId);
  });

  // Results come as JSON or as a binary frame (api/results-body.ts).
  app.post(ROUTES.results, auth.signedJson(SIGNED_BODY_LIMITS.results, { frameType: RESULTS_FRAME_TYPE }), async (req: SignedRequest, res) => {
    const request = readResultsBody(req.body, req.signedFetcherId);
    res.json(await service.results(request, clientAddress(req)));
  });

  app.post(ROUTES.heartbeat, auth.signedJson(SIGNED_BODY_LIMITS.heartbeat), (req, res) => {
    const request = parseBody(heartbeatRequestSchema, req.body);
    res.json({ unknownScheduleIds: service.heartbeat(request, clientAddress(req)) });
  });

  app.get(ROUTES.status, requireStatusAuth, (_req, res) => {
    res.json(service.status());
  });

  app.get(ROUTES.statusStream, requireStatusAuth, (req, res) => {
    streamStatus(service, req, res, { clock, stallLimitMs: options.streamStallLimitMs });
  });

  // Prometheus: metrics.token (read-only, what a scrape config holds) or the operator's admin.token.
  const { metrics } = options;
  if (metrics !== undefined) {
    app.get('/metrics', requireBearer([metrics.token, adminToken], 'metrics.token'), async (_req, res) => {
      res.type(metrics.contentType).send(await metrics.scrape());
    });
  }

  // Crawl control: each control of the admin page is also an API route (same code: crawl-control.ts).
  for (const action of Object.keys(CONTROL_ROUTES) as ControlAction[]) {
    app.post(CONTROL_ROUTES[action], requireAdmin, smallJson, async (req, res) => {
      // In a cluster, pause, resume, stop and a crawl start reach every member, an inject each URL's owner.
      res.json(await runControl(service, action, req.body, options.cluster));
    });
  }

  if (options.cluster !== undefined) {
    const { cluster } = options;
    app.get('/api/cluster', requireAdmin, async (_req, res) => {
      res.json(await cluster.view());
    });
  }

  if (options.search !== undefined) {
    const { searcher } = options.search;
    app.get(SEARCH_ROUTES.style, searchStyle);
    if (options.search.public) {
      // Anyone may search; each address at most 60 searches a minute (counted as the login limiter counts attempts).
      const limiter = options.search.limiter ?? new LoginLimiter({ maxFailures: 60, windowMs: 60_000 });
      const limit = rateLimited((address) => limiter.begin(address, clock()));
      // A result links a cached copy only where the public route serves one (not for a noarchive page).
      const publicCopies = (answer: SearchAnswer) => publicCopiesOnly(answer, service);
      app.get(SEARCH_ROUTES.api, limit, searchJson(searcher, publicCopies));
      app.get(SEARCH_ROUTES.page, securityHeaders, limit, searchPage(searcher, SEARCH_ROUTES.page, SEARCH_ROUTES.cache, publicCopies), searchPageRefusal(SEARCH_ROUTES.page, SEARCH_ROUTES.cache));
      // The results' cached copies, public with the search and counted against the same limit.
      // With the admin page's security headers, as /admin/cache has (its CSP replaced by the copy's sandbox).
      app.get(SEARCH_ROUTES.cache, securityHeaders, limit, cachedCopyRoute(service, SEARCH_ROUTES.cache, searcher));
    } else {
      app.get(SEARCH_ROUTES.api, requireAdmin, searchJson(searcher));
      // The session cookie is sent to /admin only: the page behind it is /admin/search.
      app.get(SEARCH_ROUTES.page, (req, res) => res.redirect(303, `${SEARCH_ROUTES.adminPage}${req.originalUrl.slice(SEARCH_ROUTES.page.length)}`));
      app.get(SEARCH_ROUTES.cache, (req, res) => res.redirect(303, `${ADMIN_ROUTES.cache}${req.originalUrl.slice(SEARCH_ROUTES.cache.length)}`));
    }
  }

  // The admin page: session cookie, CSRF token, its own security headers (admin/routes.ts).
  app.use(ADMIN_BASE, adminRouter({ service, adminToken, sessions, loginLimiter, clock, streamStallLimitMs: options.streamStallLimitMs, search: options.search?.searcher, cluster: options.cluster }));

  app.use((_req, _res, next) => next(new HttpError(404, 'not-found', 'no such route')));
  app.use(jsonErrorHandler(options.logger, options.onDamagedData));
  return app;
}

function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
