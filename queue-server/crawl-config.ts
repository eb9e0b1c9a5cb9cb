/**
 * The settings of one crawl, each defined once in CRAWL_SETTINGS: its default, its bounds, what it
 * means, the `petrel` option that sets it and whether the admin page's "start a crawl" form offers it.
 * Everything else is derived from the table: the zod schema that validates settings once at the
 * boundary (CLI, API) and is then trusted; the options of `petrel queue-server`, `crawl` and `start`
 * with their --help defaults (cli/crawl-options.ts); the admin form's bounds and defaults (GET
 * /admin/api/settings) and the body it may post (api/crawl-control.ts); the fetch schedule's defaults.
 *
 * "No limit" is null, everywhere: in the table, the schema, the status JSON and the admin form.
 */
import { ONE_SHOT_MAX_WAIT_MS } from './frontier/host-backoff.js';
import { z } from 'zod';
import { NUTCH_ADAPTIVE_RATES, type FetchSchedulePolicy } from './crawldb/fetch-schedule.js';
import { SCOPES } from './admission/scope.js';
import { DEFAULT_MAX_LINKS_PER_PAGE, LIMITS } from '../shared/protocol.js';

interface SettingBase<T> {
  /** What the setting means, for --help and the admin form. */
  readonly help: string;
  readonly default: T;
  /** The option of `petrel queue-server`, `crawl` and `start` that sets it (commander flags), or null. */
  readonly option: string | null;
  /** Offered by the admin page's "start a crawl" form. */
  readonly form: boolean;
  /** The value's type and bounds, without the default. */
  readonly schema: z.ZodType<T>;
}

/** A whole number within [min, max] (max null: none but the safe-integer range); with `noLimit`, null means no limit. */
export interface IntegerSetting<T extends number | null = number | null> extends SettingBase<T> {
  readonly kind: 'integer';
  readonly min: number;
  readonly max: number | null;
  readonly noLimit: boolean;
  /** A duration in ms: its option also takes `90s`, `30d` (shared/duration.ts), and --help shows it so. */
  readonly duration: boolean;
}

export interface ChoiceSetting<T extends string = string> extends SettingBase<T> {
  readonly kind: 'choice';
  readonly choices: readonly T[];
}

/** Strings given one by one (the option is repeated). */
export interface ListSetting extends SettingBase<string[]> {
  readonly kind: 'list';
}

/** Anything else (a token, a fraction, a switch): its schema says what is allowed. */
export interface OtherSetting<T> extends SettingBase<T> {
  readonly kind: 'other';
}

export type CrawlSetting = IntegerSetting | ChoiceSetting | ListSetting | OtherSetting<unknown>;

interface Presentation {
  readonly help: string;
  readonly option?: string;
  readonly form?: boolean;
}

function integer(spec: Presentation & { min: number; max?: number; default: number }, duration = false): IntegerSetting<number> {
  let schema = z.number().int().min(spec.min);
  if (spec.max !== undefined) schema = schema.max(spec.max);
  return { kind: 'integer', help: spec.help, option: spec.option ?? null, form: spec.form ?? false, min: spec.min, max: spec.max ?? null, noLimit: false, duration, default: spec.default, schema };
}

/** A duration in whole milliseconds. */
function duration(spec: Presentation & { min: number; max?: number; default: number }): IntegerSetting<number> {
  return integer(spec, true);
}

/** An integer bound where null means no limit. */
function limit(spec: Presentation & { min: number; default: number | null }): IntegerSetting<number | null> {
  const schema = z.number().int().min(spec.min).nullable();
  return { kind: 'integer', help: spec.help, option: spec.option ?? null, form: spec.form ?? false, min: spec.min, max: null, noLimit: true, duration: false, default: spec.default, schema };
}

function choice<const T extends string>(spec: Presentation & { choices: readonly [T, ...T[]]; default: NoInfer<T> }): ChoiceSetting<T> {
  return { kind: 'choice', help: spec.help, option: spec.option ?? null, form: spec.form ?? false, choices: spec.choices, default: spec.default, schema: z.enum(spec.choices) as unknown as z.ZodType<T> };
}

function list(spec: Presentation & { schema: z.ZodType<string[]> }): ListSetting {
  return { kind: 'list', help: spec.help, option: spec.option ?? null, form: spec.form ?? false, default: [], schema: spec.schema };
}

function other<T>(spec: Presentation & { schema: z.ZodType<T>; default: T }): OtherSetting<T> {
  return { kind: 'other', help: spec.help, option: spec.option ?? null, form: spec.form ?? false, default: spec.default, schema: spec.schema };
}

const MINUTE_MS = 60_000;
const DAY_MS = 24 * 60 * MINUTE_MS;

export const CRAWL_SETTINGS = {
  seeds: list({ option: '--seed <url>', help: 'a URL to start from (repeat for several)', form: true, schema: z.array(z.string().min(1)) }),
  scope: choice({
    option: '--scope <scope>',
    help: "which discovered URLs are followed: prefix (under the seed's directory, like wget -np), host (same host name), domain (same registrable domain), any",
    form: true,
    choices: SCOPES,
    default: 'host',
  }),
  /** Seeds are depth 0; links and redirect targets one more than the page they were found on. */
  maxDepth: limit({ option: '--max-depth <n>', help: 'follow links at most this many hops from a seed', form: true, min: 0, default: null }),
  maxPages: limit({ option: '--max-pages <n>', help: 'request at most this many pages, robots.txt not counted', form: true, min: 1, default: null }),
  delayMs: duration({
    option: '--delay-ms <duration>',
    help: 'gap between two requests to one host, end of response to next request; robots.txt Crawl-delay wins if larger',
    form: true,
    min: 0,
    max: 3_600_000,
    default: 1000,
  }),
  hostConcurrency: integer({ option: '--host-concurrency <n>', help: 'requests one host sees at once, across all fetchers', form: true, min: 1, max: 256, default: 1 }),
  leaseMs: duration({ option: '--lease-ms <duration>', help: "a schedule returns to the frontier this long after its fetcher's last sign of life", min: 1000, default: 60_000 }),
  robotsToken: other({ help: 'product token looked up in robots.txt User-agent lines', schema: z.string().regex(/^[A-Za-z_-]+$/), default: 'petrel' }),
  robotsUnreachableRetryMs: duration({
    option: '--robots-retry-ms <duration>',
    help: 'how long a host whose robots.txt could not be fetched (5xx, 429, network error) waits before robots.txt is asked again; its URLs wait too',
    min: 0,
    default: 60_000,
  }),
  robotsAttempts: integer({
    option: '--robots-attempts <n>',
    help: 'robots.txt fetches that may find a host unreachable in a row before its URLs are given up as robots-unreachable',
    min: 1,
    max: 100,
    default: 3,
  }),
  slotUrls: integer({ option: '--slot-urls <n>', help: 'URLs of one host handed to a fetcher in one go', min: 1, max: 1000, default: 32 }),
  bloomCapacity: integer({ option: '--expected-urls <n>', help: "URLs the seen-set's Bloom filter is first sized for (it grows beyond)", min: 1000, default: 1_000_000 }),
  bloomFalsePositiveRate: other({ help: "the seen-set Bloom filter's overall false-positive bound", schema: z.number().gt(0).lt(0.5), default: 0.001 }),
  maxPagesPerHost: integer({
    option: '--max-pages-per-host <n>',
    help: 'URLs of one host admitted at most, so a spider trap costs a bounded number of requests; more are counted as trap-budget',
    min: 1,
    default: 100_000,
  }),
  maxLinksPerPage: integer({
    option: '--max-links-per-page <n>',
    help: 'links of one page followed at most, in page order; the rest are counted (linksCut in the summary), not followed. Index pages of large sites have more (the Rust documentation: up to 24,000)',
    min: 1,
    max: LIMITS.linksPerPage,
    default: DEFAULT_MAX_LINKS_PER_PAGE,
  }),
  frontierMemoryUrls: integer({
    option: '--frontier-memory-urls <n>',
    help: 'queued URLs the queue server holds in memory at most (the heads of the host queues); the rest wait on disk in frontier.btree, none is dropped',
    min: 1,
    default: 100_000,
  }),
  /** The n-th retry waits retryBaseMs * 2^(n-1). */
  maxRetries: integer({ option: '--max-retries <n>', help: 'retries of a URL that failed (5xx, timeout, connection error) before it is gone', min: 0, max: 20, default: 3 }),
  retryBaseMs: duration({ option: '--retry-base-ms <duration>', help: 'wait before the first retry; each further retry waits twice as long', min: 0, default: 30_000 }),
  /** Adaptive refetch interval (continuous mode), Nutch's: first interval 30 d, bounds 1 min and 90 d. */
  minIntervalMs: duration({ option: '--min-interval-ms <duration>', help: 'continuous mode: shortest refetch interval of a page that keeps changing', min: 1, default: MINUTE_MS }),
  initialIntervalMs: duration({
    option: '--initial-interval-ms <duration>',
    help: 'continuous mode: refetch interval of a newly fetched page (then +40 % when unchanged, -20 % when changed); in any mode, how long a sitemap that answered 404 or 410 is not asked again',
    min: 1,
    default: 30 * DAY_MS,
  }),
  maxIntervalMs: duration({
    option: '--max-interval-ms <duration>',
    help: 'continuous mode: longest refetch interval; gone and robots-denied URLs are rechecked this rarely',
    min: 1,
    default: 90 * DAY_MS,
  }),
  order: choice({
    option: '--order <order>',
    help: 'crawl order: bfs (breadth-first by depth) or opic (page importance: each page shares its score among its outlinks)',
    form: true,
    choices: ['bfs', 'opic'],
    default: 'bfs',
  }),
  warcMaxFileBytes: integer({
    option: '--warc-max-file-bytes <n>',
    help: 'a WARC file of the archive (data directory warc/) is closed and a new one begun before it grows past this many bytes; a single larger capture gets a file of its own',
    min: 64 * 1024,
    default: 1024 * 1024 * 1024,
  }),
  /**
   * Archiving (WARC, queue-server/warc/): on unless --no-warc. The archive is opened when the queue
   * server starts with it on; a crawl started later with it off stores nothing, and turning it on
   * again takes a queue server start.
   */
  warc: other({
    option: '--no-warc',
    help: 'keep no web archive: fetchers build no WARC records and nothing is written to the data directory\'s warc/ (pages, robots.txt and the crawl database are kept as ever)',
    schema: z.boolean(),
    default: true,
  }),
  /** Off: fetchers build no index data and the search index is not written (the crawl's own stores are). */
  index: other({
    option: '--no-index',
    help: 'build no search index: fetchers send no index data and the index (data directory index/) is left as it is; --index turns it on again after a saved --no-index',
    schema: z.boolean(),
    default: true,
  }),
  /**
   * Sitemaps (queue-server/sitemaps/): each origin's robots.txt `Sitemap:` lines and /sitemap.xml are
   * read before its pages, as discovery (not pages, not against --max-pages).
   */
  sitemaps: other({
    option: '--no-sitemaps',
    help: 'read no sitemaps: without it each host\'s robots.txt Sitemap: lines and /sitemap.xml (indexes, gzip files) are read before its pages, their URLs followed (only those under the sitemap\'s own host and directory) and a <lastmod> newer than a page\'s last fetch makes it due; sitemaps are not pages (not in --max-pages)',
    schema: z.boolean(),
    default: true,
  }),
  /** `petrel crawl` always sets it, `petrel start` never; `petrel queue-server --once` chooses. */
  once: other({ help: 'exit when nothing is due or leased (a one-shot crawl), telling fetchers they are done', schema: z.boolean(), default: false }),
} as const satisfies Record<string, CrawlSetting>;

export type CrawlSettingName = keyof typeof CRAWL_SETTINGS;

type CrawlConfigShape = { [K in CrawlSettingName]: z.ZodDefault<(typeof CRAWL_SETTINGS)[K]['schema']> };

const entries = Object.entries(CRAWL_SETTINGS) as [CrawlSettingName, CrawlSetting][];

export const crawlConfigSchema = z.object(Object.fromEntries(entries.map(([name, setting]) => [name, (setting.schema as z.ZodType<unknown>).default(setting.default)])) as CrawlConfigShape);

export type CrawlConfig = z.infer<typeof crawlConfigSchema>;
export type CrawlConfigInput = z.input<typeof crawlConfigSchema>;

/** Whether `value` is below a limit (null: no limit). */
export function belowLimit(value: number, limit: number | null): boolean {
  return limit === null || value < limit;
}

/** The settings the admin page's "start a crawl" form offers, in table order. */
export function formSettings(): [CrawlSettingName, CrawlSetting][] {
  return entries.filter(([, setting]) => setting.form);
}

/** The fetch schedule (crawldb/fetch-schedule.ts) a crawl's settings give. */
export function fetchScheduleOf(config: CrawlConfig): FetchSchedulePolicy {
  return {
    ...NUTCH_ADAPTIVE_RATES,
    retryBaseMs: config.retryBaseMs,
    maxRetries: config.maxRetries,
    initialIntervalMs: config.initialIntervalMs,
    minIntervalMs: config.minIntervalMs,
    maxIntervalMs: config.maxIntervalMs,
    goneRecheckMs: config.maxIntervalMs,
    // A one-shot crawl waits at most a minute for a retry, so a failing URL cannot hold the pass open for long.
    ...(config.once ? { maxRetryWaitMs: ONE_SHOT_MAX_WAIT_MS } : {}),
  };
}

/** The fetch schedule of the default settings. */
export const DEFAULT_FETCH_SCHEDULE: FetchSchedulePolicy = Object.freeze(fetchScheduleOf(crawlConfigSchema.parse({})));
