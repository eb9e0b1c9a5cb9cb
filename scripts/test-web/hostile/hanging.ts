/**
 * The hanging host: a host whose robots.txt answers 404 at once (crawl anything, RFC 9309 section
 * 2.3.1.3) and whose every other request is never answered: the connection stays open, silent, until
 * the client gives up. It is what a crawler meets when a site's application server is down behind a
 * live front end. Ground truth: nothing but robots.txt ever gets a response; `HANGING_PAGES` are the
 * paths tests seed it with (they link nowhere, and nothing links to them).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { logClock } from '../request-log.js';
import type { ServerState } from '../server.js';

/** Paths a test seeds the hanging host with. */
export const HANGING_PAGES: readonly string[] = Array.from({ length: 10 }, (_, i) => `/page-${i + 1}.html`);

export interface HangingHost {
  origin: string;
  authority: string;
}

export function createHangingHost(address: string, port: number): HangingHost {
  const authority = `${address}:${port}`;
  return { origin: `http://${authority}`, authority };
}

export function handleHangingRequest(host: HangingHost, req: IncomingMessage, res: ServerResponse, server: ServerState): void {
  const start = logClock();
  const arrival = server.log.arrive();
  res.once('close', () => {
    const now = logClock();
    server.log.record(arrival, {
      start,
      end: now,
      handedOver: now,
      host: host.authority,
      method: req.method ?? '',
      path: req.url ?? '',
      status: res.headersSent ? res.statusCode : 0,
      ifNoneMatch: null,
      ifModifiedSince: null,
      userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : null,
      bytes: 0,
      bodySha1: null,
    });
  });
  if (req.url === '/robots.txt') {
    res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': '10' }).end('not found\n');
    return;
  }
  // Never answered: the client's time limit ends it (or closing the web does).
}
