/**
 * The fetcher's side of the wire contract: typed calls to the queue server, each response checked
 * against the protocol schema. Transport failures and 5xx answers are retried with capped,
 * jittered exponential backoff until they succeed or the fetcher stops; a 4xx is not retried (the
 * same request would fail the same way) and surfaces as a QueueServerError.
 *
 * Every request is signed (shared/request-signing.ts) over the body bytes as sent, and every attempt
 * anew: a retry has a fresh timestamp and nonce, so to the queue server it is a new request (and a
 * retried results post is applied once by its own idempotence). Over HTTPS the queue server's
 * certificate is verified, against `ca` when given; a certificate that cannot be verified is a
 * TlsTrustError, never retried.
 */
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { Pool } from 'undici';
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
} from '../shared/protocol.js';
import { signRequest } from '../shared/request-signing.js';

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
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(hostname);
}

/** Bodies above this size are sent gzip-compressed (unless the queue server is on this machine). */
const GZIP_THRESHOLD = 16 * 1024;
/** zlib's gzip on libuv's thread pool: a results post of a few MB compresses off the event loop. */
const gzip = promisify(gzipCallback);

export class QueueClient {
  readonly #pool: Pool;
  readonly #options: QueueClientOptions;
  readonly #origin: string;
  readonly #basePath: string;
  /** Compressing for a queue server on this machine only costs CPU on both sides. */
  readonly #compress: boolean;

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

  results(request: ResultsRequest): Promise<ResultsResponse> {
    return this.#post(ROUTES.results, request, resultsResponseSchema, 'results');
  }

  heartbeat(request: HeartbeatRequest): Promise<HeartbeatResponse> {
    return this.#post(ROUTES.heartbeat, request, heartbeatResponseSchema, 'heartbeat');
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  async #post<T extends z.ZodType>(route: string, body: { fetcherId: string }, schema: T, what: string, callSignal?: AbortSignal): Promise<z.infer<T>> {
    const signal = callSignal === undefined ? this.#options.signal : AbortSignal.any([this.#options.signal, callSignal]);
    const json = Buffer.from(JSON.stringify(body));
    const compressed = this.#compress && json.length > GZIP_THRESHOLD;
    const payload = compressed ? await gzip(json) : json;
    const path = this.#basePath + route;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (compressed) headers['content-encoding'] = 'gzip';
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw new StoppedError();
      try {
        const signature = signRequest({ secret: this.#options.token, method: 'POST', path, body: payload, fetcherId: body.fetcherId, now: Date.now() });
        const response = await this.#pool.request({
          path,
          method: 'POST',
          headers: { ...headers, ...signature },
          body: payload,
          signal,
        });
        const text = await response.body.text();
        if (response.statusCode >= 500) throw new QueueServerError(response.statusCode, 'server-error', text.slice(0, 200));
        if (response.statusCode >= 400) {
          const error = parseError(text);
          throw new QueueServerError(response.statusCode, error.code, error.message);
        }
        const parsed = schema.safeParse(JSON.parse(text));
        if (!parsed.success) throw new QueueServerError(response.statusCode, 'bad-response', 'response does not match the protocol');
        return parsed.data;
      } catch (error) {
        if (signal.aborted) throw new StoppedError();
        if (error instanceof QueueServerError && error.status < 500) throw error;
        const untrusted = tlsTrustError(error, this.#origin, this.#options.ca !== undefined);
        if (untrusted !== null) throw untrusted;
        this.#options.onRetry?.(what, attempt, error);
        await backoff(attempt, signal);
      }
    }
  }
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

function parseError(text: string): { code: string; message: string } {
  try {
    const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
    return { code: String(parsed.error?.code ?? 'error'), message: String(parsed.error?.message ?? text).slice(0, 300) };
  } catch {
    return { code: 'error', message: text.slice(0, 300) };
  }
}

/** 250 ms doubling to 10 s, with full jitter. Rejects when the signal aborts. */
function backoff(attempt: number, signal: AbortSignal): Promise<void> {
  const cap = Math.min(10_000, 250 * 2 ** Math.min(attempt - 1, 10));
  const delay = Math.round(cap / 2 + Math.random() * (cap / 2));
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
