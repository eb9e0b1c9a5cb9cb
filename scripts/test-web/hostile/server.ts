/**
 * Answering one request on the hostile host. Well-formed responses go through node's ServerResponse;
 * the protocol and header faults are written as raw bytes on the socket, since node would refuse to
 * produce them. Every request is logged like the other hosts' (status 0 when none was sent, the raw
 * status line's status otherwise), and every timer is registered so `close()` cancels it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { canonicalUrl } from '../canonical.js';
import { pdfBytes } from '../files.js';
import { logClock } from '../request-log.js';
import type { ServerState } from '../server.js';
import { bombBody, type BombEncoding } from './bombs.js';
import { CHARSET_TITLES, CHAIN_STEPS, OUT_OF_SCOPE_URL, SLOW_STEP_MS, SLOW_STEPS, DISALLOWED_PREFIX, hostileCases, type HostileCase } from './cases.js';
import * as content from './content.js';
import { trapPage } from './traps.js';

const CHUNK_BYTES = 64 * 1024;
const HTML = 'text/html; charset=utf-8';

/** Per-web state of the hostile host: failure counters of the flaky status cases, by path. */
export class HostileState {
  readonly #served = new Map<string, number>();
  /** How many requests `path` has had before this one (and counts this one). */
  count(path: string): number {
    const seen = this.#served.get(path) ?? 0;
    this.#served.set(path, seen + 1);
    return seen;
  }
  reset(): void {
    this.#served.clear();
  }
}

export interface HostileHost {
  origin: string;
  authority: string;
  cases: readonly HostileCase[];
  state: HostileState;
}

export function createHostileHost(address: string, port: number): HostileHost {
  const authority = `${address}:${port}`;
  const origin = `http://${authority}`;
  return { origin, authority, cases: hostileCases(origin), state: new HostileState() };
}

export function handleHostileRequest(host: HostileHost, req: IncomingMessage, res: ServerResponse, server: ServerState): void {
  const start = logClock();
  const arrival = server.log.arrive();
  let status = 0;
  let bytes = 0;
  let recorded = false;
  const record = (): void => {
    if (recorded) return;
    recorded = true;
    const now = logClock();
    server.log.record(arrival, {
      start,
      end: now,
      handedOver: now,
      host: host.authority,
      method: req.method ?? '',
      path: req.url ?? '',
      status: res.headersSent ? res.statusCode : status,
      ifNoneMatch: null,
      ifModifiedSince: null,
      userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : null,
      bytes,
      // Hostile bodies are not archived by any test: their digests are not kept.
      bodySha1: null,
    });
  };
  // 'close' fires when the response is done or its socket closes, raw responses included (they end
  // the socket). Nothing listens on the socket itself: keep-alive sockets serve many requests.
  res.once('close', record);

  const target = req.url ?? '';
  const url = target.startsWith('/') ? canonicalUrl(`${host.origin}${target}`) : null;
  const path = url === null ? '' : url.slice(host.origin.length);
  const head = req.method === 'HEAD';

  const send = (code: number, type: string, body: Buffer, headers: Record<string, string> = {}): void => {
    res.writeHead(code, { 'Content-Type': type, 'Content-Length': String(body.length), ...headers });
    bytes = head ? 0 : body.length;
    res.end(head ? undefined : body);
  };
  const html = (body: Buffer, code = 200, headers: Record<string, string> = {}): void => send(code, HTML, body, headers);
  const redirect = (code: number, location: string): void => send(code, 'text/plain; charset=utf-8', Buffer.from(`Redirecting to ${location}\n`), { Location: location });
  const timer = (ms: number, fn: () => void): void => {
    const handle = setTimeout(() => {
      server.timers.delete(handle);
      fn();
    }, ms);
    server.timers.add(handle);
    res.once('close', () => {
      clearTimeout(handle);
      server.timers.delete(handle);
    });
  };
  /** Raw bytes on the socket; node's response object is never used for these. */
  const raw = (statusCode: number, data: string | Buffer): Socket => {
    status = statusCode;
    req.socket.write(data);
    return req.socket;
  };

  if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain; charset=utf-8', Buffer.from('GET and HEAD only\n'), { Allow: 'GET, HEAD' });

  const bomb = /^\/bomb\/(gzip|deflate|br)\.html$/.exec(path);
  if (bomb !== null) {
    const encoding = bomb[1] as BombEncoding;
    void bombBody(encoding).then((body) => {
      if (res.destroyed) return;
      res.writeHead(200, { 'Content-Type': HTML, 'Content-Encoding': encoding, 'Content-Length': String(body.length) });
      if (head) return void res.end();
      pump(res, (offset) => (offset < body.length ? body.subarray(offset, offset + CHUNK_BYTES) : null), (n) => (bytes += n));
    });
    return;
  }
  const chain = /^\/redirect\/chain\/([1-9][0-9]*)$/.exec(path);
  if (chain !== null) {
    const step = Number(chain[1]);
    if (step > CHAIN_STEPS) return html(content.page('Not found', '<p>Not found</p>'), 404);
    return redirect(301, step === CHAIN_STEPS ? '/redirect/chain-end.html' : `/redirect/chain/${step + 1}`);
  }
  const calendar = /^\/trap\/calendar\/([0-9]{4})\/(0[1-9]|1[0-2])$/.exec(path);
  if (calendar !== null) return html(content.calendarPage(Number(calendar[1]), Number(calendar[2])));
  if (/^\/trap\/(a\/)+$/.test(path)) return html(content.endlessPathPage((path.length - '/trap/'.length) / 2));
  const trap = trapPage(path, content.page);
  if (trap !== null) return html(trap);
  if (path.startsWith(DISALLOWED_PREFIX)) return html(content.page('Disallowed', '<p>robots.txt disallows this page</p>'));

  switch (path) {
    case '/':
      return redirect(301, '/index.html');
    case '/index.html':
      return html(content.indexPage(host.cases));
    case '/robots.txt':
      return send(200, 'text/plain; charset=utf-8', content.robotsTxt());

    case '/bomb/bad-gzip.html':
      return send(200, HTML, Buffer.from('this is not gzip at all, whatever the header says'.repeat(20)), { 'Content-Encoding': 'gzip' });

    case '/body/endless.html': {
      res.writeHead(200, { 'Content-Type': HTML });
      if (head) return void res.end();
      const chunk = Buffer.from(`<p>${'endless '.repeat(CHUNK_BYTES / 8 - 1)}</p>`.slice(0, CHUNK_BYTES));
      pump(res, () => chunk, (n) => (bytes += n));
      return;
    }
    case '/body/slow.html': {
      res.writeHead(200, { 'Content-Type': HTML, 'Content-Length': String(SLOW_STEPS) });
      if (head) return void res.end();
      let sent = 0;
      const drip = (): void => {
        if (res.destroyed) return;
        res.write('.');
        bytes = ++sent;
        if (sent === SLOW_STEPS) res.end();
        else timer(SLOW_STEP_MS, drip);
      };
      drip();
      return;
    }
    case '/headers/slow.html': {
      const socket = raw(200, 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n');
      let sent = 0;
      const drip = (): void => {
        if (socket.destroyed) return;
        if (++sent < SLOW_STEPS) {
          socket.write(`X-Slow-${sent}: 1\r\n`);
          timer(SLOW_STEP_MS, drip);
        } else socket.end('Content-Length: 2\r\nConnection: close\r\n\r\nok');
      };
      timer(SLOW_STEP_MS, drip);
      return;
    }
    case '/headers/huge-line.html':
      raw(200, `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Huge: ${'h'.repeat(64 * 1024)}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok`).end();
      return;
    case '/headers/many.html': {
      const fields: string[] = [];
      for (let i = 0; i < 5000; i++) fields.push(`x${i}: 1\r\n`);
      raw(200, `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n${fields.join('')}Content-Length: 2\r\nConnection: close\r\n\r\nok`).end();
      return;
    }

    case '/redirect/loop-a':
      return redirect(302, '/redirect/loop-b');
    case '/redirect/loop-b':
      return redirect(302, '/redirect/loop-a');
    case '/redirect/chain-end.html':
      return html(content.page('End of a 30-step chain', '<p>the end</p>'));
    case '/redirect/javascript':
      return redirect(302, 'javascript:alert(document.domain)');
    case '/redirect/out-of-scope':
      return redirect(302, OUT_OF_SCOPE_URL);

    case '/charset/shift-jis.html':
      return send(200, 'text/html', content.shiftJisPage());
    case '/charset/utf-16.html':
      return send(200, 'text/html; charset=iso-8859-1', content.utf16Page(CHARSET_TITLES.utf16));
    case '/charset/invalid-utf8.html':
      return send(200, HTML, content.invalidUtf8Page());
    case '/charset/lying.html':
      return send(200, HTML, content.lyingPage());

    case '/markup/script-title.html':
      return html(content.scriptTitlePage());
    case '/markup/attribute-breakout.html':
      return html(content.attributeBreakoutPage());
    case '/markup/scheme-links.html':
      return html(content.schemeLinksPage());
    case '/markup/huge-title.html':
      return html(content.hugeTitlePage());

    case '/links/bomb.html':
      return html(content.linkBombPage());
    case '/links/long-url.html':
      return html(content.longUrlPage());
    case '/links/nested.html':
      return html(content.nestedPage());
    case '/links/unclosed.html':
      return html(content.unclosedPage());
    case '/links/session-ids.html':
      return html(content.sessionIdPage());

    case '/fault/reset.html': {
      // The head is cut off by a TCP reset (RST, not FIN) before its blank line. Not mid-body: there, a
      // reader that has not yet drained the received bytes when the RST lands may be told end-of-file by
      // the kernel instead of ECONNRESET (seen on this machine under load: 2 runs in 10), and a body cut
      // short by end-of-file is, rightly, `content-length-mismatch`. Cut in the head, either report is a
      // reset to the fetcher.
      const socket = raw(200, `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\nX-Padding: ${'r'.repeat(4000)}`);
      timer(50, () => socket.resetAndDestroy());
      return;
    }
    case '/fault/short-body.html':
      bytes = 4000;
      raw(200, `HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 10000\r\n\r\n<p>${'s'.repeat(4000 - 3)}`).end();
      return;
    case '/fault/http10.html':
      bytes = 1;
      raw(200, `HTTP/1.0 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n`).end(content.page('HTTP/1.0, close-delimited', '<p>the body ends when the connection closes</p><a href="/index.html">home</a>'));
      return;
    case '/fault/empty.html':
      return html(Buffer.alloc(0));
    case '/fault/binary.html':
      return send(200, HTML, binaryBytes(4096));
    case '/fault/doc.pdf':
      return send(200, 'application/pdf', pdfBytes());
    case '/fault/garbage-status':
      raw(0, 'SSH-2.0-OpenSSH_9.6 hello\r\n\r\nthis is not HTTP\r\n').end();
      return;

    case '/status/429.html':
    case '/status/503.html':
      if (host.state.count(path) < 1) return html(content.page('Slow down', '<p>try again</p>'), path === '/status/429.html' ? 429 : 503, { 'Retry-After': '1' });
      return html(content.page('Recovered', '<p>fine now</p>'));
    case '/status/429-forever.html':
    case '/status/503-forever.html':
      return html(content.page('Slow down', '<p>try again later, for ever</p>'), path === '/status/429-forever.html' ? 429 : 503, { 'Retry-After': '1' });
    case '/status/500-recovers.html':
      if (host.state.count(path) < 3) return html(content.page('Server error', '<p>try again</p>'), 500);
      return html(content.page('Recovered after three 500s', '<p>fine now</p>'));
    case '/status/404.html':
      return html(content.page('Not found', '<p>Not found</p>'), 404);
    case '/status/410.html':
      return html(content.page('Gone', '<p>Gone</p>'), 410);
  }
  return html(content.page('Not found', '<p>Not found</p>'), 404);
}

/** Writes chunks from `next(offset)` with backpressure until it returns null or the client goes away. */
function pump(res: ServerResponse, next: (offset: number) => Buffer | null, onSent: (n: number) => void): void {
  let offset = 0;
  const step = (): void => {
    while (!res.destroyed) {
      const chunk = next(offset);
      if (chunk === null) return void res.end();
      offset += chunk.length;
      onSent(chunk.length);
      if (!res.write(chunk)) return void res.once('drain', step);
    }
  };
  step();
}

/** Deterministic bytes that are plainly binary (NULs and control bytes among them). */
function binaryBytes(length: number): Buffer {
  const out = Buffer.alloc(length);
  let x = 0x2545f491;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}
