/**
 * The live status as server-sent events (text/event-stream): an `event: status` with the whole status
 * JSON whenever the crawl changes, at most four a second, and `event: finished` when a one-shot crawl
 * ends. Used by GET /api/status/stream (bearer token) and the admin page's stream (session cookie).
 * A comment line (or a `ping` event) every 15 s keeps proxies from closing an idle stream. The first
 * event is always a status snapshot.
 */
import type { Request, Response } from 'express';
import { systemClock, type Clock, type CrawlService } from '../crawl/crawl-service.js';

export interface StreamOptions {
  /** ms since epoch: paces the events and stamps the pings (the system clock by default). */
  readonly clock?: Clock;
  /** Checked before every write; when it turns false (a session logged out or expired) the stream ends. */
  readonly stillAllowed?: () => boolean;
  /** What each `status` event carries (default: service.status()). */
  readonly snapshot?: () => unknown;
  /**
   * Keep-alive as `event: ping` (data: the server's clock) rather than a comment, so a page can tell a
   * quiet stream from a dead one (EventSource never reports comments).
   */
  readonly pingEvents?: boolean;
  /** Tells EventSource how soon to reconnect after the connection drops, ms (sent after the first event). */
  readonly retryMs?: number;
}

const MIN_GAP_MS = 250;
const KEEP_ALIVE_MS = 15_000;

export function streamStatus(service: CrawlService, req: Request, res: Response, options: StreamOptions = {}): void {
  const clock = options.clock ?? systemClock;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  let pending: NodeJS.Timeout | null = null;
  let lastSent = 0;
  let ended = false;
  const allowed = () => {
    if (ended) return false;
    if (options.stillAllowed === undefined || options.stillAllowed()) return true;
    end();
    return false;
  };
  const send = () => {
    pending = null;
    if (!allowed()) return;
    lastSent = clock();
    const status = options.snapshot === undefined ? service.status() : options.snapshot();
    res.write(`event: status\ndata: ${JSON.stringify(status)}\n\n`);
  };
  const onChange = () => {
    if (pending !== null) return;
    pending = setTimeout(send, Math.max(0, MIN_GAP_MS - (clock() - lastSent)));
  };
  const onFinished = () => {
    if (pending !== null) clearTimeout(pending);
    send();
    if (allowed()) res.write(`event: finished\ndata: {}\n\n`);
  };
  const keepAlive = setInterval(() => {
    if (!allowed()) return;
    res.write(options.pingEvents === true ? `event: ping\ndata: ${JSON.stringify({ serverNow: clock() })}\n\n` : ': keep-alive\n\n');
  }, KEEP_ALIVE_MS);
  const cleanUp = () => {
    ended = true;
    clearInterval(keepAlive);
    if (pending !== null) clearTimeout(pending);
    service.off('change', onChange);
    service.off('finished', onFinished);
  };
  const end = () => {
    cleanUp();
    res.end();
  };
  service.on('change', onChange);
  service.on('finished', onFinished);
  send();
  if (options.retryMs !== undefined && allowed()) res.write(`retry: ${options.retryMs}\n\n`);
  req.on('close', cleanUp);
}
