/**
 * The ground truth tests assert against. Every answer is derived from the same `Resource`s the server
 * serves (never from a parallel description), so the model and the bytes cannot disagree.
 */
import { canonicalUrl } from './canonical.js';
import type { GenerationChanges } from './generations.js';
import { isAllowed, policyFromResponse, type RobotsPolicy } from './robots.js';
import { reachable, type ReachableOptions } from './reachable.js';
import type { Resource } from './resource.js';
import { contentTypeOf } from './response.js';
import { visibleText } from './html.js';
import type { Web, WebHost } from './web.js';

export interface ModelLink {
  /** Canonical absolute, fragment dropped. */
  url: string;
  /** The `<a>` has rel="nofollow". */
  nofollow: boolean;
  /** The href is a fragment alone (`#top`): a place in the same document, which crawlers do not follow. */
  sameDocument: boolean;
}

export interface ModelPage {
  /** Canonical. */
  url: string;
  status: number;
  /** The Content-Type header served, or null when none is. */
  contentType: string | null;
  /** Canonical absolute Location of a redirect; null otherwise. */
  redirectTo: string | null;
  /**
   * Every `<a href>` of an HTML page, in document order, duplicates kept, resolved against `<base href>`
   * when present; hrefs that are not http(s) (mailto:, javascript:) are left out. Empty for non-HTML.
   */
  links: ModelLink[];
  metaNofollow: boolean;
  metaNoindex: boolean;
  /** The X-Robots-Tag header says nofollow (or none) for agent `petrel`; its links are not followed. */
  headerNofollow: boolean;
  /** The X-Robots-Tag header says noindex (or none) for agent `petrel`. */
  headerNoindex: boolean;
  title: string | null;
}

/** What a page shows, for search tests: the words a crawler indexes, and the anchor text of each link. */
export interface PageText {
  title: string;
  /** The h1, then each section's h2, in order. */
  headings: string[];
  /** Everything visible in the body, one element per line (html.ts `visibleText`). */
  body: string;
  /** Every `<a href>` that resolves to an http(s) URL, in order: canonical target, its text, rel=nofollow. */
  anchors: Array<{ url: string; text: string; nofollow: boolean }>;
  /** noindex (or none) by the meta robots tag or the X-Robots-Tag header for agent `petrel`. */
  metaNoindex: boolean;
  /** nofollow (or none), the same way. */
  metaNofollow: boolean;
}

export interface SiteModel {
  /** The text of an HTML page as served in the current generation (see PageText); undefined for anything else. */
  text(url: string): PageText | undefined;
  /**
   * What the server answers for this URL (canonicalized first): for any URL on a test-web host, a page,
   * including 404 pages for unknown paths and robots.txt; undefined for URLs outside the test web.
   * Generated on demand, so the infinite trap is fine. Describes the current generation; a flaky page
   * is described as it answers once its failures are spent (200, generation-0 content), see changes().
   */
  page(url: string): ModelPage | undefined;
  /**
   * Whether the host's robots.txt (as served, read per RFC 9309 for the agent 'petrel') allows the URL:
   * false for every URL of the robots-500 host, true for every URL of the robots-404 host, false for
   * URLs outside the test web.
   */
  robotsAllows(url: string): boolean;
  /**
   * BFS from seeds: every URL the crawler should request (robots.txt URLs excluded), with its depth
   * (seeds are 0). Follows the links of 2xx HTML pages (not rel=nofollow, not from pages with meta
   * nofollow) and redirect targets, each at depth+1; skips URLs outside `inScope` or disallowed by
   * robots; includes nothing deeper than maxDepth.
   */
  reachable(opts: ReachableOptions): Map<string, number>;
  /**
   * What `generation` changes relative to generation 0 on the normal hosts (see generations.ts): ground
   * truth for a recrawl. Empty lists, and every generated content page unchanged, for generation 0.
   */
  changes(generation: number): GenerationChanges;
}

export interface SiteModelOptions {
  /** The generation page() and reachable() describe, read at every call. Default: always 0. */
  generation?: () => number;
}

export function createSiteModel(web: Web, opts: SiteModelOptions = {}): SiteModel {
  const generation = opts.generation ?? (() => 0);
  const policies = new Map<WebHost, RobotsPolicy>();
  const policyOf = (host: WebHost): RobotsPolicy => {
    let policy = policies.get(host);
    if (policy === undefined) {
      // robots.txt is the same in every generation, so its policy is read once.
      const robots = host.site.resolve('/robots.txt', 0);
      const body = robots.kind === 'file' ? robots.body.toString('utf8') : '';
      policy = policyFromResponse(robots.status, body);
      policies.set(host, policy);
    }
    return policy;
  };

  const model: SiteModel = {
    page(url) {
      const canonical = canonicalUrl(url);
      const located = canonical === null ? null : web.locate(canonical);
      if (canonical === null || located === null) return undefined;
      return toModelPage(canonical, located.host.site.resolve(located.pathAndQuery, generation()));
    },
    robotsAllows(url) {
      const canonical = canonicalUrl(url);
      const located = canonical === null ? null : web.locate(canonical);
      if (located === null) return false;
      return isAllowed(policyOf(located.host), located.pathAndQuery);
    },
    text(url) {
      const canonical = canonicalUrl(url);
      const located = canonical === null ? null : web.locate(canonical);
      if (canonical === null || located === null) return undefined;
      const resource = located.host.site.resolve(located.pathAndQuery, generation());
      if (resource.kind !== 'html' || resource.status !== 200) return undefined;
      const { doc } = resource;
      const base = doc.base === null ? canonical : new URL(doc.base, canonical).href;
      const anchors: PageText['anchors'] = [];
      for (const link of doc.links) {
        const target = canonicalUrl(link.href, base);
        if (target !== null) anchors.push({ url: target, text: link.text, nofollow: relTokens(link.rel).includes('nofollow') });
      }
      // The meta tag and the X-Robots-Tag header say the same, and either one is enough (as for Petrel).
      const robots = [...relTokens(doc.metaRobots), ...headerRobots(resource.headers['X-Robots-Tag'] ?? null)];
      return { title: doc.title, ...visibleText(doc), anchors, metaNoindex: robots.includes('noindex') || robots.includes('none'), metaNofollow: robots.includes('nofollow') || robots.includes('none') };
    },
    reachable: (opts) => reachable(model, opts),
    changes: (n) => web.changes(n),
  };
  return model;
}

function toModelPage(url: string, resource: Resource): ModelPage {
  const page: ModelPage = {
    url,
    status: resource.status,
    contentType: contentTypeOf(resource),
    redirectTo: null,
    links: [],
    metaNofollow: false,
    metaNoindex: false,
    headerNofollow: false,
    headerNoindex: false,
    title: null,
  };
  if (resource.kind === 'redirect') {
    page.redirectTo = canonicalUrl(resource.location, url);
  } else if (resource.kind === 'html') {
    const { doc } = resource;
    const base = doc.base === null ? url : new URL(doc.base, url).href;
    for (const link of doc.links) {
      const target = canonicalUrl(link.href, base);
      if (target !== null) page.links.push({ url: target, nofollow: relTokens(link.rel).includes('nofollow'), sameDocument: link.href.trim().startsWith('#') });
    }
    const robots = relTokens(doc.metaRobots);
    page.metaNofollow = robots.includes('nofollow') || robots.includes('none');
    page.metaNoindex = robots.includes('noindex') || robots.includes('none');
    const header = headerRobots(resource.headers['X-Robots-Tag'] ?? null);
    page.headerNofollow = header.includes('nofollow') || header.includes('none');
    page.headerNoindex = header.includes('noindex') || header.includes('none');
    page.title = doc.title;
  }
  return page;
}

/**
 * The X-Robots-Tag directives of one header value that apply to agent `petrel`: those before any
 * `agent:` prefix and those after `petrel:`. (The test web sends one value per page.)
 */
function headerRobots(value: string | null): string[] {
  if (value === null) return [];
  const applying: string[] = [];
  let agent: string | null = null;
  for (const part of value.toLowerCase().split(',')) {
    const prefixed = /^\s*([a-z0-9_.-]+)\s*:\s*(.*)$/.exec(part);
    const directive = prefixed === null ? part.trim() : prefixed[2]!.trim();
    if (prefixed !== null) agent = prefixed[1]!;
    if (agent === null || agent === 'petrel') applying.push(directive);
  }
  return applying;
}

function relTokens(value: string | null): string[] {
  return value === null ? [] : value.toLowerCase().split(/[\s,]+/).filter((token) => token !== '');
}
