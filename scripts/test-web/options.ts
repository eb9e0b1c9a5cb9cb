/** TestWebOptions, validated once at the boundary; everything inside trusts the result. */
import { MAX_HOSTS, SPECIAL_ROLES, type Profile } from './hosts.js';

export interface TestWebOptions {
  /** Size of each normal host's generated site, /index.html included. Default 30. */
  pagesPerHost?: number;
  /** Number of normal content hosts; default 3. Special hosts come in addition, unless profile 'bench'. */
  hosts?: number;
  /**
   * 'full' (default): normal hosts plus all special hosts and pages. 'bench': normal hosts only, no
   * slow/trap/error pages, robots allow all, ~14 KB of realistic HTML per page, for throughput benchmarks.
   */
  profile?: Profile;
  /** Port shared by every host; default 0 (a free one). */
  port?: number;
  /** Delay of /slow.html, ms. Default 1500. */
  slowMs?: number;
  /** Crawl-delay of the crawlDelay host's robots.txt, seconds. Default 1. */
  crawlDelaySeconds?: number;
  /**
   * Every page (not robots.txt) is answered this many ms late, so that requests of a crawl overlap
   * and tests can count how many were in flight at once. Default 0.
   */
  pageDelayMs?: number;
}

export type ValidOptions = Required<TestWebOptions>;

/** Keeps a generated site addressable by `nodePath` and a BFS over it quick. */
const MAX_PAGES_PER_HOST = 1_000_000;

export function validateOptions(opts: TestWebOptions): ValidOptions {
  const profile = opts.profile ?? 'full';
  if (profile !== 'full' && profile !== 'bench') throw new RangeError(`profile must be 'full' or 'bench', got ${String(profile)}`);
  // The full profile adds the special hosts, the hostile host and the hanging host.
  const specials = profile === 'full' ? SPECIAL_ROLES.length + 2 : 0;
  return {
    profile,
    pagesPerHost: integer('pagesPerHost', opts.pagesPerHost ?? 30, 1, MAX_PAGES_PER_HOST),
    hosts: integer('hosts', opts.hosts ?? 3, 1, MAX_HOSTS - specials),
    port: integer('port', opts.port ?? 0, 0, 65535),
    slowMs: integer('slowMs', opts.slowMs ?? 1500, 0, 600_000),
    crawlDelaySeconds: number('crawlDelaySeconds', opts.crawlDelaySeconds ?? 1, 0, 3600),
    pageDelayMs: integer('pageDelayMs', opts.pageDelayMs ?? 0, 0, 60_000),
  };
}

function integer(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${name} must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

function number(name: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw new RangeError(`${name} must be a number in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}
