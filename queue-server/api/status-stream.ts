/**
 * The live status as server-sent events (text/event-stream): an `event: status` with the whole status
 * JSON whenever the crawl changes, at most four a second, and `event: finished` when a one-shot crawl
 * ends. Used by GET /api/status/stream (signed request or admin bearer token) and the admin page's
 * stream (session cookie). A comment line (or a `ping` event) every 15 s keeps proxies from closing
 * an idle stream. The first event is always a status snapshot; when the queue server shuts down, a
 * last snapshot goes out and the stream ends.
 *
 * Back-pressure: a client that reads slower than the crawl changes must not make the queue server
 * buffer snapshot after snapshot for it. Once `res.write` says the socket needs draining, nothing more
 * is written to it (no status, no ping) until it drains; then only the latest snapshot goes out, since
 * every snapshot is the whole status and the ones skipped are stale anyway. So one stream holds at
 * most one event beyond what the kernel's socket buffers took. A client that stays stalled for
 * `stallLimitMs` (a minute by default) is disconnected: it holds a connection and that event for
 * nothing, and an EventSource that was merely slow reconnects by itself.
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
  /** A client whose socket has not drained for this long is disconnected, ms (default DEFAULT_STALL_LIMIT_MS). */
  readonly stallLimitMs?: number;
}

const MIN_GAP_MS = 250;
const KEEP_ALIVE_MS = 15_000;
export const DEFAULT_STALL_LIMIT_MS = 60_000;

export function streamStatus(service: CrawlService, req: Request, res: Response, options: StreamOptions = {}): void {
  const clock = options.clock ?? systemClock;
  const stallLimitMs = options.stallLimitMs ?? DEFAULT_STALL_LIMIT_MS;
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
  let pending: NodeJS.Timeout | null = null;
  let lastSent = 0;
  let ended = false;
  /** The socket needs draining: nothing is written until it has. */
  let congested = false;
  /** A snapshot (and maybe `finished`) was skipped while congested: send the latest on drain. */
  let skippedStatus = false;
  let skippedFinished = false;
  let stallTimer: NodeJS.Timeout | null = null;

  const allowed = () => {
    if (ended) return false;
    if (options.stillAllowed === undefined || options.stillAllowed()) return true;
    end();
    return false;
  };
  /** Writes unless congested; a false return of res.write starts the stall clock. */
  const write = (chunk: string) => {
    if (res.write(chunk)) return;
    congested = true;
    stallTimer = setTimeout(() => {
      // Stalled for the whole limit: drop the client (and what is buffered for it).
      cleanUp();
      res.destroy();
    }, stallLimitMs);
    res.once('drain', onDrain);
  };
  const send = () => {
    pending = null;
    if (!allowed()) return;
    if (congested) {
      skippedStatus = true;
      return;
    }
    lastSent = clock();
    const status = options.snapshot === undefined ? service.status() : options.snapshot();
    write(`event: status\ndata: ${JSON.stringify(status)}\n\n`);
  };
  const sendFinished = () => {
    if (!allowed()) return;
    if (congested) {
      skippedFinished = true;
      return;
    }
    write(`event: finished\ndata: {}\n\n`);
  };
  const onDrain = () => {
    congested = false;
    if (stallTimer !== null) clearTimeout(stallTimer);
    stallTimer = null;
    if (ended) return;
    if (skippedStatus) {
      skippedStatus = false;
      send();
    }
    if (skippedFinished && !congested) {
      skippedFinished = false;
      sendFinished();
    }
  };
  const onChange = () => {
    if (pending !== null) return;
    pending = setTimeout(send, Math.max(0, MIN_GAP_MS - (clock() - lastSent)));
  };
  const onFinished = () => {
    if (pending !== null) clearTimeout(pending);
    send();
    sendFinished();
  };
  const keepAlive = setInterval(() => {
    // A ping only says the connection is alive; a congested one gets none (the drain's snapshot says more).
    if (!allowed() || congested) return;
    write(options.pingEvents === true ? `event: ping\ndata: ${JSON.stringify({ serverNow: clock() })}\n\n` : ': keep-alive\n\n');
  }, KEEP_ALIVE_MS);
  const cleanUp = () => {
    ended = true;
    clearInterval(keepAlive);
    if (pending !== null) clearTimeout(pending);
    if (stallTimer !== null) clearTimeout(stallTimer);
    res.off('drain', onDrain);
    service.off('change', onChange);
    service.off('finished', onFinished);
    service.off('closed', onClosed);
  };
  const end = () => {
    cleanUp();
    res.end();
  };
  // The queue server is shutting down: the last status goes out, and the stream ends (it is not a
  // request in flight that the drain should wait for).
  const onClosed = () => {
    if (pending !== null) clearTimeout(pending);
    send();
    end();
  };
  service.on('change', onChange);
  service.on('finished', onFinished);
  service.on('closed', onClosed);
  send();
  if (options.retryMs !== undefined && allowed() && !congested) write(`retry: ${options.retryMs}\n\n`);
  req.on('close', cleanUp);
}
