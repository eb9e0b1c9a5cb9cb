/**
 * Sitemaps read again, cheaply: every pass asks each host for its sitemaps, and most hosts answer
 * `/sitemap.xml` with a 404. So a sitemap's last answer is kept in the cache-validator store
 * (`cache.btree`, keyed by the sitemap URL's hash, as a page's is) and decides the next request:
 *
 *   last answer            kept                                   next pass
 *   2xx urlset, validators its ETag / Last-Modified               a conditional request (RFC 9110
 *                                                                 section 13.1); a 304 reads nothing
 *   2xx index, or without  nothing                                a full request
 *   404 or 410             "missing until" now + missingForMs     no request before then (the crawl's
 *                                                                 initial refetch interval, 30 days by
 *                                                                 default), a full request after
 *   anything else          what was kept before                   as before
 *
 * A sitemap that answered 2xx is always asked again, even while its Cache-Control says fresh: its
 * `<lastmod>`s are how a changed page is found, and a conditional request costs a 304 when nothing
 * changed. A sitemap index is always read in full: its sitemaps are taken up from its entries, which
 * are not kept, so a 304 would leave them unread. A "missing" record is the one kind of record with
 * no validator, so the two never mix up.
 * Pure: handed the stored record, the result and `now`.
 */
import type { ItemResult, Validators } from '../../shared/protocol.js';
import { recordAfterFullResponse, recordAfterNotModified } from '../cache/cache-policy.js';
import type { CacheRecord } from '../cache/cache-record.js';

export type SitemapRequest = { readonly kind: 'skip'; readonly until: number } | { readonly kind: 'request'; readonly validators: Validators | null };

/** Whether (and how) to ask for a sitemap now, given what its last answer left in the store. */
export function sitemapRequestOf(record: CacheRecord | null, now: number): SitemapRequest {
  if (record === null) return { kind: 'request', validators: null };
  if (record.etag === null && record.lastModified === null) return now < record.freshUntil ? { kind: 'skip', until: record.freshUntil } : { kind: 'request', validators: null };
  return { kind: 'request', validators: { etag: record.etag, lastModified: record.lastModified } };
}

/**
 * What to keep of a sitemap's answer: a record to stage, null to drop what was kept, or undefined to
 * keep it as it is (a failure says nothing about the sitemap).
 */
export function sitemapRecordAfter(previous: CacheRecord | null, result: ItemResult, now: number, missingForMs: number): CacheRecord | null | undefined {
  const status = result.status;
  if (status !== null && status >= 200 && status < 300) {
    if (result.sitemap?.kind !== 'urlset') return null;
    const record = recordAfterFullResponse(result, now);
    return record !== null && (record.etag !== null || record.lastModified !== null) ? record : null;
  }
  if (status === 304) return previous === null ? undefined : recordAfterNotModified(previous, result, now);
  if (status === 404 || status === 410) {
    return { etag: null, lastModified: null, cacheControl: null, expires: null, freshUntil: now + missingForMs, date: null, storedAt: now, bodyBytes: 0 };
  }
  return undefined;
}
