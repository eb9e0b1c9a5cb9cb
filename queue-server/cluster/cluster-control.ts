/**
 * Cluster-wide pause, resume and stop: the control a member is given (its API or admin page) is
 * written to the cluster's control hash in Redis with a version, and every member applies the latest
 * version it has not applied yet (looked up every POLL_MS; a member that joins later applies the
 * current state at start, so a member restarted into a paused cluster stays paused). Inject and new
 * crawl settings stay per member: seeds and settings are given to each member at its start.
 */
import type { Redis } from 'ioredis';
import type { ClusterKeys } from '../../shared/cluster-keys.js';

export const CLUSTER_CONTROLS = ['pause', 'resume', 'stop'] as const;
export type ClusterControlAction = (typeof CLUSTER_CONTROLS)[number];
export type ClusterControlState = 'active' | 'paused' | 'stopped';

const POLL_MS = 500;

const STATE_OF: Record<ClusterControlAction, ClusterControlState> = { pause: 'paused', resume: 'active', stop: 'stopped' };

export interface ControlTarget {
  pause(): void;
  resume(): void;
  stop(): unknown;
}

export class ClusterControl {
  readonly #redis: Redis;
  readonly #keys: ClusterKeys;
  #applied = 0;
  #state: ClusterControlState = 'active';
  #timer: NodeJS.Timeout | null = null;
  readonly #clock: () => number;

  constructor(redis: Redis, keys: ClusterKeys, clock: () => number) {
    this.#redis = redis;
    this.#keys = keys;
    this.#clock = clock;
  }

  get state(): ClusterControlState {
    return this.#state;
  }

  /** Applies the cluster's current state now, then follows it. */
  async follow(target: ControlTarget, log: (message: string) => void): Promise<void> {
    await this.#poll(target, log);
    this.#timer = setInterval(() => void this.#poll(target, log).catch(() => undefined), POLL_MS);
    this.#timer.unref();
  }

  /** Gives the whole cluster this control (the caller applies it to its own member at once). */
  async publish(action: ClusterControlAction, by: string): Promise<number> {
    // One transaction: a member reading between a new version and its state would skip the state for good.
    const results = await this.#redis.multi().hincrby(this.#keys.control, 'version', 1).hset(this.#keys.control, 'state', STATE_OF[action], 'by', by.slice(0, 64), 'at', String(this.#clock())).exec();
    const [error, version] = results?.[0] ?? [new Error('the transaction was discarded'), 0];
    if (error !== null) throw error;
    return Number(version);
  }

  async #poll(target: ControlTarget, log: (message: string) => void): Promise<void> {
    const [version, state] = await this.#redis.hmget(this.#keys.control, 'version', 'state');
    const number = Number(version ?? 0);
    if (!(number > this.#applied) || (state !== 'active' && state !== 'paused' && state !== 'stopped')) return;
    this.#applied = number;
    if (state === this.#state) return;
    this.#state = state;
    log(`petrel queue-server: the cluster is ${state} (control version ${number})`);
    if (state === 'paused') target.pause();
    else if (state === 'active') target.resume();
    else target.stop();
  }

  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }
}
