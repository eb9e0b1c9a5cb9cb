/**
 * A queue server as a cluster member: the parts of queue-server/cluster/ put together for the daemon.
 * `join` connects to Redis and takes a partition (membership.ts) before the crawl is built, so the
 * link router (link-router.ts) knows which hosts are ours from the first seed; `start` begins reading
 * the partition's stream (link-inbox.ts) once the crawl service runs; `close` stops reading, and,
 * after the daemon's last commit, gives the lease up.
 */
import type { RedisClient as Redis } from './redis-connection.js';
import type { RedisTarget } from '../../shared/redis-url.js';
import { parseMemberCard, type MemberCard, type MemberStatus } from '../../shared/cluster-keys.js';
import { ClusterControl, type ClusterControlAction } from './cluster-control.js';
import type { CrawlService } from '../crawl/crawl-service.js';
import { ClusterBloom } from './cluster-bloom.js';
import { ClusterEvents } from './cluster-events.js';
import { forwardInject, splitInject } from './cluster-inject.js';
import { runControl, type ClusterPort } from '../api/crawl-control.js';
import { LinkInbox } from './link-inbox.js';
import { ClusterLinkRouter } from './link-router.js';
import { Membership } from './membership.js';
import { connectRedis, duplicateRedis } from './redis-connection.js';
import { renameLegacyKeys } from './legacy-keys.js';

/** A member that cannot reach Redis at start says so instead of waiting for ever. */
const CONNECT_TIMEOUT_MS = 10_000;

/** What to say when `error` is Redis refusing the password (wrong or missing), else null. The message never holds the password. */
export function passwordRefusal(error: Error, target: RedisTarget): string | null {
  if (!/WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(error.message)) return null;
  return `Redis at ${target.display} refused the password (${error.message.slice(0, 120)}): check --redis-password-file or PETREL_REDIS_PASSWORD`;
}

export function whenReady(redis: Redis, target: RedisTarget, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      done();
      reject(new Error(`cannot reach Redis at ${target.display} within ${timeoutMs} ms`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', ready);
      redis.off('error', refused);
    };
    const ready = () => {
      done();
      resolve();
    };
    // A wrong or missing password does not get better by retrying: said at once (the message never holds the password).
    const refused = (error: Error) => {
      const why = passwordRefusal(error, target);
      if (why === null) return;
      done();
      reject(new Error(why));
    };
    redis.once('ready', ready);
    redis.on('error', refused);
  });
}

export interface ClusterOptions {
  readonly redis: RedisTarget;
  /** Several clusters can share one Redis; default "default". */
  readonly name?: string;
  readonly partitions: number | null;
  readonly partition: number | null;
  readonly leaseMs?: number;
  /** Probe the partitions' Bloom filters before forwarding (cluster-bloom.ts); default true. */
  readonly bloom?: boolean;
}

export interface PartitionView {
  readonly partition: number;
  /** The member holding its lease, or null (its links wait in its stream). */
  readonly member: MemberCard | null;
  /** Stream entries waiting (each up to 256 links). */
  readonly backlog: number;
}

export interface ClusterView {
  readonly redis: string;
  readonly partitions: number;
  readonly self: { readonly memberId: string; readonly partition: number };
  readonly control: string;
  readonly members: readonly {
    readonly partition: number;
    readonly owner: { readonly memberId: string; readonly url: string; readonly pid: number; readonly startedAt: number } | null;
    readonly state: string;
    readonly counters: MemberStatus | null;
    /** Stream entries waiting for the partition (each up to 256 links). */
    readonly backlog: number;
  }[];
  readonly sum: Record<string, number>;
}

export class ClusterMember implements ClusterPort {
  readonly membership: Membership;
  readonly router: ClusterLinkRouter;
  readonly bloom: ClusterBloom | null;
  readonly #redis: Redis;
  readonly #reader: Redis;
  readonly #target: RedisTarget;
  #inbox: LinkInbox | null = null;
  #events: ClusterEvents | null = null;
  readonly control: ClusterControl;

  private constructor(redis: Redis, reader: Redis, target: RedisTarget, membership: Membership, bloom: ClusterBloom | null, clock: () => number) {
    this.#redis = redis;
    this.#reader = reader;
    this.#target = target;
    this.membership = membership;
    this.bloom = bloom;
    this.control = new ClusterControl(redis, membership.keys, membership.memberId, clock);
    this.router = new ClusterLinkRouter({ redis, keys: membership.keys, partition: membership.partition, partitions: membership.partitions, bloom });
  }

  static async join(options: ClusterOptions & { url: string; file: string; bloomCapacity: number; clock: () => number; log: (message: string) => void }): Promise<ClusterMember> {
    const redis = connectRedis(options.redis, { name: 'petrel-queue-server', onError: options.log });
    try {
      await whenReady(redis, options.redis, CONNECT_TIMEOUT_MS);
      const renamed = await renameLegacyKeys(redis, options.name ?? 'default');
      if (renamed > 0) options.log(`petrel queue-server: renamed ${renamed} keys of this cluster to the hash-tagged names (shared/cluster-keys.ts)`);
      const membership = await Membership.join({ redis, clusterName: options.name ?? 'default', url: options.url, partitions: options.partitions, partition: options.partition, file: options.file, leaseMs: options.leaseMs, clock: options.clock });
      const reader = duplicateRedis(redis);
      reader.on('error', () => undefined);
      const bloom = options.bloom === false ? null : new ClusterBloom(redis, membership.keys, options.bloomCapacity);
      return new ClusterMember(redis, reader, options.redis, membership, bloom, options.clock);
    } catch (error) {
      redis.disconnect();
      throw error;
    }
  }

  get redisDisplay(): string {
    return this.#target.display;
  }

  /** Starts admitting the links other members forward to this partition. */
  async start(service: CrawlService, log: (message: string) => void): Promise<void> {
    const { partition, keys } = this.membership;
    this.#inbox = new LinkInbox({
      redis: this.#reader,
      keys,
      partition,
      admit: (links) => service.admitForwarded(links),
      inject: (urls) => service.inject(urls),
      committed: () => service.committed(),
      afterCommit: this.bloom === null ? undefined : (known) => this.bloom!.add(partition, known),
      log,
    });
    await this.#inbox.start();
    this.membership.reportStatus(() => this.#statusOf(service));
    // A control given to another member is read at once when it says so (cluster-events.ts).
    this.#events = ClusterEvents.listen(this.#redis, this.membership.keys, (event) => {
      if (event === 'control') void this.control.poll().catch(() => undefined);
    });
    await this.control.follow(
      {
        pause: () => service.pause(),
        resume: () => service.resume(),
        stop: () => service.stop(),
        // Another member was given it: this member's crawl stops first (that member's had), then the same start.
        crawl: async (body) => {
          service.stop();
          return runControl(service, 'crawl', body);
        },
      },
      log,
    );
  }

  #statusOf(service: CrawlService): MemberStatus {
    const status = service.status();
    const counters = this.counters();
    return {
      state: service.displayState(),
      pagesFetched: status.pagesFetched,
      urlsDiscovered: status.urlsDiscovered,
      frontierSize: status.frontierSize,
      itemsLeased: status.itemsLeased,
      errors: status.errors,
      linksForwarded: counters.forwarded ?? 0,
      linksReceived: counters.received ?? 0,
      bloomSkipped: counters.bloomSkipped ?? 0,
    };
  }

  /** A control given to this member that applies to the whole cluster (cluster-control.ts). */
  publishControl(action: ClusterControlAction): Promise<number> {
    return this.control.publish(action, this.membership.memberId);
  }

  /** A crawl start given to this member (started here already), for every other member (cluster-control.ts). */
  publishCrawl(body: unknown): Promise<number> {
    return this.control.publishCrawl(body, this.membership.memberId);
  }

  /** An inject given to this member: other partitions' URLs go to their owners' streams (cluster-inject.ts); the rest is this member's. */
  async injectElsewhere(urls: readonly string[]): Promise<{ own: string[]; forwarded: number }> {
    const { own, elsewhere } = splitInject(urls, this.membership.partition, this.membership.partitions);
    const forwarded = await forwardInject(this.#redis, this.membership.keys, this.membership.partition, elsewhere);
    return { own, forwarded };
  }

  /** GET /api/cluster: every partition with its member, state, counters and backlog, and the sums. */
  async view(): Promise<ClusterView> {
    const partitions = await this.partitions();
    const sum: Record<string, number> = { pagesFetched: 0, urlsDiscovered: 0, frontierSize: 0, itemsLeased: 0, errors: 0, linksForwarded: 0, linksReceived: 0, bloomSkipped: 0, backlog: 0 };
    for (const view of partitions) {
      sum.backlog! += view.backlog;
      const status = view.member?.status;
      if (status === undefined) continue;
      for (const key of Object.keys(sum)) if (key !== 'backlog') sum[key]! += Number((status as unknown as Record<string, unknown>)[key] ?? 0);
    }
    return {
      redis: this.#target.display,
      partitions: this.membership.partitions,
      self: { memberId: this.membership.memberId, partition: this.membership.partition },
      control: this.control.state,
      members: partitions.map(({ partition, member, backlog }) => ({
        partition,
        owner: member === null ? null : { memberId: member.memberId, url: member.url, pid: member.pid, startedAt: member.startedAt },
        state: member?.status?.state ?? (member === null ? 'no-owner' : 'unknown'),
        counters: member?.status ?? null,
        backlog,
      })),
      sum,
    };
  }

  /** Every partition: its owner and backlog, read from Redis now. */
  async partitions(): Promise<PartitionView[]> {
    const { keys, partitions } = this.membership;
    const ids = partitions === 0 ? [] : await this.#redis.mget(...Array.from({ length: partitions }, (_, i) => keys.lease(i)));
    const cards = await Promise.all(ids.map((id) => (id === null ? Promise.resolve(null) : this.#redis.get(keys.member(id)))));
    const backlogs = await Promise.all(Array.from({ length: partitions }, (_, i) => LinkInbox.backlog(this.#redis, keys, i)));
    return ids.map((_, i) => ({ partition: i, member: parseMemberCard(cards[i] ?? null), backlog: backlogs[i] ?? 0 }));
  }

  /** This member's own counters: links routed and forwarded, received and admitted, Bloom skips. */
  counters(): Record<string, number> {
    return { ...this.router.counters, waiting: this.router.waiting, ...(this.#inbox?.counters ?? { received: 0, admitted: 0, malformed: 0, acked: 0, injected: 0, injectAdmitted: 0 }) };
  }

  /** Stops reading the stream (what was read and not acknowledged stays pending). */
  async stopReading(): Promise<void> {
    this.router.close();
    this.control.close();
    this.#events?.close();
    await this.#inbox?.stop();
  }

  /** After the last commit: the lease is given up and the connection closed. */
  async leave(): Promise<void> {
    await this.membership.leave();
    await this.#redis.quit().catch(() => this.#redis.disconnect());
  }

  /** After kill-like failures (start refused): close without giving anything up. */
  disconnect(): void {
    this.#events?.close();
    this.#reader.disconnect();
    this.#redis.disconnect();
  }
}
