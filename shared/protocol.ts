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
  linksPerPage: 5000,
  resultsPerPost: 2000,
  robotsTxtChars: 512 * 1024,
  titleChars: 512,
  descriptionChars: 1024,
  excerptChars: 2000,
  headerChars: 1024,
  errorMessageChars: 500,
  nameChars: 64,
  slotsPerSchedule: 1024,
} as const;

const boundedString = (max: number) => z.string().max(max);
const url = boundedString(LIMITS.urlChars).min(1);
const id = z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'an id of 1-64 letters, digits, _ . : -');
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
  kind: z.enum(['page', 'robots']),
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
  slots: z.array(slotSchema).min(1).max(LIMITS.slotsPerSchedule),
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
  language: boundedString(35).nullable(),
  excerpt: boundedString(LIMITS.excerptChars),
  canonical: url.nullable(),
  noindex: z.boolean(),
  nofollow: z.boolean(),
  outlinks: nonNegativeInt,
  /** 64-bit simhash of the page's visible text (shared/simhash.ts), 16 hex digits. */
  simhash: z.string().regex(/^[0-9a-f]{16}$/).nullable(),
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
  contentType: boundedString(200).nullable(),
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
  signature: z.string().regex(/^[0-9a-f]{16}$/).nullable(),
  page: pageDataSchema.nullable(),
  links: z.array(url).max(LIMITS.linksPerPage),
  /** The robots.txt text, for items of kind `robots` that got a 2xx. */
  robotsTxt: boundedString(LIMITS.robotsTxtChars).nullable(),
});
export type ItemResult = z.infer<typeof itemResultSchema>;

export const resultsRequestSchema = z.object({
  protocolVersion: z.literal(PROTOCOL_VERSION),
  fetcherId: id,
  scheduleId: id,
  results: z.array(itemResultSchema).max(LIMITS.resultsPerPost),
});
export type ResultsRequest = z.infer<typeof resultsRequestSchema>;

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
