/**
 * The queue server's HTTP interface: the fetcher API (claim, results, heartbeat) and the status API.
 * Building the app is separate from listening (daemon.ts), so tests start it on port 0 or drive it
 * with supertest. Every route but /healthz requires the bearer token; every body is validated
 * against the protocol schema and a bad one gets a 4xx with a clear message and changes nothing.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { claimRequestSchema, heartbeatRequestSchema, LIMITS, resultsRequestSchema, ROUTES } from '../shared/protocol.js';
import { adminRouter, ADMIN_BASE } from './admin/routes.js';
import type { SessionStore } from './admin/sessions.js';
import { bearerToken, tokensEqual } from './auth.js';
import { runControl, type ControlAction } from './crawl-control.js';
import type { CrawlService } from './crawl-service.js';
import { HttpError, jsonErrorHandler, parseBody } from './http-errors.js';
import { streamStatus } from './status-stream.js';

export { HttpError } from './http-errors.js';

export interface AppOptions {
  readonly service: CrawlService;
  /** The fetcher API secret (fetcher.token). */
  readonly token: string;
  /** The admin secret (admin.token): crawl control, status, and the admin page's login. */
  readonly adminToken: string;
  /** Admin page sessions; a fresh store by default (tests pass one with their own clock). */
  readonly sessions?: SessionStore;
}

export const CONTROL_ROUTES = {
  pause: '/api/control/pause',
  resume: '/api/control/resume',
  stop: '/api/control/stop',
  inject: '/api/control/inject',
  crawl: '/api/control/crawl',
} as const satisfies Record<ControlAction, string>;

export function createApp({ service, token, adminToken, sessions }: AppOptions): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use((_req, res, next) => {
    res.set('X-Content-Type-Options', 'nosniff');
    res.set('Cache-Control', 'no-store');
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ ok: true });
  });

  const requireToken = (req: Request, _res: Response, next: NextFunction) => {
    const presented = bearerToken(req.headers.authorization);
    if (presented === null || !tokensEqual(presented, token)) {
      return next(new HttpError(401, 'unauthorized', 'missing or wrong bearer token'));
    }
    next();
  };
  const requireAdmin = (req: Request, _res: Response, next: NextFunction) => {
    const presented = bearerToken(req.headers.authorization);
    if (presented === null || !tokensEqual(presented, adminToken)) {
      return next(new HttpError(401, 'unauthorized', 'missing or wrong admin bearer token'));
    }
    next();
  };
  const requireAnyToken = (req: Request, _res: Response, next: NextFunction) => {
    const presented = bearerToken(req.headers.authorization);
    if (presented === null || !(tokensEqual(presented, token) || tokensEqual(presented, adminToken))) {
      return next(new HttpError(401, 'unauthorized', 'missing or wrong bearer token'));
    }
    next();
  };
  const json = express.json({ limit: LIMITS.requestBodyBytes, inflate: true, strict: true });
  const smallJson = express.json({ limit: 256 * 1024, strict: true });

  app.post(ROUTES.claim, requireToken, json, async (req, res) => {
    const request = parseBody(claimRequestSchema, req.body);
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    const response = await service.claim(request, clientAddress(req), aborted.signal);
    if (!res.headersSent && !res.writableEnded) res.json(response);
  });

  app.post(ROUTES.results, requireToken, json, async (req, res) => {
    const request = parseBody(resultsRequestSchema, req.body);
    res.json(await service.results(request));
  });

  app.post(ROUTES.heartbeat, requireToken, json, (req, res) => {
    const request = parseBody(heartbeatRequestSchema, req.body);
    res.json({ unknownScheduleIds: service.heartbeat(request, clientAddress(req)) });
  });

  app.get(ROUTES.status, requireAnyToken, (_req, res) => {
    res.json(service.status());
  });

  app.get(ROUTES.statusStream, requireAnyToken, (req, res) => {
    streamStatus(service, req, res);
  });

  // Crawl control: each control of the admin page is also an API route (same code: crawl-control.ts).
  for (const action of Object.keys(CONTROL_ROUTES) as ControlAction[]) {
    app.post(CONTROL_ROUTES[action], requireAdmin, smallJson, (req, res) => {
      res.json(runControl(service, action, req.body));
    });
  }

  // The admin page: session cookie, CSRF token, its own security headers (admin/routes.ts).
  app.use(ADMIN_BASE, adminRouter({ service, adminToken, sessions }));

  app.use((_req, _res, next) => next(new HttpError(404, 'not-found', 'no such route')));
  app.use(jsonErrorHandler);
  return app;
}

function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}
