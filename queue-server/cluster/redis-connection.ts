/**
 * Connecting to the cluster's Redis (ioredis) from a checked RedisTarget (shared/redis-url.ts): one
 * Redis (or any service with a single endpoint), or with `--redis-cluster` a Redis Cluster, whose
 * other nodes ioredis learns from the one given and follows through MOVED and ASK redirections.
 * Errors are handed to `onError` with the address as it may be logged; ioredis reconnects by itself
 * (commands sent meanwhile wait in its offline queue), so a Redis restart costs a pause, not a member.
 *
 * With a Redis Cluster every command, script and pipeline must touch keys of one hash slot: the key
 * names (shared/cluster-keys.ts) put each partition's keys in one slot and the cluster-wide keys in
 * another, and the callers send one pipeline per partition.
 */
import { createRequire } from 'node:module';
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import type { RedisTarget } from '../../shared/redis-url.js';

/** A connection to the cluster's Redis: one node, or a Redis Cluster. */
export type RedisClient = Redis | Cluster;

// Loaded on the first connection, not with the queue server: ioredis is about 370 KB of the bundle that
// every queue server start compiled, and only a `--cluster` member uses it (require keeps it out of the
// bundle; node_modules is there at run time).
let ioredis: { Redis: typeof Redis; Cluster: typeof Cluster } | null = null;
function loadIoredis(): { Redis: typeof Redis; Cluster: typeof Cluster } {
  ioredis ??= createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis; Cluster: typeof Cluster };
  return ioredis;
}

/** Reconnect at once, then back off to 2 s: a restarted Redis is met within a couple of seconds. */
const retryStrategy = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);

export function connectRedis(target: RedisTarget, options: { name: string; onError?: (message: string) => void }): RedisClient {
  const { Redis: RedisConstructor, Cluster: ClusterConstructor } = loadIoredis();
  const nodeOptions = {
    password: target.password ?? undefined,
    tls: target.tls ? { servername: target.host } : undefined,
    connectionName: options.name,
    maxRetriesPerRequest: null,
  };
  const redis: RedisClient = target.sharded
    ? new ClusterConstructor([{ host: target.host, port: target.port }], { redisOptions: nodeOptions, clusterRetryStrategy: retryStrategy, lazyConnect: false })
    : new RedisConstructor({ host: target.host, port: target.port, ...nodeOptions, retryStrategy, lazyConnect: false });
  // Without a listener ioredis prints every connection error itself; the message never holds the password.
  let last = '';
  redis.on('error', (error: Error) => {
    const message = `Redis at ${target.display}: ${error.message.slice(0, 200)}`;
    if (message !== last) options.onError?.(message);
    last = message;
  });
  redis.on('ready', () => (last = ''));
  return redis;
}

/** Another connection like `redis` (for a blocking read or a subscriber, which hold their connection). */
export function duplicateRedis(redis: RedisClient): RedisClient {
  // The two classes' duplicate() differ in their optional arguments, so the union's is not callable.
  return redis.isCluster ? (redis as Cluster).duplicate() : (redis as Redis).duplicate();
}

/**
 * One pipeline per group (a partition's keys), sent at once: a Redis Cluster takes a pipeline only
 * when all its keys are in one slot. Resolves with each group's replies, in the order of `groups`,
 * once Redis answered all; rejects with the first error (a discarded pipeline is one).
 */
export async function pipelinePerGroup<T>(redis: RedisClient, groups: readonly T[], fill: (pipeline: ChainableCommander, group: T) => void): Promise<unknown[][]> {
  return Promise.all(
    groups.map(async (group) => {
      const pipeline = redis.pipeline();
      fill(pipeline, group);
      const results = await pipeline.exec();
      const failed = results?.find(([error]) => error !== null);
      if (results === null || failed !== undefined) throw failed?.[0] ?? new Error('the Redis pipeline was discarded');
      return results.map(([, value]) => value);
    }),
  );
}
