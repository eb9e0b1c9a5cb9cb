/**
 * Conditional GET/HEAD, RFC 9110 §13.2.2 (precedence of preconditions), for a server that only knows
 * If-None-Match and If-Modified-Since. Pure: validators and request headers in, decision out.
 */

export interface Validators {
  /** Strong entity tag, quoted: "\"3f2a...\"". */
  etag: string;
  /** IMF-fixdate. */
  lastModified: string;
}

export interface ConditionalRequest {
  method: string;
  ifNoneMatch: string | null;
  ifModifiedSince: string | null;
}

/**
 * True when the server must answer 304 Not Modified instead of 200. Only meaningful when the response
 * would otherwise be 200 (§13.2.1: preconditions are ignored for other statuses).
 */
export function isNotModified(request: ConditionalRequest, validators: Validators): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  // Step 3: If-None-Match, when present, decides alone; If-Modified-Since is then ignored (step 4).
  if (request.ifNoneMatch !== null) return noneMatchHits(request.ifNoneMatch, validators.etag);
  if (request.ifModifiedSince !== null) {
    // §13.1.3: ignore a value that is not a valid HTTP-date.
    const since = Date.parse(request.ifModifiedSince);
    const modified = Date.parse(validators.lastModified);
    if (Number.isNaN(since)) return false;
    return modified <= since;
  }
  return false;
}

/** §13.1.2: "*" matches any current representation; otherwise weak comparison against each listed tag. */
function noneMatchHits(header: string, etag: string): boolean {
  if (header.trim() === '*') return true;
  const ours = opaqueTag(etag);
  for (const match of header.matchAll(/(?:W\/)?("[^"]*")/g)) {
    if (match[1] === ours) return true;
  }
  return false;
}

function opaqueTag(etag: string): string {
  return etag.startsWith('W/') ? etag.slice(2) : etag;
}
