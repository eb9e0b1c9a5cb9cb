/**
 * robots.txt rules (queue-server/robots/robots.ts) after RFC 9309: what a fetch outcome means (section
 * 2.3.1), how rules match (section 2.2.2), which group applies (section 2.2.1), how much is parsed
 * (section 2.5) and how long the answer is kept (section 2.4).
 */
import { describe, expect, it } from 'vitest';
import { OriginQueue } from '../../queue-server/frontier/frontier.js';
import { crawlDelayOf, ROBOTS_CACHE_MS, robotsVerdict, rulesFromFetch, type RobotsPolicy, type RobotsRules } from '../../queue-server/robots/robots.js';
import { mustNormalize } from '../../shared/url-normalize.js';

const NOW = 1_700_000_000_000;
const ORIGIN = 'http://robots.example';
const POLICY: RobotsPolicy = { userAgentToken: 'petrel', unreachableRetryMs: 10 * 60 * 1000 };

function fetched(status: number | null, body: string | null = null, errorCode: string | null = null): RobotsRules {
  return rulesFromFetch({ origin: ORIGIN, status, errorCode, body }, POLICY, NOW);
}

function rules(body: string): RobotsRules {
  return fetched(200, body);
}

/** True when the path (with query) of ORIGIN may be fetched by `petrel`. */
function allowed(robots: RobotsRules, path: string): boolean {
  return robotsVerdict(robots, mustNormalize(`${ORIGIN}${path}`), 'petrel').allowed;
}

describe('rulesFromFetch: what the status of the robots.txt fetch means', () => {
  it.each([200, 203, 204, 206])('a %i gives the rules of the body, kept for 24 hours', (status) => {
    const result = fetched(status, 'User-agent: *\nDisallow: /x\n');
    expect(result.kind).toBe('rules');
    expect(result.expiresAt).toBe(NOW + 86_400_000);
    expect(ROBOTS_CACHE_MS).toBe(86_400_000);
    expect(allowed(result, '/x')).toBe(false);
    expect(allowed(result, '/y')).toBe(true);
  });

  it('a 2xx without a body allows everything', () => {
    const result = fetched(200, null);
    expect(result.kind).toBe('rules');
    expect(allowed(result, '/anything')).toBe(true);
    expect(crawlDelayOf(result)).toBeNull();
  });

  it.each([400, 401, 403, 404, 410, 451, 499])('a %i means "unavailable": everything is allowed for 24 hours', (status) => {
    expect(fetched(status)).toEqual({ kind: 'allow-all', reason: 'not-found', expiresAt: NOW + 86_400_000 });
  });

  it('a 429 is not "unavailable": the origin is closed as unreachable', () => {
    expect(fetched(429)).toEqual({ kind: 'deny-all', reason: 'unreachable', errorCode: 'http-429', expiresAt: NOW + POLICY.unreachableRetryMs });
  });

  it.each([500, 502, 503, 504])('a %i means "unreachable": complete disallow with code http-%i until the retry time', (status) => {
    expect(fetched(status)).toEqual({ kind: 'deny-all', reason: 'unreachable', errorCode: `http-${status}`, expiresAt: NOW + POLICY.unreachableRetryMs });
  });

  it('a network failure is unreachable and keeps the fetcher error code', () => {
    expect(fetched(null, null, 'connection-refused')).toEqual({
      kind: 'deny-all',
      reason: 'unreachable',
      errorCode: 'connection-refused',
      expiresAt: NOW + POLICY.unreachableRetryMs,
    });
    expect(fetched(null, null, 'timeout')).toMatchObject({ kind: 'deny-all', errorCode: 'timeout' });
  });

  it('a network failure without a code is reported as network-error', () => {
    expect(fetched(null)).toMatchObject({ kind: 'deny-all', errorCode: 'network-error' });
  });

  it.each([301, 302, 303, 307, 308])('a %i that reached the fetcher ended a redirect chain too long to follow: everything is allowed', (status) => {
    expect(fetched(status)).toEqual({ kind: 'allow-all', reason: 'too-many-redirects', expiresAt: NOW + 86_400_000 });
  });

  it('takes the retry time of an unreachable robots.txt from the policy', () => {
    const result = rulesFromFetch({ origin: ORIGIN, status: 503, errorCode: null, body: null }, { userAgentToken: 'petrel', unreachableRetryMs: 1234 }, NOW);
    expect(result.expiresAt).toBe(NOW + 1234);
  });
});

describe('robotsVerdict', () => {
  it('allows everything under allow-all and nothing under deny-all, with a stable code', () => {
    expect(robotsVerdict(fetched(404), mustNormalize(`${ORIGIN}/x`), 'petrel')).toEqual({ allowed: true });
    expect(robotsVerdict(fetched(503), mustNormalize(`${ORIGIN}/x`), 'petrel')).toEqual({ allowed: false, code: 'robots-unreachable' });
    expect(robotsVerdict(fetched(null, null, 'timeout'), mustNormalize(`${ORIGIN}/`), 'petrel')).toEqual({ allowed: false, code: 'robots-unreachable' });
  });

  it('reports a disallowed URL with code robots-disallowed', () => {
    expect(robotsVerdict(rules('User-agent: *\nDisallow: /private/\n'), mustNormalize(`${ORIGIN}/private/a`), 'petrel')).toEqual({
      allowed: false,
      code: 'robots-disallowed',
    });
  });

  it('the longest matching rule wins, whichever comes first', () => {
    const allowInside = rules('User-agent: *\nDisallow: /shop\nAllow: /shop/public\n');
    expect(allowed(allowInside, '/shop/cart')).toBe(false);
    expect(allowed(allowInside, '/shop/public/item')).toBe(true);
    const denyInside = rules('User-agent: *\nDisallow: /docs/internal/\nAllow: /docs/\n');
    expect(allowed(denyInside, '/docs/guide')).toBe(true);
    expect(allowed(denyInside, '/docs/internal/plan')).toBe(false);
    expect(allowed(denyInside, '/other')).toBe(true);
  });

  it('Allow wins a tie between rules of equal length, in either order', () => {
    expect(allowed(rules('User-agent: *\nDisallow: /page\nAllow: /page\n'), '/page')).toBe(true);
    expect(allowed(rules('User-agent: *\nAllow: /page\nDisallow: /page\n'), '/page')).toBe(true);
    expect(allowed(rules('User-agent: *\nDisallow: /page\nAllow: /p*ge\n'), '/page')).toBe(true);
  });

  it('matches rules as prefixes of path and query', () => {
    const robots = rules('User-agent: *\nDisallow: /search?q=\nDisallow: /tmp\n');
    expect(allowed(robots, '/search?q=cats')).toBe(false);
    expect(allowed(robots, '/search?page=2')).toBe(true);
    expect(allowed(robots, '/search')).toBe(true);
    expect(allowed(robots, '/tmpfile')).toBe(false);
    expect(allowed(robots, '/a/tmp')).toBe(true);
  });

  it('* matches any run of characters, including none and including /', () => {
    const robots = rules('User-agent: *\nDisallow: /*.pdf\nDisallow: /*/private/*/x\n');
    expect(allowed(robots, '/report.pdf')).toBe(false);
    expect(allowed(robots, '/a/b/report.pdf?download=1')).toBe(false);
    expect(allowed(robots, '/report.html')).toBe(true);
    expect(allowed(robots, '/team/private/a/b/x')).toBe(false);
    expect(allowed(robots, '/team/private/x')).toBe(true);
  });

  it('$ anchors a rule at the end of the path and query', () => {
    const robots = rules('User-agent: *\nDisallow: /*.php$\nDisallow: /$\n');
    expect(allowed(robots, '/index.php')).toBe(false);
    expect(allowed(robots, '/dir/page.php')).toBe(false);
    expect(allowed(robots, '/index.php?x=1')).toBe(true);
    expect(allowed(robots, '/index.php5')).toBe(true);
    expect(allowed(robots, '/')).toBe(false);
    expect(allowed(robots, '/about')).toBe(true);
  });

  it('chooses the group naming our product token over *, case-insensitively', () => {
    const body = 'User-agent: *\nDisallow: /\n\nUser-agent: PeTrEl\nDisallow: /secret\n';
    const robots = rules(body);
    expect(allowed(robots, '/public')).toBe(true);
    expect(allowed(robots, '/secret/x')).toBe(false);
    // Another product's group never applies to us; * does when ours is missing.
    const others = rules('User-agent: otherbot\nAllow: /\n\nUser-agent: *\nDisallow: /\n');
    expect(allowed(others, '/public')).toBe(false);
  });

  it('matches a User-agent line that carries a version after the token', () => {
    const robots = rules('User-agent: *\nDisallow: /\n\nUser-agent: Petrel/2.1\nAllow: /\nDisallow: /no\n');
    expect(allowed(robots, '/yes')).toBe(true);
    expect(allowed(robots, '/no')).toBe(false);
  });

  it('does not take a longer token that merely starts with ours for ours', () => {
    const robots = rules('User-agent: petrelbot\nAllow: /\n\nUser-agent: *\nDisallow: /\n');
    expect(allowed(robots, '/x')).toBe(false);
  });

  it('applies a group that names several user agents, and merges groups of the same token', () => {
    const robots = rules('User-agent: otherbot\nUser-agent: petrel\nDisallow: /a\n\nUser-agent: *\nDisallow: /\n\nUser-agent: petrel\nDisallow: /b\n');
    expect(allowed(robots, '/a')).toBe(false);
    expect(allowed(robots, '/b')).toBe(false);
    expect(allowed(robots, '/c')).toBe(true);
  });

  it('treats an empty Disallow as allowing everything', () => {
    expect(allowed(rules('User-agent: *\nDisallow:\n'), '/anything')).toBe(true);
  });

  it('ignores comments, blank lines, unknown fields and CRLF line ends', () => {
    const robots = rules('# hello\r\nUser-agent: * # everyone\r\nSitemap: http://robots.example/sitemap.xml\r\nUnknown-field: x\r\n\r\nDisallow: /private # keep out\r\n');
    expect(allowed(robots, '/private')).toBe(false);
    expect(allowed(robots, '/privat')).toBe(true);
  });

  it('compares non-ASCII and escaped rule paths in their percent-encoded form', () => {
    const robots = rules('User-agent: *\nDisallow: /café\nDisallow: /a%2fb\n');
    expect(allowed(robots, '/café/menu')).toBe(false);
    expect(allowed(robots, '/caf%C3%A9/menu')).toBe(false);
    expect(allowed(robots, '/a%2Fb')).toBe(false);
    expect(allowed(robots, '/a/b')).toBe(true);
  });

  it('parses at least 500 KiB: the first and the last rule of a 520 KiB file both apply', () => {
    let body = 'User-agent: *\nDisallow: /private/\n';
    for (let i = 0; body.length < 520 * 1024; i++) body += `Disallow: /filler/${i}/\n`;
    body += 'Disallow: /last/\n';
    expect(body.length).toBeGreaterThan(500 * 1024);
    const robots = rules(body);
    expect(allowed(robots, '/private/a')).toBe(false);
    expect(allowed(robots, '/filler/123/x')).toBe(false);
    expect(allowed(robots, '/last/page')).toBe(false);
    expect(allowed(robots, '/public/page')).toBe(true);
  });
});

describe('crawlDelayOf', () => {
  it('reads Crawl-delay seconds as milliseconds', () => {
    expect(crawlDelayOf(rules('User-agent: *\nCrawl-delay: 2\n'))).toBe(2000);
    expect(crawlDelayOf(rules('User-agent: *\nCrawl-delay: 0.5\n'))).toBe(500);
  });

  it('takes the delay of our own group, not of *', () => {
    expect(crawlDelayOf(rules('User-agent: *\nCrawl-delay: 9\n\nUser-agent: petrel\nCrawl-delay: 3\n'))).toBe(3000);
    // Our group exists without a delay: the delay of * does not apply to us.
    expect(crawlDelayOf(rules('User-agent: *\nCrawl-delay: 9\n\nUser-agent: petrel\nDisallow: /x\n'))).toBeNull();
    expect(crawlDelayOf(rules('User-agent: otherbot\nCrawl-delay: 9\n'))).toBeNull();
  });

  it.each(['0', '-1', 'soon', 'Infinity', ''])('ignores a Crawl-delay of %j', (value) => {
    expect(crawlDelayOf(rules(`User-agent: *\nCrawl-delay: ${value}\n`))).toBeNull();
  });

  it('caps a huge Crawl-delay at 10 minutes', () => {
    expect(crawlDelayOf(rules('User-agent: *\nCrawl-delay: 86400\n'))).toBe(600_000);
  });

  it('is null without rules, for allow-all and for deny-all', () => {
    expect(crawlDelayOf(null)).toBeNull();
    expect(crawlDelayOf(fetched(404))).toBeNull();
    expect(crawlDelayOf(fetched(503))).toBeNull();
    expect(crawlDelayOf(rules('User-agent: *\nDisallow: /x\n'))).toBeNull();
  });
});

describe('caching: when an origin must ask for robots.txt again', () => {
  function queueWith(robots: RobotsRules): OriginQueue {
    const queue = new OriginQueue(ORIGIN);
    queue.robots.know(robots);
    return queue;
  }

  it('keeps parsed rules until exactly 24 hours after the fetch', () => {
    const queue = queueWith(rules('User-agent: *\nDisallow: /x\n'));
    expect(queue.needsRobots(NOW)).toBe(false);
    expect(queue.needsRobots(NOW + 86_400_000 - 1)).toBe(false);
    expect(queue.needsRobots(NOW + 86_400_000)).toBe(true);
  });

  it('asks an unreachable origin again after unreachableRetryMs', () => {
    const queue = queueWith(fetched(503));
    expect(queue.needsRobots(NOW + POLICY.unreachableRetryMs - 1)).toBe(false);
    expect(queue.needsRobots(NOW + POLICY.unreachableRetryMs)).toBe(true);
  });

  it('needs robots.txt when unknown and not while it is being fetched', () => {
    const queue = new OriginQueue(ORIGIN);
    expect(queue.needsRobots(NOW)).toBe(true);
    queue.robots.fetchStarted();
    expect(queue.needsRobots(NOW + 10 * ROBOTS_CACHE_MS)).toBe(false);
  });
});

describe('percent-encoded rule paths (RFC 9309 section 2.2.2)', () => {
  it('matches escaped rules against normalized URLs: /%7Ejoe/ forbids /~joe/, %62%61%7A forbids baz', () => {
    const rules = rulesFromFetch(
      { origin: 'http://h.example', status: 200, errorCode: null, body: 'User-agent: *\nDisallow: /%7Ejoe/\nDisallow: /foo/bar/%62%61%7A\n' },
      { userAgentToken: 'petrel', unreachableRetryMs: 1000 },
      0,
    );
    expect(robotsVerdict(rules, mustNormalize('http://h.example/~joe/x'), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
    expect(robotsVerdict(rules, mustNormalize('http://h.example/%7Ejoe/x'), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
    expect(robotsVerdict(rules, mustNormalize('http://h.example/foo/bar/baz'), 'petrel')).toEqual({ allowed: false, code: 'robots-disallowed' });
    expect(robotsVerdict(rules, mustNormalize('http://h.example/foo/bar/bax'), 'petrel')).toEqual({ allowed: true });
  });
});

