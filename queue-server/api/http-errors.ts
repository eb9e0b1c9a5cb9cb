/**
 * Errors of the queue server's HTTP interface: every failure a client can cause gets a status and a
 * stable `code` (`unauthorized`, `invalid-body`, `crawl-running`, `storage-unavailable`, ...) with a one-line message, as
 * `{"error":{"code","message"}}`. Anything else is a broken invariant: logged loudly, answered 500.
 */
import type { NextFunction, Request, Response } from 'express';
import type { z } from 'zod';
import type { Logger } from '../../shared/logger.js';
import { describeZodError, parseProtocolBody } from '../../shared/protocol.js';
import { StorageUnavailableError } from '../crawl/storage-error.js';

export interface HttpErrorExtras {
  /** More fields of the `error` object, for programs (e.g. `serverTime`). */
  readonly details?: Readonly<Record<string, unknown>>;
  /** Response headers (e.g. `Retry-After`). */
  readonly headers?: Readonly<Record<string, string>>;
}

export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly extras: HttpErrorExtras;
  constructor(status: number, code: string, message: string, extras: HttpErrorExtras = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.extras = extras;
  }
}

/** Validates a JSON body against `schema` (through the protocol's fast path, same verdicts); a bad one is a 400 naming the fields. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  if (body === undefined || body === null || typeof body !== 'object') {
    throw new HttpError(400, 'bad-request', 'expected a JSON object body with Content-Type: application/json');
  }
  const parsed = parseProtocolBody(schema, body);
  if (!parsed.success) throw new HttpError(400, 'invalid-body', describeZodError(parsed.error));
  return parsed.data;
}

/** A B-Tree page of a data file that fails its checks (queue-server/btree/errors.ts BTREE_CORRUPT). */
export function isDamagedData(error: unknown): boolean {
  const err = error as { name?: unknown; code?: unknown };
  return err?.name === 'BTreeError' && err.code === 'BTREE_CORRUPT';
}

export function describeError(error: unknown): { status: number; code: string; message: string } & HttpErrorExtras {
  if (error instanceof HttpError) return { status: error.status, code: error.code, message: error.message, ...error.extras };
  // Storage is failing (a full disk): nothing was acknowledged, the client keeps its data and retries.
  if (error instanceof StorageUnavailableError) {
    return { status: 503, code: 'storage-unavailable', message: error.message, headers: { 'Retry-After': String(Math.ceil(error.retryAfterMs / 1000)) } };
  }
  const bodyError = error as { type?: string; status?: number; message?: string; limit?: unknown };
  if (bodyError.type === 'entity.too.large') {
    // body-parser names the limit of the parser that refused (4 KiB for the login, 256 KiB for control posts).
    const limit = typeof bodyError.limit === 'number' ? `${bodyError.limit} bytes` : 'the limit';
    return { status: 413, code: 'body-too-large', message: `request body larger than ${limit}, this route's limit` };
  }
  if (bodyError.type === 'entity.parse.failed') return { status: 400, code: 'invalid-json', message: 'request body is not valid JSON' };
  if (typeof bodyError.status === 'number' && bodyError.status >= 400 && bodyError.status < 500) {
    return { status: bodyError.status, code: 'bad-request', message: String(bodyError.message ?? 'bad request').slice(0, 200) };
  }
  // A data file found damaged (a page failing its checksum): no retry can mend it (jsonErrorHandler stops the daemon).
  if (isDamagedData(error)) return { status: 503, code: 'storage-damaged', message: 'a data file of the queue server is damaged: it stops (its log says which and what to run)' };
  // A broken invariant: answered 500 without details; the error handler logs it loudly.
  return { status: 500, code: 'internal', message: 'internal error' };
}

/**
 * The last middleware of an app: errors as JSON. An internal error (a broken invariant) is logged
 * with its stack, as an `internal-error` record shown in either log format, naming the method and the
 * path (never the query, headers or body: they may carry secrets); on stderr when there is no logger.
 */
export function jsonErrorHandler(logger?: Logger, onDamagedData?: (error: Error) => void): (error: unknown, req: Request, res: Response, next: NextFunction) => void {
  let damageSaid = false;
  return (error, req, res, _next) => {
    const { status, code, message, details, headers } = describeError(error);
    if (code === 'storage-damaged' && !damageSaid && onDamagedData !== undefined) {
      damageSaid = true;
      onDamagedData(error as Error);
    }
    if (status === 500 && code === 'internal') {
      const stack = error instanceof Error ? (error.stack ?? error.message) : String(error);
      if (logger === undefined) console.error(error);
      else logger.error({ event: 'internal-error', say: true, method: req.method, path: req.path, err: error }, `petrel queue-server: internal error on ${req.method} ${req.path.slice(0, 200)}: ${stack}`);
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    if (headers !== undefined) res.set(headers);
    res.status(status).json({ error: { ...details, code, message } });
  };
}
