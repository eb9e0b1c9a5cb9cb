/**
 * A cluster made by a Petrel from before the hash-tagged key names (shared/cluster-keys.ts) keeps its
 * state: the first member to start renames the old keys (K, the control, each partition's stream with
 * its consumer group and pending entries, and its Bloom filter) to the new names, once, with RENAMENX,
 * so two members starting together cannot both move a key and nothing already under a new name is
 * overwritten. Leases and member cards are left to expire (seconds). Only on a single Redis: no earlier
 * Petrel ran on a Redis Cluster.
 */
import { clusterKeys, legacyClusterKeys } from '../../shared/cluster-keys.js';
import type { RedisClient } from './redis-connection.js';

/** Renames what is found under the old names; returns how many keys moved. */
export async function renameLegacyKeys(redis: RedisClient, name: string): Promise<number> {
  if (redis.isCluster) return 0;
  const legacy = legacyClusterKeys(name);
  const keys = clusterKeys(name);
  if ((await redis.exists(legacy.meta)) === 0) return 0;
  const partitions = Number((await redis.hget(legacy.meta, 'partitions')) ?? 0);
  const pairs: [string, string][] = [[legacy.meta, keys.meta], [legacy.control, keys.control], [legacy.controlApplied, keys.controlApplied]];
  for (let i = 0; Number.isInteger(partitions) && i < partitions; i++) pairs.push([legacy.links(i), keys.links(i)], [legacy.bloom(i), keys.bloom(i)]);
  let moved = 0;
  // RENAMENX fails on a missing source (another member moved it first, or it never existed): 0 moved.
  for (const [from, to] of pairs) moved += await redis.renamenx(from, to).catch(() => 0);
  return moved;
}
