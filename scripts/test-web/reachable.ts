/**
 * The crawl a polite, depth-limited crawler should make, computed by BFS over the model. The trap is
 * infinite, so termination rests on maxDepth (and on scope); a size guard turns a mistaken unbounded
 * call into a loud error instead of an exhausted heap.
 */
import { canonicalUrl } from './canonical.js';
import type { ModelPage, SiteModel } from './site-model.js';

export interface ReachableOptions {
  seeds: string[];
  inScope: (url: string) => boolean;
  maxDepth: number;
  /**
   * A page's links followed at most (the crawler's --max-links-per-page): its first distinct followable
   * http(s) links in page order, in scope or not (the bound applies before the scope). Default: all.
   */
  maxLinksPerPage?: number;
}

/** Far above any finite test web at sensible depths, far below a heap limit. */
const MAX_REACHABLE = 2_000_000;

export function reachable(model: Pick<SiteModel, 'page' | 'robotsAllows'>, opts: ReachableOptions): Map<string, number> {
  const depths = new Map<string, number>();
  const queue: string[] = [];
  const admit = (url: string, depth: number): void => {
    if (depth > opts.maxDepth || depths.has(url)) return;
    if (new URL(url).pathname === '/robots.txt') return;
    if (!opts.inScope(url) || !model.robotsAllows(url)) return;
    if (depths.size >= MAX_REACHABLE) throw new Error(`reachable: more than ${MAX_REACHABLE} URLs; is maxDepth bounded?`);
    depths.set(url, depth);
    queue.push(url);
  };
  for (const seed of opts.seeds) {
    const canonical = canonicalUrl(seed);
    if (canonical === null) throw new Error(`reachable: seed is not an http(s) URL: ${seed}`);
    admit(canonical, 0);
  }
  for (let next = 0; next < queue.length; next++) {
    const url = queue[next] ?? '';
    const depth = depths.get(url) ?? 0;
    const page = model.page(url);
    if (page === undefined) continue;
    if (page.redirectTo !== null && page.status >= 300 && page.status < 400) {
      admit(page.redirectTo, depth + 1);
      continue;
    }
    for (const url of followedLinks(page).slice(0, opts.maxLinksPerPage ?? Infinity)) admit(url, depth + 1);
  }
  return depths;
}

/**
 * The links a crawler follows from a page, before any bound: none unless it is a 2xx HTML page without
 * meta or header nofollow; else the distinct http(s) URLs of its links that are not rel=nofollow nor a
 * fragment alone, in page order.
 */
export function followedLinks(page: ModelPage): string[] {
  const isHtml = page.contentType !== null && /^text\/html\b/i.test(page.contentType);
  if (page.status < 200 || page.status >= 300 || !isHtml || page.metaNofollow || page.headerNofollow) return [];
  const urls = new Set<string>();
  for (const link of page.links) if (!link.nofollow && !link.sameDocument && /^https?:\/\//.test(link.url)) urls.add(link.url);
  return [...urls];
}
