/**
 * Stable error codes of the WARC archive (shared/warc/ builds records, queue-server/warc/ stores and
 * reads them). Each code has one disposition: what the caller must do.
 */

export type WarcErrorCode =
  /** An exchange handed to the record builder breaks its contract (no CRLF CRLF at the end of a head, a URL with whitespace, a head over its bound). A bug on the fetcher side: `skip` the capture, keep the result. */
  | 'WARC_EXCHANGE_INVALID'
  /** A capture posted to the queue server does not hold what it claims (not one Petrel gzip member per record, a length that does not match, a field out of bounds). `skip` the capture. */
  | 'WARC_CAPTURE_INVALID'
  /** Writing or fsyncing a WARC file failed (ENOSPC, EIO, EACCES, ...); `errno` says which. Nothing staged is lost: `retry` the commit later. */
  | 'WARC_WRITE_FAILED'
  /** Bytes read back from a WARC file are not a whole Petrel record where one should be. `fatal` for the read. */
  | 'WARC_RECORD_CORRUPT'
  /** Nothing in the archive for the URL (or the time) asked for. `skip`. */
  | 'WARC_NOT_FOUND';

export type WarcErrorDisposition = 'skip' | 'retry' | 'fatal';

const DISPOSITIONS: Record<WarcErrorCode, WarcErrorDisposition> = {
  WARC_EXCHANGE_INVALID: 'skip',
  WARC_CAPTURE_INVALID: 'skip',
  WARC_WRITE_FAILED: 'retry',
  WARC_RECORD_CORRUPT: 'fatal',
  WARC_NOT_FOUND: 'skip',
};

export class WarcError extends Error {
  override readonly name = 'WarcError';
  readonly code: WarcErrorCode;
  readonly disposition: WarcErrorDisposition;
  /** The operating system's error code (ENOSPC, EIO, ...) behind a WARC_WRITE_FAILED, else null. */
  readonly errno: string | null;

  constructor(code: WarcErrorCode, message: string, options: { errno?: string | null; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.disposition = DISPOSITIONS[code];
    this.errno = options.errno ?? null;
  }
}
