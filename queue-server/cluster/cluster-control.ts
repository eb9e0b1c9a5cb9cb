/**
 * Cluster-wide pause, resume, stop and crawl start: the control a member is given (its API or admin
 * page) is written to the cluster's control hash in Redis with a version, and every member applies
 * the latest version it has not applied yet. A member looks the hash up every CONTROL_POLL_MS, and at once
 * when the cluster's events channel says it changed (cluster-events.ts); a member that joins later
 * applies the current state at start, so a member restarted into a paused cluster stays paused.
 *
 * A crawl start (new settings and seeds, api/crawl-control.ts `crawl`) is kept in the hash with the
 * version that made it (`crawl`, `crawlVersion`). A member applies a crawl version once: the last one
 * it applied is kept in Redis (`controlApplied`, by member id, which lives in the data directory), so
 * a member that was down when a crawl was started applies it when it comes back, and one that applied
 * it does not start it again at a restart. Applying it stops the member's current crawl first (the
 * member given it had stopped or finished; the others follow it) and then starts the new one with the
 * same settings and seeds as every other member (each admits its own partition's seeds and forwards
 * the others', which their owners' seen-sets absorb).
 *
 * Inject is not a control of the whole cluster: each URL goes to its owner (cluster-inject.ts).
 */
import type { RedisClient as Redis } from './redis-connection.js';
import type { ClusterKeys } from '../../shared/cluster-keys.js';

export const CLUSTER_CONTROLS = ['pause', 'resume', 'stop'] as const;
export type ClusterControlAction = (typeof CLUSTER_CONTROLS)[number];
export type ClusterControlState = 'active' | 'paused' | 'stopped';

/** The slower fallback to the events channel (cluster-events.ts), which says at once when the hash changed. */
export const CONTROL_POLL_MS = 2000;
/** A crawl start's body is at most 1000 seeds of 2048 characters and the settings. */
const MAX_CRAWL_JSON = 4 * 1024 * 1024;

const STATE_OF: Record<ClusterControlAction, ClusterControlState> = { pause: 'paused', resume: 'active', stop: 'stopped' };

/** One version for state and crawl start, written in one script so a reader never sees half of it. */
const PUBLISH = `
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'by', ARGV[2], 'at', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'crawl', ARGV[4], 'crawlVersion', v) end
if ARGV[5] ~= '' then redis.call('HSET', KEYS[2], ARGV[5], v) end
redis.call('PUBLISH', KEYS[3], 'control')
return v`;

/** The state, and the crawl start only when it is newer than ARGV[1] (it may be megabytes). */
const READ = `
local h = redis.call('HMGET', KEYS[1], 'version', 'state', 'crawlVersion')
local crawl = ''
if tonumber(h[3] or '0') > tonumber(ARGV[1]) then crawl = redis.call('HGET', KEYS[1], 'crawl') or '' end
return {h[1] or '0', h[2] or '', h[3] or '0', crawl}`;

export interface ControlTarget {
  pause(): void;
  resume(): void;
  stop(): unknown;
  /** Starts the crawl another member was given (stopping the current one first); rejects when it cannot. */
  crawl(body: unknown): Promise<unknown>;
}

export class ClusterControl {
  readonly #redis: Redis;
  readonly #keys: ClusterKeys;
  readonly #memberId: string;
  #applied = 0;
  #appliedCrawl: number | null = null;
  #state: ClusterControlState = 'active';
  #timer: NodeJS.Timeout | null = null;
  #polling: Promise<void> | null = null;
  #again = false;
  #follow: { target: ControlTarget; log: (message: string) => void } | null = null;
  readonly #clock: () => number;

  readonly #pollMs: number;

  constructor(redis: Redis, keys: ClusterKeys, memberId: string, clock: () => number, pollMs = CONTROL_POLL_MS) {
    this.#pollMs = pollMs;
    this.#redis = redis;
    this.#keys = keys;
    this.#memberId = memberId;
    this.#clock = clock;
  }

  get state(): ClusterControlState {
    return this.#state;
  }

  /** Applies the cluster's current state (and a crawl start not applied yet) now, then follows it. */
  async follow(target: ControlTarget, log: (message: string) => void): Promise<void> {
    this.#follow = { target, log };
    await this.poll();
    this.#timer = setInterval(() => void this.poll().catch(() => undefined), this.#pollMs);
    this.#timer.unref();
  }

  /** Gives the whole cluster this control (the caller applied it to its own member already). */
  async publish(action: ClusterControlAction, by: string): Promise<number> {
    return this.#publish(STATE_OF[action], by, '');
  }

  /** Gives the whole cluster this crawl start (the caller started it on its own member already). */
  async publishCrawl(body: unknown, by: string): Promise<number> {
    const json = JSON.stringify(body);
    if (json.length > MAX_CRAWL_JSON) throw new Error(`a crawl start of ${json.length} characters is more than the cluster passes on (${MAX_CRAWL_JSON})`);
    const version = await this.#publish('active', by, json, this.#memberId);
    // Applied here already: the member given it does not start it a second time.
    this.#appliedCrawl = Math.max(this.#appliedCrawl ?? 0, version);
    this.#state = 'active';
    return version;
  }

  async #publish(state: ClusterControlState, by: string, crawl: string, appliedBy = ''): Promise<number> {
    const version = await this.#redis.eval(PUBLISH, 3, this.#keys.control, this.#keys.controlApplied, this.#keys.events, state, by.slice(0, 64), String(this.#clock()), crawl, appliedBy);
    return Number(version);
  }

  /** Looks the control hash up now (coalesced: one look-up at a time, one more if asked meanwhile). */
  poll(): Promise<void> {
    if (this.#polling !== null) {
      this.#again = true;
      return this.#polling;
    }
    this.#polling = (async () => {
      try {
        do {
          this.#again = false;
          await this.#pollOnce();
        } while (this.#again);
      } finally {
        this.#polling = null;
      }
    })();
    return this.#polling;
  }

  async #pollOnce(): Promise<void> {
    const follow = this.#follow;
    if (follow === null) return;
    const { target, log } = follow;
    this.#appliedCrawl ??= Number((await this.#redis.hget(this.#keys.controlApplied, this.#memberId)) ?? 0);
    const [version, state, crawlVersion, crawl] = (await this.#redis.eval(READ, 1, this.#keys.control, String(this.#appliedCrawl))) as [string, string, string, string];
    const number = Number(version);
    const crawlNumber = Number(crawlVersion);
    if (crawlNumber > this.#appliedCrawl && crawl !== '' && crawl.length <= MAX_CRAWL_JSON) {
      let body: unknown = null;
      try {
        body = JSON.parse(crawl);
      } catch {
        body = null;
      }
      try {
        await target.crawl(body);
        log(`petrel queue-server: started the cluster's crawl (control version ${crawlNumber})`);
      } catch (error) {
        // A crawl start this member refuses (its settings do not validate here) is not retried for ever.
        log(`petrel queue-server: cannot start the cluster's crawl (control version ${crawlNumber}): ${(error as Error).message.slice(0, 200)}`);
      }
      this.#appliedCrawl = crawlNumber;
      this.#state = 'active';
      await this.#redis.hset(this.#keys.controlApplied, this.#memberId, String(crawlNumber));
    }
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
    this.#follow = null;
  }
}
