/**
 * Crawl scope: which discovered URLs may enter the frontier, decided by the seeds alone.
 *
 *  - `prefix`: under a seed's directory, like `wget -np`: seed `http://h/docs/index.html` admits
 *    `http://h/docs/...` (same scheme, host and port) and nothing above it.
 *  - `host`: the same host name as a seed (any port or scheme).
 *  - `domain`: the same registrable domain as a seed (public-suffix aware, so `a.example.co.uk`
 *    and `b.example.co.uk` share one, `example.co.uk` and `other.co.uk` do not); an IP address is
 *    its own domain.
 *  - `any`: every http(s) URL. Only sensible with --max-depth or --max-pages.
 */
import { getDomain } from 'tldts';
import { hostnameOf, originOf, type NormalizedUrl } from '../../shared/url-normalize.js';

export const SCOPES = ['prefix', 'host', 'domain', 'any'] as const;
export type ScopeKind = (typeof SCOPES)[number];

/**
 * The scope of a crawl's seeds, built one seed at a time. A
 * check costs the same however many seeds there are (a set look-up; for `prefix`, the prefixes of the
 * URL's own origin), and so does adding a seed: links are checked by the thousand per second, and a
 * crawl may have a hundred thousand seeds.
 */
export interface Scope {
  /** Whether the URL is a seed or the scope takes it. */
  has(url: NormalizedUrl): boolean;
  /** Adds a seed; false when it was one already. */
  add(seed: NormalizedUrl): boolean;
}

interface ScopeFilter {
  has(url: NormalizedUrl): boolean;
  add(seed: NormalizedUrl): void;
}

export function makeScope(kind: ScopeKind, seeds: readonly NormalizedUrl[]): Scope {
  const seedSet = new Set<string>();
  const filter = scopeFilter(kind);
  const scope: Scope = {
    has: (url) => seedSet.has(url) || filter.has(url),
    add(seed) {
      if (seedSet.has(seed)) return false;
      seedSet.add(seed);
      filter.add(seed);
      return true;
    },
  };
  for (const seed of seeds) scope.add(seed);
  return scope;
}

function scopeFilter(kind: ScopeKind): ScopeFilter {
  switch (kind) {
    case 'any':
      return { has: () => true, add: () => undefined };
    case 'prefix': {
      // By origin (scheme, host and port: what a prefix starts with), so a URL meets only its own origin's prefixes.
      const prefixes = new Map<string, string[]>();
      return {
        has: (url) => prefixes.get(originOf(url))?.some((prefix) => url.startsWith(prefix)) ?? false,
        add(seed) {
          const origin = originOf(seed);
          const prefix = directoryPrefix(seed);
          const list = prefixes.get(origin);
          if (list === undefined) prefixes.set(origin, [prefix]);
          else if (!list.includes(prefix)) list.push(prefix);
        },
      };
    }
    case 'host': {
      const hosts = new Set<string>();
      return { has: (url) => hosts.has(hostnameOf(url)), add: (seed) => void hosts.add(hostnameOf(seed)) };
    }
    case 'domain': {
      const domains = new Set<string>();
      return { has: (url) => domains.has(domainOf(url)), add: (seed) => void domains.add(domainOf(seed)) };
    }
  }
}

/** Origin plus the path up to and including its last `/`: `http://h/docs/a.html?q` -> `http://h/docs/`. */
export function directoryPrefix(seed: NormalizedUrl): string {
  const pathStart = seed.indexOf('/', seed.indexOf('://') + 3);
  if (pathStart < 0) return `${seed}/`;
  const queryStart = seed.indexOf('?', pathStart);
  const path = seed.slice(pathStart, queryStart < 0 ? undefined : queryStart);
  return seed.slice(0, pathStart) + path.slice(0, path.lastIndexOf('/') + 1);
}

function domainOf(url: string): string {
  const hostname = hostnameOf(url);
  return getDomain(hostname, { allowPrivateDomains: true }) ?? hostname;
}
