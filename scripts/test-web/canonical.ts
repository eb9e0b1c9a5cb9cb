/**
 * The canonical form of a URL, exactly as the crawler's normalizer produces it (RFC 3986 §6.2.2
 * syntax-based normalization, on top of WHATWG URL parsing):
 * - scheme and host lowercased, default port dropped, explicit non-default port kept;
 * - dot segments resolved, empty path becomes `/`;
 * - percent-escapes of unreserved characters (A-Z a-z 0-9 - . _ ~) decoded, other escapes in
 *   uppercase hex;
 * - query kept verbatim (including an empty `?`), fragment dropped, userinfo dropped.
 *
 * The test web's model, server routing and tests all key pages by this form.
 */

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** Returns null for unparsable input and for schemes other than http and https (mailto:, javascript:). */
export function canonicalUrl(input: string, base?: string): string | null {
  let url: URL;
  try {
    url = base === undefined ? new URL(input) : new URL(input, base);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
  const path = normalizeEscapes(url.pathname) || '/';
  return `${url.protocol}//${url.host}${path}${rawQuery(url)}`;
}

/** Decodes escapes of unreserved characters and uppercases the hex digits of the others. */
export function normalizeEscapes(path: string): string {
  return path.replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => {
    const char = String.fromCharCode(Number.parseInt(hex, 16));
    return UNRESERVED.test(char) ? char : `%${hex.toUpperCase()}`;
  });
}

/** `url.search` is '' for both "no query" and "empty query"; the canonical form keeps the difference. */
function rawQuery(url: URL): string {
  const withoutFragment = url.hash === '' ? url.href.replace(/#$/, '') : url.href.slice(0, -url.hash.length);
  const questionMark = withoutFragment.indexOf('?');
  return questionMark === -1 ? '' : withoutFragment.slice(questionMark);
}
