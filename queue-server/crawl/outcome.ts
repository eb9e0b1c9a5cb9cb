/**
 * What one fetch result means for the crawl, decided once (`classifyResult`) from its status and error
 * code: what the page record says, which counter it feeds, and what the crawl database's transition
 * takes (crawldb/transition.ts; `crawlDbOutcomeOf` only adds what the crawl found out about the page:
 * duplicates, its canonical URL, freshness). Every failure has a stable code: the fetcher's own for a
 * transport failure (shared/fetch-codes.ts), `http-NNN` for an HTTP error status, `no-response` for a
 * result with neither.
 */
import { isPermanentFailure } from '../../shared/fetch-codes.js';
import type { ItemResult } from '../../shared/protocol.js';
import type { FetchOutcome } from '../crawldb/transition.js';

type Recorded<K extends FetchOutcome['kind']> = Extract<FetchOutcome, { kind: K }>;
type RedirectStatus = Recorded<'redirect'>['status'];

export type ResultOutcome =
  | { readonly kind: 'fetched'; readonly status: number }
  | { readonly kind: 'not-modified' }
  /**
   * A 3xx: its Location is followed. What the crawl database keeps is a redirect for the statuses RFC
   * 9110 section 15.4 defines as redirects, and denied for the others (300, 305, 306).
   */
  | { readonly kind: 'redirect'; readonly target: string | null; readonly recorded: Omit<Recorded<'redirect'>, 'target'> | Recorded<'denied'> }
  | { readonly kind: 'error'; readonly code: string; readonly recorded: Recorded<'gone'> | Recorded<'denied'> | Recorded<'broken'> | Omit<Recorded<'transient'>, 'retryAfterMs'> };

const REDIRECT_STATUSES: ReadonlySet<number> = new Set<RedirectStatus>([301, 302, 303, 307, 308]);

export function classifyResult(result: ItemResult): ResultOutcome {
  if (result.error !== null) {
    const code = result.error.code;
    return { kind: 'error', code, recorded: isPermanentFailure(code) ? { kind: 'broken', code } : { kind: 'transient', code, status: null } };
  }
  const status = result.status;
  if (status === null) return { kind: 'error', code: 'no-response', recorded: { kind: 'transient', code: 'no-response', status: null } };
  if (status === 304) return { kind: 'not-modified' };
  if (status >= 200 && status < 300) return { kind: 'fetched', status };
  if (status >= 300 && status < 400) {
    const recorded = REDIRECT_STATUSES.has(status) ? { kind: 'redirect' as const, status: status as RedirectStatus } : { kind: 'denied' as const, status };
    return { kind: 'redirect', target: result.redirectTo, recorded };
  }
  const code = `http-${status}`;
  if (status === 404 || status === 410) return { kind: 'error', code, recorded: { kind: 'gone', status } };
  if (status === 429 || status >= 500) return { kind: 'error', code, recorded: { kind: 'transient', code, status } };
  return { kind: 'error', code, recorded: { kind: 'denied', status } };
}

/** Outlink URLs kept per page record (each at most 2,048 characters): about 100 KB for a link-heavy page. */
export const MAX_RECORDED_OUTLINKS = 1000;

/** One line of the page archive (pages.jsonl) and of `petrel export`. */
export interface PageRecord {
  readonly url: string;
  readonly depth: number;
  readonly status: number | null;
  readonly outcome: ResultOutcome['kind'];
  readonly errorCode: string | null;
  readonly contentType: string | null;
  readonly title: string | null;
  readonly description: string | null;
  readonly language: string | null;
  readonly excerpt: string | null;
  /** Distinct followable links the page has (nofollow left out), those past --max-links-per-page included (counted as written past twice the bound). */
  readonly outlinkCount: number;
  /** The first MAX_RECORDED_OUTLINKS of the links followed (at most --max-links-per-page), absolute and normalized, in page order. */
  readonly outlinks: readonly string[];
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

export function pageRecordOf(result: ItemResult, depth: number, outcome: ResultOutcome): PageRecord {
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
    outlinkCount: page?.outlinks ?? 0,
    outlinks: result.links.length > MAX_RECORDED_OUTLINKS ? result.links.slice(0, MAX_RECORDED_OUTLINKS) : result.links,
    canonical: page?.canonical ?? null,
    noindex: page?.noindex ?? false,
    redirectTo: result.redirectTo,
    signature: result.signature,
    bytes: result.bytes,
    truncated: result.truncated,
    fetchedAt: result.fetchedAt,
  };
}

/** What the crawl found out about a page, beyond its result (hashes are 16 hex digits). */
export interface PageRelations {
  readonly duplicateOf: string | null;
  readonly canonicalOf: string | null;
  readonly redirectTarget: string | null;
  readonly freshUntil: number | null;
  readonly simhash: string | null;
  /** The Retry-After wait honoured (retry-after.ts), or null. */
  readonly retryAfterMs: number | null;
}

/** The fetch outcome the crawl database's transition function takes (crawldb/transition.ts). */
export function crawlDbOutcomeOf(result: ItemResult, outcome: ResultOutcome, found: PageRelations): FetchOutcome {
  switch (outcome.kind) {
    case 'fetched':
      return { kind: 'success', status: outcome.status, signature: result.signature, simhash: found.simhash, duplicateOf: found.duplicateOf, canonicalOf: found.canonicalOf, freshUntil: found.freshUntil };
    case 'not-modified':
      return { kind: 'not-modified', freshUntil: found.freshUntil };
    case 'redirect':
      return outcome.recorded.kind === 'redirect' ? { ...outcome.recorded, target: found.redirectTarget } : outcome.recorded;
    case 'error':
      return outcome.recorded.kind === 'transient' ? { ...outcome.recorded, retryAfterMs: outcome.recorded.status === null ? null : found.retryAfterMs } : outcome.recorded;
  }
}
