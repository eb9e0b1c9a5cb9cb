/**
 * Searching the crawl over HTTP, for programs and for people:
 *
 *   GET /api/search?q=&limit=&offset=     JSON { query, total, results, tookMs }: the admin bearer token,
 *                                         or nobody's with --public-search (rate limited per address)
 *   GET /search?q=&offset=                a plain server-rendered page with a GET form (works with
 *                                         JavaScript off): public with --public-search, else a redirect
 *                                         to /admin/search
 *   GET /admin/search, /admin/api/search  the same page and JSON behind the admin session (the session
 *                                         cookie is Path=/admin, so the browser sends it only there)
 *   GET /cache?url=, /admin/cache?url=    a result's cached copy (api/cached-copy-route.ts), linked from
 *                                         each result the web archive holds; public as /search is
 *
 * Bad input is a 400 with code `query-invalid` and a message saying what to change: an empty query, one
 * over 512 characters or 32 terms, only exclusions (the index's own checks, query-parser.ts), a `limit`
 * or `offset` that is no whole number or out of range (limit 1-100, offset 0-10,000).
 *
 * Everything shown comes from the web and is escaped here: titles, URLs (as text and in href, and only
 * http(s) URLs become links), the query. Snippets are HTML the index built (search/snippet.ts: the
 * stored text escaped, the query's words in <mark>); they are checked to hold no markup but <mark>
 * before they are sent as they are, and escaped whole otherwise. The page carries no script, and the
 * admin page's headers (admin/security.ts: a CSP without inline script or style) forbid any.
 *
 * Ranking authority: the URL's OPIC cash from the crawl database (`score` of its record), which
 * breaks ties between equal scores, see search/ranking.ts and README "Search". tookMs is measured here with the monotonic clock.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { urlHashFromHex } from '../../shared/url-hash.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import type { IndexStore } from '../crawl/index-store.js';
import { IndexError } from '../search/errors.js';
import { SEARCH_LIMITS, type SearchResult } from '../search/search-index.js';
import { escapeHtml } from '../search/snippet.js';
import { HttpError } from './http-errors.js';

export const SEARCH_ROUTES = {
  api: '/api/search',
  page: '/search',
  style: '/search/search.css',
  adminApi: '/admin/api/search',
  adminPage: '/admin/search',
  /** The results' cached copies (api/cached-copy-route.ts): public with --public-search, else behind the session. */
  cache: '/cache',
} as const;

/** Results per page of the HTML page, unless `limit` says otherwise. */
const PAGE_RESULTS = 10;

/** A result as the API gives it: the index's, plus whether the crawl archived a cached copy of it. */
export interface SearchHit extends SearchResult {
  /** The web archive holds the page's latest capture: /admin/cache (or /cache) shows it. */
  readonly cached: boolean;
}

export interface SearchAnswer {
  readonly query: string;
  readonly total: number;
  readonly results: readonly SearchHit[];
  /** Time the query took in the queue server, ms (three decimals). */
  readonly tookMs: number;
}

export interface Searcher {
  /** Throws HttpError 400 (`query-invalid`) for a query or limits the index refuses. */
  search(query: string, limit: number, offset: number): SearchAnswer;
  /** Whether a (normalized) URL is a page the search can find: a live, indexable page, not a noindex page, a duplicate or a link target alone. */
  finds(url: string): boolean;
}

/**
 * Searches the crawl's index, ranking with the crawl database's OPIC cash. `archiveOpen`: whether the
 * data directory's web archive is open (then a result whose record has a capture has a cached copy).
 */
export function indexSearcher(store: IndexStore, crawlDb: CrawlDb, archiveOpen: boolean): Searcher {
  const authorityOf = (hex: string): number => crawlDb.get(urlHashFromHex(hex))?.score ?? 0;
  const hasCapture = (hex: string): boolean => archiveOpen && (crawlDb.get(urlHashFromHex(hex))?.warc ?? null) !== null;
  return {
    search(query, limit, offset) {
      const start = performance.now();
      try {
        const found = store.index.search(query, { limit, offset, authorityOf });
        const results = found.results.map((result) => ({ ...result, cached: hasCapture(result.urlHash) }));
        return { query, total: found.total, results, tookMs: Math.round((performance.now() - start) * 1000) / 1000 };
      } catch (error) {
        if (error instanceof IndexError && error.code === 'QUERY_INVALID') throw new HttpError(400, 'query-invalid', error.message);
        throw error;
      }
    },
    finds: (url) => store.index.hasPage(url),
  };
}

/** `q`, `limit`, `offset` of a request's query string, or a 400 saying which is wrong. */
export function searchParams(req: Request, defaultLimit: number): { q: string; limit: number; offset: number } {
  const q = req.query.q;
  if (q !== undefined && typeof q !== 'string') throw new HttpError(400, 'query-invalid', 'give the query once, as q=...');
  return { q: q ?? '', limit: wholeNumber(req.query.limit, 'limit', defaultLimit, 1, SEARCH_LIMITS.limit), offset: wholeNumber(req.query.offset, 'offset', 0, 0, SEARCH_LIMITS.offset) };
}

function wholeNumber(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  if (typeof value !== 'string' || !/^\d{1,6}$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new HttpError(400, 'query-invalid', `${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(value);
}

/** What a route does to an answer before it is sent (the public routes: api/cached-copy-route.ts publicCopiesOnly). */
export type AnswerFilter = (answer: SearchAnswer) => Promise<SearchAnswer>;

const asAnswered: AnswerFilter = (answer) => Promise.resolve(answer);

/** The JSON API. */
export function searchJson(searcher: Searcher, filter: AnswerFilter = asAnswered): RequestHandler {
  return (req, res, next) => {
    const { q, limit, offset } = searchParams(req, 10);
    filter(searcher.search(q, limit, offset)).then((answer) => res.json(answer), next);
  };
}

/**
 * The HTML page; `action` is the path its form submits to (/search or /admin/search), `cachePath` the
 * route of cached copies beside it (/cache or /admin/cache; null: none served there).
 */
export function searchPage(searcher: Searcher, action: string, cachePath: string | null, filter: AnswerFilter = asAnswered): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    // A page for people: a bad parameter is said on the page (status 400), as a bad query is, not in JSON.
    const refused = (error: unknown, q: string) => {
      if (!(error instanceof HttpError) || error.status !== 400) return next(error);
      res.status(400).type('html').send(renderSearchPage({ action, cachePath, q, offset: 0, limit: PAGE_RESULTS, answer: null, problem: error.message }));
    };
    let params: { q: string; limit: number; offset: number };
    try {
      params = searchParams(req, PAGE_RESULTS);
    } catch (error) {
      return refused(error, typeof req.query.q === 'string' ? req.query.q : '');
    }
    const { q, limit, offset } = params;
    let answer: SearchAnswer | null = null;
    if (q.trim() !== '') {
      try {
        answer = searcher.search(q, limit, offset);
      } catch (error) {
        return refused(error, q);
      }
    }
    const send = (shown: SearchAnswer | null) => res.type('html').send(renderSearchPage({ action, cachePath, q, offset, limit, answer: shown, problem: null }));
    if (answer === null) send(null);
    else filter(answer).then(send, next);
  };
}

/**
 * The page's answer to an address past its searches: a page that says how long to wait (status 429,
 * Retry-After), not the JSON error a program gets. Other errors go on to the JSON handler.
 */
export function searchPageRefusal(action: string, cachePath: string | null): (error: unknown, req: Request, res: Response, next: NextFunction) => void {
  return (error, req, res, next) => {
    if (!(error instanceof HttpError) || error.status !== 429) return next(error);
    const q = typeof req.query.q === 'string' ? req.query.q : '';
    res.status(429).set(error.extras.headers ?? {}).type('html').send(renderSearchPage({ action, cachePath, q, offset: 0, limit: PAGE_RESULTS, answer: null, problem: error.message }));
  };
}

export function searchStyle(_req: Request, res: Response): void {
  res.type('css').send(SEARCH_CSS);
}

/** Refuses with 429 an address past its searches (public search only); `admit` counts one. */
export function rateLimited(admit: (address: string) => number): RequestHandler {
  return (req, _res, next) => {
    const waitMs = admit(req.socket.remoteAddress ?? 'unknown');
    if (waitMs <= 0) return next();
    const retryAfter = String(Math.ceil(waitMs / 1000));
    next(new HttpError(429, 'too-many-searches', `too many searches from this address: try again in ${retryAfter} s`, { headers: { 'Retry-After': retryAfter } }));
  };
}

interface PageModel {
  readonly action: string;
  readonly cachePath: string | null;
  readonly q: string;
  readonly offset: number;
  /** Results per page (the request's `limit`, PAGE_RESULTS by default). */
  readonly limit: number;
  readonly answer: SearchAnswer | null;
  readonly problem: string | null;
}

/** The whole page as HTML; every value from the web or the request is escaped (the snippet: see safeSnippet). */
export function renderSearchPage(model: PageModel): string {
  const { action, cachePath, q, offset, limit, answer, problem } = model;
  const parts: string[] = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${q === '' ? 'Search' : `${escapeHtml(q)} - Search`} - Petrel</title>`,
    '<link rel="icon" href="/admin/static/favicon.svg" type="image/svg+xml">',
    `<link rel="stylesheet" href="${SEARCH_ROUTES.style}">`,
    '</head>',
    '<body>',
    '<header><h1>Search the crawl</h1>',
    `<form method="get" action="${escapeHtml(action)}" role="search">`,
    `<input type="search" name="q" value="${escapeHtml(q)}" maxlength="512" aria-label="Search" autofocus>`,
    // A search from this page keeps the results per page the page was asked for.
    ...(limit === PAGE_RESULTS ? [] : [`<input type="hidden" name="limit" value="${limit}">`]),
    '<button type="submit">Search</button>',
    '</form>',
    '<p class="help">Words (all must match), <code>"exact phrases"</code>, <code>-excluded</code>, <code>site:host</code>, <code>lang:xx</code>.</p>',
    '</header>',
    '<main>',
  ];
  if (problem !== null) parts.push(`<p class="problem" role="alert">${escapeHtml(problem)}</p>`);
  if (answer !== null) {
    const last = offset + answer.results.length;
    const summary =
      answer.total === 0 ? 'No pages found' : answer.results.length === 0 ? `No results this far: ${answer.total} in all` : `Results ${offset + 1}-${last} of ${answer.total}`;
    parts.push(`<p class="summary">${summary} (${answer.tookMs.toFixed(1)} ms)</p>`);
    parts.push('<ol class="results">');
    for (const result of answer.results) parts.push(renderResult(result, cachePath));
    parts.push('</ol>');
    const pages: string[] = [];
    const perPage = limit === PAGE_RESULTS ? '' : `&amp;limit=${limit}`;
    const link = (to: number, text: string) => `<a href="${escapeHtml(action)}?q=${encodeURIComponent(q)}${perPage}&amp;offset=${to}">${text}</a>`;
    if (offset > 0) pages.push(link(answer.results.length === 0 ? 0 : Math.max(0, offset - limit), answer.results.length === 0 ? 'First results' : 'Previous'));
    if (last < answer.total && last < SEARCH_LIMITS.offset) pages.push(link(last, 'Next'));
    if (pages.length > 0) parts.push(`<nav class="pages">${pages.join(' ')}</nav>`);
  }
  parts.push('</main>', '</body>', '</html>', '');
  return parts.join('\n');
}

function renderResult(result: SearchHit, cachePath: string | null): string {
  const url = escapeHtml(result.url);
  const title = escapeHtml(result.title === '' ? result.url : result.title);
  const heading = isWebUrl(result.url) ? `<a href="${url}" rel="noreferrer">${title}</a>` : title;
  const fetched = new Date(result.fetchedAt).toISOString().slice(0, 16).replace('T', ' ');
  // Yioop's "Cached" link: the page as the crawl stored it, served sandboxed (api/cached-copy-route.ts).
  const cached = cachePath !== null && result.cached ? ` · <a class="cached" href="${escapeHtml(cachePath)}?url=${encodeURIComponent(result.url)}" rel="noreferrer">cached copy</a>` : '';
  // Text from the web in <bdi>: a right-to-left override in a title or snippet (U+202E) reorders its
  // own text only, not the URL or the rest of the page (a spoofed URL look-alike).
  return [
    '<li>',
    `<h2><bdi>${heading}</bdi></h2>`,
    `<div class="url"><bdi>${url}</bdi></div>`,
    `<p class="snippet"><bdi>${safeSnippet(result.snippet)}</bdi></p>`,
    `<div class="meta">fetched ${fetched} UTC, score ${result.score}${cached}</div>`,
    '</li>',
  ].join('');
}

/**
 * The index's snippet as it is when it holds no markup but <mark> and </mark> (what search/snippet.ts
 * makes: escaped text, no `<`, `>` or `"` of its own), else escaped whole: a defect there must not
 * become markup here.
 */
export function safeSnippet(snippet: string): string {
  const outside = snippet.split(/<\/?mark>/);
  return outside.every((part) => !/[<>"']/.test(part)) ? snippet : escapeHtml(snippet);
}

function isWebUrl(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

const SEARCH_CSS = `body{font:16px/1.45 system-ui,sans-serif;margin:0 auto;max-width:52rem;padding:1rem;color:#1b1b1b;background:#fff}
h1{font-size:1.3rem;margin:.2rem 0 .6rem}
form{display:flex;gap:.5rem}
input[type=search]{flex:1;font-size:1rem;padding:.4rem}
button{font-size:1rem;padding:.4rem .9rem}
.help,.summary,.meta{color:#555;font-size:.85rem}
.problem{color:#a00}
ol.results{list-style:none;padding:0}
ol.results li{margin:1.1rem 0}
ol.results h2{font-size:1.05rem;margin:0}
.url{color:#1a6b2a;font-size:.85rem;overflow-wrap:anywhere}
.snippet{margin:.2rem 0}
mark{background:#fde68a;color:inherit}
.pages a{margin-right:1rem}
`;
