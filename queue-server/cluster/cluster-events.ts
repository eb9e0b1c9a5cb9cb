/**
 * The cluster's events channel (Redis pub/sub, `petrel:<name>:events`): a member announces that it
 * joined or left (`member`, membership.ts) and that the cluster's control changed (`control`,
 * cluster-control.ts), so that fetchers look the queue servers up (server-pool.ts) and members read
 * the control hash at once instead of at their next poll.
 *
 * An event is only a hint to look now: the keys (leases, member cards, the control hash) stay the
 * truth, and the polls stay as a slower fallback, because pub/sub delivers at most once and only to
 * whoever is subscribed at that moment (a subscriber reconnecting misses what was said meanwhile), and
 * a member killed with SIGKILL announces nothing: its lease just runs out, which only a poll sees.
 * Keyspace notifications (`notify-keyspace-events Ex`) would report that expiry, but they are a server
 * setting that managed Redis services often refuse, and expired events come when Redis notices the
 * expiry, not at the TTL; a channel of our own needs nothing of the server.
 *
 * Anything else read on the channel is ignored (whoever can publish there can write the keys too).
 */
import { duplicateRedis, type RedisClient as Redis } from './redis-connection.js';
import type { ClusterKeys } from '../../shared/cluster-keys.js';

export const CLUSTER_EVENTS = ['member', 'control'] as const;
export type ClusterEvent = (typeof CLUSTER_EVENTS)[number];

/** Says `event` on the channel; a failure is not an error (the polls will see the change). */
export async function announce(redis: Redis, keys: ClusterKeys, event: ClusterEvent): Promise<void> {
  await redis.publish(keys.events, event).catch(() => undefined);
}

export class ClusterEvents {
  readonly #subscriber: Redis;

  private constructor(subscriber: Redis) {
    this.#subscriber = subscriber;
  }

  /** Listens on its own connection (a subscribed connection can do nothing else); ioredis subscribes again after a reconnect. */
  static listen(redis: Redis, keys: ClusterKeys, on: (event: ClusterEvent) => void): ClusterEvents {
    const subscriber = duplicateRedis(redis);
    subscriber.on('error', () => undefined);
    subscriber.on('message', (channel: string, message: string) => {
      if (channel === keys.events && (CLUSTER_EVENTS as readonly string[]).includes(message)) on(message as ClusterEvent);
    });
    void subscriber.subscribe(keys.events).catch(() => undefined);
    return new ClusterEvents(subscriber);
  }

  close(): void {
    this.#subscriber.disconnect();
  }
}
