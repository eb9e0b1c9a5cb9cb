/**
 * Which hosts the test web has, and where they live. Host i listens on 127.0.0.(2+i), all on one port:
 * normal content hosts first (the first one is 'main'), then the special hosts in SPECIAL_ROLES order.
 * Nothing ever binds or links outside 127.0.0.0/8.
 */

export type HostRole = 'main' | 'robots404' | 'robots500' | 'crawlDelay' | 'trap';
export type SpecialRole = Exclude<HostRole, 'main'>;
export const SPECIAL_ROLES: readonly SpecialRole[] = ['robots404', 'robots500', 'crawlDelay', 'trap'];
export const HOST_ROLES: readonly HostRole[] = ['main', ...SPECIAL_ROLES];

export type Profile = 'full' | 'bench';

/** First address is 127.0.0.2; the last usable one is 127.0.0.254. */
export const FIRST_HOST_OCTET = 2;
export const MAX_HOSTS = 253;

export type HostKind = { kind: 'normal'; normalIndex: number } | { kind: SpecialRole };

export interface HostPlan {
  /** Position in `origins`. */
  index: number;
  address: string;
  kind: HostKind;
  /** 'main' for the first normal host, the special role for special hosts, null for other normal hosts. */
  role: HostRole | null;
}

export function planHosts(opts: { normalHosts: number; profile: Profile }): HostPlan[] {
  const kinds: HostKind[] = [];
  for (let i = 0; i < opts.normalHosts; i++) kinds.push({ kind: 'normal', normalIndex: i });
  if (opts.profile === 'full') for (const role of SPECIAL_ROLES) kinds.push({ kind: role });
  if (kinds.length > MAX_HOSTS) throw new RangeError(`at most ${MAX_HOSTS} hosts fit in 127.0.0.2-254`);
  return kinds.map((kind, index) => ({
    index,
    address: `127.0.0.${FIRST_HOST_OCTET + index}`,
    kind,
    role: kind.kind === 'normal' ? (kind.normalIndex === 0 ? 'main' : null) : kind.kind,
  }));
}

/** A host once the port is known. */
export interface HostAddress {
  plan: HostPlan;
  /** "127.0.0.2:PORT", as in request log entries. */
  authority: string;
  /** "http://127.0.0.2:PORT", canonical form. */
  origin: string;
}

export function addressHosts(plans: readonly HostPlan[], port: number): HostAddress[] {
  return plans.map((plan) => {
    const authority = `${plan.address}:${port}`;
    return { plan, authority, origin: `http://${authority}` };
  });
}
