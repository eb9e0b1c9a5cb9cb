/**
 * Storage failures of the group commit: a full disk (ENOSPC), a file size limit (EFBIG), an I/O error
 * (EIO), a read-only file system (EROFS), ... Disposition "retry later": the crawl pauses (no results
 * accepted, no work handed out), the commit is retried with backoff, and the crawl resumes by itself
 * once a retry succeeds (crawl-service.ts). Anything else thrown by a commit is a bug and crashes loudly.
 */
import { BTreeError } from '../btree/index.js';

/** A store's commit failed for a reason outside the program: which store, the system's error code. */
export class CommitFailure extends Error {
  /** The data directory file, e.g. `pages.jsonl`, `crawldb.btree`. */
  readonly store: string;
  /** errno code, e.g. `ENOSPC`; `EIO` when the system gave none. */
  readonly code: string;
  constructor(store: string, cause: unknown) {
    const code = errnoCodeOf(cause) ?? 'EIO';
    super(`committing ${store} failed: ${rootMessage(cause)}`, { cause });
    this.store = store;
    this.code = code;
  }
}

/** Results cannot be acknowledged now (storage is failing): a 503 with Retry-After, nothing applied. */
export class StorageUnavailableError extends Error {
  readonly retryAfterMs: number;
  constructor(message: string, retryAfterMs: number) {
    super(message);
    this.retryAfterMs = retryAfterMs;
  }
}

/** What `/api/status` shows while commits fail. */
export interface StorageErrorState {
  readonly code: string;
  readonly message: string;
  /** ms since epoch: the first failure of this run of failures. */
  readonly since: number;
  /** Commits that failed in a row. */
  readonly attempts: number;
  /** ms since epoch: the next retry. */
  readonly retryAt: number;
}

/** Whether `error` is a failure of the file system (so the commit may succeed later), not a bug. */
export function isStorageFailure(error: unknown): boolean {
  if (error instanceof BTreeError) return error.code === 'BTREE_IO';
  return errnoCodeOf(error) !== null;
}

/** The first errno-style code (`ENOSPC`, `EIO`, ...) on the error or its causes. */
export function errnoCodeOf(error: unknown): string | null {
  for (let at: unknown = error, depth = 0; at !== null && at !== undefined && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z0-9]+$/.test(code)) return code;
  }
  return null;
}

/** The message of the innermost cause (the system's own words), bounded. */
function rootMessage(error: unknown): string {
  let at = error as { message?: unknown; cause?: unknown } | undefined;
  for (let depth = 0; at?.cause !== undefined && at.cause !== null && depth < 5; depth++) at = at.cause as typeof at;
  return String(at?.message ?? error).slice(0, 300);
}

/** Backoff of commit retries while storage fails: 500 ms doubling to 10 s. */
export function storageRetryDelayMs(attempts: number): number {
  return Math.min(10_000, 500 * 2 ** Math.min(Math.max(0, attempts - 1), 10));
}
