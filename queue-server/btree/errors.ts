/**
 * Errors raised by the B-tree engine. Every error carries a stable `code` that callers and tests match on,
 * and a `disposition` that says what the caller should do about it:
 *
 * - `skip`: the request itself is unacceptable (a value too large, a key of the wrong length); the tree is
 *   unchanged and fine, and retrying the same request will fail the same way.
 * - `fatal`: the file or this handle cannot be trusted any more (a checksum mismatch, a failed commit, a
 *   closed handle, a programming error such as a nested write); stop using the handle. For `BTREE_IO`, a
 *   fresh `BTree.open` recovers the last durable commit.
 */
export type BTreeErrorCode =
  /** A page failed its checksum or structural checks; `page` names it. */
  | 'BTREE_CORRUPT'
  /** A value is longer than `maxValueBytes(pageSize)`. */
  | 'BTREE_VALUE_TOO_LARGE'
  /** A key is not a Uint8Array of exactly 8 bytes. */
  | 'BTREE_KEY_INVALID'
  /** The file does not exist and `create: false` was given. */
  | 'BTREE_NOT_FOUND'
  /** An option passed to `BTree.open` is out of range. */
  | 'BTREE_BAD_OPTION'
  /** The handle was closed. */
  | 'BTREE_CLOSED'
  /** A write was attempted on a handle opened with `readOnly: true`. */
  | 'BTREE_READ_ONLY'
  /** A write was started inside another write's callback, or the callback returned a promise. */
  | 'BTREE_TXN_MISUSE'
  /** Writing or syncing the file failed during a commit; the handle refuses further work (reopen). */
  | 'BTREE_IO'
  /** The file is a Petrel B-Tree of another format version (an older Petrel wrote it). */
  | 'BTREE_VERSION';

export type BTreeErrorDisposition = 'skip' | 'fatal';

const DISPOSITION: Readonly<Record<BTreeErrorCode, BTreeErrorDisposition>> = {
  BTREE_CORRUPT: 'fatal',
  BTREE_VALUE_TOO_LARGE: 'skip',
  BTREE_KEY_INVALID: 'skip',
  BTREE_NOT_FOUND: 'fatal',
  BTREE_BAD_OPTION: 'fatal',
  BTREE_CLOSED: 'fatal',
  BTREE_READ_ONLY: 'fatal',
  BTREE_TXN_MISUSE: 'fatal',
  BTREE_IO: 'fatal',
  BTREE_VERSION: 'fatal',
};

export interface BTreeErrorContext {
  /** Page number the error is about, when there is one. */
  readonly page?: number;
  /** The underlying error (an fs error for `BTREE_IO`). */
  readonly cause?: unknown;
}

export class BTreeError extends Error {
  override readonly name = 'BTreeError';
  readonly code: BTreeErrorCode;
  readonly disposition: BTreeErrorDisposition;
  readonly page: number | undefined;

  constructor(code: BTreeErrorCode, message: string, context: BTreeErrorContext = {}) {
    super(message, context.cause === undefined ? undefined : { cause: context.cause });
    this.code = code;
    this.disposition = DISPOSITION[code];
    this.page = context.page;
  }
}

/**
 * A damaged page found in the file at `path` names that file (pages do not know it): for an operator
 * told which of a data directory's trees to check. Any other error as it is.
 */
export function inFile(error: unknown, path: string): unknown {
  if (!(error instanceof BTreeError) || error.code !== 'BTREE_CORRUPT' || error.message.startsWith(`${path}: `)) return error;
  return new BTreeError('BTREE_CORRUPT', `${path}: ${error.message}`, { page: error.page, cause: error });
}

/** Shorthand for the most common error: a page that cannot be trusted. */
export function corruptPage(page: number, message: string): BTreeError {
  return new BTreeError('BTREE_CORRUPT', `page ${page}: ${message}`, { page });
}
