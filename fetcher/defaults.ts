/**
 * The fetcher's settings, each defined once: its default, its bounds, what it means and its option.
 * `petrel fetcher` offers every one (cli/fetcher-command.ts); `petrel crawl` and `petrel start` offer
 * those marked `local` and pass them on to the fetcher processes they start (cli/fetcher-options.ts).
 * A setting's key is the attribute commander gives its option (camel case of the long flag).
 */
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

export interface FetcherSetting {
  /** commander flags. */
  readonly option: string;
  readonly help: string;
  /** Offered by `petrel crawl` and `petrel start` too, for their local fetchers. */
  readonly local: boolean;
  /** integer: a whole number with bounds; text: an optional string; flag: off unless given; list: repeatable. */
  readonly kind: 'integer' | 'text' | 'flag' | 'list';
  /** Checks one value as given (a list's entry): null when good, else what is wrong. Every command that offers the option checks it. */
  readonly check?: (value: string) => string | null;
}

/** A whole number within [min, max]. */
export interface FetcherIntegerSetting extends FetcherSetting {
  readonly kind: 'integer';
  readonly min: number;
  readonly max?: number;
  readonly default: number;
  /** A duration in ms: the option also takes `30s`, `2min` (shared/duration.ts); --help shows it so. */
  readonly duration?: boolean;
}

export const FETCHER_SETTINGS = {
  concurrency: { kind: 'integer', option: '--concurrency <n>', help: 'hosts each fetcher fetches at once', local: true, min: 1, max: 1024, default: 16 },
  contact: { kind: 'text', option: '--contact <url-or-email>', help: 'contact put in the User-Agent so site owners can reach you, e.g. https://example.org/crawler', local: true },
  maxBodyBytes: {
    kind: 'integer',
    option: '--max-body-bytes <n>',
    help: 'body bytes kept per page after decompression; longer pages are cut and marked truncated',
    local: true,
    min: 1024,
    default: 2 * 1024 * 1024,
  },
  timeoutMs: { kind: 'integer', option: '--timeout-ms <duration>', help: 'total time one request may take, connect to last byte', local: true, min: 100, default: 30_000, duration: true },
  connectTimeoutMs: { kind: 'integer', option: '--connect-timeout-ms <duration>', help: 'time to establish a connection', local: false, min: 100, default: 10_000, duration: true },
  claimWaitMs: { kind: 'integer', option: '--claim-wait-ms <duration>', help: 'how long one claim may wait at the queue server for work (long poll)', local: false, min: 0, max: 60_000, default: 20_000, duration: true },
  allowPrivateAddresses: {
    kind: 'flag',
    option: '--allow-private-addresses',
    help:
      'connect to hosts on loopback, private, link-local and other non-public addresses too; without it such URLs are refused as ' +
      'blocked-address, except on the seeds\' hosts (a page could otherwise make the fetcher reach into its own network)',
    local: true,
  },
  resolve: {
    kind: 'list',
    option: '--resolve <host:address>',
    help: 'use ADDRESS for HOST instead of DNS (repeatable), e.g. --resolve intranet.example:10.0.0.5; the address is checked like a resolved one; none forgets those given before it or saved by an earlier run',
    local: true,
    check: (value: string) => {
      const parsed = parseResolveEntry(value);
      return 'error' in parsed ? parsed.error : null;
    },
  },
} as const satisfies Record<string, FetcherSetting | FetcherIntegerSetting>;

export type FetcherSettingName = keyof typeof FETCHER_SETTINGS;

/**
 * How a fetcher waits for a queue server that is not there (a separate table: these say how long a
 * fetcher runs, not how it fetches). It says so when a request to the queue server first fails
 * again, then every STILL_WAITING_EVERY_MS; with --once it gives up after --give-up-after.
 */
export const FETCHER_PATIENCE_SETTINGS = {
  once: {
    kind: 'flag',
    option: '--once',
    help: 'one crawl only: exit when the queue server says the crawl is done, or give up (exit status 1) once it has been unreachable for --give-up-after',
    local: false,
  },
  giveUpAfter: {
    kind: 'integer',
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

/** The settings' values as the commands parse them: numbers, optional texts, booleans, lists of strings. */
export type FetcherSettingValues = {
  [K in FetcherSettingName]: (typeof FETCHER_SETTINGS)[K]['kind'] extends 'integer'
    ? number
    : (typeof FETCHER_SETTINGS)[K]['kind'] extends 'flag'
      ? boolean
      : (typeof FETCHER_SETTINGS)[K]['kind'] extends 'list'
        ? string[]
        : string | undefined;
};

export function isIntegerSetting(setting: FetcherSetting): setting is FetcherIntegerSetting {
  return setting.kind === 'integer';
}

export function userAgentFor(version: string, contact: string | undefined): string {
  return contact === undefined || contact === '' ? `Petrel/${version} (web crawler)` : `Petrel/${version} (+${contact})`;
}

/** Parses one `--resolve HOST:ADDRESS` (ADDRESS IPv4, or IPv6 with or without brackets). */
export function parseResolveEntry(entry: string): { host: string; address: string } | { error: string } {
  const colon = entry.indexOf(':');
  if (colon <= 0) return { error: `--resolve wants HOST:ADDRESS, got "${entry}"` };
  const named = entry.slice(0, colon);
  // A Unicode name (bücher.example) is the ASCII one URLs are normalized to (xn--bcher-kva.example).
  const host = /^[\x00-\x7f]*$/.test(named) ? named.toLowerCase() : domainToASCII(named);
  const given = entry.slice(colon + 1);
  const address = given.startsWith('[') && given.endsWith(']') ? given.slice(1, -1) : given;
  if (!/^[a-z0-9.-]{1,253}$/.test(host) || isIP(host) !== 0) return { error: `--resolve: "${named}" is not a host name` };
  if (isIP(address) === 0) return { error: `--resolve: "${entry.slice(colon + 1)}" is not an IP address` };
  return { host, address };
}
