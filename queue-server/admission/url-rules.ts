/**
 * Crawl rules for discovered URLs, beyond normalization and scope: the defences against spider traps
 * and session-id explosions. Pure functions of a normalized URL.
 *
 *  - Session ids: query parameters that only name a visitor's session (`jsessionid`, `phpsessid`,
 *    `sid`, `sessionid`, `session_id`, `aspsessionid*`, `cfid`, `cftoken`) are removed, and so is a
 *    `;jsessionid=...` path parameter, so 10,000 links that differ only by a session id are one URL.
 *    The remaining query keeps its order.
 *  - Repeated segments: a path in which one segment occurs more than `maxRepeatedSegment` times
 *    (`/a/a/a/a/...`, a relative link resolved against itself) is refused: `trap-repeated-segment`.
 *  - Deep paths: more than `maxPathSegments` segments: `trap-deep-path`.
 * A per-host page budget (admission.ts) bounds what any trap that passes these can cost.
 */
import type { NormalizedUrl } from '../../shared/url-normalize.js';

export interface UrlRules {
  readonly maxRepeatedSegment: number;
  readonly maxPathSegments: number;
}

export const DEFAULT_URL_RULES: UrlRules = { maxRepeatedSegment: 3, maxPathSegments: 32 };

export type UrlRuleResult = { readonly ok: true; readonly url: NormalizedUrl } | { readonly ok: false; readonly code: 'trap-repeated-segment' | 'trap-deep-path' };

const SESSION_PARAMETER = /^(jsessionid|phpsessid|sid|sessionid|session_id|session-id|aspsessionid[a-z]*|cfid|cftoken)$/i;
const PATH_SESSION = /;jsessionid=[^/?]*/gi;

export function applyUrlRules(url: NormalizedUrl, rules: UrlRules = DEFAULT_URL_RULES): UrlRuleResult {
  const pathStart = url.indexOf('/', url.indexOf('://') + 3);
  const queryStart = url.indexOf('?', pathStart);
  const origin = url.slice(0, pathStart);
  let path = url.slice(pathStart, queryStart < 0 ? undefined : queryStart);
  let query = queryStart < 0 ? '' : url.slice(queryStart + 1);

  if (path.includes(';')) path = path.replace(PATH_SESSION, '');
  const segments = path.split('/').filter((segment) => segment.length > 0);
  if (segments.length > rules.maxPathSegments) return { ok: false, code: 'trap-deep-path' };
  const counts = new Map<string, number>();
  for (const segment of segments) {
    const count = (counts.get(segment) ?? 0) + 1;
    if (count > rules.maxRepeatedSegment) return { ok: false, code: 'trap-repeated-segment' };
    counts.set(segment, count);
  }
  if (query !== '') {
    query = query
      .split('&')
      .filter((pair) => !SESSION_PARAMETER.test(decodeName(pair.split('=', 1)[0]!)))
      .join('&');
  }
  return { ok: true, url: `${origin}${path || '/'}${query === '' ? '' : `?${query}`}` as NormalizedUrl };
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}
