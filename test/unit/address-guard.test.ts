/**
 * The fetcher's address guard (fetcher/address-guard.ts): which addresses are refused (every
 * special-purpose range of IPv4 and IPv6, IPv4 embedded in IPv6 unwrapped, URL spellings of loopback
 * after WHATWG parsing), which are not (public addresses, also when mapped, NAT64 or 6to4), and that
 * the crawl agent refuses before connecting: a loopback server counts the connections it gets. Only
 * loopback is ever connected to; the other addresses are classified, never dialled.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blockedRangeOf, TrustedOrigins, type AddressPolicy } from '../../fetcher/address-guard.js';
import { parseResolveEntry } from '../../fetcher/defaults.js';
import { createCrawlAgent, download, type DownloadOptions } from '../../fetcher/download.js';

describe('blockedRangeOf', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared (CGNAT)'],
    ['100.127.255.255', 'shared (CGNAT)'],
    ['169.254.169.254', 'link-local'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['198.18.0.1', 'benchmarking'],
    ['224.0.0.251', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a00:1', 'private'],
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1
    ['64:ff9b::7f00:1', 'loopback'],
    ['2002:a9fe:a9fe::1', 'link-local'], // 6to4 of 169.254.169.254
    ['::127.0.0.1', 'reserved'], // IPv4-compatible, deprecated
    ['64:ff9b:1::1', 'reserved'],
    ['100::1', 'reserved'],
    ['2001:db8::1', 'documentation'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456:789a::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%lo', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['not-an-address', 'reserved'],
  ])('refuses %s (%s)', (address, range) => {
    expect(blockedRangeOf(address)).toBe(range);
  });

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '100.63.255.255', '100.128.0.0', '172.15.255.255', '172.32.0.0', '192.169.0.0', '223.255.255.255', '2606:4700:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])(
    'allows the public address %s',
    (address) => {
      expect(blockedRangeOf(address)).toBeNull();
    },
  );

  it.each(['http://127.1/', 'http://2130706433/', 'http://0x7f000001/', 'http://0177.0.0.1/', 'http://127.000.000.001/', 'http://[::ffff:127.0.0.1]/', 'http://[::1]/', 'http://[0:0:0:0:0:0:0:1]/'])(
    'sees through the spelling of %s: its host is a loopback address',
    (url) => {
      expect(blockedRangeOf(new URL(url).hostname)).toBe('loopback');
    },
  );
});

describe('parseResolveEntry', () => {
  it('takes HOST:ADDRESS with IPv4 or IPv6, and refuses anything else', () => {
    expect(parseResolveEntry('Intranet.Example:10.0.0.5')).toEqual({ host: 'intranet.example', address: '10.0.0.5' });
    expect(parseResolveEntry('v6.example:[fd00::5]')).toEqual({ host: 'v6.example', address: 'fd00::5' });
    expect(parseResolveEntry('v6.example:fd00::5')).toEqual({ host: 'v6.example', address: 'fd00::5' });
    for (const bad of ['nocolon', ':10.0.0.5', 'host:not-an-ip', '10.0.0.1:10.0.0.2', 'bad_host!:10.0.0.1']) expect(parseResolveEntry(bad)).toHaveProperty('error');
  });
});

describe('the crawl agent behind the guard', () => {
  let server: Server;
  let port: number;
  let connections = 0;
  const OPTIONS: DownloadOptions = { userAgent: 'guard test', maxBodyBytes: 1 << 16, connectTimeoutMs: 2000, headersTimeoutMs: 2000, bodyTimeoutMs: 2000, totalTimeoutMs: 5000 };

  beforeAll(async () => {
    server = createServer((_req, res) => res.end('INTERNAL SECRET'));
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const policy = (fields: Partial<AddressPolicy> = {}): AddressPolicy => ({ allowAll: false, trustedOrigins: new TrustedOrigins(), resolve: new Map(), ...fields });

  async function fetchWith(addressPolicy: AddressPolicy, url: string) {
    const agent = createCrawlAgent({ ...OPTIONS, connectionsPerOrigin: 1, addressPolicy });
    try {
      return await download(agent, OPTIONS, { url, wantBody: () => true });
    } finally {
      await agent.close();
    }
  }

  it('refuses a loopback address literal and a name that resolves to one, without connecting', async () => {
    connections = 0;
    const resolve = new Map([['internal.example', '127.0.0.1']]);
    for (const url of [`http://127.0.0.1:${port}/`, `http://localhost:${port}/`, `http://internal.example:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`]) {
      const result = await fetchWith(policy({ resolve }), url);
      expect({ url, ok: result.ok, code: result.ok ? null : result.code }).toEqual({ url, ok: false, code: 'blocked-address' });
      if (!result.ok) expect(result.message).toContain('--allow-private-addresses');
    }
    expect(connections).toBe(0);
  });

  it('connects to a trusted origin (a seed host\'s, while its slot runs) and to anything with allowAll', async () => {
    connections = 0;
    const trustedOrigins = new TrustedOrigins();
    trustedOrigins.hold(`http://127.0.0.1:${port}`);
    const trusted = await fetchWith(policy({ trustedOrigins }), `http://127.0.0.1:${port}/`);
    expect(trusted.ok && trusted.body.toString()).toBe('INTERNAL SECRET');
    // Released (its slot ended, or a new crawl has other seeds): refused again, nothing sent.
    trustedOrigins.release(`http://127.0.0.1:${port}`);
    const released = await fetchWith(policy({ trustedOrigins }), `http://127.0.0.1:${port}/`);
    expect(released.ok ? 'fetched' : released.code).toBe('blocked-address');
    const resolve = new Map([['internal.example', '127.0.0.1']]);
    const open = await fetchWith(policy({ allowAll: true, resolve }), `http://internal.example:${port}/`);
    expect(open.ok && open.body.toString()).toBe('INTERNAL SECRET');
    expect(connections).toBe(2);
  });

  it('trusts an origin while any slot holds it, its port only, the scheme\'s default port when none is given', () => {
    const origins = new TrustedOrigins();
    origins.hold('http://A.example:8080');
    origins.hold('http://a.example:8080');
    expect(origins.allows('a.example', 8080)).toBe(true);
    expect(origins.allows('a.example', 8081)).toBe(false);
    origins.release('http://a.example:8080');
    expect(origins.allows('a.example', 8080)).toBe(true);
    origins.release('http://a.example:8080');
    expect(origins.allows('a.example', 8080)).toBe(false);
    origins.hold('https://b.example');
    origins.hold('http://[::1]');
    expect([origins.allows('b.example', 443), origins.allows('b.example', 80), origins.allows('[::1]', 80), origins.allows('::1', 80)]).toEqual([true, false, true, true]);
  });
});
