import { describe, expect, it } from 'vitest';
import { DnsCache, MIN_TTL_MS, type DnsAnswer } from '../../fetcher/dns-cache.js';

/** A resolver that answers from a table and counts what it was asked (the cache's source, not a server). */
function table(answers: Record<string, DnsAnswer>) {
  const asked: string[] = [];
  return {
    asked,
    resolve: async (name: string) => {
      asked.push(name);
      const answer = answers[name];
      if (answer === undefined) throw Object.assign(new Error(`ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
      return answer;
    },
  };
}

describe('the fetcher\'s DNS cache', () => {
  it('resolves a name once per TTL, and again after it', async () => {
    let now = 0;
    const source = table({ 'a.test': { addresses: [{ address: '192.0.2.1', family: 4 }], ttlMs: 30_000 } });
    const cache = new DnsCache({ resolve: source.resolve, now: () => now });
    await Promise.all([cache.lookup('a.test'), cache.lookup('A.test')]);
    await cache.lookup('a.test');
    expect(source.asked).toEqual(['a.test']);
    expect(cache.addressOf('a.test')).toBe('192.0.2.1');
    now = 30_000;
    await cache.lookup('a.test');
    expect(source.asked).toEqual(['a.test', 'a.test']);
  });

  it('holds a TTL of zero for the minimum, and caches no failure', async () => {
    let now = 0;
    const source = table({ 'z.test': { addresses: [{ address: '192.0.2.2', family: 4 }], ttlMs: 0 } });
    const cache = new DnsCache({ resolve: source.resolve, now: () => now });
    await cache.lookup('z.test');
    now = MIN_TTL_MS - 1;
    await cache.lookup('z.test');
    expect(source.asked).toHaveLength(1);
    await expect(cache.lookup('missing.test')).rejects.toThrow('ENOTFOUND');
    await expect(cache.lookup('missing.test')).rejects.toThrow('ENOTFOUND');
    expect(source.asked.filter((name) => name === 'missing.test')).toHaveLength(2);
  });

  it('keeps at most its bound of names, the least recently used forgotten first', async () => {
    const answers: Record<string, DnsAnswer> = {};
    for (const name of ['a', 'b', 'c']) answers[name] = { addresses: [{ address: '192.0.2.3', family: 4 }], ttlMs: 60_000 };
    const source = table(answers);
    const cache = new DnsCache({ resolve: source.resolve, now: () => 0, maxNames: 2 });
    await cache.lookup('a');
    await cache.lookup('b');
    await cache.lookup('a');
    await cache.lookup('c');
    expect(cache.size).toBe(2);
    expect(cache.addressOf('b')).toBeNull();
    expect(cache.addressOf('a')).toBe('192.0.2.3');
  });

  // localhost never goes to DNS (RFC 6761), so this asks nothing of the network.
  it('answers localhost from the system resolver by default', async () => {
    const cache = new DnsCache();
    const addresses = await cache.lookup('localhost');
    expect(addresses.length).toBeGreaterThan(0);
    expect(cache.resolutions).toBe(1);
  });
});
