/**
 * What a settled URL changes in the search index, decided from the crawl database's verdict (the
 * record after the Nutch transition, crawldb/transition.ts) and the result's index data. Pure: the
 * applier hands in the record and how to find a URL by its hash.
 *
 *   record status after the result        index change
 *   fetched, with index data, indexable   page: replaces the URL's entry (title, headings, body, anchors)
 *   fetched, with index data, noindex     noindex: not a result; its outlinks' anchor text counts
 *   fetched, without index data           remove (no longer HTML or text: a PDF, an image, binary)
 *   duplicate (of a known original)       duplicate: not a result; links to it count for the original;
 *                                         its own outlinks' anchor text counts
 *   gone (404, 410, denied, broken),      remove: neither the page nor its outlinks count any more
 *   redirect, robots_denied
 *   notmodified (304), retry, unfetched   nothing: the entry indexed before stands (RFC 9111 4.3.4:
 *                                         a 304 says the stored response is still the page)
 */
import type { ItemResult } from '../../shared/protocol.js';
import { urlHashFromHex, type UrlHash } from '../../shared/url-hash.js';
import type { CrawlDbRecord } from '../crawldb/record.js';
import type { IndexChange } from '../search/search-index.js';

export function indexChangeOf(url: string, record: CrawlDbRecord, result: ItemResult | null, urlOf: (hash: UrlHash) => string | null): IndexChange | null {
  switch (record.status) {
    case 'fetched': {
      if (result !== null && result.status === 304) return null;
      const data = result?.index ?? null;
      if (result === null || data === null) return { kind: 'remove', url };
      if (result.page?.noindex === true) return { kind: 'noindex', url, anchors: data.anchors };
      return { kind: 'page', url, fetchedAt: result.fetchedAt, data };
    }
    case 'duplicate': {
      // A 304 of a duplicate keeps it a duplicate: nothing changes.
      if (result === null || result.status === 304) return null;
      const originalUrl = record.duplicateOf === null ? null : urlOf(urlHashFromHex(record.duplicateOf));
      if (originalUrl === null || originalUrl === url) return { kind: 'remove', url };
      return { kind: 'duplicate', url, originalUrl, anchors: result.index?.anchors ?? [] };
    }
    case 'gone':
    case 'redir_temp':
    case 'redir_perm':
    case 'robots_denied':
      return { kind: 'remove', url };
    case 'notmodified':
    case 'retry':
    case 'unfetched':
      return null;
  }
}
