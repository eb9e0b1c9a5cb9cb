/**
 * robots.txt rules per origin, after RFC 9309 (the Robots Exclusion Protocol).
 *
 * What a fetch of /robots.txt means (RFC 9309 section 2.3.1):
 *  - 2xx: the rules apply; the fetcher hands over at least the first 500 KiB (section 2.5).
 *  - 3xx: the fetcher follows up to five redirects (section 2.3.1.2); a longer chain is "unavailable".
 *  - 4xx "unavailable": the crawler may access any resource (section 2.3.1.3). 429 is the exception
 *    kept from common practice: a server asking to slow down is not saying "no robots.txt".
 *  - 5xx or a network failure "unreachable": complete disallow (section 2.3.1.4), asked again later.
 *  - `blocked-address`: no request was made (the fetcher refuses the host's address, see
 *    fetcher/address-guard.ts), so there is nothing to obey; the origin's URLs go out and each is
 *    refused the same way, recorded under its own URL as `blocked-address` rather than hidden behind a
 *    robots.txt that was never asked for.
 * Matching (section 2.2.2): the most specific (longest) matching rule wins; on a tie Allow wins. The
 * group is the one naming our product token, case-insensitively, else `*`. Parsing and matching are
 * done by the robots-parser package, which implements exactly these two rules.
 * Caching (section 2.4): a parsed file is used for at most 24 hours.
 */
import robotsParserModule from 'robots-parser';
import { uniformPercentEncoding, type NormalizedUrl } from '../../shared/url-normalize.js';

type RobotsParser = typeof robotsParserModule.default;
export type Robot = ReturnType<RobotsParser>;
const parserModule = robotsParserModule as unknown as RobotsParser | { default: RobotsParser };
const parseRobotsTxt: RobotsParser = typeof parserModule === 'function' ? parserModule : parserModule.default;

export const ROBOTS_CACHE_MS = 24 * 60 * 60 * 1000;

export type RobotsRules =
  | { readonly kind: 'rules'; readonly robot: Robot; readonly crawlDelayMs: number | null; readonly expiresAt: number }
  | { readonly kind: 'allow-all'; readonly reason: 'not-found' | 'too-many-redirects' | 'blocked-address'; readonly expiresAt: number }
  | { readonly kind: 'deny-all'; readonly reason: 'unreachable'; readonly errorCode: string; readonly expiresAt: number };

export interface RobotsFetchOutcome {
  readonly origin: string;
  readonly status: number | null;
  readonly errorCode: string | null;
  readonly body: string | null;
}

export interface RobotsPolicy {
  /** Product token matched against User-agent lines, e.g. `petrel`. */
  readonly userAgentToken: string;
  /** How long an unreachable robots.txt keeps its origin closed before it is asked again, ms. */
  readonly unreachableRetryMs: number;
}

/** Turns the outcome of one robots.txt fetch into the rules for its origin. Pure; `now` in ms since epoch. */
export function rulesFromFetch(outcome: RobotsFetchOutcome, policy: RobotsPolicy, now: number): RobotsRules {
  const { status } = outcome;
  if (status !== null && status >= 200 && status < 300) {
    const robot = parseRobotsTxt(`${outcome.origin}/robots.txt`, uniformRulePaths(outcome.body ?? ''));
    const delaySeconds = robot.getCrawlDelay(policy.userAgentToken);
    const crawlDelayMs =
      typeof delaySeconds === 'number' && Number.isFinite(delaySeconds) && delaySeconds > 0
        ? Math.min(delaySeconds * 1000, 10 * 60 * 1000)
        : null;
    return { kind: 'rules', robot, crawlDelayMs, expiresAt: now + ROBOTS_CACHE_MS };
  }
  if (status !== null && status >= 300 && status < 400) {
    return { kind: 'allow-all', reason: 'too-many-redirects', expiresAt: now + ROBOTS_CACHE_MS };
  }
  if (status !== null && status >= 400 && status < 500 && status !== 429) {
    return { kind: 'allow-all', reason: 'not-found', expiresAt: now + ROBOTS_CACHE_MS };
  }
  if (status === null && outcome.errorCode === 'blocked-address') {
    return { kind: 'allow-all', reason: 'blocked-address', expiresAt: now + ROBOTS_CACHE_MS };
  }
  const errorCode = status === null ? (outcome.errorCode ?? 'network-error') : `http-${status}`;
  return { kind: 'deny-all', reason: 'unreachable', errorCode, expiresAt: now + policy.unreachableRetryMs };
}

export type RobotsVerdict = { readonly allowed: true } | { readonly allowed: false; readonly code: 'robots-disallowed' | 'robots-unreachable' };

export function robotsVerdict(rules: RobotsRules, url: NormalizedUrl, userAgentToken: string): RobotsVerdict {
  switch (rules.kind) {
    case 'allow-all':
      return { allowed: true };
    case 'deny-all':
      return { allowed: false, code: 'robots-unreachable' };
    case 'rules':
      switch (rules.robot.isAllowed(url, userAgentToken)) {
        case true:
          return { allowed: true };
        case false:
          return { allowed: false, code: 'robots-disallowed' };
        default:
          // robots-parser answers undefined for a URL of another origin: our bug, not a web fault.
          throw new Error(`robots rules of another origin consulted for ${url}`);
      }
  }
}

/**
 * URLs reach the rules normalized (unreserved escapes decoded, others uppercase); rule paths are
 * brought to the same spelling so that `Disallow: /%7Ejoe/` matches `/~joe/` (RFC 9309 section 2.2.2).
 */
function uniformRulePaths(body: string): string {
  return body.replace(/^([ \t]*(?:allow|disallow)[ \t]*:[ \t]*)([^#\r\n]*)/gim, (_line, field: string, path: string) => field + uniformPercentEncoding(path));
}

export function crawlDelayOf(rules: RobotsRules | null): number | null {
  return rules?.kind === 'rules' ? rules.crawlDelayMs : null;
}
