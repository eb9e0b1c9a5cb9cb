/**
 * What a sitemap may say, after the sitemaps.org protocol 0.9 ("Sitemap file location"): a sitemap
 * lists only URLs of its own host (scheme, host and port) under its own directory, so
 * `http://example.com/catalog/sitemap.xml` may list `http://example.com/catalog/show?item=1` but not
 * `http://example.com/images/` nor any URL of another host; a sitemap index lists sitemaps by the same
 * rule. Where sitemaps come from: the `Sitemap:` lines of robots.txt (RFC 9309 section 2.2.4 leaves
 * them to this protocol) and `/sitemap.xml`. A `Sitemap:` line naming another host is not followed
 * (the protocol's cross-submission, robots.txt of one host vouching for a sitemap on another, is not
 * supported: its sitemap would be fetched from a host the crawl never chose). Pure functions.
 */
import { normalizeUrl, type NormalizedUrl } from '../../shared/url-normalize.js';
import type { RobotsRules } from '../robots/robots.js';

/** `Sitemap:` lines of one robots.txt taken up, at most. */
export const MAX_ROBOTS_SITEMAPS = 50;
/** Sitemap files of one origin fetched per pass, at most (an index lists up to 50,000). */
export const MAX_SITEMAPS_PER_ORIGIN = 500;
/**
 * Levels of sitemaps below the top ones (robots.txt, /sitemap.xml): 1 is the protocol's own (a sitemap
 * index of sitemaps; "a sitemap index may not list other sitemap indexes"); one more is tolerated, as
 * sites nest them anyway. A sitemap deeper than that is not fetched (`sitemapsTooDeep`).
 */
export const MAX_SITEMAP_NESTING = 2;
/** Sitemap files per slot: each result goes out in its own post (fetcher.ts), this keeps a slot short. */
export const SITEMAPS_PER_SLOT = 4;

/** The top sitemaps of an origin: its robots.txt `Sitemap:` lines on the same origin, then `/sitemap.xml`, each once. */
export function topSitemapsOf(origin: string, rules: RobotsRules | null): NormalizedUrl[] {
  const found = new Set<NormalizedUrl>();
  const lines = rules?.kind === 'rules' ? rules.robot.getSitemaps().slice(0, MAX_ROBOTS_SITEMAPS) : [];
  for (const line of lines) {
    const url = normalizeUrl(line.trim(), `${origin}/robots.txt`);
    if (url.ok && url.origin === origin) found.add(url.url);
  }
  const fallback = normalizeUrl(`${origin}/sitemap.xml`);
  if (fallback.ok) found.add(fallback.url);
  return [...found];
}

/**
 * The URL an entry of `sitemapUrl` names, when the protocol lets that sitemap list it: on the same
 * origin, its path under the sitemap's directory. Null for anything else (another host, another
 * directory, not a URL).
 */
export function listedUrl(sitemapUrl: NormalizedUrl, loc: string): NormalizedUrl | null {
  const entry = normalizeUrl(loc, sitemapUrl);
  if (!entry.ok) return null;
  const sitemap = new URL(sitemapUrl);
  const target = new URL(entry.url);
  if (target.origin !== sitemap.origin) return null;
  const directory = sitemap.pathname.slice(0, sitemap.pathname.lastIndexOf('/') + 1);
  return target.pathname.startsWith(directory) ? entry.url : null;
}
