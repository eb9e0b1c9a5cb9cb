/**
 * Where a `--cluster` fetcher learns the queue servers: every partition's lease names its member,
 * and the member's card (shared/cluster-keys.ts) its URL. Both carry TTLs renewed by the member's
 * heartbeat, so a queue server that died drops out of the answer within its lease time, and a new
 * one appears as soon as it took a partition: a fetcher is never told about either.
 */
import type { RedisClient as Redis } from '../queue-server/cluster/redis-connection.js';
import { clusterKeys, parseMemberCard, type ClusterKeys } from '../shared/cluster-keys.js';

export class ClusterDirectory {
  readonly #redis: Redis;
  readonly #keys: ClusterKeys;

  constructor(redis: Redis, clusterName: string) {
    this.#redis = redis;
    this.#keys = clusterKeys(clusterName);
  }

  /** The URLs of the live queue servers, one per member holding a partition, in partition order. */
  async servers(): Promise<string[]> {
    const partitions = Number((await this.#redis.hget(this.#keys.meta, 'partitions')) ?? 0);
    if (!Number.isInteger(partitions) || partitions < 1) return [];
    const holders = await this.#redis.mget(...Array.from({ length: partitions }, (_, i) => this.#keys.lease(i)));
    const ids = [...new Set(holders.filter((id): id is string => id !== null))];
    if (ids.length === 0) return [];
    const cards = await this.#redis.mget(...ids.map((id) => this.#keys.member(id)));
    const urls = cards.map((card) => parseMemberCard(card)?.url ?? null).filter((url): url is string => url !== null);
    return [...new Set(urls)];
  }
}
