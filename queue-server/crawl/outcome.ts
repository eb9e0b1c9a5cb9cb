/**
 * What one fetch result means for the crawl: a pure classification of an item result, and the page
 * record it leaves in the archive. Every failure has a stable code: the fetcher's own code for a
 * transport failure (`timeout`, `connection-refused`, ...), `http-NNN` for an HTTP error status.
 */
import type { ItemResult } from '../../shared/protocol.js';
import type { FetchOutcome } from '../crawldb/transition.js';

export type PageOutcome =
  | { readonly kind: 'fetched' }
  | { readonly kind: 'not-modified' }
  | { readonly kind: 'redirect'; readonly target: string | null }
  | { readonly kind: 'error'; readonly code: string };

export function classifyPageResult(result: ItemResult): PageOutcome {
  if (result.error !== null) return { kind: 'error', code: result.error.code };
  const status = result.status;
  if (status === null) return { kind: 'error', code: 'no-response' };
  if (status === 304) return { kind: 'not-modified' };
  if (status >= 200 && status < 300) return { kind: 'fetched' };
  if (status >= 300 && status < 400) return { kind: 'redirect', target: result.redirectTo };
  return { kind: 'error', code: `http-${status}` };
}

/** One line of the page archive (pages.jsonl) and of `petrel export`. */
export interface PageRecord {
  readonly url: string;
  readonly depth: number;
  readonly status: number | null;
  readonly outcome: PageOutcome['kind'];
  readonly errorCode: string | null;
  readonly contentType: string | null;
  readonly title: string | null;
  readonly description: string | null;
  readonly language: string | null;
  readonly excerpt: string | null;
  readonly outlinks: number;
  readonly canonical: string | null;
  readonly noindex: boolean;
  readonly redirectTo: string | null;
  /** xxHash64 of the body, 16 hex digits. */
  readonly signature: string | null;
  readonly bytes: number;
  readonly truncated: boolean;
  /** ms since epoch, the fetcher's clock. */
  readonly fetchedAt: number;
}

export function pageRecordOf(result: ItemResult, depth: number, outcome: PageOutcome): PageRecord {
  const page = result.page;
  return {
    url: result.url,
    depth,
    status: result.status,
    outcome: outcome.kind,
    errorCode: outcome.kind === 'error' ? outcome.code : null,
    contentType: result.contentType,
    title: page?.title ?? null,
    description: page?.description ?? null,
    language: page?.language ?? null,
    excerpt: page === null || page.noindex ? null : page.excerpt,
    outlinks: page?.outlinks ?? 0,
    canonical: page?.canonical ?? null,
    noindex: page?.noindex ?? false,
    redirectTo: result.redirectTo,
    signature: result.signature,
    bytes: result.bytes,
    truncated: result.truncated,
    fetchedAt: result.fetchedAt,
  };
}

/**
 * Failures of the response itself, not of the network or the moment: retrying would fail the same way,
 * so the URL is gone (rechecked rarely) rather than retried.
 */
export const BROKEN_RESPONSE_CODES: ReadonlySet<string> = new Set(['headers-too-large', 'bad-http-response', 'bad-content-encoding', 'content-length-mismatch']);

/** The fetch outcome the crawl database's transition function takes (crawldb/transition.ts). */
export function crawlDbOutcomeOf(
  result: ItemResult,
  outcome: PageOutcome,
  found: { duplicateOf: string | null; canonicalOf: string | null; redirectTarget: string | null; freshUntil: number | null; simhash: string | null },
): FetchOutcome {
  const status = result.status;
  switch (outcome.kind) {
    case 'fetched':
      return { kind: 'success', status: status ?? 200, signature: result.signature, simhash: found.simhash, duplicateOf: found.duplicateOf, canonicalOf: found.canonicalOf, freshUntil: found.freshUntil };
    case 'not-modified':
      return { kind: 'not-modified', freshUntil: found.freshUntil };
    case 'redirect':
      if (status === 301 || status === 302 || status === 303 || status === 307 || status === 308) return { kind: 'redirect', status, target: found.redirectTarget };
      return { kind: 'denied', status: status ?? 300 };
    case 'error':
      if (status === null) {
        return BROKEN_RESPONSE_CODES.has(outcome.code) ? { kind: 'broken', code: outcome.code } : { kind: 'transient', code: outcome.code, status: null, retryAfterMs: null };
      }
      if (status === 404 || status === 410) return { kind: 'gone', status };
      if (status === 429 || status >= 500) return { kind: 'transient', code: outcome.code, status, retryAfterMs: result.retryAfterMs };
      return { kind: 'denied', status };
  }
}
