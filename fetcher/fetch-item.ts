/**
 * Turns one schedule item into its result: download, then for a page parse and extract, for
 * robots.txt follow up to five redirects (RFC 9309 section 2.3.1.2) and hand the text over. When the
 * schedule asks for it (`archive`), every result with a response also carries the exchange's WARC
 * records (`capture`, built here by shared/warc/exchange.ts `buildCapture`: the SHA-1s and the gzip
 * work stay on the fetchers).
 */
import type { Dispatcher } from 'undici';
import { LIMITS, type CacheHeaders, type ItemResult, type ScheduleItem } from '../shared/protocol.js';
import { contentSignature } from '../shared/url-hash.js';
import { normalizeUrl } from '../shared/url-normalize.js';
import { charsetFromContentType, decodedPrefix, decodeHtmlChunks } from './decode.js';
import { download, type DownloadOptions, type DownloadResult } from './download.js';
import { bound } from '../shared/text-bounds.js';
import { xRobotsTag } from './x-robots-tag.js';
import { buildCapture, type Capture } from '../shared/warc/exchange.js';
import { WarcError } from '../shared/warc/errors.js';
import { gunzipBounded, isGzip, parseSitemap } from './sitemap-parse.js';

const ROBOTS_MAX_REDIRECTS = 5;

/**
 * The extractor (htmlparser2 and the simhash), loaded on first use, or earlier by `preloadExtractor`:
 * a fetcher's first request is a robots.txt, which needs neither, so start-up does not wait for them.
 */
let extractor: Promise<typeof import('./html-extract.js')> | null = null;
/** The index data builder (tokenizer and stemmers), loaded with the extractor. */
let indexer: Promise<typeof import('../shared/index-data.js')> | null = null;

export function preloadExtractor(): Promise<typeof import('./html-extract.js')> {
  extractor ??= import('./html-extract.js');
  indexer ??= import('../shared/index-data.js');
  return extractor;
}

function loadIndexer(): Promise<typeof import('../shared/index-data.js')> {
  indexer ??= import('../shared/index-data.js');
  return indexer;
}

/** Characters of a text/plain body indexed (its index data keeps 16,384 body tokens and 16 KiB of text). */
const PLAIN_TEXT_CHARS = 256 * 1024;

export interface FetchContext {
  readonly dispatcher: Dispatcher;
  readonly download: DownloadOptions;
  /** Build each exchange's WARC records (the schedule's `warc`). */
  readonly archive?: boolean;
  /** Build the search index's data of pages (the schedule says; false under the crawl's --no-index). Default true. */
  readonly index?: boolean;
  /** Links of a page its result carries at most (the schedule's `maxLinks`); absent: DEFAULT_MAX_LINKS_PER_PAGE. */
  readonly maxLinks?: number;
  /** The address requests to a host name go to, as far as the fetcher knows (address-guard.ts `addressOf`); absent: none said. */
  readonly addressOf?: (hostname: string) => string | null;
}

/**
 * Body bytes archived per exchange at most, whatever --max-body-bytes says: a capture in base64 must
 * fit a results post (64 MiB, shared/protocol.ts LIMITS) beside its batch (fetcher.ts flushes at
 * FLUSH_CAPTURE_CHARS). Longer bodies are archived cut, `WARC-Truncated: length`.
 */
export const MAX_ARCHIVED_BODY_BYTES = 24 * 1024 * 1024;

/**
 * zlib level of the records a fetcher builds. Deflate alone, on 100 test-web pages of 14.2 KB
 * (deflateRawSync, process CPU time, 2026-12-03): 0.30 ms a page at level 6, 0.14 ms at level 1, for
 * records 3 % larger (5.95 against 5.76 KiB a page, scripts/bench-warc.ts). On a crawl every fetched
 * page pays it, so the fetcher takes the fast level.
 */
export const FETCHER_GZIP_LEVEL = 1;

export async function fetchItem(ctx: FetchContext, slot: number, item: ScheduleItem): Promise<ItemResult> {
  const result = item.kind === 'robots' ? await fetchRobots(ctx, slot, item) : item.kind === 'sitemap' ? await fetchSitemap(ctx, slot, item) : await fetchPage(ctx, slot, item);
  // Which server answered: the queue server shares politeness among the host names on one address.
  if (result.status === null || ctx.addressOf === undefined) return result;
  return { ...result, address: result.capture?.ipAddress ?? ctx.addressOf(new URL(item.url).hostname) };
}

/**
 * A sitemap file (sitemaps.org): bounded like any body (--max-body-bytes after any content coding is
 * undone, and again after a gzip file is inflated), parsed into its entries (sitemap-parse.ts). No
 * redirect is followed: a 3xx is a result like a page's, and the queue server does not take it up.
 * The validators of its last answer make it a conditional request (queue-server/sitemaps/sitemap-revisit.ts).
 */
async function fetchSitemap(ctx: FetchContext, slot: number, item: ScheduleItem): Promise<ItemResult> {
  const fetchedAt = Date.now();
  const response = await download(ctx.dispatcher, ctx.download, {
    url: item.url,
    headers: validatorHeaders(item),
    wantBody: (status) => status >= 200 && status < 300,
    keepExchange: ctx.archive === true,
  });
  const result = { ...baseResult(slot, item, fetchedAt, response), capture: captureOf(ctx, item.url, fetchedAt, response) };
  if (!response.ok || response.status < 200 || response.status >= 300) return result;
  let body = response.body;
  let truncated = response.truncated;
  if (isGzip(body)) {
    const inflated = await gunzipBounded(body, ctx.download.maxBodyBytes);
    body = inflated.body;
    truncated ||= inflated.truncated;
  }
  const sitemap = parseSitemap(new TextDecoder('utf-8').decode(body));
  return { ...result, signature: contentSignature(response.body), truncated, sitemap: { ...sitemap, truncated: sitemap.truncated || truncated } };
}

/** If-None-Match and If-Modified-Since from the item's stored validators (RFC 9110 section 13.1). */
function validatorHeaders(item: ScheduleItem): Record<string, string> {
  const headers: Record<string, string> = {};
  if (item.validators?.etag) headers['if-none-match'] = item.validators.etag;
  if (item.validators?.lastModified) headers['if-modified-since'] = item.validators.lastModified;
  return headers;
}

async function fetchPage(ctx: FetchContext, slot: number, item: ScheduleItem): Promise<ItemResult> {
  const fetchedAt = Date.now();
  const headers = validatorHeaders(item);
  const response = await download(ctx.dispatcher, ctx.download, {
    url: item.url,
    headers,
    wantBody: (status) => status >= 200 && status < 300,
    keepExchange: ctx.archive === true,
  });
  const result = { ...baseResult(slot, item, fetchedAt, response), capture: captureOf(ctx, item.url, fetchedAt, response) };
  if (!response.ok) return result;

  const contentType = result.contentType;
  if (response.status >= 300 && response.status < 400) {
    const location = locationOf(response.headers.location);
    const target = location === null ? null : normalizeUrl(location.trim(), item.url);
    return { ...result, redirectTo: target?.ok === true ? target.url : null };
  }
  if (response.status < 200 || response.status >= 300) return result;

  const signature = contentSignature(response.body);
  const indexing = ctx.index !== false;
  const contentLanguage = boundedHeader(response.headers['content-language'], 35);
  // Binary bytes are not parsed even when labelled text/html: they hold no links, and garbage costs. A
  // body the header says is UTF-16 is text whatever its NULs (half its characters' bytes).
  if (!saysUtf16(contentType) && looksBinary(response.body)) return { ...result, signature };
  if (!isHtml(contentType, response.body)) {
    if (!indexing || !isPlainText(contentType) || xRobotsTag(response.headers['x-robots-tag'], 'petrel').noindex) return { ...result, signature };
    // A text/plain page is indexed as body text alone (no title, headings or links).
    const { buildIndexData } = await loadIndexer();
    const text = decodedPrefix(response.body, contentType, PLAIN_TEXT_CHARS);
    return { ...result, signature, index: buildIndexData({ title: null, headings: [], bodyText: text, language: firstLanguage(contentLanguage), anchors: [] }) };
  }
  const { extractPage } = await preloadExtractor();
  // In pieces: a page of megabytes is never one string (decode.ts).
  const extracted = extractPage(decodeHtmlChunks(response.body, contentType), item.url, ctx.maxLinks);
  // X-Robots-Tag says what the meta robots tag says (x-robots-tag.ts); either one is enough.
  const header = xRobotsTag(response.headers['x-robots-tag'], 'petrel');
  const page =
    header.noindex || header.nofollow
      ? {
          ...extracted.page,
          noindex: extracted.page.noindex || header.noindex,
          nofollow: extracted.page.nofollow || header.nofollow,
          outlinks: header.nofollow ? 0 : extracted.page.outlinks,
        }
      : extracted.page;
  const links = header.nofollow ? [] : extracted.links;
  let index: ItemResult['index'] = null;
  if (indexing) {
    const { buildIndexData } = await loadIndexer();
    const source = extracted.indexSource;
    const anchors = header.nofollow ? [] : source.anchors;
    const language = page.language ?? firstLanguage(contentLanguage);
    // A noindex page's own text is not indexed; its links' anchor text still counts for their targets
    // (noindex is not nofollow), so its index data carries the anchors alone.
    index = page.noindex
      ? buildIndexData({ title: null, headings: [], bodyText: '', storedText: '', language, anchors })
      : buildIndexData({ title: page.title, headings: source.headings, bodyText: source.bodyText, storedText: source.storedText, language, anchors });
  }
  return { ...result, signature, truncated: result.truncated || extracted.truncated, page, links, index };
}

/** The first tag of a Content-Language header (RFC 9110 section 8.5), or null. */
function firstLanguage(header: string | null): string | null {
  const first = header?.split(',')[0]?.trim() ?? '';
  return /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(first) ? first : null;
}

function isPlainText(contentType: string | null): boolean {
  return contentType !== null && contentType.split(';')[0]!.trim().toLowerCase() === 'text/plain';
}

async function fetchRobots(ctx: FetchContext, slot: number, item: ScheduleItem): Promise<ItemResult> {
  const fetchedAt = Date.now();
  let url = item.url;
  let wireBytes = 0;
  let response: DownloadResult;
  let startedAt = fetchedAt;
  for (let hop = 0; ; hop++) {
    if (hop > 0) startedAt = Date.now();
    response = await download(ctx.dispatcher, ctx.download, {
      url,
      maxBodyBytes: LIMITS.robotsTxtChars,
      wantBody: (status) => status >= 200 && status < 300,
      keepExchange: ctx.archive === true,
    });
    wireBytes += response.wireBytes;
    if (!response.ok || response.status < 300 || response.status >= 400 || hop === ROBOTS_MAX_REDIRECTS) break;
    const location = locationOf(response.headers.location);
    const next = location === null ? null : normalizeUrl(location.trim(), url);
    if (next === null || !next.ok) break;
    url = next.url;
  }
  // The last exchange of a redirect chain is archived (the result carries one capture); the hops before it are not.
  const result = { ...baseResult(slot, item, fetchedAt, response), wireBytes, capture: captureOf(ctx, url, startedAt, response) };
  if (!response.ok || response.status < 200 || response.status >= 300) return result;
  const text = bound(new TextDecoder('utf-8').decode(response.body), LIMITS.robotsTxtChars);
  return { ...result, robotsTxt: text };
}

/**
 * The result of an item the fetcher did not request (`not-requested`): its slot's requests kept failing,
 * so the rest goes back to the queue server, which queues it again (shared/fetch-codes.ts).
 */
export function notRequestedResult(slot: number, item: ScheduleItem, why: string): ItemResult {
  return baseResult(slot, item, Date.now(), {
    ok: false,
    code: 'not-requested',
    message: `not requested: ${why}`,
    durationMs: 0,
    wireBytes: 0,
  });
}

/** An exchange's WARC records, or null (archiving off, no response, or an exchange the archive refuses). */
function captureOf(ctx: FetchContext, url: string, startedAt: number, response: DownloadResult): Capture | null {
  if (ctx.archive !== true || !response.ok || response.exchange === null) return null;
  const exchange = response.exchange;
  try {
    return buildCapture(
      {
        url,
        ipAddress: exchange.ipAddress,
        startedAt,
        requestHead: exchange.requestHead,
        responseHead: exchange.responseHead,
        responseBody: exchange.body,
        truncated: exchange.truncated ? 'length' : null,
      },
      { maxBodyBytes: Math.min(ctx.download.maxBodyBytes, MAX_ARCHIVED_BODY_BYTES), gzipLevel: FETCHER_GZIP_LEVEL },
    );
  } catch (error) {
    // A head the archive cannot hold (over 72 KiB) or a URL it refuses: the fetch stands, unarchived.
    if (error instanceof WarcError) return null;
    throw error;
  }
}

function baseResult(slot: number, item: ScheduleItem, fetchedAt: number, response: DownloadResult): ItemResult {
  // What a fetch result starts as; the page, its links and its signature are filled in by the caller.
  const common = {
    slot,
    i: item.i,
    url: item.url,
    fetchedAt,
    durationMs: response.durationMs,
    wireBytes: response.wireBytes,
    redirectTo: null,
    signature: null,
    page: null,
    links: [],
    robotsTxt: null,
    sitemap: null,
    address: null,
    index: null,
  };
  if (!response.ok) {
    return {
      ...common,
      status: null,
      error: { code: response.code, message: bound(response.message, LIMITS.errorMessageChars) },
      contentType: null,
      bytes: 0,
      truncated: false,
      retryAfterMs: null,
      cache: emptyCacheHeaders(),
    };
  }
  const headers = response.headers;
  return {
    ...common,
    status: response.status,
    error: null,
    contentType: boundedHeader(headers['content-type'], 200),
    bytes: response.body.length,
    truncated: response.truncated,
    retryAfterMs: retryAfterMs(headerValue(headers['retry-after']), Date.now()),
    cache: {
      etag: boundedHeader(headers.etag),
      lastModified: boundedHeader(headers['last-modified']),
      date: boundedHeader(headers.date),
      age: boundedHeader(headers.age),
      expires: boundedHeader(headers.expires),
      cacheControl: boundedHeader(headers['cache-control']),
    },
  };
}

function emptyCacheHeaders(): CacheHeaders {
  return { etag: null, lastModified: null, date: null, age: null, expires: null, cacheControl: null };
}

function headerValue(value: string | string[] | undefined): string | null {
  if (value === undefined) return null;
  return Array.isArray(value) ? (value[0] ?? null) : value;
}

const NON_ASCII = /[\u0080-\u00ff]/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A redirect's target as the server meant it. undici gives header bytes as Latin-1 characters, but a
 * Location with raw non-ASCII bytes is UTF-8 in practice (`/café` sent as is), and browsers read it so:
 * taken as Latin-1 it became `/cafÃ©`, a URL the site never had. Bytes that are not UTF-8 stay as they came.
 */
export function locationOf(value: string | string[] | undefined): string | null {
  const location = headerValue(value);
  if (location === null || !NON_ASCII.test(location)) return location;
  try {
    return strictUtf8.decode(Buffer.from(location, 'latin1'));
  } catch {
    return location;
  }
}

/** A header value as received, or null when absent or longer than the protocol allows. */
function boundedHeader(value: string | string[] | undefined, max: number = LIMITS.headerChars): string | null {
  const text = Array.isArray(value) ? value.join(', ') : value;
  if (text === undefined || text.length > max) return null;
  return text;
}

const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = '(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)';
const TIME = '\\d{2}:\\d{2}:\\d{2}';
/** RFC 9110 section 5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept. */
const IMF_FIXDATE = new RegExp(`^${DAY}, \\d{2} ${MONTH} \\d{4} ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, \\d{2}-${MONTH}-\\d{2} ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} [ \\d]\\d ${TIME} \\d{4}$`);

/**
 * Retry-After in ms from now (RFC 9110 section 10.2.3): delay-seconds (`1*DIGIT`) or an HTTP-date in
 * one of its three forms; null for anything else ("1.5", "-1", a free-form date), as if absent: Node's
 * Date.parse takes nearly anything for a date. A date already past is 0.
 */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d{1,9}$/.test(trimmed)) return Number(trimmed) * 1000;
  let date: number;
  if (IMF_FIXDATE.test(trimmed) || RFC850_DATE.test(trimmed)) date = Date.parse(trimmed);
  // asctime has no zone; HTTP dates are UTC (Date.parse would read it as local time).
  else if (ASCTIME_DATE.test(trimmed)) date = Date.parse(`${trimmed} GMT`);
  else return null;
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** Whether a Content-Type names a UTF-16 charset (`charset=utf-16`, `utf-16le`, `utf-16be`, quoted or not). */
export function saysUtf16(contentType: string | null): boolean {
  const charset = charsetFromContentType(contentType);
  return charset === 'utf-16' || charset === 'utf-16le' || charset === 'utf-16be';
}

/**
 * Binary, whatever the label says: the first 1,024 bytes hold a NUL or more than 1 in 32 "binary data
 * bytes" (WHATWG MIME Sniffing section 7.2: 0x00-0x08, 0x0B, 0x0E-0x1A, 0x1C-0x1F). A stray control
 * character in a real page does not make it binary; random bytes are about 10 % such bytes. A UTF-16
 * byte-order mark means text (its NULs are half characters).
 */
export function looksBinary(body: Uint8Array): boolean {
  if ((body[0] === 0xfe && body[1] === 0xff) || (body[0] === 0xff && body[1] === 0xfe)) return false;
  const end = Math.min(body.length, 1024);
  let binary = 0;
  for (let i = 0; i < end; i++) {
    const byte = body[i]!;
    if (byte === 0x00) return true;
    if (byte <= 0x08 || byte === 0x0b || (byte >= 0x0e && byte <= 0x1a) || (byte >= 0x1c && byte <= 0x1f)) binary++;
  }
  return binary * 32 > end;
}

function isHtml(contentType: string | null, body: Buffer): boolean {
  if (contentType !== null) {
    const type = contentType.split(';')[0]!.trim().toLowerCase();
    return type === 'text/html' || type === 'application/xhtml+xml';
  }
  const head = body.subarray(0, 512).toString('latin1').trimStart().toLowerCase();
  return head.startsWith('<!doctype html') || head.startsWith('<html');
}
