/**
 * One HTTP request with undici, bounded in every dimension: connect, header and body timeouts, a
 * total time limit, a body limit counted after decompression (so a compression bomb stops at the
 * limit), and a small limit for bodies nobody reads (error pages, redirects). Redirects are not
 * followed: a 3xx comes back as a status with its Location.
 *
 * Failures come back as values with stable codes (shared/fetch-codes.ts, see `errorCodeOf`), never as exceptions.
 *
 * With `keepExchange` a response also comes back as it crossed the wire, for the web archive
 * (shared/warc/exchange.ts): the request head undici wrote and the peer's address (from undici's
 * `undici:client:sendHeaders` diagnostics channel, see `noteSentHeaders`), the response head from the
 * raw header pairs, and the body with the transfer coding undone and the content coding kept, bounded
 * like the decoded body (a compressed body is held twice: as received and decoded, each at most the
 * limit; an uncompressed one once, the same Buffer).
 */
import { subscribe } from 'node:diagnostics_channel';
import type { Socket } from 'node:net';
import type { Transform } from 'node:stream';
import { createBrotliDecompress, createInflate } from 'node:zlib';
import { TolerantGunzip } from './gzip-decoder.js';
import { Agent, type Dispatcher } from 'undici';
import type { FetchErrorCode } from '../shared/fetch-codes.js';
import { defaultAddressPolicy, guardedConnector, type AddressPolicy } from './address-guard.js';
import { requestHead, responseHead } from '../shared/warc/http-head.js';

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
  /** Also hand back the exchange as it crossed the wire (`RawExchange`), for the web archive. */
  readonly keepExchange?: boolean;
}

/** One request and its response as they crossed the wire (the parts of a shared/warc/exchange.ts Exchange). */
export interface RawExchange {
  /** The request head as undici wrote it (rebuilt in undici's order from the fields sent if the diagnostics channel did not say). */
  readonly requestHead: Buffer;
  /** Status line and field lines as received (raw header pairs; undici does not tell the HTTP version, HTTP/1.1 is written). */
  readonly responseHead: Buffer;
  /** The peer's address, or null when it is not known. */
  readonly ipAddress: string | null;
  /** The body as received: transfer coding removed, content coding kept; at most the body limit (64 KiB for bodies nobody reads). */
  readonly body: readonly Buffer[];
  /** The body was cut (the limit, before its end). */
  readonly truncated: boolean;
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
      /** With `keepExchange`: the exchange as it crossed the wire; else null. */
      readonly exchange: RawExchange | null;
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

/**
 * One request through undici's dispatcher API: the handler gets the status, the parsed headers and the
 * body's chunks as Buffers, and the request's controller, with which it stops the download at the body
 * limit or the deadline. No body stream, no pipeline, no AbortSignal: per request there is one handler,
 * one timer (the total time limit; connect, header and body silences are the Agent's own timeouts) and,
 * only for a compressed body, one zlib stream.
 */
export function download(dispatcher: Dispatcher, options: DownloadOptions, req: DownloadRequest): Promise<DownloadResult> {
  let url: URL;
  try {
    url = new URL(req.url);
  } catch (error) {
    return Promise.resolve({ ok: false, code: 'invalid-url', message: String((error as Error).message).slice(0, 300), wireBytes: 0, durationMs: 0 });
  }
  return new Promise((resolve) => {
    const method = req.method ?? 'GET';
    const path = url.pathname + url.search;
    const headers = { 'user-agent': options.userAgent, 'accept-encoding': 'gzip, deflate, br', accept: 'text/html,application/xhtml+xml,*/*;q=0.8', ...req.headers };
    const sent = req.keepExchange === true ? { method, path, host: url.host, headers } : null;
    const handler = new DownloadHandler(options, req, resolve, sent);
    try {
      dispatcher.dispatch({ origin: url.origin, path, method, headers, headersTimeout: options.headersTimeoutMs, bodyTimeout: options.bodyTimeoutMs }, handler);
    } catch (error) {
      handler.onResponseError(null, error as Error);
    }
  });
}

/**
 * The state of one download, from dispatch to its one result. `resolve` is called exactly once: with
 * the body when it ended (or was cut at the limit), with a failure when undici reports one or the
 * total time limit passes first (the request is then aborted as soon as undici hands over its
 * controller, which it does only once a connection is writing the request).
 */
class DownloadHandler implements Dispatcher.DispatchHandler {
  readonly #options: DownloadOptions;
  readonly #req: DownloadRequest;
  readonly #resolve: (result: DownloadResult) => void;
  readonly #started = performance.now();
  readonly #deadline: NodeJS.Timeout;
  #controller: Dispatcher.DispatchController | null = null;
  /** Why the request was stopped by us (the limit, the deadline), or null while it runs. */
  #stopReason: Error | null = null;
  #settled = false;
  #wireBytes = 0;
  #status = 0;
  #headers: Record<string, string | string[] | undefined> = {};
  #wanted = false;
  #limit = DISCARD_LIMIT;
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  #truncated = false;
  #decoder: Transform | null = null;
  /** What was asked for, when the exchange is kept (`keepExchange`); null otherwise. */
  readonly #sent: SentRequest | null;
  /** The request head and peer address, once the diagnostics channel told them. */
  #wire: { head: string; ipAddress: string | null } | null = null;
  #responseHead: Buffer | null = null;
  /** Body bytes as received, when they differ from what is kept (a compressed body, or one nobody reads); null otherwise. */
  #raw: Buffer[] | null = null;
  #rawBytes = 0;
  #rawCut = false;
  /** undici delivered the whole body (its end came before any stop of ours). */
  #wireComplete = false;
  /**
   * A compressed body's wire stopped here at the limit (#cutWire): the inflater finishes what it was
   * given, and what it gives is the (cut) body.
   */
  #wireCut = false;
  /** The response says its connection stays open (`Connection: keep-alive`): the wire may be paused for the inflater. */
  #mayPause = false;

  constructor(options: DownloadOptions, req: DownloadRequest, resolve: (result: DownloadResult) => void, sent: SentRequest | null) {
    this.#options = options;
    this.#req = req;
    this.#resolve = resolve;
    this.#sent = sent;
    this.#deadline = setTimeout(() => this.#timedOut(), options.totalTimeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#stopReason !== null) {
      controller.abort(this.#stopReason);
      return;
    }
    // undici writes the head right after this call, synchronously, and publishes it (noteSentHeaders).
    if (this.#sent !== null) writing = this;
  }

  /** From the diagnostics channel: what undici is writing for this request, and to whom. */
  sentHeaders(request: { method?: unknown; path?: unknown }, head: string, socket: Socket | undefined): void {
    if (this.#sent === null || request.method !== this.#sent.method || request.path !== this.#sent.path) return;
    this.#wire = { head: `${head}\r\n`, ipAddress: socket?.remoteAddress ?? null };
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>, statusMessage?: string): void {
    // 1xx answers are interim (RFC 9110 section 15.2); the final one follows.
    if (statusCode < 200 || this.#settled) return;
    this.#status = statusCode;
    this.#headers = headers;
    if (this.#sent !== null) this.#responseHead = responseHeadOf(controller, statusCode, statusMessage ?? '', headers);
    const fields = headerFieldCount(headers);
    if (fields > MAX_HEADER_FIELDS) {
      this.#stop(new DownloadFailure('headers-too-large', `${fields} response header fields, more than ${MAX_HEADER_FIELDS}`));
      return;
    }
    const req = this.#req;
    this.#wanted = req.wantBody(statusCode) && statusCode !== 204 && statusCode !== 304 && req.method !== 'HEAD';
    this.#limit = this.#wanted ? (req.maxBodyBytes ?? this.#options.maxBodyBytes) : DISCARD_LIMIT;
    const decoder = this.#wanted ? decoderFor(headers['content-encoding']) : null;
    if (this.#sent !== null && (decoder !== null || !this.#wanted)) this.#raw = [];
    if (decoder !== null) {
      this.#decoder = decoder;
      decoder.on('data', (chunk: Buffer) => this.#keep(chunk));
      decoder.on('error', (error) => {
        // Input cut by us ends mid-stream: what was inflated before is the body.
        if (this.#wireCut) return this.#succeed();
        this.#fail(error);
        this.#stop(error);
      });
      decoder.on('end', () => this.#succeed());
      this.#mayPause = saysKeepAlive(headers.connection);
      // The wire may outrun the inflater: hold the socket while the inflater's input is full.
      if (this.#mayPause) decoder.on('drain', () => controller.resume());
    }
  }

  /**
   * The wire of a compressed body is paused while the inflater's input is full, so a compression bomb
   * costs about a kilobyte of wire per 2 MiB inflated, but only on a connection that stays open:
   * undici 7 throws an uncatchable AssertionError when a connection that is to close (no keep-alive)
   * ends under a paused parser (nodejs/undici#5360: `Connection: close` right after a large gzip body;
   * fixed in undici 8, which needs Node 22), and that killed the fetcher on every try of such a page.
   * Unpaused, the inflater's queued input is bounded by cutting the wire at the body limit.
   */
  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled || this.#wireCut) return;
    this.#wireBytes += chunk.length;
    if (this.#raw !== null) this.#keepRaw(chunk);
    if (this.#decoder === null) return this.#keep(chunk);
    const room = this.#decoder.write(chunk);
    if (this.#mayPause) {
      if (!room) controller.pause();
    } else if (this.#wireBytes > this.#limit) this.#cutWire();
  }

  onResponseEnd(): void {
    if (this.#wireCut) return;
    this.#wireComplete = true;
    if (this.#decoder === null) this.#succeed();
    else this.#decoder.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    // Our own cut of a compressed body's wire: the inflater ends it.
    if (this.#wireCut && this.#stopReason === null) return;
    this.#decoder?.destroy();
    if (!this.#settled) this.#fail(bodyFailure(error, this.#status !== 0 && this.#stopReason === null, this.#wireBytes, this.#headers['content-length']));
  }

  /** Body bytes after decoding: kept up to the limit (counted even when not wanted, which bounds discarding). */
  #keep(chunk: Buffer): void {
    if (this.#settled) return;
    if (this.#kept + chunk.length > this.#limit) {
      if (this.#wanted) this.#chunks.push(chunk.subarray(0, this.#limit - this.#kept));
      this.#kept = this.#limit;
      this.#truncated = true;
      // At the limit the rest of the body is not read: the request is aborted, the result stands.
      this.#succeed();
      this.#stop(BODY_LIMIT_REACHED);
      return;
    }
    this.#kept += chunk.length;
    if (this.#wanted) this.#chunks.push(chunk);
  }

  /** A compressed body's wire past the limit: no more is read, and the inflater is given its end. */
  #cutWire(): void {
    this.#wireCut = true;
    this.#truncated = true;
    this.#controller?.abort(BODY_LIMIT_REACHED);
    this.#decoder!.end();
  }

  /** Body bytes as received, for the archive: kept up to the same limit. */
  #keepRaw(chunk: Buffer): void {
    if (this.#rawCut) return;
    if (this.#rawBytes + chunk.length > this.#limit) {
      if (this.#limit > this.#rawBytes) this.#raw!.push(chunk.subarray(0, this.#limit - this.#rawBytes));
      this.#rawBytes = this.#limit;
      this.#rawCut = true;
      return;
    }
    this.#rawBytes += chunk.length;
    this.#raw!.push(chunk);
  }

  #timedOut(): void {
    if (this.#settled) return;
    const error = new DownloadFailure('timeout', `no complete response within ${this.#options.totalTimeoutMs} ms`);
    this.#fail(error);
    this.#stop(error);
  }

  /** Aborts the request (now, or when undici hands over its controller) and the inflater. */
  #stop(reason: Error): void {
    if (this.#stopReason !== null) return;
    this.#stopReason = reason;
    this.#decoder?.destroy();
    this.#controller?.abort(reason);
    if (!this.#settled) this.#fail(reason);
  }

  #succeed(): void {
    if (this.#settled) return;
    const body = this.#wanted ? (this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks)) : EMPTY_BODY;
    this.#settle({
      ok: true,
      status: this.#status,
      headers: this.#headers,
      body,
      wireBytes: this.#wireBytes,
      truncated: this.#wanted && this.#truncated,
      durationMs: Math.round(performance.now() - this.#started),
      exchange: this.#exchange(body),
    });
  }

  /** The exchange as it crossed the wire; an uncompressed body that was kept is the body itself, not a copy. */
  #exchange(body: Buffer): RawExchange | null {
    const sent = this.#sent;
    if (sent === null || this.#responseHead === null) return null;
    const wire = this.#wire;
    return {
      requestHead: wire === null ? requestHead({ method: sent.method, target: sent.path, host: sent.host, headers: Object.entries(sent.headers) }) : Buffer.from(wire.head, 'latin1'),
      responseHead: this.#responseHead,
      ipAddress: wire?.ipAddress ?? null,
      body: this.#raw ?? (body.length === 0 ? [] : [body]),
      // Cut as stored: bytes of the wire left out. A body whose decoding passed the limit after the
      // whole wire came is stored whole (WARC 1.1 section 5.13: WARC-Truncated is for a cut block).
      truncated: this.#rawCut || (this.#truncated && !this.#wireComplete),
    };
  }

  #fail(error: unknown): void {
    if (this.#settled) return;
    const { code, message } = errorCodeOf(error);
    this.#settle({ ok: false, code, message, wireBytes: this.#wireBytes, durationMs: Math.round(performance.now() - this.#started) });
  }

  #settle(result: DownloadResult): void {
    this.#settled = true;
    clearTimeout(this.#deadline);
    this.#resolve(result);
  }
}

const EMPTY_BODY = Buffer.alloc(0);

interface SentRequest {
  readonly method: string;
  readonly path: string;
  /** The Host field value: host, and port when not the scheme's default (URL.host). */
  readonly host: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The handler whose request undici is about to write: set in `onRequestStart`, which undici calls
 * right before it builds the head and publishes it on `undici:client:sendHeaders`, in the same
 * synchronous step (lib/dispatcher/client-h1.js `writeH1`). The message names the request only by
 * undici's own Request object, so the hand-over goes through this variable, checked against the
 * method and path; a message for any other request (the queue client's) finds it empty or not
 * matching and is ignored.
 */
let writing: DownloadHandler | null = null;

function noteSentHeaders(message: unknown): void {
  const handler = writing;
  writing = null;
  if (handler === null) return;
  const { request, headers, socket } = message as { request: { method?: unknown; path?: unknown }; headers: unknown; socket?: Socket };
  if (typeof headers === 'string') handler.sentHeaders(request, headers, socket);
}
subscribe('undici:client:sendHeaders', noteSentHeaders);

/** The response head as received: undici's raw header pairs (`controller.rawHeaders`), or the parsed fields if they are missing. */
function responseHeadOf(controller: Dispatcher.DispatchController, status: number, statusText: string, headers: Record<string, string | string[] | undefined>): Buffer {
  const raw = (controller as { rawHeaders?: unknown }).rawHeaders;
  if (Array.isArray(raw)) return responseHead({ status, statusText, rawHeaders: raw as (Buffer | string)[] });
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(headers)) for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) pairs.push(name, one);
  return responseHead({ status, statusText, rawHeaders: pairs });
}
/** The reason a request is aborted with at the body limit (never reported: the result is the body). */
const BODY_LIMIT_REACHED = new Error('body limit reached');

/** Fields as received: a repeated field name arrives as an array of its values. */
function headerFieldCount(headers: Record<string, string | string[] | undefined>): number {
  let count = 0;
  for (const value of Object.values(headers)) count += Array.isArray(value) ? value.length : 1;
  return count;
}

/**
 * A body that ended early: when the server closed the connection cleanly (FIN) before the bytes its
 * Content-Length promised, the message is incomplete (RFC 9112 section 6.3, rule 5), which undici
 * reports as a closed socket; it is `content-length-mismatch`, not a reset. `inBody`: the headers had
 * arrived and nothing of ours stopped the request.
 */
function bodyFailure(error: unknown, inBody: boolean, wireBytes: number, contentLength: string | string[] | undefined): unknown {
  if (!inBody) return error;
  const code = (error as { code?: string })?.code;
  const declared = typeof contentLength === 'string' && /^\d+$/.test(contentLength.trim()) ? Number(contentLength) : null;
  if ((code === 'UND_ERR_SOCKET' || code === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH') && declared !== null && wireBytes < declared) {
    return new DownloadFailure('content-length-mismatch', `connection closed after ${wireBytes} of ${declared} body bytes`);
  }
  return error;
}

/** Whether a response's Connection field keeps the connection open (only then does undici's parser survive a pause at the peer's FIN). */
function saysKeepAlive(connection: string | string[] | undefined): boolean {
  const value = Array.isArray(connection) ? connection.join(',') : (connection ?? '');
  const options = value.toLowerCase().split(',').map((option) => option.trim());
  return options.includes('keep-alive') && !options.includes('close');
}

function decoderFor(encoding: string | string[] | undefined): Transform | null {
  const value = (Array.isArray(encoding) ? encoding.join(',') : (encoding ?? '')).trim().toLowerCase();
  if (value === '' || value === 'identity') return null;
  if (value === 'gzip' || value === 'x-gzip') return new TolerantGunzip();
  if (value === 'deflate') return createInflate();
  if (value === 'br') return createBrotliDecompress();
  return null;
}

/** Maps a transport failure to a stable error code (the codes are part of the summary and records). */
export function errorCodeOf(error: unknown): { code: FetchErrorCode; message: string } {
  const err = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const message = String(err?.message ?? error).slice(0, 300);
  if (error instanceof DownloadFailure) return { code: error.code, message };
  if (err?.name === 'TimeoutError' || err?.name === 'AbortError') return { code: 'timeout', message };
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
      // Brotli's decoder errors (ERR_BROTLI_*, and ERR__ERROR_FORMAT_* for the malformed streams: padding,
      // reserved bits, a window or dictionary out of range...) say the body is not what its encoding claims.
      if (typeof code === 'string' && (code.startsWith('ERR_BROTLI') || code.startsWith('ERR__ERROR_FORMAT_'))) return { code: 'bad-content-encoding', message };
      if (typeof code === 'string' && code.startsWith('HPE_')) return { code: 'bad-http-response', message };
      return { code: 'network-error', message };
  }
}
