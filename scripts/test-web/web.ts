/**
 * The whole web once the port is known: each host's address, site and cache policy, and the lookup from
 * a canonical URL to (host, path). Shared by the server and the model.
 */
import type { WebContext } from './context.js';
import { generationChanges, type GenerationChanges } from './generations.js';
import { addressHosts, type HostAddress, type HostPlan, type Profile, type SpecialRole } from './hosts.js';
import { normalSite } from './normal-site.js';
import type { HostSite } from './resource.js';
import type { CachePolicy } from './response.js';
import { specialSite } from './special-sites.js';

export interface WebHost extends HostAddress {
  site: HostSite;
  cache: CachePolicy;
}

export interface Web {
  hosts: readonly WebHost[];
  /** Finds the host of a canonical URL; null for URLs outside the test web. */
  locate(canonicalUrl: string): { host: WebHost; pathAndQuery: string } | null;
  /** What differs from generation 0 in `generation`, on every normal host (see generations.ts). */
  changes(generation: number): GenerationChanges;
}

export interface WebOptions {
  profile: Profile;
  pagesPerHost: number;
  slowMs: number;
  crawlDelaySeconds: number;
}

/** Normal hosts cycle through three freshness behaviours; special hosts are fresh for an hour. */
const NORMAL_CACHE_POLICIES: readonly CachePolicy[] = [
  { kind: 'max-age', seconds: 3600 },
  { kind: 'max-age', seconds: 0 },
  { kind: 'expires-in-past' },
];

export function buildWeb(plans: readonly HostPlan[], port: number, opts: WebOptions): Web {
  const addressed = addressHosts(plans, port);
  const normalOrigins: string[] = [];
  const specialOrigins: Partial<Record<SpecialRole, string>> = {};
  for (const host of addressed) {
    if (host.plan.kind.kind === 'normal') normalOrigins.push(host.origin);
    else specialOrigins[host.plan.kind.kind] = host.origin;
  }
  const ctx: WebContext = { ...opts, normalOrigins, specialOrigins };
  const hosts: WebHost[] = addressed.map((host) => {
    const kind = host.plan.kind;
    if (kind.kind === 'normal') {
      const cache = NORMAL_CACHE_POLICIES[kind.normalIndex % NORMAL_CACHE_POLICIES.length] ?? { kind: 'max-age', seconds: 3600 };
      return { ...host, site: normalSite(ctx, kind.normalIndex), cache };
    }
    return { ...host, site: specialSite(ctx, kind.kind), cache: { kind: 'max-age', seconds: 3600 } };
  });
  const byOrigin = new Map(hosts.map((host) => [host.origin, host]));
  return {
    hosts,
    locate(url: string) {
      const match = /^(https?:\/\/[^/?#]+)(.*)$/.exec(url);
      const host = match === null ? undefined : byOrigin.get(match[1] ?? '');
      if (match === null || host === undefined) return null;
      return { host, pathAndQuery: match[2] ?? '/' };
    },
    changes: (generation) => generationChanges(normalOrigins, opts.pagesPerHost, generation),
  };
}
