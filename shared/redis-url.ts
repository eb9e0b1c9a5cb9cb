/**
 * The `--cluster` Redis address of queue servers and fetchers, checked once at the boundary.
 *
 * The password never travels in the URL: a URL is an argument, and arguments are visible to every
 * user of the machine (`ps`, /proc/PID/cmdline) and end up in logs and shell histories. It comes from
 * `--redis-password-file FILE` or the PETREL_REDIS_PASSWORD environment variable. Redis holds the
 * cluster's leases and link streams: anyone who can write to it can feed URLs to the crawl or take a
 * partition, so a non-loopback Redis without a password is refused unless `--allow-insecure-redis`.
 * `rediss://` is Redis over TLS (verified against the system's CAs).
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

export interface RedisTarget {
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  readonly password: string | null;
  /** The address as it may be logged: scheme, host and port, never the password. */
  readonly display: string;
  /** The address is one node of a Redis Cluster (sharded, `--redis-cluster`): the others are found from it. */
  readonly sharded: boolean;
}

export type RedisTargetResult = { readonly ok: true; readonly target: RedisTarget } | { readonly ok: false; readonly error: string };

export function parseRedisTarget(url: string, options: { password: string | null; allowInsecure: boolean; sharded?: boolean }): RedisTargetResult {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, error: `--cluster must be a redis:// or rediss:// URL, got "${url.slice(0, 200).replace(/:[^:@/]*@/, ':***@')}"` };
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') return { ok: false, error: `--cluster must be a redis:// or rediss:// URL, got ${parsed.protocol}` };
  if (parsed.password !== '' || parsed.username !== '') {
    return { ok: false, error: '--cluster must not carry a user or password (arguments are visible to every user of the machine): put the password in --redis-password-file FILE or PETREL_REDIS_PASSWORD' };
  }
  if ((parsed.pathname !== '' && parsed.pathname !== '/') || parsed.search !== '' || parsed.hash !== '') return { ok: false, error: '--cluster is redis://HOST:PORT, without a path or query' };
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (host === '') return { ok: false, error: '--cluster needs a host' };
  const port = parsed.port === '' ? 6379 : Number(parsed.port);
  const tls = parsed.protocol === 'rediss:';
  const password = options.password === null || options.password === '' ? null : options.password;
  if (password === null && !isLoopback(host) && !options.allowInsecure) {
    return { ok: false, error: `Redis at ${host} is not on loopback and no password is set: give --redis-password-file FILE or PETREL_REDIS_PASSWORD (and prefer rediss://), or --allow-insecure-redis if the network is trusted` };
  }
  return { ok: true, target: { host, port, tls, password, display: `${parsed.protocol}//${parsed.host}${options.sharded === true ? ' (Redis Cluster)' : ''}`, sharded: options.sharded === true } };
}

/** The password from a file (first line, trimmed) or the environment; null when neither is set. */
export function readRedisPassword(file: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  if (file !== undefined) return readFileSync(file, 'utf8').split('\n')[0]!.trim();
  const fromEnv = env.PETREL_REDIS_PASSWORD?.trim();
  return fromEnv === undefined || fromEnv === '' ? null : fromEnv;
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}
