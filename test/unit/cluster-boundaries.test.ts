/** The cluster's pure boundaries: partition of a host, the --cluster URL, the stream entry shape. */
import { describe, expect, it } from 'vitest';
import { partitionOfHost, partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { parseRedisTarget } from '../../shared/redis-url.js';
import { parseEntry } from '../../queue-server/cluster/link-inbox.js';
import { countBy } from '../support/request-log.js';

describe('partitionOfHost', () => {
  it('puts every URL of a host in one partition, whatever the scheme, port, path or case', () => {
    const p = partitionOfUrl('http://Example.ORG:8080/a', 16);
    expect(partitionOfUrl('https://example.org/b?c', 16)).toBe(p);
    expect(partitionOfHost('EXAMPLE.org', 16)).toBe(p);
  });

  it('is the same function in every process and version (xxHash64 of the host name, modulo K)', () => {
    // Pinned values: changing the function would move every host of a running cluster.
    // xxHash64('example.org') = 0xaf2e84d72d027535 (xxhash-wasm h64ToString), and 0xaf2e84d72d027535 mod 7 = 4.
    expect([partitionOfHost('example.org', 7), partitionOfHost('127.0.0.2', 2), partitionOfHost('a.b.c', 1000), partitionOfHost('127.0.0.3', 2)]).toEqual([4, 1, 575, 0]);
    expect(partitionOfHost('x', 1)).toBe(0);
  });

  it('spreads many hosts over the partitions', () => {
    const hosts = Array.from({ length: 8000 }, (_, i) => `host-${i}.example`);
    const counts = countBy(hosts, (host) => String(partitionOfHost(host, 8)));
    expect(counts.size).toBe(8);
    for (const count of counts.values()) expect(count).toBeGreaterThan(800);
  });
});

describe('parseRedisTarget', () => {
  const none = { password: null, allowInsecure: false };
  it('takes a loopback redis:// URL without a password', () => {
    const parsed = parseRedisTarget('redis://127.0.0.1:6390', none);
    expect(parsed).toEqual({ ok: true, target: { host: '127.0.0.1', port: 6390, tls: false, password: null, display: 'redis://127.0.0.1:6390', sharded: false } });
  });

  it('refuses a password in the URL, and never repeats it', () => {
    const parsed = parseRedisTarget('redis://:hunter2secret@127.0.0.1:6390', none);
    expect(parsed.ok).toBe(false);
    expect(JSON.stringify(parsed)).not.toContain('hunter2secret');
    const broken = parseRedisTarget('redis://:hunter2secret@[nonsense', none);
    expect(JSON.stringify(broken)).not.toContain('hunter2secret');
  });

  it('refuses a non-loopback Redis without a password unless --allow-insecure-redis', () => {
    expect(parseRedisTarget('redis://10.1.2.3:6379', none).ok).toBe(false);
    expect(parseRedisTarget('rediss://redis.internal:6379', none).ok).toBe(false);
    expect(parseRedisTarget('redis://10.1.2.3:6379', { password: null, allowInsecure: true }).ok).toBe(true);
    const withPassword = parseRedisTarget('rediss://redis.internal:6380', { password: 'pw-from-a-file', allowInsecure: false });
    expect(withPassword.ok && withPassword.target).toMatchObject({ tls: true, password: 'pw-from-a-file', display: 'rediss://redis.internal:6380' });
    expect(withPassword.ok && withPassword.target.display).not.toContain('pw-from-a-file');
  });

  it('refuses other schemes and paths', () => {
    expect(parseRedisTarget('http://127.0.0.1:6379', none).ok).toBe(false);
    expect(parseRedisTarget('redis://127.0.0.1:6379/2', none).ok).toBe(false);
  });
});

describe('parseEntry (a stream entry comes from another process: checked, bounded)', () => {
  it('reads a batch of links', () => {
    expect(parseEntry(['from', '1', 'links', JSON.stringify([['http://a.example/', 2, 0.5]])])).toEqual([['http://a.example/', 2, 0.5]]);
  });

  it('refuses malformed batches whole', () => {
    for (const json of ['not json', '{}', '[["http://a/", -1, 0]]', '[["http://a/", 1, "x"]]', `[["${'u'.repeat(3000)}", 1, 0]]`, '[["http://a/", 1]]']) {
      expect(parseEntry(['links', json]), json.slice(0, 40)).toBeNull();
    }
    expect(parseEntry(['from', '1'])).toBeNull();
  });
});
