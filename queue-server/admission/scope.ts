/**
 * Crawl scope: which discovered URLs may enter the frontier. Pure functions of the seeds.
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
import type { NormalizedUrl } from '../../shared/url-normalize.js';

export const SCOPES = ['prefix', 'host', 'domain', 'any'] as const;
export type ScopeKind = (typeof SCOPES)[number];

export type ScopeFilter = (url: NormalizedUrl) => boolean;

export function makeScopeFilter(kind: ScopeKind, seeds: readonly NormalizedUrl[]): ScopeFilter {
  switch (kind) {
    case 'any':
      return () => true;
    case 'prefix': {
      const prefixes = seeds.map(directoryPrefix);
      return (url) => prefixes.some((prefix) => url.startsWith(prefix));
    }
    case 'host': {
      const hosts = new Set(seeds.map(hostnameOf));
      return (url) => hosts.has(hostnameOf(url));
    }
    case 'domain': {
      const domains = new Set(seeds.map(domainOf));
      return (url) => domains.has(domainOf(url));
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

function hostnameOf(url: string): string {
  return new URL(url).hostname;
}

function domainOf(url: string): string {
  const hostname = hostnameOf(url);
  return getDomain(hostname, { allowPrivateDomains: true }) ?? hostname;
}
