/**
 * Connecting to the cluster's Redis (ioredis) from a checked RedisTarget (shared/redis-url.ts).
 * Errors are handed to `onError` with the address as it may be logged; ioredis reconnects by itself
 * (commands sent meanwhile wait in its offline queue), so a Redis restart costs a pause, not a member.
 */
import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';
import type { RedisTarget } from '../../shared/redis-url.js';

// Loaded on the first connection, not with the queue server: ioredis is about 370 KB of the bundle that
// every queue server start compiled, and only a `--cluster` member uses it (require keeps it out of the
// bundle; node_modules is there at run time).
let RedisConstructor: typeof RedisClient | null = null;
function redisConstructor(): typeof RedisClient {
  RedisConstructor ??= (createRequire(import.meta.url)('ioredis') as { Redis: typeof RedisClient }).Redis;
  return RedisConstructor;
}

export function connectRedis(target: RedisTarget, options: { name: string; onError?: (message: string) => void }): RedisClient {
  const Redis = redisConstructor();
  const redis = new Redis({
    host: target.host,
    port: target.port,
    password: target.password ?? undefined,
    tls: target.tls ? { servername: target.host } : undefined,
    connectionName: options.name,
    // Reconnect at once, then back off to 2 s: a restarted Redis is met within a couple of seconds.
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 6), 2000),
    maxRetriesPerRequest: null,
    lazyConnect: false,
  });
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
