/**
 * The link graph of a normal host: `pagesPerHost` nodes, node 0 is /index.html and node i >= 1 is
 * /section-K/page-N.html with K = floor((i-1)/10)+1 and N = (i-1)%10+1 (ten pages per section).
 *
 * Every node links to its children in a 4-ary tree (4i+1 .. 4i+4), so every page is reachable from the
 * index within ceil(log4(pagesPerHost)) hops, plus its tree parent, plus pseudo-random pages of the same
 * host seeded by (host, node), plus one page of another normal host. Pure: no URLs, no ports.
 */
import { prng } from './prng.js';

export const PAGES_PER_SECTION = 10;
const TREE_FANOUT = 4;
/** Same-host links per page, before the cross-host one. */
const SAME_HOST_LINKS = 9;

export interface GraphLink {
  /** Normal-host index of the target. */
  host: number;
  node: number;
}

export function nodePath(node: number): string {
  if (node === 0) return '/index.html';
  const section = Math.floor((node - 1) / PAGES_PER_SECTION) + 1;
  const page = ((node - 1) % PAGES_PER_SECTION) + 1;
  return `/section-${section}/page-${page}.html`;
}

/** Inverse of nodePath for canonical paths; null when the path is not a node of a host with `count` nodes. */
export function nodeOfPath(path: string, count: number): number | null {
  if (path === '/index.html') return 0;
  const match = /^\/section-([1-9][0-9]*)\/page-([1-9][0-9]*)\.html$/.exec(path);
  if (match === null) return null;
  const section = Number(match[1]);
  const page = Number(match[2]);
  if (page > PAGES_PER_SECTION) return null;
  const node = (section - 1) * PAGES_PER_SECTION + page;
  return node < count ? node : null;
}

/** True when `node` has no children in the 4-ary tree, so no page depends on it to be reachable by tree links. */
export function isTreeLeaf(node: number, count: number): boolean {
  return node * TREE_FANOUT + 1 >= count;
}

export function graphLinks(opts: { host: number; node: number; count: number; hostCount: number }): GraphLink[] {
  const { host, node, count, hostCount } = opts;
  const rng = prng(`graph:${host}:${node}`);
  const links: GraphLink[] = [];
  const seen = new Set<number>([node]);
  const add = (target: number): void => {
    if (seen.has(target)) return;
    seen.add(target);
    links.push({ host, node: target });
  };
  for (let c = 1; c <= TREE_FANOUT; c++) if (node * TREE_FANOUT + c < count) add(node * TREE_FANOUT + c);
  if (node > 0) add(Math.floor((node - 1) / TREE_FANOUT));
  // Bounded attempts: a tiny host may have fewer distinct pages than SAME_HOST_LINKS.
  for (let attempt = 0; attempt < 4 * SAME_HOST_LINKS && links.length < SAME_HOST_LINKS; attempt++) add(rng.int(count));
  if (hostCount > 1) links.push({ host: (host + 1 + rng.int(hostCount - 1)) % hostCount, node: rng.int(count) });
  return links;
}
