/**
 * GET <path>?url=URL: a fetched page's cached copy, as the web archive holds it (warc/cached-copy.ts
 * renders it with Yioop's banner). Mounted behind the admin session at /admin/cache, where the crawl's
 * operator sees any capture, and at /cache beside the public search page when --public-search is on
 * (rate limited there with the searches), where only the copies of pages the search finds are shown,
 * and none of a page that asks not to be archived (`noarchive`): a noindex page, a duplicate, an error
 * page or a page that is only linked to answers 404 there, as an unknown URL does.
 *
 * The page is hostile HTML from the web: it is served under CACHED_COPY_POLICY (a CSP sandbox without
 * allow-same-origin or allow-scripts, nothing loaded) and never cached by the browser.
 */
import type { RequestHandler } from 'express';
import type { CrawlService } from '../crawl/crawl-service.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { WarcError } from '../../shared/warc/errors.js';
import { asksNotToBeArchived, CACHED_COPY_POLICY, escapeHtml, renderCachedCopy } from '../warc/cached-copy.js';
import type { SearchAnswer, Searcher } from './search-api.js';

/** The longest URL looked up; the crawl never admits longer ones. */
const MAX_URL_CHARS = 8192;

/** `publicSearch`: the search whose results the copies are (the public route); null: the operator's route. */
export function cachedCopyRoute(service: Pick<CrawlService, 'cachedCopy'>, path: string, publicSearch: Pick<Searcher, 'finds'> | null = null): RequestHandler {
  return async (req, res) => {
    res.set({ 'Content-Security-Policy': CACHED_COPY_POLICY, 'Cache-Control': 'no-store' });
    const url = typeof req.query.url === 'string' ? req.query.url : '';
    const answer = (status: number, message: string) => res.status(status).type('html').send(`<!DOCTYPE html>\n<title>No cached copy</title>\n<p>${escapeHtml(message)}</p>\n`);
    if (url === '' || url.length > MAX_URL_CHARS) return answer(400, `Which page? ${path}?url=URL, an http(s) URL the crawl fetched.`);
    const notPublic = () => answer(404, `No public cached copy of ${url}: only the pages this search finds have one, and none of a page that asks not to be archived.`);
    if (publicSearch !== null) {
      const normalized = normalizeUrl(url);
      if (!normalized.ok || !publicSearch.finds(normalized.url)) return notPublic();
    }
    let copy;
    try {
      copy = service.cachedCopy(url);
    } catch (error) {
      if (!(error instanceof WarcError)) throw error;
      // The records of a capture applied a moment ago are written by the next group commit.
      if (error.code === 'WARC_NOT_FOUND') return answer(503, `The cached copy of ${url} is not readable yet (${error.message}); reload in a moment.`);
      return answer(500, `The cached copy of ${url} is damaged: ${error.code}: ${error.message}`);
    }
    if (copy === null) return answer(404, `No cached copy of ${url}: the crawl has not archived it (not fetched, or archiving is off).`);
    const noarchive = await asksNotToBeArchived(copy);
    if (publicSearch !== null && noarchive) return notPublic();
    res.type('html').send(renderCachedCopy(copy, { noarchive }));
  };
}

/**
 * A public search answer with `cached` true only where the public route above serves the copy: not for
 * a page that asks not to be archived (its link answered 404), nor for one whose records cannot be read
 * now. One archive read per result that has a capture (the answer's `limit` bounds them, at most 100).
 */
export async function publicCopiesOnly(answer: SearchAnswer, service: Pick<CrawlService, 'cachedCopy'>): Promise<SearchAnswer> {
  const results = await Promise.all(
    answer.results.map(async (result) => {
      if (!result.cached) return result;
      try {
        const copy = service.cachedCopy(result.url);
        if (copy !== null && !(await asksNotToBeArchived(copy))) return result;
      } catch (error) {
        if (!(error instanceof WarcError)) throw error;
      }
      return { ...result, cached: false };
    }),
  );
  return { ...answer, results };
}
