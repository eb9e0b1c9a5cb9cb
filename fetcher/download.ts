/**
 * One HTTP request with undici, bounded in every dimension: connect, header and body timeouts, a
 * total time limit, a body limit counted after decompression (so a compression bomb stops at the
 * limit), and a small limit for bodies nobody reads (error pages, redirects). Redirects are not
 * followed: a 3xx comes back as a status with its Location.
 *
 * Failures come back as values with stable codes (shared/fetch-codes.ts, see `errorCodeOf`), never as exceptions.
 */
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Agent, request, type Dispatcher } from 'undici';
import type { FetchErrorCode } from '../shared/fetch-codes.js';
import { defaultAddressPolicy, guardedConnector, type AddressPolicy } from './address-guard.js';

export interface DownloadOptions {
  readonly userAgent: string;
  /** Body bytes kept at most, after decompression; beyond it the body is cut and marked truncated. */
  readonly maxBodyBytes: number;
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  /** Longest silence while reading the body. */
  readonly bodyTimeoutMs: number;
  /** The whole request, from connect to the last body byte. */
  readonly totalTimeoutMs: number;
}

export interface DownloadRequest {
  readonly url: string;
  readonly method?: 'GET' | 'HEAD';
  readonly headers?: Record<string, string>;
  /** Override of maxBodyBytes (robots.txt: 512 KiB). */
  readonly maxBodyBytes?: number;
  /** Read the body even for non-2xx (robots.txt wants none of those, pages want only 2xx). */
  readonly wantBody: (status: number) => boolean;
}

export type DownloadResult =
  | {
      readonly ok: true;
      readonly status: number;
      readonly headers: Record<string, string | string[] | undefined>;
      readonly body: Buffer;
      readonly wireBytes: number;
      readonly truncated: boolean;
      readonly durationMs: number;
    }
  | { readonly ok: false; readonly code: FetchErrorCode; readonly message: string; readonly wireBytes: number; readonly durationMs: number };

/** Bodies we do not want (errors, redirects) are drained up to this size to keep the connection. */
const DISCARD_LIMIT = 64 * 1024;
/** Response header bytes accepted (status line and fields); more is `headers-too-large`. */
export const MAX_HEADER_BYTES = 64 * 1024;
/**
 * Response header fields accepted. undici bounds their bytes, not their number, and 5,000 short fields
 * fit in 64 KiB; real servers send a few dozen (Node's own server accepts 2,000 request headers).
 */
export const MAX_HEADER_FIELDS = 1000;

/**
 * The agent every crawl request goes through. Its connections pass the address guard
 * (address-guard.ts): by default a host that resolves to a loopback, private or other special-purpose
 * address is refused before connecting (`blocked-address`), unless `addressPolicy` lets it through.
 */
export function createCrawlAgent(options: DownloadOptions & { connectionsPerOrigin: number; addressPolicy?: AddressPolicy }): Agent {
  return new Agent({
    connections: options.connectionsPerOrigin,
    pipelining: 1,
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 120_000,
    connect: guardedConnector(options.addressPolicy ?? defaultAddressPolicy(), { timeoutMs: options.connectTimeoutMs }),
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyTimeoutMs,
    maxHeaderSize: MAX_HEADER_BYTES,
  });
}

class BodyLimitReached extends Error {}

/** A failure this module detects itself, already carrying its stable code. */
class DownloadFailure extends Error {
  constructor(
    readonly code: FetchErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Timers may fire up to a millisecond early against performance.now(); waits add this much. */
export const TIMER_SLACK_MS = 2;

export async function download(dispatcher: Dispatcher, options: DownloadOptions, req: DownloadRequest): Promise<DownloadResult> {
  const started = performance.now();
  let wireBytes = 0;
  const signal = AbortSignal.timeout(options.totalTimeoutMs);
  try {
    const response = await request(req.url, {
      dispatcher,
      method: req.method ?? 'GET',
      headers: { 'user-agent': options.userAgent, 'accept-encoding': 'gzip, deflate, br', accept: 'text/html,application/xhtml+xml,*/*;q=0.8', ...req.headers },
      signal,
      headersTimeout: options.headersTimeoutMs,
      bodyTimeout: options.bodyTimeoutMs,
    });
    const status = response.statusCode;
    const fields = headerFieldCount(response.headers);
    if (fields > MAX_HEADER_FIELDS) {
      // Destroying the body reports an abort through 'error'; nobody else listens to it.
      response.body.on('error', () => {});
      response.body.destroy();
      throw new DownloadFailure('headers-too-large', `${fields} response header fields, more than ${MAX_HEADER_FIELDS}`);
    }
    const wanted = req.wantBody(status) && status !== 204 && status !== 304 && req.method !== 'HEAD';
    const limit = wanted ? (req.maxBodyBytes ?? options.maxBodyBytes) : DISCARD_LIMIT;
    const chunks: Buffer[] = [];
    let kept = 0;
    let truncated = false;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        wireBytes += chunk.length;
        callback(null, chunk);
      },
    });
    const decoder = wanted ? decoderFor(response.headers['content-encoding']) : null;
    const sink = async (source: AsyncIterable<Buffer>) => {
      for await (const chunk of source) {
        if (kept + chunk.length > limit) {
          if (wanted) chunks.push(chunk.subarray(0, limit - kept));
          kept = limit;
          truncated = true;
          throw new BodyLimitReached();
        }
        kept += chunk.length;
        if (wanted) chunks.push(chunk);
      }
    };
    try {
      if (decoder === null) await pipeline(response.body as Readable, counter, sink);
      else await pipeline(response.body as Readable, counter, decoder, sink);
    } catch (error) {
      // At the limit the rest of the body is not read: the pipeline is torn down, and the source may
      // report that as its own abort error before ours arrives. Either way the cut was ours.
      if (!truncated) throw bodyFailure(error, signal, wireBytes, response.headers['content-length']);
    }
    return {
      ok: true,
      status,
      headers: response.headers,
      body: wanted ? Buffer.concat(chunks) : Buffer.alloc(0),
      wireBytes,
      truncated: wanted && truncated,
      durationMs: Math.round(performance.now() - started),
    };
  } catch (error) {
    const { code, message } = errorCodeOf(error, signal);
    return { ok: false, code, message, wireBytes, durationMs: Math.round(performance.now() - started) };
  }
}

/** Fields as received: a repeated field name arrives as an array of its values. */
function headerFieldCount(headers: Record<string, string | string[] | undefined>): number {
  let count = 0;
  for (const value of Object.values(headers)) count += Array.isArray(value) ? value.length : 1;
  return count;
}

/**
 * A body that ended early: when the server closed the connection cleanly (FIN) before the bytes its
 * Content-Length promised, the message is incomplete (RFC 9112 section 6.3, rule 5), which undici
 * reports as a closed socket; it is `content-length-mismatch`, not a reset.
 */
function bodyFailure(error: unknown, signal: AbortSignal, wireBytes: number, contentLength: string | string[] | undefined): unknown {
  if (signal.aborted) return error;
  const code = (error as { code?: string })?.code;
  const declared = typeof contentLength === 'string' && /^\d+$/.test(contentLength.trim()) ? Number(contentLength) : null;
  if ((code === 'UND_ERR_SOCKET' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') && declared !== null && wireBytes < declared) {
    return new DownloadFailure('content-length-mismatch', `connection closed after ${wireBytes} of ${declared} body bytes`);
  }
  return error;
}

function decoderFor(encoding: string | string[] | undefined): Transform | null {
  const value = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? '')).trim().toLowerCase();
  if (value === '' || value === 'identity') return null;
  if (value === 'gzip' || value === 'x-gzip') return createGunzip();
  if (value === 'deflate') return createInflate();
  if (value === 'br') return createBrotliDecompress();
  return null;
}

/** Maps a transport failure to a stable error code (the codes are part of the summary and records). */
export function errorCodeOf(error: unknown, signal?: AbortSignal): { code: FetchErrorCode; message: string } {
  const err = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const message = String(err?.message ?? error).slice(0, 300);
  if (error instanceof DownloadFailure) return { code: error.code, message };
  if (signal?.aborted || err?.name === 'TimeoutError' || err?.name === 'AbortError') return { code: 'timeout', message };
  const code = err?.code ?? err?.cause?.code;
  switch (code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return { code: 'connect-timeout', message };
    case 'UND_ERR_HEADERS_TIMEOUT':
      return { code: 'headers-timeout', message };
    case 'UND_ERR_BODY_TIMEOUT':
      return { code: 'body-timeout', message };
    case 'UND_ERR_HEADERS_OVERFLOW':
      return { code: 'headers-too-large', message };
    case 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH':
      return { code: 'content-length-mismatch', message };
    case 'ECONNREFUSED':
      return { code: 'connection-refused', message };
    case 'PETREL_BLOCKED_ADDRESS':
      return { code: 'blocked-address', message };
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return { code: 'connection-reset', message };
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return { code: 'dns-failure', message };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { code: 'host-unreachable', message };
    case 'Z_DATA_ERROR':
    case 'Z_BUF_ERROR':
    case 'ERR__ERROR_FORMAT_PADDING_1':
      return { code: 'bad-content-encoding', message };
    case 'UND_ERR_INVALID_ARG':
      return { code: 'invalid-url', message };
    default:
      // undici's HTTPParserError carries no code for some parser failures (a response that is not HTTP).
      if (err?.name === 'HTTPParserError') return { code: 'bad-http-response', message };
      if (typeof code === 'string' && code.startsWith('ERR_BROTLI')) return { code: 'bad-content-encoding', message };
      if (typeof code === 'string' && code.startsWith('HPE_')) return { code: 'bad-http-response', message };
      return { code: 'network-error', message };
  }
}
