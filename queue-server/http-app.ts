/**
 * The queue server's HTTP interface: the fetcher API (claim, results, heartbeat) and the status API.
 * Building the app is separate from listening (daemon.ts), so tests start it on port 0 or drive it
 * with supertest. Every route but /healthz requires the bearer token; every body is validated
 * against the protocol schema and a bad one gets a 4xx with a clear message and changes nothing.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { crawlConfigSchema } from './crawl-config.js';
import {
  claimRequestSchema,
  describeZodError,
  heartbeatRequestSchema,
  LIMITS,
  resultsRequestSchema,
  ROUTES,
} from '../shared/protocol.js';
import { bearerToken, tokensEqual } from './auth.js';
import type { CrawlService } from './crawl-service.js';

export interface AppOptions {
  readonly service: CrawlService;
  /** The fetcher API secret (fetcher.token). */
  readonly token: string;
  /** The admin secret (admin.token): crawl control, and status. */
  readonly adminToken: string;
}

const injectSchema = z.object({ urls: z.array(z.string().min(1).max(LIMITS.urlChars)).min(1).max(1000) });

export const CONTROL_ROUTES = {
  pause: '/api/control/pause',
  resume: '/api/control/resume',
  stop: '/api/control/stop',
  inject: '/api/control/inject',
  crawl: '/api/control/crawl',
} as const;

/** The settings a person may choose when starting a crawl; the rest keep the queue server's values. */
const crawlStartSchema = crawlConfigSchema
  .pick({ seeds: true, scope: true, maxDepth: true, delayMs: true, hostConcurrency: true })
  .partial({ scope: true, maxDepth: true, delayMs: true, hostConcurrency: true })
  .extend({
    seeds: z.array(z.string().min(1).max(LIMITS.urlChars)).max(1000),
    maxPages: z.number().int().positive().nullable().optional(),
  })
  .strict();

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export function createApp({ service, token, adminToken }: AppOptions): express.Express {
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

  // Crawl control: each control of the admin page is also an API route.
  app.post(CONTROL_ROUTES.pause, requireAdmin, (_req, res) => {
    service.pause();
    res.json({ state: service.displayState() });
  });
  app.post(CONTROL_ROUTES.resume, requireAdmin, (_req, res) => {
    service.resume();
    res.json({ state: service.displayState() });
  });
  app.post(CONTROL_ROUTES.stop, requireAdmin, (_req, res) => {
    const dropped = service.stop();
    res.json({ state: service.displayState(), dropped });
  });
  app.post(CONTROL_ROUTES.inject, requireAdmin, smallJson, (req, res) => {
    const { urls } = parseBody(injectSchema, req.body);
    res.json(service.inject(urls));
  });
  app.post(CONTROL_ROUTES.crawl, requireAdmin, smallJson, (req, res) => {
    const input = parseBody(crawlStartSchema, req.body);
    if (input.seeds.length === 0) throw new HttpError(400, 'invalid-body', 'seeds: give at least one URL');
    const config = crawlConfigSchema.parse({ ...service.crawl.config, ...input, maxPages: input.maxPages ?? null });
    try {
      service.restart(config);
    } catch (error) {
      throw new HttpError(409, 'crawl-running', (error as Error).message);
    }
    res.json({ state: service.displayState() });
  });

  app.use((_req, _res, next) => next(new HttpError(404, 'not-found', 'no such route')));

  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    const { status, code, message } = describeError(error);
    if (res.headersSent) return res.end();
    res.status(status).json({ error: { code, message } });
  });
  return app;
}

function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === undefined || body === null || typeof body !== 'object') {
    throw new HttpError(400, 'bad-request', 'expected a JSON object body with Content-Type: application/json');
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new HttpError(400, 'invalid-body', describeZodError(parsed.error));
  return parsed.data;
}

function clientAddress(req: Request): string {
  return req.socket.remoteAddress ?? 'unknown';
}

function describeError(error: unknown): { status: number; code: string; message: string } {
  if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message };
  const bodyError = error as { type?: string; status?: number; message?: string };
  if (bodyError.type === 'entity.too.large') return { status: 413, code: 'body-too-large', message: `request body larger than ${LIMITS.requestBodyBytes} bytes` };
  if (bodyError.type === 'entity.parse.failed') return { status: 400, code: 'invalid-json', message: 'request body is not valid JSON' };
  if (typeof bodyError.status === 'number' && bodyError.status >= 400 && bodyError.status < 500) {
    return { status: bodyError.status, code: 'bad-request', message: String(bodyError.message ?? 'bad request').slice(0, 200) };
  }
  // A broken invariant: crash loudly in the log, answer 500 without details.
  console.error(error);
  return { status: 500, code: 'internal', message: 'internal error' };
}

/** Server-sent events: a status snapshot whenever the crawl changes, at most four a second. */
function streamStatus(service: CrawlService, req: Request, res: Response): void {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive' });
  let pending: NodeJS.Timeout | null = null;
  let lastSent = 0;
  const send = () => {
    pending = null;
    lastSent = Date.now();
    const status = service.status();
    res.write(`event: status\ndata: ${JSON.stringify(status)}\n\n`);
  };
  const onChange = () => {
    if (pending !== null) return;
    pending = setTimeout(send, Math.max(0, 250 - (Date.now() - lastSent)));
  };
  const onFinished = () => {
    if (pending !== null) clearTimeout(pending);
    send();
    res.write(`event: finished\ndata: {}\n\n`);
  };
  const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), 15_000);
  service.on('change', onChange);
  service.on('finished', onFinished);
  send();
  req.on('close', () => {
    clearInterval(keepAlive);
    if (pending !== null) clearTimeout(pending);
    service.off('change', onChange);
    service.off('finished', onFinished);
  });
}
