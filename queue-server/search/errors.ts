/**
 * Errors of the search index, each with a stable code and what the caller must do:
 *
 * - `skip`: this request is unacceptable (bad index data, a query the parser refuses); nothing
 *   changed and the same request fails the same way. Query errors map to HTTP 400.
 * - `fatal`: the index on disk or this handle cannot be trusted (a checksum mismatch, a failed
 *   commit, a closed handle); stop using it. After `INDEX_IO`, reopening recovers the last commit.
 */
export type IndexErrorCode =
  /** A segment, deletion file or manifest failed its checksum or structural checks. */
  | 'INDEX_CORRUPT'
  /** Staged index data breaks a bound or an invariant the schema cannot state (positions, terms). */
  | 'INDEX_BAD_DATA'
  /** The query is empty, over 512 characters, has more than 32 terms, or is malformed. */
  | 'QUERY_INVALID'
  /** Writing or syncing failed during a commit or merge install; reopen. */
  | 'INDEX_IO'
  /** The handle was closed, or is read-only and a write was attempted. */
  | 'INDEX_CLOSED'
  | 'INDEX_READ_ONLY';

export type IndexErrorDisposition = 'skip' | 'fatal';

const DISPOSITION: Readonly<Record<IndexErrorCode, IndexErrorDisposition>> = {
  INDEX_CORRUPT: 'fatal',
  INDEX_BAD_DATA: 'skip',
  QUERY_INVALID: 'skip',
  INDEX_IO: 'fatal',
  INDEX_CLOSED: 'fatal',
  INDEX_READ_ONLY: 'fatal',
};

export class IndexError extends Error {
  override readonly name = 'IndexError';
  readonly code: IndexErrorCode;
  readonly disposition: IndexErrorDisposition;

  constructor(code: IndexErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.disposition = DISPOSITION[code];
  }
}
