/**
 * The queue server listens before its stores are open (opening a large crawl database and loading the
 * frontier from it can take a while), so that a supervisor can tell "starting" from "dead":
 *
 *   /healthz  200 as soon as the port is open (liveness: the process answers);
 *   /readyz   503 {"ready": false, "reason": "starting"} until the stores are open and the app serves,
 *             then the app's own /readyz (200, or 503 "draining" once a shutdown began).
 *
 * Every other request that arrives while starting is held, not refused, and handed to the app when it
 * is ready: fetchers started together with their queue server (petrel crawl) get their first claim
 * answered instead of an error and a backoff, as when their connections waited in the listen backlog.
 * At most MAX_HELD are held (more get 503 with Retry-After); a start that fails answers them 503.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';

const MAX_HELD = 1000;

export class ReadinessGate {
  #app: RequestListener | null = null;
  /**
   * Headers of the gate's own answers: the app's instance id (X-Petrel-Instance), which fetchers learn
   * from /healthz before they sign; without it a fetcher meeting a queue server that is still starting
   * would take it for one of an older protocol.
   */
  readonly #headers: Record<string, string>;

  constructor(options: { headers?: Record<string, string> } = {}) {
    this.#headers = options.headers ?? {};
  }

  readonly #held = new Set<[IncomingMessage, ServerResponse]>();

  /** The server's request listener: the app once it is open, the gate before. */
  readonly handler: RequestListener = (req, res) => {
    if (this.#app !== null) return this.#app(req, res);
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/healthz') return answer(res, 200, { ok: true }, this.#headers);
    if (path === '/readyz') return answer(res, 503, { ready: false, reason: 'starting' });
    if (this.#held.size >= MAX_HELD) return answer(res, 503, { error: 'starting', message: 'the queue server is starting: try again shortly' }, { 'Retry-After': '1' });
    const entry: [IncomingMessage, ServerResponse] = [req, res];
    this.#held.add(entry);
    res.once('close', () => this.#held.delete(entry));
  };

  /** The stores are open: the app serves from now on, the held requests first. */
  open(app: RequestListener): void {
    this.#app = app;
    const held = [...this.#held];
    this.#held.clear();
    for (const [req, res] of held) if (!res.destroyed) app(req, res);
  }

  /** The start failed: the held requests are answered 503. */
  fail(): void {
    for (const [, res] of this.#held) answer(res, 503, { error: 'unavailable', message: 'the queue server could not start' }, { Connection: 'close' });
    this.#held.clear();
  }
}

function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff', ...headers });
  res.end(JSON.stringify(body));
}
