/**
 * The fetcher's side of the wire contract: typed calls to the queue server, each response checked
 * against the protocol schema. Transport failures and 5xx answers are retried with capped,
 * jittered exponential backoff until they succeed or the fetcher stops; a 503 with Retry-After (the
 * queue server's body budget is full, or its nonce memory) waits at least that long, since the queue
 * server says when it expects room. A 4xx is not retried (the same request would fail the same way)
 * and surfaces as a QueueServerError, with one exception: 401 unknown-instance, the answer of a queue
 * server that restarted since the request was signed, which names the new instance: the next
 * attempt is signed for it.
 *
 * Every request is signed (shared/request-signing.ts) over its headers and the Content-Digest of
 * the body bytes as sent, and every attempt anew: a retry has a fresh timestamp and nonce, so to the
 * queue server it is a new request (and a retried results post is applied once by its own
 * idempotence). The instance to sign for is read from the X-Petrel-Instance header of every answer
 * (before the first signed request, and after a transport failure, from GET /healthz). The status
 * routes are reached the same way (`status`, `openStatusStream`), so the secret never crosses the
 * wire for them either. Over HTTPS the queue server's certificate is verified, against `ca` when
 * given; a certificate that cannot be verified is a TlsTrustError, never retried, and so is the
 * wrong scheme either way (an https:// URL for a plain HTTP server, an http:// URL for one that
 * speaks TLS).
 */
import { isIP } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { Pool, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  claimResponseSchema,
  heartbeatResponseSchema,
  resultsResponseSchema,
  ROUTES,
  type ClaimRequest,
  type ClaimResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type ResultsRequest,
  type ResultsResponse,
  resultsToJson,
} from '../shared/protocol.js';
import { encodeResultsFrame, RESULTS_FRAME_TYPE, RESULTS_FRAME_VERSION } from '../shared/results-frame.js';
import { isInstanceId, SIGNATURE_HEADERS, signRequest } from '../shared/request-signing.js';

export class QueueServerError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(`queue server answered ${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

/** The queue server's TLS certificate cannot be verified (or it does not speak TLS): retrying cannot help. */
export class TlsTrustError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export class StoppedError extends Error {
  constructor() {
    super('fetcher stopped');
  }
}

export interface QueueClientOptions {
  readonly serverUrl: string;
  /** The shared secret (fetcher.token): signs requests, never sent. */
  readonly token: string;
  /** PEM CA certificate(s) to verify an HTTPS queue server with, instead of the system's CAs. */
  readonly ca?: string | Buffer;
  /** Aborts pending retries and requests. */
  readonly signal: AbortSignal;
  /**
   * Connections to the queue server: a long-poll claim holds one, and every results post holds one until
   * the queue server's group commit acknowledges it (up to ~100 ms), so a fetcher needs about as many as
   * it has slots finishing at once. Default 32.
   */
  readonly connections?: number;
  /**
   * gzip request bodies over GZIP_THRESHOLD; default: unless the queue server is on this machine
   * (loopback), where compressing only costs CPU on both sides.
   */
  readonly compress?: boolean;
  /** Called before each retry with the failure, for the log. */
  readonly onRetry?: (what: string, attempt: number, error: unknown) => void;
  /**
   * Asked after onRetry: the longest wait before the retry, ms (the caller has something due then: a
   * notice, a deadline). The backoff is cut to it, though never below a Retry-After.
   */
  readonly maxRetryWaitMs?: () => number;
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Bodies above this size are sent gzip-compressed (unless the queue server is on this machine). */
const GZIP_THRESHOLD = 16 * 1024;
/**
 * zlib level of compressed bodies. A results frame of the test web's pages (27 KB a page, 6 KB of it
 * WARC records, gzip members already) took 0.690 ms of CPU a page at zlib's default (6) for 14,850
 * bytes, and 0.308 ms at level 1 for 15,334 (`node dist/scripts/bench-results-wire.js 512 3`,
 * 2026-12-06): a third of a fetcher's per-page budget, for 3 % more bytes.
 */
export const POST_GZIP_LEVEL = 1;
/** zlib's gzip on libuv's thread pool: a results post of a few MB compresses off the event loop. */
const gzip = promisify(gzipCallback);

export class QueueClient {
  readonly #pool: Pool;
  readonly #options: QueueClientOptions;
  readonly #origin: string;
  readonly #basePath: string;
  /** Compressing for a queue server on this machine only costs CPU on both sides. */
  readonly #compress: boolean;
  /** An answer came back: the URL's scheme is evidently right, no need to diagnose closed connections. */
  #answered = false;
  /** The queue server process requests are signed for (X-Petrel-Instance); null until an answer named it. */
  #instance: string | null = null;

  constructor(options: QueueClientOptions) {
    this.#options = options;
    const url = new URL(options.serverUrl);
    this.#origin = url.origin;
    this.#basePath = url.pathname.replace(/\/$/, '');
    this.#compress = options.compress ?? !isLoopback(url.hostname);
    this.#pool = new Pool(this.#origin, {
      connections: options.connections ?? 32,
      keepAliveTimeout: 60_000,
      headersTimeout: 90_000,
      bodyTimeout: 90_000,
      ...(options.ca === undefined ? {} : { connect: { ca: options.ca } }),
    });
  }

  /** `signal` abandons this claim only (the fetcher stops claiming); the client stays usable. */
  claim(request: ClaimRequest, signal?: AbortSignal): Promise<ClaimResponse> {
    return this.#post(ROUTES.claim, request, claimResponseSchema, 'claim', signal);
  }

  /**
   * Posts results: as a binary frame of version `frame` (shared/results-frame.ts) when the schedule
   * names one this fetcher writes, else as JSON (an older queue server, captures in base64).
   */
  results(request: ResultsRequest, options: { readonly frame?: number } = {}): Promise<ResultsResponse> {
    if (options.frame === RESULTS_FRAME_VERSION) {
      return this.#post(ROUTES.results, request, resultsResponseSchema, 'results', undefined, { bytes: encodeResultsFrame(request), contentType: RESULTS_FRAME_TYPE });
    }
    return this.#post(ROUTES.results, resultsToJson(request), resultsResponseSchema, 'results');
  }

  heartbeat(request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.#post(ROUTES.heartbeat, request, heartbeatResponseSchema, 'heartbeat');
  }

  /** GET /api/status, signed as `fetcherId`: the crawl's status JSON (its shape is the queue server's CrawlStatus). */
  async status(fetcherId: string): Promise<unknown> {
    const response = await this.#send({ method: 'GET', route: ROUTES.status, fetcherId, what: 'status' });
    return JSON.parse(await response.body.text()) as unknown;
  }

  /**
   * GET /api/status/stream, signed as `fetcherId`: the server-sent events as they come (bytes), until
   * the queue server ends the stream or `signal` aborts. Not retried once the stream has begun.
   */
  async openStatusStream(fetcherId: string, signal?: AbortSignal): Promise<AsyncIterable<Buffer>> {
    const response = await this.#send({ method: 'GET', route: ROUTES.statusStream, fetcherId, what: 'status stream', signal, stream: true });
    return response.body;
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  async #post<T extends z.ZodType>(
    route: string,
    body: { fetcherId: string },
    schema: T,
    what: string,
    signal?: AbortSignal,
    encoded: { readonly bytes: Buffer; readonly contentType: string } = { bytes: Buffer.from(JSON.stringify(body)), contentType: 'application/json' },
  ): Promise<z.infer<T>> {
    const compressed = this.#compress && encoded.bytes.length > GZIP_THRESHOLD;
    const payload = compressed ? await gzip(encoded.bytes, { level: POST_GZIP_LEVEL }) : encoded.bytes;
    const response = await this.#send({ method: 'POST', route, fetcherId: body.fetcherId, what, signal, body: payload, contentType: encoded.contentType, contentEncoding: compressed ? 'gzip' : undefined });
    const text = await response.body.text();
    let parsed;
    try {
      parsed = schema.safeParse(JSON.parse(text));
    } catch {
      parsed = null;
    }
    if (parsed === null || !parsed.success) throw new QueueServerError(response.statusCode, 'bad-response', 'response does not match the protocol');
    return parsed.data;
  }

  /** One signed request, retried as the header comment says; resolves with a 2xx response whose body is unread. */
  async #send(request: SendOptions): Promise<Dispatcher.ResponseData> {
    const signal = request.signal === undefined ? this.#options.signal : AbortSignal.any([this.#options.signal, request.signal]);
    const path = this.#basePath + request.route;
    /**
     * unknown-instance answers retried at once: each that names an instance other than the one signed
     * for (the queue server restarted, perhaps again and again) is retried without waiting, up to this
     * many in one call; one naming the very instance signed for is trouble, and waits as a 5xx does.
     */
    let immediateRetries = 0;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw new StoppedError();
      let retryAfterMs = 0;
      try {
        const instance = this.#instance ?? (await this.#learnInstance(signal));
        const signature = signRequest({
          secret: this.#options.token,
          instance,
          method: request.method,
          path,
          body: request.body,
          contentType: request.body === undefined ? undefined : (request.contentType ?? 'application/json'),
          contentEncoding: request.contentEncoding,
          fetcherId: request.fetcherId,
          now: Date.now(),
        });
        const response = await this.#pool.request({
          path,
          method: request.method,
          headers: request.stream === true ? { ...signature, accept: 'text/event-stream' } : signature,
          body: request.body,
          signal,
          ...(request.stream === true ? { bodyTimeout: 0 } : {}),
        });
        this.#answered = true;
        this.#noteInstance(response.headers[SIGNATURE_HEADERS.instance]);
        if (response.statusCode < 400) return response;
        const error = parseError(await response.body.text());
        if (response.statusCode === 401 && error.code === 'unknown-instance' && this.#instance !== instance && immediateRetries < MAX_IMMEDIATE_RETRIES) {
          immediateRetries++;
          attempt--;
          continue;
        }
        if (response.statusCode >= 500) retryAfterMs = retryAfterOf(response.headers['retry-after']);
        throw new QueueServerError(response.statusCode, error.code, error.message);
      } catch (error) {
        if (signal.aborted) throw new StoppedError();
        const retryable = !(error instanceof QueueServerError) || error.status >= 500 || error.code === 'unknown-instance';
        if (!retryable) throw error;
        const untrusted = tlsTrustError(error, this.#origin, this.#options.ca !== undefined);
        if (untrusted !== null) throw untrusted;
        if (!this.#answered && closedWithoutAnswer(error) && (await speaksTls(this.#origin))) throw tlsExpectedError(this.#origin);
        // A transport failure may hide a restart, and a refusal of a large body can be lost with its
        // connection (the queue server closes it without reading the body: EPIPE here): ask again.
        if (!(error instanceof QueueServerError)) this.#instance = null;
        this.#options.onRetry?.(request.what, attempt, error);
        const atMostMs = this.#options.maxRetryWaitMs?.() ?? Number.POSITIVE_INFINITY;
        await backoff(attempt, signal, { atLeastMs: retryAfterMs, atMostMs, capMs: refused(error) ? REFUSED_BACKOFF_CAP_MS : BACKOFF_CAP_MS });
      }
    }
  }

  /** The instance the queue server names in an unauthenticated answer (GET /healthz). */
  async #learnInstance(signal: AbortSignal): Promise<string> {
    const response = await this.#pool.request({ path: `${this.#basePath}/healthz`, method: 'GET', signal });
    await response.body.text();
    this.#noteInstance(response.headers[SIGNATURE_HEADERS.instance]);
    if (this.#instance === null) throw new QueueServerError(response.statusCode, 'no-instance', 'the queue server names no X-Petrel-Instance: it speaks an older protocol (update it)');
    return this.#instance;
  }

  #noteInstance(header: string | string[] | undefined): void {
    if (typeof header === 'string' && isInstanceId(header)) this.#instance = header;
  }
}

/** See #send: a queue server restarting more often than this within one call is waited for. */
const MAX_IMMEDIATE_RETRIES = 20;

interface SendOptions {
  readonly method: 'GET' | 'POST';
  readonly route: string;
  readonly fetcherId: string;
  /** For the log (onRetry). */
  readonly what: string;
  readonly signal?: AbortSignal;
  /** The body bytes as sent (JSON or a results frame, gzip-compressed when contentEncoding says so). */
  readonly body?: Buffer;
  /** The body's Content-Type; default application/json. */
  readonly contentType?: string;
  readonly contentEncoding?: string;
  /** A server-sent event stream: no body timeout. */
  readonly stream?: boolean;
}

/** Retry-After in seconds (RFC 9110 section 10.2.3; the queue server sends seconds), as ms, at most a minute. */
function retryAfterOf(header: string | string[] | undefined): number {
  if (typeof header !== 'string' || !/^\d{1,6}$/.test(header)) return 0;
  return Math.min(60_000, Number(header) * 1000);
}

/** Certificate verification failures (OpenSSL's codes and Node's host name check). */
const TLS_TRUST_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'INVALID_CA',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
/** What a TLS client sees when the other end answers in plain HTTP. */
const NOT_TLS_CODES = new Set(['ERR_SSL_WRONG_VERSION_NUMBER', 'ERR_SSL_PACKET_LENGTH_TOO_LONG']);

function tlsTrustError(error: unknown, origin: string, withCa: boolean): TlsTrustError | null {
  const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
  if (typeof code !== 'string' || !origin.startsWith('https:')) return null;
  // OpenSSL's messages run over lines and name source files: keep the gist.
  const detail = String((error as Error).message).split('\n')[0]!.replace(/^[0-9A-F]+:error:[0-9A-F]+:/, '').slice(0, 200);
  if (TLS_TRUST_CODES.has(code)) {
    const fix = withCa
      ? 'the certificate is not signed by the --ca given, or does not name this host: check --ca and the certificate\'s subjectAltName'
      : 'pass --ca FILE with the queue server\'s certificate (self-signed) or the CA that signed it';
    return new TlsTrustError(code, `refusing the queue server at ${origin}: its TLS certificate cannot be verified (${code}: ${detail}); ${fix}`);
  }
  if (NOT_TLS_CODES.has(code)) {
    return new TlsTrustError(code, `the queue server at ${origin} does not speak TLS (${code}: ${detail}): use an http:// URL, or start it with --tls-cert and --tls-key`);
  }
  return null;
}

/** What an HTTP client sees when the other end expected a TLS handshake and hung up on plain HTTP. */
function closedWithoutAnswer(error: unknown): boolean {
  const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET';
}

/**
 * Whether an http:// origin answers a TLS handshake: a queue server started with --tls-cert closes a
 * plain HTTP request without a word ("other side closed"), which would otherwise be retried forever.
 * The probe only shakes hands (the certificate is not checked, nothing is sent) and gives up after 3 s.
 */
function speaksTls(origin: string): Promise<boolean> {
  const url = new URL(origin);
  if (url.protocol !== 'http:') return Promise.resolve(false);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port: Number(url.port || 80), rejectUnauthorized: false, ...(isIP(host) === 0 ? { servername: host } : {}) });
    const done = (answer: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(false), 3000);
    socket.once('secureConnect', () => done(true));
    socket.once('error', () => done(false));
  });
}

function tlsExpectedError(origin: string): TlsTrustError {
  const https = origin.replace(/^http:/, 'https:');
  return new TlsTrustError(
    'ERR_TLS_EXPECTED',
    `the queue server at ${origin} speaks TLS (HTTPS) and closes plain HTTP requests: use --server ${https} (with --ca FILE if its certificate is self-signed)`,
  );
}

function parseError(text: string): { code: string; message: string } {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
    return { code: String(parsed.error?.code ?? 'error'), message: String(parsed.error?.message ?? text).slice(0, 300) };
  } catch {
    return { code: 'error', message: text.slice(0, 300) };
  }
}

/** The longest wait between two attempts. */
const BACKOFF_CAP_MS = 10_000;
/**
 * The longest wait while connections are refused: nothing listens, which is a queue server restarting
 * more often than one that is overloaded. A refused connection costs both sides next to nothing, and
 * a fetcher that holds results must be back before the restarted queue server has re-leased their URLs
 * to other fetchers and finished (a --once crawl), or its results are fetched twice.
 */
const REFUSED_BACKOFF_CAP_MS = 2_000;

function refused(error: unknown): boolean {
  const code = (error as { code?: unknown }).code ?? (error as { cause?: { code?: unknown } }).cause?.code;
  return code === 'ECONNREFUSED';
}

/**
 * 250 ms doubling to `capMs`, with jitter; at most `atMostMs` (the caller's next notice or deadline),
 * but at least `atLeastMs` (a Retry-After). Rejects when the signal aborts.
 */
function backoff(attempt: number, signal: AbortSignal, { atLeastMs, atMostMs, capMs }: { atLeastMs: number; atMostMs: number; capMs: number }): Promise<void> {
  const cap = Math.min(capMs, 250 * 2 ** Math.min(attempt - 1, 10));
  // A Retry-After is spread over half its length again, so fetchers told the same do not return at once.
  const jittered = atLeastMs > 0 ? Math.round(atLeastMs + Math.random() * (atLeastMs / 2)) : Math.round(cap / 2 + Math.random() * (cap / 2));
  const delay = Math.max(Math.min(jittered, Math.round(atMostMs)), atLeastMs);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, delay);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new StoppedError());
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
