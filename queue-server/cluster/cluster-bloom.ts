/**
 * Seed 002's shared Bloom filter, one per partition, kept in Redis as a bitmap (Redis 7.0 has no
 * BF.* commands): its owner sets the bits of every forwarded URL it admitted (or already knew), once
 * its group commit made them durable; every sender probes it before forwarding, so a link already
 * known at its owner is not sent again. One Lua script call per partition and batch, not one GETBIT
 * per bit: the probes of a batch cost one round trip.
 *
 * Sizing: a fixed bitmap for `capacity` URLs at CLUSTER_BLOOM_RATE, m = n ln(1/p) / (ln 2)^2 bits and
 * k = (m/n) ln 2 probes (1 million URLs: 28.8 Mbit, 3.6 MB of Redis memory, 20 probes), positions by
 * double hashing of the URL hash's two 32-bit halves (Kirsch and Mitzenmacher), as bloom-filter.ts.
 *
 * False-positive policy: a false positive here CAN lose a URL (the sender believes the owner has it
 * and does not forward it; nothing else would), so the rate bounds the loss: at most a fraction p =
 * 1e-6 of the new cross-partition links while a partition holds at most `capacity` URLs (above it the
 * rate grows: size --expected-urls for the crawl). Every skip is counted (`bloomSkipped` in
 * /api/cluster). The local seen-set is exact behind its own filter and loses nothing.
 */
import { pipelinePerGroup, type RedisClient as Redis } from './redis-connection.js';
import type { ClusterKeys } from '../../shared/cluster-keys.js';
import { urlHash64 } from '../../shared/url-hash.js';
import type { ForwardedLink } from './link-router.js';

export const CLUSTER_BLOOM_RATE = 1e-6;
/** Redis strings hold at most 512 MB = 2^32 bits. */
const MAX_BITS = 2 ** 32 - 1;
/** URLs per script call. */
const BATCH = 256;

/** KEYS[1] the bitmap; ARGV: m, k, then h1, h2 per URL. Returns 1 per URL whose every bit is set. */
const PROBE = `
local m, k = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for j = 3, #ARGV, 2 do
  local h1, h2 = tonumber(ARGV[j]), tonumber(ARGV[j + 1])
  local all = 1
  for i = 0, k - 1 do
    if redis.call('GETBIT', KEYS[1], (h1 + i * h2) % m) == 0 then all = 0 break end
  end
  out[#out + 1] = all
end
return out`;

/** The same arguments; sets every URL's k bits. */
const ADD = `
local m, k = tonumber(ARGV[1]), tonumber(ARGV[2])
for j = 3, #ARGV, 2 do
  local h1, h2 = tonumber(ARGV[j]), tonumber(ARGV[j + 1])
  for i = 0, k - 1 do redis.call('SETBIT', KEYS[1], (h1 + i * h2) % m, 1) end
end
return 1`;

export interface BloomProbe {
  /** Per partition, per link: whether the partition's filter says it knows the URL. */
  knownOf(links: ReadonlyMap<number, readonly ForwardedLink[]>): Promise<Map<number, boolean[]>>;
}

export class ClusterBloom implements BloomProbe {
  readonly #redis: Redis;
  readonly #keys: ClusterKeys;
  readonly bits: number;
  readonly probes: number;

  constructor(redis: Redis, keys: ClusterKeys, capacity: number) {
    this.#redis = redis;
    this.#keys = keys;
    this.bits = Math.min(MAX_BITS, Math.ceil((capacity * Math.log(1 / CLUSTER_BLOOM_RATE)) / Math.LN2 ** 2));
    this.probes = Math.max(1, Math.round((this.bits / capacity) * Math.LN2));
  }

  async knownOf(links: ReadonlyMap<number, readonly ForwardedLink[]>): Promise<Map<number, boolean[]>> {
    const groups = [...links].filter(([, list]) => list.length > 0);
    // One call per BATCH links: a script's arguments stay bounded however full the outbox is.
    const replies = await pipelinePerGroup(this.#redis, groups, (pipeline, [partition, list]) => {
      for (let at = 0; at < list.length; at += BATCH) pipeline.eval(PROBE, 1, this.#keys.bloom(partition), ...this.#args(list.slice(at, at + BATCH).map(([url]) => url)));
    });
    const known = new Map<number, boolean[]>();
    groups.forEach(([partition], i) => known.set(partition, replies[i]!.flatMap((bits) => (bits as number[]).map((bit) => bit === 1))));
    return known;
  }

  /** Sets the bits of URLs (normalized) of `partition`: called by its owner after its group commit. */
  async add(partition: number, urls: readonly string[]): Promise<void> {
    for (let at = 0; at < urls.length; at += BATCH) await this.#redis.eval(ADD, 1, this.#keys.bloom(partition), ...this.#args(urls.slice(at, at + BATCH)));
  }

  #args(urls: readonly string[]): string[] {
    const args = [String(this.bits), String(this.probes)];
    for (const url of urls) {
      const hash = urlHash64(url);
      // h2 odd, so the k positions differ even when m is a power of two.
      args.push(String(Number(hash & 0xffffffffn)), String(Number(hash >> 32n) | 1));
    }
    return args;
  }
}
