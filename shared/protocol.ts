/**
 * The wire contract between the queue server and its fetchers: routes, message types, a protocol
 * version and the runtime validators both sides apply. Every body that crosses the boundary is parsed
 * here; nothing else in the code base trusts a request body.
 *
 * Concepts:
 *  - A fetcher CLAIMS work by long poll: the queue server answers as soon as a schedule exists, or with
 *    `wait` when `waitMs` passes without work, or with `done` when a one-shot crawl has finished.
 *  - A SCHEDULE is a batch of slots leased to exactly one fetcher until `leaseMs` after the last sign
 *    of life from that fetcher (a results post or a heartbeat). URLs of a lease that runs out come
 *    back to the frontier by themselves.
 *  - A SLOT is a run of URLs of one origin, fetched one after another with `delayMs` between the end of
 *    one response and the start of the next request; `startAfterMs` is counted from receipt. Relative
 *    times keep politeness independent of clock skew between machines. A slot of a seed's host says so
 *    (`allowPrivateAddresses`): only those hosts may be on private addresses.
 *  - RESULTS are posted in batches; each names its (schedule, slot, item), so a retried post is
 *    recognised and applied once.
 */
import { z } from 'zod';
import { FETCH_ERROR_CODES } from './fetch-codes.js';
import { captureFromWire, captureToWire, captureWireSchema, isPlainCaptureWire } from './warc/capture-wire.js';
import type { Capture } from './warc/exchange.js';
import { INDEX_LIMITS, indexDataSchema, PAGE_FIELDS } from './index-data.js';
import { STEMMERS } from './tokenize.js';
import { sitemapDataSchema } from './sitemap.js';

export const PROTOCOL_VERSION = 1;

export const ROUTES = {
  claim: '/api/v1/claim',
  results: '/api/v1/results',
  heartbeat: '/api/v1/heartbeat',
  status: '/api/status',
  statusStream: '/api/status/stream',
} as const;

/** Bounds on what the queue server accepts; a request beyond them gets a 4xx and changes nothing. */
export const LIMITS = {
  requestBodyBytes: 64 * 1024 * 1024,
  urlChars: 2048,
  /** Links of one page a result may carry: the most --max-links-per-page allows (DEFAULT_MAX_LINKS_PER_PAGE by default). */
  linksPerPage: 100_000,
  resultsPerPost: 2000,
  robotsTxtChars: 512 * 1024,
  titleChars: 512,
  descriptionChars: 1024,
  excerptChars: 2000,
  headerChars: 1024,
  errorMessageChars: 500,
  nameChars: 64,
  slotsPerSchedule: 1024,
  /** An IPv6 address with a zone is at most 45 characters plus the zone. */
  addressChars: 64,
} as const;

/**
 * Links of one page followed unless the crawl says otherwise (--max-links-per-page): a page's links past
 * it are counted (its `outlinks`), not followed. Heritrix's default is about the same (6,000); a page
 * with more is an index of a large site or a link farm.
 */
export const DEFAULT_MAX_LINKS_PER_PAGE = 5000;

/** Patterns shared by the schemas below and the fast acceptance of results bodies at the end. */
const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,64}$/;
const HEX64_PATTERN = /^[0-9a-f]{16}$/;
/** Longest `language` tag accepted (BCP 47 tags are shorter in practice). */
const LANGUAGE_CHARS = 35;
const CONTENT_TYPE_CHARS = 200;

const boundedString = (max: number) => z.string().max(max);
const url = boundedString(LIMITS.urlChars).min(1);
const id = z.string().regex(ID_PATTERN, 'an id of 1-64 letters, digits, _ . : -');
const header = boundedString(LIMITS.headerChars).nullable();
const nonNegativeInt = z.number().int().nonnegative();

export const fetcherStatsSchema = z.object({
  rssBytes: nonNegativeInt,
  inFlight: nonNegativeInt,
  pagesFetched: nonNegativeInt,
  errors: nonNegativeInt,
  bytesDownloaded: nonNegativeInt,
});
export type FetcherStats = z.infer<typeof fetcherStatsSchema>;

export const claimRequestSchema = z.object({
  protocolVersion: z.literal(PROTOCOL_VERSION),
  fetcherId: id,
  name: boundedString(LIMITS.nameChars),
  /** How many slots the fetcher can start now (its free concurrency). */
  capacity: z.number().int().min(1).max(LIMITS.slotsPerSchedule),
  /** How long the queue server may hold the request when no work is ready, ms. */
  waitMs: z.number().int().min(0).max(60_000),
  stats: fetcherStatsSchema,
});
export type ClaimRequest = z.infer<typeof claimRequestSchema>;

export const validatorsSchema = z.object({ etag: header, lastModified: header });
export type Validators = z.infer<typeof validatorsSchema>;

export const scheduleItemSchema = z.object({
  i: nonNegativeInt,
  url,
  /** `sitemap`: a sitemap file (shared/sitemap.ts), discovery only: not a page, not in the crawl database. */
  kind: z.enum(['page', 'robots', 'sitemap']),
  depth: nonNegativeInt,
  /** Present when the queue server holds a stale cached copy: sent as If-None-Match / If-Modified-Since. */
  validators: validatorsSchema.nullable(),
});
export type ScheduleItem = z.infer<typeof scheduleItemSchema>;

export const slotSchema = z.object({
  slot: nonNegativeInt,
  origin: url,
  startAfterMs: nonNegativeInt,
  delayMs: nonNegativeInt,
  /**
   * The origin's host is the host of a seed the operator gave: the fetcher connects to it whatever
   * address it resolves to. For every other host the fetcher refuses loopback, private and other
   * special-purpose addresses (fetcher/address-guard.ts). Absent (an older queue server): false, the
   * safe side.
   */
  allowPrivateAddresses: z.boolean().default(false),
  items: z.array(scheduleItemSchema).min(1),
});
export type Slot = z.infer<typeof slotSchema>;

export const scheduleSchema = z.object({
  id,
  leaseMs: z.number().int().positive(),
  /** Build and post the search index's data of pages (`index` of item results); false under --no-index. Absent (an older queue server): true. */
  index: z.boolean().default(true),
  slots: z.array(slotSchema).min(1).max(LIMITS.slotsPerSchedule),
  /** The queue server archives exchanges (WARC, not --no-warc): results carry their `capture`. Absent (an older queue server): false. */
  warc: z.boolean().default(false),
  /**
   * The version of the binary results frame (shared/results-frame.ts) the queue server reads, and the
   * fetcher then posts its results in; absent (an older queue server) or 0: JSON only. Either way the
   * queue server still reads JSON posts (an older fetcher's).
   */
  resultsFrame: z.number().int().nonnegative().optional(),
  /** Links of a page its result carries at most (--max-links-per-page). Absent (an older queue server): DEFAULT_MAX_LINKS_PER_PAGE. */
  maxLinks: z.number().int().min(1).max(LIMITS.linksPerPage).optional(),
});
export type Schedule = z.infer<typeof scheduleSchema>;

export const claimResponseSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('schedule'), schedule: scheduleSchema }),
  z.object({ kind: z.literal('wait') }),
  z.object({ kind: z.literal('done') }),
]);
export type ClaimResponse = z.infer<typeof claimResponseSchema>;

/** Cache-header data: validators and freshness headers exactly as received (RFC 9110 section 8.8, RFC 9111 section 5). */
export const cacheHeadersSchema = z.object({
  etag: header,
  lastModified: header,
  date: header,
  age: header,
  expires: header,
  cacheControl: header,
});
export type CacheHeaders = z.infer<typeof cacheHeadersSchema>;

/** Index data extracted from an HTML page. */
export const pageDataSchema = z.object({
  title: boundedString(LIMITS.titleChars).nullable(),
  description: boundedString(LIMITS.descriptionChars).nullable(),
  language: boundedString(LANGUAGE_CHARS).nullable(),
  excerpt: boundedString(LIMITS.excerptChars),
  canonical: url.nullable(),
  noindex: z.boolean(),
  nofollow: z.boolean(),
  /**
   * Distinct followable links the page has: those in `links`, then those past the schedule's `maxLinks`
   * (not sent). Links past twice that bound are counted as written, repeats included. 0 for a nofollow page.
   */
  outlinks: nonNegativeInt,
  /** 64-bit simhash of the page's visible text (shared/simhash.ts), 16 hex digits. */
  simhash: z.string().regex(HEX64_PATTERN).nullable(),
});
export type PageData = z.infer<typeof pageDataSchema>;

export const fetchErrorSchema = z.object({
  /** Stable machine-readable code (shared/fetch-codes.ts), e.g. `timeout`, `connection-refused`. */
  code: z.enum(FETCH_ERROR_CODES),
  message: boundedString(LIMITS.errorMessageChars),
});
export type FetchError = z.infer<typeof fetchErrorSchema>;

export const itemResultSchema = z.object({
  slot: nonNegativeInt,
  i: nonNegativeInt,
  url,
  /** When the request was sent, ms since epoch on the fetcher's clock. */
  fetchedAt: nonNegativeInt,
  durationMs: nonNegativeInt,
  /** HTTP status, or null when no response arrived (see error). */
  status: z.number().int().min(100).max(999).nullable(),
  error: fetchErrorSchema.nullable(),
  contentType: boundedString(CONTENT_TYPE_CHARS).nullable(),
  /** Body bytes received (after decompression). */
  bytes: nonNegativeInt,
  /** Body bytes on the wire (before decompression); what the transfer cost. */
  wireBytes: nonNegativeInt,
  truncated: z.boolean(),
  /** Location of a 3xx, resolved against the request URL, not followed. */
  redirectTo: url.nullable(),
  retryAfterMs: nonNegativeInt.nullable(),
  cache: cacheHeadersSchema,
  /** xxHash64 of the body, 16 hex digits; null without a body. */
  signature: z.string().regex(HEX64_PATTERN).nullable(),
  page: pageDataSchema.nullable(),
  links: z.array(url).max(LIMITS.linksPerPage),
  /** The robots.txt text, for items of kind `robots` that got a 2xx. */
  robotsTxt: boundedString(LIMITS.robotsTxtChars).nullable(),
  /**
   * What a sitemap item's 2xx body held (shared/sitemap.ts); null for every other result. Optional, like
   * `capture`: results without it stay valid; the fast path takes only results where it is null.
   */
  sitemap: sitemapDataSchema.nullable().optional(),
  /**
   * The address the response came from (the peer of the connection: what WARC-IP-Address records), or
   * null when none is known; the queue server groups host names on one address into one politeness
   * queue. Optional, so results of an older fetcher stay valid.
   */
  address: boundedString(LIMITS.addressChars).nullable().optional(),
  /**
   * The exchange's WARC records (shared/warc/capture-wire.ts, each field bounded there), for a result
   * with a response while the schedule asked for them (`warc`); null otherwise. Optional, so results of
   * an older fetcher (and of tools that make results up) stay valid; the fast path below takes only
   * results that have it.
   */
  capture: captureWireSchema.nullable().optional(),
  /**
   * The page's search index data (shared/index-data.ts, every bound there): terms by field with
   * positions, stored text, anchor text of its outlinks. Null for anything not indexed: no 2xx, not HTML
   * or text/plain, or the crawl runs with --no-index; a noindex page's carries only its anchors. Typically 2-3 times the page's visible
   * text in JSON (a 14 KB page: 36 KB, 13 KB gzipped); at most about 16 KiB of text, 18,560 term
   * entries and 5,000 anchors.
   */
  index: indexDataSchema.nullable(),
});
/** A result in the JSON form of a post: its capture's bytes in base64 (CaptureWire). */
export type ItemResultJson = z.infer<typeof itemResultSchema>;
/**
 * A result in memory, on either side of the wire: its capture as bytes (the `Capture` the WARC writer
 * takes), whichever form (JSON or shared/results-frame.ts) carried it.
 */
export type ItemResult = Omit<ItemResultJson, 'capture'> & { capture?: Capture | null };

export const resultsRequestSchema = z.object({
  protocolVersion: z.literal(PROTOCOL_VERSION),
  fetcherId: id,
  scheduleId: id,
  results: z.array(itemResultSchema).max(LIMITS.resultsPerPost),
});
export type ResultsRequestJson = z.infer<typeof resultsRequestSchema>;
export type ResultsRequest = Omit<ResultsRequestJson, 'results'> & { results: ItemResult[] };

/** A validated JSON post in memory: captures decoded from base64. */
export function resultsFromJson(json: ResultsRequestJson): ResultsRequest {
  return { ...json, results: json.results.map((r) => (r.capture == null ? (r as ItemResult) : { ...r, capture: captureFromWire(r.capture) })) };
}

/** The JSON form of a post (for a queue server that reads no frames): captures in base64. */
export function resultsToJson(request: ResultsRequest): ResultsRequestJson {
  return { ...request, results: request.results.map((r) => (r.capture == null ? (r as ItemResultJson) : { ...r, capture: captureToWire(r.capture) })) };
}

export const resultsResponseSchema = z.object({
  applied: nonNegativeInt,
  duplicates: nonNegativeInt,
  /** False when the lease is unknown, expired or another fetcher's: such results are dropped (an expired lease's URLs were re-issued, and that fetch stands). */
  leaseActive: z.boolean(),
});
export type ResultsResponse = z.infer<typeof resultsResponseSchema>;

export const heartbeatRequestSchema = z.object({
  protocolVersion: z.literal(PROTOCOL_VERSION),
  fetcherId: id,
  name: boundedString(LIMITS.nameChars),
  scheduleIds: z.array(id).max(LIMITS.slotsPerSchedule),
  stats: fetcherStatsSchema,
});
export type HeartbeatRequest = z.infer<typeof heartbeatRequestSchema>;

export const heartbeatResponseSchema = z.object({
  /** Schedules the queue server no longer knows (lease lost): the fetcher may stop working on them. */
  unknownScheduleIds: z.array(id),
});
export type HeartbeatResponse = z.infer<typeof heartbeatResponseSchema>;

/** Explains a validation failure in one line a human can act on. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.join('.') || '(body)'}: ${issue.message}`)
    .join('; ');
}

/**
 * Parses a body against a protocol schema: the schema's own result (`safeParse`), reached faster for
 * results bodies. A results post carries up to 2,000 results of some 25 fields and 50 links each, and
 * zod builds a new copy of every object and array it accepts; `isPlainResultsRequest` instead checks
 * the parsed JSON in place and hands it on as it is. It accepts only bodies the schema accepts *and*
 * would return unchanged (every bound below is the schema's, from the same constants; no keys beyond
 * the schema's, plain objects only, as JSON.parse makes them); for anything else, including every body the schema rejects, the
 * schema itself decides and words the error. So what is accepted, what is rejected and how are the
 * schema's, and the schema stays the one definition (test/unit/protocol-fast-path.test.ts holds the
 * fast check to it).
 */
export function parseProtocolBody<T extends z.ZodType>(schema: T, body: unknown): z.ZodSafeParseResult<z.infer<T>> {
  if (schema === (resultsRequestSchema as z.ZodType) && isPlainResultsRequest(body)) return { success: true, data: body as z.infer<T> };
  return schema.safeParse(body) as z.ZodSafeParseResult<z.infer<T>>;
}

const FETCH_ERROR_CODE_SET: ReadonlySet<string> = new Set(FETCH_ERROR_CODES);
/** Keys of each object the check meets, counted from the schemas themselves. */
const KEYS = {
  request: Object.keys(resultsRequestSchema.shape).length,
  result: Object.keys(itemResultSchema.shape).length,
  error: Object.keys(fetchErrorSchema.shape).length,
  cache: Object.keys(cacheHeadersSchema.shape).length,
  page: Object.keys(pageDataSchema.shape).length,
  index: Object.keys(indexDataSchema.shape).length,
  fields: PAGE_FIELDS.length,
  anchor: 2,
};
const STEMMER_SET: ReadonlySet<string> = new Set(STEMMERS);
/** A field's term list is checked by the schema's own hand-written check (index-data.ts `fieldSchema`), which returns its input as it is. */
const FIELD_SCHEMAS = indexDataSchema.shape.fields.shape;

/** A plain object (what JSON.parse makes) with exactly `keys` own enumerable keys, all present. */
function hasExactly(value: unknown, keys: number): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return false;
  let n = 0;
  for (const _ in value) n++;
  return n === keys;
}

const isNonNegativeInt = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isString = (v: unknown, max: number): boolean => typeof v === 'string' && v.length <= max;
const isNullableString = (v: unknown, max: number): boolean => v === null || (typeof v === 'string' && v.length <= max);
const isUrl = (v: unknown): boolean => typeof v === 'string' && v.length >= 1 && v.length <= LIMITS.urlChars;
const isNullableHex64 = (v: unknown): boolean => v === null || (typeof v === 'string' && HEX64_PATTERN.test(v));

/** The fast check behind `parseProtocolBody` for `resultsRequestSchema` (same bounds, in place, no copies). */
export function isPlainResultsRequest(body: unknown): body is ResultsRequestJson {
  if (!hasExactly(body, KEYS.request)) return false;
  const { protocolVersion, fetcherId, scheduleId, results } = body;
  if (protocolVersion !== PROTOCOL_VERSION || typeof fetcherId !== 'string' || !ID_PATTERN.test(fetcherId)) return false;
  if (typeof scheduleId !== 'string' || !ID_PATTERN.test(scheduleId)) return false;
  if (!Array.isArray(results) || results.length > LIMITS.resultsPerPost) return false;
  for (let i = 0; i < results.length; i++) if (!isPlainItemResult(results[i])) return false;
  return true;
}

function isPlainItemResult(r: unknown): boolean {
  if (!hasExactly(r, KEYS.result)) return false;
  if (!isNonNegativeInt(r.slot) || !isNonNegativeInt(r.i) || !isUrl(r.url) || !isNonNegativeInt(r.fetchedAt) || !isNonNegativeInt(r.durationMs)) return false;
  const status = r.status;
  if (status !== null && !(typeof status === 'number' && Number.isSafeInteger(status) && status >= 100 && status <= 999)) return false;
  const error = r.error;
  if (error !== null) {
    if (!hasExactly(error, KEYS.error) || typeof error.code !== 'string' || !FETCH_ERROR_CODE_SET.has(error.code) || !isString(error.message, LIMITS.errorMessageChars)) return false;
  }
  if (!isNullableString(r.contentType, CONTENT_TYPE_CHARS) || !isNonNegativeInt(r.bytes) || !isNonNegativeInt(r.wireBytes) || typeof r.truncated !== 'boolean') return false;
  if (r.redirectTo !== null && !isUrl(r.redirectTo)) return false;
  if (r.retryAfterMs !== null && !isNonNegativeInt(r.retryAfterMs)) return false;
  const cache = r.cache;
  if (!hasExactly(cache, KEYS.cache)) return false;
  const h = LIMITS.headerChars;
  if (!isNullableString(cache.etag, h) || !isNullableString(cache.lastModified, h) || !isNullableString(cache.date, h)) return false;
  if (!isNullableString(cache.age, h) || !isNullableString(cache.expires, h) || !isNullableString(cache.cacheControl, h)) return false;
  if (!isNullableHex64(r.signature)) return false;
  const page = r.page;
  if (page !== null) {
    if (!hasExactly(page, KEYS.page)) return false;
    if (!isNullableString(page.title, LIMITS.titleChars) || !isNullableString(page.description, LIMITS.descriptionChars) || !isNullableString(page.language, LANGUAGE_CHARS)) return false;
    if (!isString(page.excerpt, LIMITS.excerptChars) || (page.canonical !== null && !isUrl(page.canonical))) return false;
    if (typeof page.noindex !== 'boolean' || typeof page.nofollow !== 'boolean' || !isNonNegativeInt(page.outlinks) || !isNullableHex64(page.simhash)) return false;
  }
  const links = r.links;
  if (!Array.isArray(links) || links.length > LIMITS.linksPerPage) return false;
  for (let i = 0; i < links.length; i++) if (!isUrl(links[i])) return false;
  if (r.capture !== null && !isPlainCaptureWire(r.capture)) return false;
  if (!isNullableString(r.robotsTxt, LIMITS.robotsTxtChars)) return false;
  if (r.sitemap !== null || !isNullableString(r.address, LIMITS.addressChars)) return false;
  return r.index === null || isPlainIndexData(r.index);
}

/**
 * `indexDataSchema` in place: the same bounds (INDEX_LIMITS), exact keys, and the fields' own check.
 * The JSON fast path and the binary frame's decoder (shared/results-frame.ts) both check with it.
 */
export function isPlainIndexData(index: unknown): boolean {
  if (!hasExactly(index, KEYS.index)) return false;
  if (!isNullableString(index.language, INDEX_LIMITS.languageChars) || typeof index.stemmer !== 'string' || !STEMMER_SET.has(index.stemmer)) return false;
  if (!isNullableString(index.title, INDEX_LIMITS.titleChars)) return false;
  const text = index.text;
  if (typeof text !== 'string' || text.length > INDEX_LIMITS.storedTextBytes || Buffer.byteLength(text, 'utf8') > INDEX_LIMITS.storedTextBytes) return false;
  const fields = index.fields;
  if (!hasExactly(fields, KEYS.fields)) return false;
  for (const field of PAGE_FIELDS) if (!FIELD_SCHEMAS[field].safeParse(fields[field]).success) return false;
  const anchors = index.anchors;
  if (!Array.isArray(anchors) || anchors.length > INDEX_LIMITS.anchors) return false;
  for (let i = 0; i < anchors.length; i++) {
    const anchor: unknown = anchors[i];
    if (!hasExactly(anchor, KEYS.anchor) || !isUrl(anchor.url)) return false;
    const terms = anchor.terms;
    if (!Array.isArray(terms) || terms.length < 1 || terms.length > INDEX_LIMITS.anchorTerms) return false;
    for (let k = 0; k < terms.length; k++) {
      const t: unknown = terms[k];
      if (typeof t !== 'string' || t.length < 1 || t.length > INDEX_LIMITS.termChars) return false;
    }
  }
  return true;
}
