/**
 * The queue server's HTTP interface: the fetcher API (claim, results, heartbeat) and the status API.
 * Building the app is separate from listening (daemon.ts), so tests start it on port 0 or drive it
 * with supertest. Every route but /healthz is authenticated: the fetcher routes by a signed request
 * only (request-auth.ts; a bearer token is refused there), the status routes by a signed request or
 * a bearer token (fetcher.token or admin.token), the control routes by the admin bearer token. Wrong
 * bearer tokens count as failed logins (admin/login-limiter.ts). Every body is validated against the
 * protocol schema and a bad one gets a 4xx with a clear message and changes nothing.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { claimRequestSchema, heartbeatRequestSchema, LIMITS, resultsRequestSchema, ROUTES } from '../shared/protocol.js';
import { hasSignatureHeaders } from '../shared/request-signing.js';
import { adminRouter, ADMIN_BASE } from './admin/routes.js';
import { LoginLimiter } from './auth/login-limiter.js';
import type { SessionStore } from './admin/sessions.js';
import { bearerToken, tokensEqual } from './auth/tokens.js';
import { runControl, type ControlAction } from './api/crawl-control.js';
import { systemClock, type CrawlService } from './crawl/crawl-service.js';
import { HttpError, jsonErrorHandler, parseBody } from './api/http-errors.js';
import { RequestAuth } from './api/request-auth.js';
import { streamStatus } from './api/status-stream.js';

export { HttpError } from './api/http-errors.js';

export interface AppOptions {
  readonly service: CrawlService;
  /** The fetcher API secret (fetcher.token). */
  readonly token: string;
  /** The admin secret (admin.token): crawl control, status, and the admin page's login. */
  readonly adminToken: string;
  /** Admin page sessions; a fresh store by default (tests pass one with their own clock). */
  readonly sessions?: SessionStore;
  /** Failed logins per address (login form and bearer tokens); a fresh one by default. */
  readonly loginLimiter?: LoginLimiter;
  /** ms since epoch, for signature timestamps and login rate limits (the system clock by default). */
  readonly clock?: () => number;
}

export const CONTROL_ROUTES = {
  pause: '/api/control/pause',
  resume: '/api/control/resume',
  stop: '/api/control/stop',
  inject: '/api/control/inject',
  crawl: '/api/control/crawl',
} as const satisfies Record<ControlAction, string>;

export function createApp({ service, token, adminToken, sessions, loginLimiter = new LoginLimiter(), clock = systemClock }: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((_req, res, next) => {
    // JSON answers are never to be rendered or framed; the admin router sets its own page policy.
    res.set({
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
      'Content-Security-Policy': "default-src 'none'; frame-ancestors 'none'",
      'X-Frame-Options': 'DENY',
      'Referrer-Policy': 'no-referrer',
    });
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });

  /**
   * A bearer token one of `accepted`; a wrong one counts as a failed login of the client's address,
   * and an address with too many gets 429 (a missing or malformed header is no guess and not counted).
   */
  const requireBearer = (accepted: readonly string[], what: string) => (req: Request, _res: Response, next: NextFunction) => {
    const address = clientAddress(req);
    const waitMs = loginLimiter.blockedForMs(address, clock());
    if (waitMs > 0) {
      const retryAfter = String(Math.ceil(waitMs / 1000));
      return next(new HttpError(429, 'too-many-logins', `too many wrong tokens from this address: try again in ${retryAfter} s`, { headers: { 'Retry-After': retryAfter } }));
    }
    const presented = bearerToken(req.headers.authorization);
    if (presented === null || !accepted.some((secret) => tokensEqual(presented, secret))) {
      if (presented !== null) loginLimiter.recordFailure(address, clock());
      return next(new HttpError(401, 'unauthorized', `missing or wrong ${what}`));
    }
    next();
  };
  const requireAdmin = requireBearer([adminToken], 'admin bearer token');
  const requireAnyToken = requireBearer([token, adminToken], 'bearer token');
  // The fetcher routes: signed requests only (request-auth.ts reads, checks and parses the body).
  const auth = new RequestAuth({ secret: token, maxBodyBytes: LIMITS.requestBodyBytes, clock });
  const signed = auth.signedJson;
  /** The status routes: a signed request (fetchers), or a bearer token (programs, `petrel crawl`'s progress). */
  const requireStatusAuth = (req: Request, res: Response, next: NextFunction) =>
    hasSignatureHeaders(req.headers) ? auth.signedNoBody(req, res, next) : requireAnyToken(req, res, next);
  const smallJson = express.json({ limit: 256 * 1024, strict: true });

  app.post(ROUTES.claim, signed, async (req, res) => {
    const request = parseBody(claimRequestSchema, req.body);
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const response = await service.claim(request, clientAddress(req), aborted.signal);
    if (!res.headersSent && !res.writableEnded) res.json(response);
  });

  app.post(ROUTES.results, signed, async (req, res) => {
    const request = parseBody(resultsRequestSchema, req.body);
    res.json(await service.results(request));
  });

  app.post(ROUTES.heartbeat, signed, (req, res) => {
    const request = parseBody(heartbeatRequestSchema, req.body);
    res.json({ unknownScheduleIds: service.heartbeat(request, clientAddress(req)) });
  });

  app.get(ROUTES.status, requireStatusAuth, (_req, res) => {
    res.json(service.status());
  });

  app.get(ROUTES.statusStream, requireStatusAuth, (req, res) => {
    streamStatus(service, req, res, { clock });
  });

  // Crawl control: each control of the admin page is also an API route (same code: crawl-control.ts).
  for (const action of Object.keys(CONTROL_ROUTES) as ControlAction[]) {
    app.post(CONTROL_ROUTES[action], requireAdmin, smallJson, (req, res) => {
      res.json(runControl(service, action, req.body));
    });
  }

  // The admin page: session cookie, CSRF token, its own security headers (admin/routes.ts).
  app.use(ADMIN_BASE, adminRouter({ service, adminToken, sessions, loginLimiter, clock }));

  app.use((_req, _res, next) => next(new HttpError(404, 'not-found', 'no such route')));
  app.use(jsonErrorHandler);
  return app;
}

function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
