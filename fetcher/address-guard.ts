/**
 * The fetcher's guard against being used as a proxy into the network it runs in (server-side request
 * forgery): a page anywhere on the web can link to `http://169.254.169.254/` (a cloud's metadata
 * service), `http://10.0.0.1/`, `http://localhost:6379/` or a name that resolves to such an address,
 * and a crawler that follows links would request it from inside. So by default the fetcher refuses to
 * connect to any address that is not globally reachable: loopback, private, CGNAT, link-local,
 * unique-local, unspecified, multicast and the other special-purpose ranges of the IANA registries
 * (RFC 6890 and its updates), for IPv4 and IPv6, IPv4 embedded in IPv6 (mapped, NAT64, 6to4) included.
 *
 * The check is on the address the socket is about to connect to, at connect time (undici's `connect`
 * hook, with a `lookup` for names), never on the URL's spelling: `127.1`, `2130706433`, `0x7f000001`,
 * `[::ffff:127.0.0.1]`, `localhost` and a name whose DNS answer changes between two lookups (DNS
 * rebinding) all end at the same check. Refused connections fail with BlockedAddressError, recorded
 * as `blocked-address` (shared/fetch-codes.ts), before any packet is sent.
 *
 * Exceptions: the hosts the operator gave as seeds (the queue server marks their slots, protocol
 * `allowPrivateAddresses`; crawling an intranet is a choice, not an accident), and everything with
 * `--allow-private-addresses`. `--resolve HOST:ADDRESS` pins a name to an address instead of DNS; the
 * pinned address is checked like any other.
 */
import type { LookupAddress } from 'node:dns';
import { DnsCache } from './dns-cache.js';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { buildConnector } from 'undici';

/** Why an address is refused: the special-purpose range it falls in. */
export type BlockedRange =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared (CGNAT)'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

/** [range, network, prefix length]; IPv4 per RFC 6890 / IANA IPv4 special-purpose registry. */
const IPV4_RANGES: readonly [BlockedRange, string, number][] = [
  ['unspecified', '0.0.0.0', 8], // "this network" (RFC 791), 0.0.0.0 itself included
  ['private', '10.0.0.0', 8], // RFC 1918
  ['shared (CGNAT)', '100.64.0.0', 10], // RFC 6598
  ['loopback', '127.0.0.0', 8], // RFC 1122
  ['link-local', '169.254.0.0', 16], // RFC 3927; cloud metadata services live here
  ['private', '172.16.0.0', 12], // RFC 1918
  ['reserved', '192.0.0.0', 24], // IETF protocol assignments (RFC 6890)
  ['documentation', '192.0.2.0', 24], // TEST-NET-1 (RFC 5737)
  ['reserved', '192.88.99.0', 24], // 6to4 relay anycast, deprecated (RFC 7526)
  ['private', '192.168.0.0', 16], // RFC 1918
  ['benchmarking', '198.18.0.0', 15], // RFC 2544
  ['documentation', '198.51.100.0', 24], // TEST-NET-2
  ['documentation', '203.0.113.0', 24], // TEST-NET-3
  ['multicast', '224.0.0.0', 4], // RFC 5771
  ['reserved', '240.0.0.0', 4], // RFC 1112, broadcast 255.255.255.255 included
];

/** IPv6 per RFC 6890 / IANA IPv6 special-purpose registry. Embedded IPv4 forms are unwrapped first (below). */
const IPV6_RANGES: readonly [BlockedRange, string, number][] = [
  ['unspecified', '::', 128], // RFC 4291
  ['loopback', '::1', 128], // RFC 4291
  ['reserved', '::', 96], // IPv4-compatible, deprecated (RFC 4291 section 2.5.5.1)
  ['reserved', '64:ff9b:1::', 48], // local-use NAT64 (RFC 8215)
  ['reserved', '100::', 64], // discard-only (RFC 6666)
  ['benchmarking', '2001:2::', 48], // RFC 5180
  ['reserved', '2001:10::', 28], // ORCHID, deprecated (RFC 4843)
  ['documentation', '2001:db8::', 32], // RFC 3849
  ['documentation', '3fff::', 20], // RFC 9637
  ['unique-local', 'fc00::', 7], // RFC 4193
  ['link-local', 'fe80::', 10], // RFC 4291
  ['site-local', 'fec0::', 10], // deprecated (RFC 3879)
  ['multicast', 'ff00::', 8], // RFC 4291
];

const LISTS = buildLists();

function buildLists(): Map<BlockedRange, BlockList> {
  const lists = new Map<BlockedRange, BlockList>();
  const listOf = (range: BlockedRange) => {
    let list = lists.get(range);
    if (list === undefined) lists.set(range, (list = new BlockList()));
    return list;
  };
  for (const [range, network, prefix] of IPV4_RANGES) listOf(range).addSubnet(network, prefix, 'ipv4');
  for (const [range, network, prefix] of IPV6_RANGES) listOf(range).addSubnet(network, prefix, 'ipv6');
  return lists;
}

/**
 * The special-purpose range `address` (an IP address, IPv6 with or without brackets) falls in, or
 * null when it is globally reachable and may be connected to. Pure. Anything that is not an IP
 * address is refused as `reserved`: only addresses reach this check.
 */
export function blockedRangeOf(address: string): BlockedRange | null {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 0) return 'reserved';
  if (family === 6) {
    const embedded = embeddedIpv4(bare);
    if (embedded !== null) return blockedRangeOf(embedded);
  }
  const type = family === 4 ? 'ipv4' : 'ipv6';
  // The most specific name first: ::1 is loopback, not merely inside the IPv4-compatible ::/96.
  for (const range of ['unspecified', 'loopback'] as const) if (LISTS.get(range)!.check(bare, type)) return range;
  for (const [range, list] of LISTS) if (list.check(bare, type)) return range;
  return null;
}

/**
 * The IPv4 address an IPv6 address stands for, when it stands for one that a packet to it would
 * reach: IPv4-mapped `::ffff:a.b.c.d` (RFC 4291), the NAT64 well-known prefix `64:ff9b::/96`
 * (RFC 6052), and 6to4 `2002:AABB:CCDD::/48` (RFC 3056: the relay delivers to AA.BB.CC.DD).
 */
function embeddedIpv4(address: string): string | null {
  const words = ipv6Words(address);
  if (words === null) return null;
  const v4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  const zero = (from: number, to: number) => words.slice(from, to).every((word) => word === 0);
  if (zero(0, 5) && words[5] === 0xffff) return v4(words[6]!, words[7]!);
  if (words[0] === 0x64 && words[1] === 0xff9b && zero(2, 6)) return v4(words[6]!, words[7]!);
  if (words[0] === 0x2002) return v4(words[1]!, words[2]!);
  return null;
}

/** The eight 16-bit words of an IPv6 address (`::` and a trailing dotted quad expanded). */
function ipv6Words(address: string): number[] | null {
  let text = address.split('%')[0]!.toLowerCase();
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((word) => Number.parseInt(word, 16)));
  const head = parse(halves[0]!);
  const tail = halves.length === 2 ? parse(halves[1]!) : [];
  const words = halves.length === 2 ? [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail] : head;
  return words.length === 8 && words.every((word) => Number.isInteger(word) && word >= 0 && word <= 0xffff) ? words : null;
}

/** A connection the guard refused: nothing was sent. Code PETREL_BLOCKED_ADDRESS, recorded as `blocked-address`. */
export class BlockedAddressError extends Error {
  readonly code = 'PETREL_BLOCKED_ADDRESS';
  constructor(host: string, address: string, range: BlockedRange) {
    const target = host === address ? address : `${host} (${address})`;
    super(`refused to connect to ${target}: a ${range} address (pass --allow-private-addresses to crawl such hosts, or give the host as a seed)`);
  }
}

/**
 * Origins (host and port) the fetcher connects to whatever they resolve to: the hosts of the operator's
 * seeds, as the queue server marks them in the slots it hands out, and only while such a slot runs.
 * Each slot holds its origin and releases it when it ends, so trust ends with the crawl that gave it
 * (before, a host stayed trusted for the fetcher's life: a new crawl with other seeds still reached an
 * old seed's private address), and a seed's other ports are not trusted with it. Memory: one entry per
 * origin of a running slot.
 */
export class TrustedOrigins {
  /** `host:port` -> slots holding it. */
  readonly #held = new Map<string, number>();

  /** Trusts `origin` (`http://host:port`) until as many `release` calls. */
  hold(origin: string): void {
    const key = originKey(origin);
    this.#held.set(key, (this.#held.get(key) ?? 0) + 1);
  }

  release(origin: string): void {
    const key = originKey(origin);
    const count = (this.#held.get(key) ?? 0) - 1;
    if (count > 0) this.#held.set(key, count);
    else this.#held.delete(key);
  }

  /** Whether a connection to `hostname` on `port` is trusted now. */
  allows(hostname: string, port: number): boolean {
    return this.#held.has(`${bareHost(hostname)}:${port}`);
  }
}

function originKey(origin: string): string {
  const url = new URL(origin);
  return `${bareHost(url.hostname)}:${portOf(url.port, url.protocol)}`;
}

/** A URL's or connection's port, the scheme's default when none is given. */
function portOf(port: string | number | undefined, protocol: string | undefined): number {
  return Number(port) || (protocol === 'https:' ? 443 : 80);
}

export interface AddressPolicy {
  /** --allow-private-addresses: every address may be connected to. */
  readonly allowAll: boolean;
  /** The origins of running slots of seed hosts. */
  readonly trustedOrigins: TrustedOrigins;
  /** --resolve: host name (lower case) -> the address used instead of DNS. */
  readonly resolve: ReadonlyMap<string, string>;
  /** Resolved names, with their TTL (dns-cache.ts); absent: a cache of this policy's own. */
  readonly dns?: DnsCache;
}

export function defaultAddressPolicy(): AddressPolicy {
  return { allowAll: false, trustedOrigins: new TrustedOrigins(), resolve: new Map(), dns: new DnsCache() };
}

/**
 * The address a request to `hostname` goes to, as far as the fetcher knows: the host itself when it
 * is an address, its --resolve address, or what the DNS cache holds for it; null when not known.
 */
export function addressOf(policy: AddressPolicy, hostname: string): string | null {
  const host = bareHost(hostname);
  if (isIP(host) !== 0) return host;
  return policy.resolve.get(host) ?? policy.dns?.addressOf(host) ?? null;
}

/**
 * undici's `connect` option for the crawl agent: the default connector (with a lookup that honours
 * --resolve), behind the guard unless the policy lets the host through.
 */
export function guardedConnector(policy: AddressPolicy, options: { readonly timeoutMs: number }): buildConnector.connector {
  const open = buildConnector({ timeout: options.timeoutMs, lookup: lookupWith(policy, false) });
  const guarded = buildConnector({ timeout: options.timeoutMs, lookup: lookupWith(policy, true) });
  return (connect, callback) => {
    const host = bareHost(connect.hostname);
    if (policy.allowAll || policy.trustedOrigins.allows(host, portOf(connect.port, connect.protocol))) return open(connect, callback);
    // An address literal never reaches a lookup (net.connect uses it as it is): check it here.
    if (isIP(host) !== 0) {
      const range = blockedRangeOf(host);
      if (range !== null) {
        process.nextTick(() => callback(new BlockedAddressError(host, host, range), null));
        return;
      }
    }
    return guarded(connect, callback);
  };
}

/**
 * A net `lookup` (called by net.connect for names): --resolve first, else the system resolver; with
 * `guard`, refused addresses are dropped from the answer and a name left with none fails with
 * BlockedAddressError. Node asks with `all: true` when it tries several addresses (autoSelectFamily).
 */
function lookupWith(policy: AddressPolicy, guard: boolean): LookupFunction {
  const dns = policy.dns ?? new DnsCache();
  return (hostname, lookupOptions, callback) => {
    const answer = (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => {
      if (error !== null) return callback(error, lookupOptions.all === true ? [] : '', 0);
      let usable = addresses;
      if (guard) {
        usable = addresses.filter((entry) => blockedRangeOf(entry.address) === null);
        if (usable.length === 0 && addresses.length > 0) {
          const first = addresses[0]!.address;
          return callback(Object.assign(new BlockedAddressError(hostname, first, blockedRangeOf(first)!), { errno: 0, syscall: 'connect' }), lookupOptions.all === true ? [] : '', 0);
        }
      }
      if (lookupOptions.all === true) return callback(null, usable);
      const first = usable[0];
      if (first === undefined) return callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      callback(null, first.address, first.family);
    };
    const pinned = policy.resolve.get(hostname.toLowerCase());
    if (pinned !== undefined) {
      process.nextTick(() => answer(null, [{ address: pinned, family: isIP(pinned) }]));
      return;
    }
    // The family asked for, if any (autoSelectFamily asks for both).
    const asked = lookupOptions.family;
    const family = asked === 4 || asked === 'IPv4' ? 4 : asked === 6 || asked === 'IPv6' ? 6 : 0;
    dns.lookup(hostname).then(
      (addresses) => answer(null, family === 0 ? [...addresses] : addresses.filter((entry) => entry.family === family)),
      (error: NodeJS.ErrnoException) => answer(error, []),
    );
  };
}

function bareHost(hostname: string): string {
  const lower = hostname.toLowerCase();
  return lower.startsWith('[') && lower.endsWith(']') ? lower.slice(1, -1) : lower;
}
