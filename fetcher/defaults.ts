/**
 * The fetcher's settings, each defined once: its default, its bounds, what it means and its option.
 * `petrel fetcher` offers every one (cli/fetcher-command.ts); `petrel crawl` and `petrel start` offer
 * those marked `local` and pass them on to the fetcher processes they start (cli/fetcher-options.ts).
 * A setting's key is the attribute commander gives its option (camel case of the long flag).
 */
export interface FetcherSetting {
  /** commander flags. */
  readonly option: string;
  readonly help: string;
  /** Offered by `petrel crawl` and `petrel start` too, for their local fetchers. */
  readonly local: boolean;
}

/** A whole number within [min, max]. */
export interface FetcherIntegerSetting extends FetcherSetting {
  readonly min: number;
  readonly max?: number;
  readonly default: number;
  /** A duration in ms: the option also takes `30s`, `2min` (shared/duration.ts); --help shows it so. */
  readonly duration?: boolean;
}

export const FETCHER_SETTINGS = {
  concurrency: { option: '--concurrency <n>', help: 'hosts each fetcher fetches at once', local: true, min: 1, max: 1024, default: 16 },
  contact: { option: '--contact <url-or-email>', help: 'contact put in the User-Agent so site owners can reach you, e.g. https://example.org/crawler', local: true },
  maxBodyBytes: {
    option: '--max-body-bytes <n>',
    help: 'body bytes kept per page after decompression; longer pages are cut and marked truncated',
    local: true,
    min: 1024,
    default: 2 * 1024 * 1024,
  },
  timeoutMs: { option: '--timeout-ms <duration>', help: 'total time one request may take, connect to last byte', local: true, min: 100, default: 30_000, duration: true },
  connectTimeoutMs: { option: '--connect-timeout-ms <duration>', help: 'time to establish a connection', local: false, min: 100, default: 10_000, duration: true },
  claimWaitMs: { option: '--claim-wait-ms <duration>', help: 'how long one claim may wait at the queue server for work (long poll)', local: false, min: 0, max: 60_000, default: 20_000, duration: true },
} as const satisfies Record<string, FetcherSetting | FetcherIntegerSetting>;

export type FetcherSettingName = keyof typeof FETCHER_SETTINGS;

/**
 * How a fetcher waits for a queue server that is not there (a separate table: these say how long a
 * fetcher runs, not how it fetches). It says so when a request to the queue server first fails
 * again, then every STILL_WAITING_EVERY_MS; with --once it gives up after --give-up-after.
 */
export const FETCHER_PATIENCE_SETTINGS = {
  once: {
    option: '--once',
    help: 'one crawl only: exit when the queue server says the crawl is done, or give up (exit status 1) once it has been unreachable for --give-up-after',
    local: false,
  },
  giveUpAfter: {
    option: '--give-up-after <duration>',
    help: 'with --once: how long the queue server may stay unreachable before the fetcher gives up',
    local: false,
    min: 1000,
    default: 2 * 60_000,
    duration: true,
  },
} as const satisfies Record<string, FetcherSetting | FetcherIntegerSetting>;

/** While the queue server is unreachable the fetcher says it is still waiting this often (or a third of --give-up-after, if shorter), ms. */
export const STILL_WAITING_EVERY_MS = 30_000;

/** The settings' values as the commands parse them: numbers for the integer ones, an optional text otherwise. */
export type FetcherSettingValues = { [K in FetcherSettingName]: (typeof FETCHER_SETTINGS)[K] extends { default: number } ? number : string | undefined };

export function isIntegerSetting(setting: FetcherSetting): setting is FetcherIntegerSetting {
  return 'default' in setting;
}

export function userAgentFor(version: string, contact: string | undefined): string {
  return contact === undefined || contact === '' ? `Petrel/${version} (web crawler)` : `Petrel/${version} (+${contact})`;
}
