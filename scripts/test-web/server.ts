/**
 * Answering one request on one host: route (canonicalize the target, ask the host's site), evaluate
 * conditional headers, wait if the resource is slow, send, and log. Keep-alive is node's default.
 *
 *   arrive -> log.arrive()
 *   method not GET/HEAD -> 405
 *   target -> canonical URL -> resource in the current generation (a flaky page's first requests: 500)
 *     -> prepareResponse
 *   200 and validators match -> 304 (RFC 9110 §13.2.2), no body
 *   delayMs > 0 -> wait (cancelled if the client goes away or the web closes)
 *   headers, then body in chunks (HEAD: none)
 *   'finish' or 'close' -> log.record(...)
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { canonicalUrl } from './canonical.js';
import { isNotModified } from './conditional.js';
import type { GenerationState } from './generation-state.js';
import { logClock, type RequestLog } from './request-log.js';
import { cacheHeaders, prepareResponse, type PreparedResponse } from './response.js';
import type { WebHost } from './web.js';

/** Large bodies go out in pieces so an aborted download logs the bytes actually flushed. */
const CHUNK_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);

export interface ServerState {
  log: RequestLog;
  /** Pending delays of slow responses, cleared by close(). Owned by the TestWeb. */
  timers: Set<NodeJS.Timeout>;
  /** Which generation is served, and flaky pages' failure counts. Owned by the TestWeb. */
  generation: GenerationState;
  /** ms added to every answer but robots.txt's (TestWebOptions.pageDelayMs). */
  pageDelayMs: number;
}

export function handleRequest(host: WebHost, req: IncomingMessage, res: ServerResponse, state: ServerState): void {
  const start = logClock();
  const arrival = state.log.arrive();
  let bodyBytes = 0;
  let flushedBytes = 0;
  let finished = false;
  let recorded = false;
  let handedOver: number | null = null;
  const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
  res.end = ((...args: unknown[]) => {
    handedOver ??= logClock();
    return end(...args);
  }) as typeof res.end;
  /** The whole body being sent (none: empty). */
  let sentBody: Buffer = EMPTY;
  const record = (): void => {
    if (recorded) return;
    recorded = true;
    const now = logClock();
    state.log.record(arrival, {
      start,
      end: now,
      handedOver: handedOver ?? now,
      host: host.authority,
      method: req.method ?? '',
      path: req.url ?? '',
      status: res.headersSent ? res.statusCode : 0,
      ifNoneMatch: headerOf(req, 'if-none-match'),
      ifModifiedSince: headerOf(req, 'if-modified-since'),
      userAgent: headerOf(req, 'user-agent'),
      bytes: finished ? bodyBytes : flushedBytes,
      bodySha1: finished ? createHash('sha1').update(sentBody).digest('hex') : null,
    });
  };
  res.once('finish', () => {
    finished = true;
    record();
  });
  res.once('close', record);

  const method = req.method ?? '';
  if (method !== 'GET' && method !== 'HEAD') {
    const body = Buffer.from('Method not allowed: the test web answers GET and HEAD.\n');
    bodyBytes = body.length;
    sentBody = body;
    res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(body.length) });
    res.end(body);
    return;
  }
  const target = req.url ?? '';
  const url = target.startsWith('/') ? canonicalUrl(`${host.origin}${target}`) : null;
  if (url === null || !url.startsWith(`${host.origin}/`)) {
    const body = Buffer.from('Bad request target.\n');
    bodyBytes = method === 'HEAD' ? 0 : body.length;
    if (method !== 'HEAD') sentBody = body;
    res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': String(body.length) });
    res.end(method === 'HEAD' ? undefined : body);
    return;
  }
  const prepared = prepareResponse(state.generation.resolveRequest(host, url), host.cache);
  const conditional = { method, ifNoneMatch: headerOf(req, 'if-none-match'), ifModifiedSince: headerOf(req, 'if-modified-since') };
  const notModified = prepared.validators !== null && isNotModified(conditional, prepared.validators);

  const send = (): void => {
    if (res.destroyed) return;
    if (notModified && prepared.validators !== null) {
      res.writeHead(304, cacheHeaders(prepared.validators, host.cache));
      res.end();
      return;
    }
    res.writeHead(prepared.status, prepared.headers);
    if (method === 'HEAD') {
      res.end();
      return;
    }
    bodyBytes = prepared.body.length;
    sentBody = prepared.body;
    sendBody(res, prepared, (bytes) => (flushedBytes += bytes));
  };

  const delayMs = prepared.delayMs + (target === '/robots.txt' ? 0 : state.pageDelayMs);
  if (delayMs <= 0) {
    send();
    return;
  }
  const timer = setTimeout(() => {
    state.timers.delete(timer);
    send();
  }, delayMs);
  state.timers.add(timer);
  res.once('close', () => {
    clearTimeout(timer);
    state.timers.delete(timer);
  });
}

function sendBody(res: ServerResponse, prepared: PreparedResponse, onFlushed: (bytes: number) => void): void {
  const { body } = prepared;
  if (body.length <= CHUNK_BYTES) {
    res.end(body);
    return;
  }
  let offset = 0;
  const pump = (): void => {
    while (offset < body.length) {
      if (res.destroyed) return;
      const chunk = body.subarray(offset, offset + CHUNK_BYTES);
      offset += chunk.length;
      const more = res.write(chunk, (error) => {
        if (error === null || error === undefined) onFlushed(chunk.length);
      });
      if (!more) {
        res.once('drain', pump);
        return;
      }
    }
    res.end();
  };
  pump();
}

function headerOf(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join(', ') : value;
}
