/**
 * Cluster membership: which partition this queue server owns, held as a lease in Redis.
 *
 * A lease is a Redis string `lease:i` whose value is the member id and whose TTL is `leaseMs`; the
 * owner renews it every leaseMs/3 (a Lua script: renewed only while the value is still ours, so a
 * member that lost its lease never takes it back by renewing). The member id lives in the data
 * directory (`cluster.json`, with the partition), so a queue server restarted on the same directory,
 * even after kill -9 with its old lease still running, takes its own partition back at once; another
 * member has to wait for the lease to run out. A new data directory takes the first free partition
 * (no lease), or the one pinned with --partition.
 *
 * A member that cannot renew for a whole leaseMs (Redis away, the process stalled) must assume another
 * member may own its partition now: `lost` fires, and the daemon stops rather than crawl the hosts of
 * a partition twice.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { RedisClient as Redis } from './redis-connection.js';
import { clusterKeys, type ClusterKeys, type MemberCard } from '../../shared/cluster-keys.js';
import { readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import { MAX_PARTITIONS } from './partition.js';
import { announce } from './cluster-events.js';

/** Takes or renews the lease when it is free or ours already: 1 taken, 0 held by someone else. */
const TAKE_LEASE = `
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0`;

/** Deletes the lease only if it is still ours. */
const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

export const DEFAULT_LEASE_MS = 10_000;

export interface RememberedMembership {
  readonly memberId: string;
  readonly partition: number;
  readonly partitions: number;
}

export interface JoinOptions {
  readonly redis: Redis;
  readonly clusterName: string;
  /** The URL fetchers reach this queue server at. */
  readonly url: string;
  /** K from --partitions; null: the cluster's (a first member must give it). */
  readonly partitions: number | null;
  /** --partition i; null: the remembered one, else the first free one. */
  readonly partition: number | null;
  /** `cluster.json` of the data directory. */
  readonly file: string;
  readonly leaseMs?: number;
  /** ms since epoch: the queue server's clock (crawl-service.ts systemClock). */
  readonly clock: () => number;
}

/** A refusal to join, written for the operator (cli/options.ts describeError shows its message as it is). */
export class ClusterError extends Error {
  override readonly name = 'ClusterError';
  constructor(readonly code: 'cluster-partitions' | 'cluster-no-free-partition' | 'cluster-partition-held' | 'cluster-data-dir', message: string) {
    super(message);
  }
}

export class Membership extends EventEmitter<{ lost: [string] }> {
  readonly keys: ClusterKeys;
  readonly memberId: string;
  readonly partition: number;
  readonly partitions: number;
  readonly #redis: Redis;
  readonly #leaseMs: number;
  readonly #card: MemberCard;
  readonly #clock: () => number;
  #renewedAt: number;
  #timer: NodeJS.Timeout | null = null;
  #left = false;
  #status: (() => MemberCard['status']) | null = null;

  private constructor(redis: Redis, keys: ClusterKeys, card: MemberCard, partitions: number, leaseMs: number, clock: () => number) {
    super();
    this.#redis = redis;
    this.keys = keys;
    this.memberId = card.memberId;
    this.partition = card.partition;
    this.partitions = partitions;
    this.#card = card;
    this.#leaseMs = leaseMs;
    this.#clock = clock;
    this.#renewedAt = clock();
  }

  /** Joins the cluster: agrees on K, takes a partition's lease, publishes the member card, starts renewing. */
  static async join(options: JoinOptions): Promise<Membership> {
    const { redis } = options;
    const keys = clusterKeys(options.clusterName);
    const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    const { clock } = options;
    const remembered = readJsonFile<RememberedMembership>(options.file);
    // Checked before K is written: a member refused for its directory must not fix K for the others.
    if (remembered !== null && options.partitions !== null && remembered.partitions !== options.partitions) {
      throw new ClusterError('cluster-data-dir', `this data directory belonged to a cluster of ${remembered.partitions} partitions, not --partitions ${options.partitions}: use another directory`);
    }
    if (options.partitions !== null) await redis.hsetnx(keys.meta, 'partitions', String(options.partitions));
    const stored = await redis.hget(keys.meta, 'partitions');
    const partitions = stored === null ? null : Number(stored);
    if (partitions === null || !Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
      throw new ClusterError('cluster-partitions', `the cluster "${options.clusterName}" has no partition count yet: the first member gives --partitions K`);
    }
    if (options.partitions !== null && options.partitions !== partitions) {
      throw new ClusterError('cluster-partitions', `the cluster "${options.clusterName}" has ${partitions} partitions, not --partitions ${options.partitions} (K is fixed for the cluster's life)`);
    }
    if (remembered !== null && remembered.partitions !== partitions) {
      throw new ClusterError('cluster-data-dir', `this data directory belonged to a cluster of ${remembered.partitions} partitions; the cluster has ${partitions}`);
    }
    if (remembered !== null && options.partition !== null && remembered.partition !== options.partition) {
      throw new ClusterError('cluster-data-dir', `this data directory holds partition ${remembered.partition}'s hosts, not --partition ${options.partition}: use another directory`);
    }
    if (options.partition !== null && (options.partition < 0 || options.partition >= partitions)) {
      throw new ClusterError('cluster-partitions', `--partition ${options.partition} is not in [0, ${partitions - 1}]`);
    }
    const memberId = remembered?.memberId ?? randomBytes(8).toString('hex');
    const wanted = remembered?.partition ?? options.partition;
    let partition: number | null = null;
    if (wanted !== null) {
      if ((await redis.eval(TAKE_LEASE, 1, keys.lease(wanted), memberId, String(leaseMs))) === 1) partition = wanted;
      else {
        const holder = await redis.get(keys.lease(wanted));
        const ttl = await redis.pttl(keys.lease(wanted));
        throw new ClusterError('cluster-partition-held', `partition ${wanted} is held by member ${holder ?? '?'} for another ${Math.max(0, ttl)} ms`);
      }
    } else {
      for (let i = 0; i < partitions && partition === null; i++) {
        if ((await redis.eval(TAKE_LEASE, 1, keys.lease(i), memberId, String(leaseMs))) === 1) partition = i;
      }
      if (partition === null) throw new ClusterError('cluster-no-free-partition', `every one of the cluster's ${partitions} partitions has a live owner: no free partition to take`);
    }
    // Remembered before anything is crawled: a restart on this directory must come back to these hosts.
    if (remembered === null) writeFileAtomic(options.file, `${JSON.stringify({ memberId, partition, partitions } satisfies RememberedMembership)}\n`);
    const card: MemberCard = { memberId, url: options.url, partition, pid: process.pid, startedAt: clock() };
    const membership = new Membership(redis, keys, card, partitions, leaseMs, clock);
    await membership.#publish();
    // Fetchers look the queue servers up at once (cluster-events.ts), not at their next poll.
    await announce(redis, keys, 'member');
    membership.#timer = setInterval(() => void membership.#renew(), Math.max(100, Math.floor(leaseMs / 3)));
    membership.#timer.unref();
    return membership;
  }

  /** What the card carries as `status` from the next heartbeat on. */
  reportStatus(status: () => MemberCard['status']): void {
    this.#status = status;
  }

  async #publish(): Promise<void> {
    const card: MemberCard = this.#status === null ? this.#card : { ...this.#card, status: this.#status() };
    await this.#redis.set(this.keys.member(this.memberId), JSON.stringify(card), 'PX', this.#leaseMs);
  }

  async #renew(): Promise<void> {
    if (this.#left) return;
    try {
      const kept = (await this.#redis.eval(TAKE_LEASE, 1, this.keys.lease(this.partition), this.memberId, String(this.#leaseMs))) === 1;
      if (!kept) return this.#lose(`partition ${this.partition}'s lease is held by another member`);
      await this.#publish();
      this.#renewedAt = this.#clock();
    } catch (error) {
      if (this.#clock() - this.#renewedAt >= this.#leaseMs) this.#lose(`the lease could not be renewed for ${this.#leaseMs} ms (${(error as Error).message})`);
    }
  }

  #lose(why: string): void {
    if (this.#left) return;
    this.#stopTimer();
    this.emit('lost', why);
  }

  #stopTimer(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /** A clean stop: the lease and the card are given up (the partition is free at once). */
  async leave(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    this.#stopTimer();
    await this.#redis.eval(RELEASE_LEASE, 1, this.keys.lease(this.partition), this.memberId).catch(() => undefined);
    await this.#redis.del(this.keys.member(this.memberId)).catch(() => undefined);
    await announce(this.#redis, this.keys, 'member');
  }
}
