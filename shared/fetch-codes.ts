/**
 * The stable codes of a fetch that got no usable HTTP response, as the fetcher reports them
 * (fetcher/download.ts `errorCodeOf`) and the queue server records them (summary `errorsByCode`, page
 * records, the crawl database). One union for both sides of the wire: the protocol schema accepts
 * exactly these, so a new code is added here, once.
 *
 * Other codes are not fetch failures and live with their owners: `http-NNN` for an HTTP error status
 * and `no-response` (queue-server/crawl/outcome.ts), `robots-disallowed` and `robots-unreachable`
 * (robots/robots.ts), the crawl rules' `trap-*` (admission/url-rules.ts; `trap-shape` in admission/url-shape.ts, `trap-budget`
 * in admission/admission.ts), `host-failing` (frontier/host-backoff.ts), `too-many-redirects`.
 */
export const FETCH_ERROR_CODES = [
  /** The whole request took longer than --timeout-ms. */
  'timeout',
  'connect-timeout',
  'headers-timeout',
  /** Silence while reading the body. */
  'body-timeout',
  'connection-refused',
  /** The connection broke (reset, closed early without a declared length). */
  'connection-reset',
  'dns-failure',
  'host-unreachable',
  'invalid-url',
  /** Any other transport failure. */
  'network-error',
  /** More header bytes or fields than the fetcher accepts (fetcher/download.ts MAX_HEADER_BYTES, MAX_HEADER_FIELDS). */
  'headers-too-large',
  /** What came back is not HTTP/1.1 (RFC 9112). */
  'bad-http-response',
  /** The body does not decode under its Content-Encoding. */
  'bad-content-encoding',
  /** The connection closed before the body had the bytes Content-Length promised (RFC 9112 section 6.3). */
  'content-length-mismatch',
  /**
   * The fetcher refused to connect: the host resolved to a loopback, private, link-local or other
   * special-purpose address (fetcher/address-guard.ts), and it is not a seed's host. Nothing was sent.
   */
  'blocked-address',
  /**
   * Not sent: the slot's earlier requests failed HOST_FAILURES_IN_ROW times in a row (timeouts,
   * connection failures, 5xx), so the fetcher handed the rest of the slot back to the queue server,
   * whose host backoff (queue-server/frontier/host-backoff.ts) decides when the host is asked again.
   * Not a request and not a failure of the URL: it is queued again as it was.
   */
  'not-requested',
] as const;

export type FetchErrorCode = (typeof FETCH_ERROR_CODES)[number];

/**
 * Failures of the response itself, not of the network or the moment: asking again would fail the same
 * way, so the URL is gone (rechecked rarely) rather than retried.
 */
export const BROKEN_RESPONSE_CODES = ['headers-too-large', 'bad-http-response', 'bad-content-encoding', 'content-length-mismatch'] as const satisfies readonly FetchErrorCode[];

export type BrokenResponseCode = (typeof BROKEN_RESPONSE_CODES)[number];

export function isBrokenResponse(code: FetchErrorCode): code is BrokenResponseCode {
  return (BROKEN_RESPONSE_CODES as readonly FetchErrorCode[]).includes(code);
}

/**
 * Fetches the fetcher refuses to make. Like a broken response, asking again would end the same way,
 * so the URL is gone (rechecked only at the longest interval, when the host's address may have
 * changed), never retried: retrying would only repeat the refusal.
 */
export const REFUSED_CODES = ['blocked-address'] as const satisfies readonly FetchErrorCode[];

/** A failure that repeats however often it is retried: a broken response or a refused fetch. */
export function isPermanentFailure(code: FetchErrorCode): boolean {
  return isBrokenResponse(code) || (REFUSED_CODES as readonly FetchErrorCode[]).includes(code);
}

/**
 * Failed requests in a row that make a host "failing": the fetcher stops a slot after this many
 * (fetcher/fetcher.ts), the queue server backs the host off from this many on (host-backoff.ts).
 */
export const HOST_FAILURES_IN_ROW = 3;

/** Transport failures that say the host (or the way to it) is in trouble, not the URL. */
const HOST_FAILURE_CODES: ReadonlySet<string> = new Set<FetchErrorCode>(['timeout', 'connect-timeout', 'headers-timeout', 'body-timeout', 'connection-refused', 'connection-reset', 'dns-failure', 'host-unreachable', 'network-error']);

/**
 * Shortest Retry-After honoured as a wait, ms. "Retry-After: 0", or a date already past, asks for no
 * wait at all: such an answer is an ordinary failure (it spends a retry and counts against its host),
 * or a maintenance page with a stale header would be asked at full pace, without bound.
 */
export const MIN_RETRY_AFTER_MS = 1000;

/** The Retry-After wait of a 429 or 5xx worth honouring (RFC 9110 section 10.2.3), ms; null: none. */
export function honouredRetryAfter(status: number | null, retryAfterMs: number | null): number | null {
  if (status === null || retryAfterMs === null || retryAfterMs < MIN_RETRY_AFTER_MS) return null;
  return status === 429 || (status >= 500 && status <= 599) ? retryAfterMs : null;
}

/**
 * Whether a request's answer counts against its host: a timeout, a connection failure, a 5xx (RFC 9110
 * section 15.6: the server failed) or a 429 (RFC 6585 section 4: too many requests from this client)
 * without a Retry-After worth honouring. A 429 or 5xx with one is the host alive and saying when to
 * come back (the wait is honoured for the whole host, bounded per URL); any other answer, broken ones
 * included, shows the host answers.
 */
export function isHostFailure(status: number | null, code: string | null, retryAfterMs: number | null): boolean {
  if (code !== null) return HOST_FAILURE_CODES.has(code);
  if (status === null || honouredRetryAfter(status, retryAfterMs) !== null) return false;
  return status === 429 || (status >= 500 && status <= 599);
}

/**
 * Whether an answer tells the client to stop asking the host for now: a 429 (the client as a whole is
 * sending too many requests, RFC 6585 section 4), or a 5xx with a Retry-After worth honouring. The
 * fetcher asks nothing more of the slot it is in (the rest goes back `not-requested`); the queue
 * server holds the host back for the wait, or backs it off as a failing host.
 */
export function asksToStop(status: number | null, retryAfterMs: number | null): boolean {
  return status === 429 || honouredRetryAfter(status, retryAfterMs) !== null;
}
