/**
 * URL normalization: every URL is brought to one canonical spelling before it is hashed, queued or
 * stored, so that two spellings of one resource are scheduled once.
 *
 * Rules, in order (each one is tested in test/unit/url-normalize.test.ts):
 *  1. Parse with the WHATWG URL parser, resolving against the base when one is given. This already
 *     lowercases the scheme and host, converts an internationalized host to punycode, removes the
 *     default port (80 for http, 443 for https), resolves `.` and `..` segments, turns an empty
 *     path into `/`, and percent-encodes characters that may not appear raw (spaces, controls).
 *  2. Only `http:` and `https:` are crawlable; anything else (`javascript:`, `data:`, `mailto:`,
 *     `ftp:`, ...) is rejected with code `unsupported-scheme`.
 *  3. User name and password are removed: a crawler never sends credentials it found in a link.
 *  4. The fragment is dropped: it never reaches the server.
 *  5. Percent-encoding is made uniform (RFC 3986 section 6.2.2.2): escapes of unreserved characters
 *     (A-Z a-z 0-9 - . _ ~) are decoded, every other escape is written with uppercase hex digits.
 *     Applied to path and query; reserved characters stay escaped, so meaning never changes. A `%`
 *     that starts no valid escape becomes `%25`.
 *  6. An empty query (a lone `?`) is removed; a non-empty query is kept in its order.
 *  7. A URL longer than `maxLength` characters (default 2048) after all of the above is rejected
 *     with code `url-too-long`, as is input longer than 4 times that before parsing.
 */

export type NormalizedUrl = string & { readonly __brand: 'NormalizedUrl' };

export type UrlRejectionCode = 'invalid-url' | 'unsupported-scheme' | 'url-too-long';

export type NormalizeResult =
  | { readonly ok: true; readonly url: NormalizedUrl; readonly origin: string }
  | { readonly ok: false; readonly code: UrlRejectionCode };

export const DEFAULT_MAX_URL_LENGTH = 2048;

const UNRESERVED = /[A-Za-z0-9\-._~]/;
const ESCAPE = /%([0-9A-Fa-f]{2})/g;
const STRAY_PERCENT = /%(?![0-9A-Fa-f]{2})/g;

/**
 * Rule 5, also applied to robots.txt rule paths so that rules and URLs are compared in one spelling.
 * A `%` that starts no escape is itself escaped first (`%25`), so decoding can never make a new
 * escape out of it and the result is stable: uniform(uniform(x)) === uniform(x).
 */
export function uniformPercentEncoding(part: string): string {
  if (!part.includes('%')) return part;
  return part.replace(STRAY_PERCENT, '%25').replace(ESCAPE, (_match, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

export function normalizeUrl(
  href: string,
  base?: string | URL,
  maxLength: number = DEFAULT_MAX_URL_LENGTH,
): NormalizeResult {
  if (href.length > maxLength * 4) return { ok: false, code: 'url-too-long' };
  let parsed: URL;
  try {
    parsed = base === undefined ? new URL(href) : new URL(href, base);
  } catch {
    return { ok: false, code: 'invalid-url' };
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return { ok: false, code: 'unsupported-scheme' };
  if (parsed.hostname === '') return { ok: false, code: 'invalid-url' };
  const origin = parsed.origin;
  const path = uniformPercentEncoding(parsed.pathname);
  const query = parsed.search.length > 1 ? uniformPercentEncoding(parsed.search) : '';
  const url = origin + path + query;
  if (url.length > maxLength) return { ok: false, code: 'url-too-long' };
  return { ok: true, url: url as NormalizedUrl, origin };
}

/** For input that must be a valid crawlable URL (seeds, tests): throws with a clear message otherwise. */
export function mustNormalize(href: string): NormalizedUrl {
  const result = normalizeUrl(href);
  if (!result.ok) throw new Error(`not a crawlable URL (${result.code}): ${href.slice(0, 200)}`);
  return result.url;
}

/** The politeness and robots.txt unit: scheme, host and port (RFC 9309 section 2.3: robots.txt is per origin). */
export function originOf(url: NormalizedUrl): string {
  const schemeEnd = url.indexOf('://') + 3;
  const pathStart = url.indexOf('/', schemeEnd);
  return pathStart < 0 ? url : url.slice(0, pathStart);
}

/**
 * The host name of a normalized URL or of an origin (`originOf`), as `new URL(url).hostname` gives it
 * (lower case, punycode, an IPv6 address in its brackets), read off the string: a normalized URL has
 * no user info and spells its host and port one way. A WHATWG parse costs about 1 µs, and the scope
 * asks this of every discovered link.
 */
export function hostnameOf(url: string): string {
  const start = url.indexOf('://') + 3;
  let end = url.indexOf('/', start);
  if (end < 0) end = url.length;
  if (url.charCodeAt(start) === 0x5b) return url.slice(start, url.indexOf(']', start) + 1);
  const colon = url.lastIndexOf(':', end - 1);
  return colon >= start ? url.slice(start, colon) : url.slice(start, end);
}

/** Path and query of a normalized URL, as robots.txt rules are matched against (RFC 9309 section 2.2.2). */
export function pathAndQuery(url: NormalizedUrl): string {
  const schemeEnd = url.indexOf('://') + 3;
  const pathStart = url.indexOf('/', schemeEnd);
  return pathStart < 0 ? '/' : url.slice(pathStart);
}
