/**
 * The link router: the seam between admission and the cluster. Admission asks it, before anything
 * else, whether a URL belongs to another partition; if so the router takes the URL (it is forwarded,
 * not admitted here) and admission goes on with the next link.
 *
 * Forwarded links wait in an outbox per partition and are appended to that partition's Redis stream
 * in batches (one stream entry carries up to BATCH_LINKS links) by `drain`, which the crawl service
 * runs before every group commit (crawl-service.ts `beforeCommit`): the crawl database marks a page
 * done only after Redis has acknowledged the links found on it. A queue server killed before the
 * commit loses nothing either: the page is not done on disk, so it is fetched again and its links
 * found again. What Redis acknowledged is durable as far as its persistence setting says (README
 * "Cluster": appendonly yes with appendfsync always; everysec may lose the last second or two of
 * acknowledged appends to a crash).
 */
import { pipelinePerGroup, type RedisClient as Redis } from './redis-connection.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import type { ClusterKeys } from '../../shared/cluster-keys.js';
import { partitionOfUrl } from './partition.js';
import type { BloomProbe } from './cluster-bloom.js';

/** What admission calls (admission.ts): true when the URL was taken for another partition. */
export interface LinkRouter {
  forward(url: NormalizedUrl, depth: number, score: number): boolean;
}

/** One link on the wire: the URL, its depth and its OPIC share. */
export type ForwardedLink = readonly [url: string, depth: number, score: number];

export const BATCH_LINKS = 256;
/** A drain that Redis does not answer within this long fails the commit (503 to the posts waiting). */
export const DRAIN_TIMEOUT_MS = 5000;

export interface RouterCounters {
  /** Links handed to the router for other partitions. */
  routed: number;
  /** Links appended to other partitions' streams. */
  forwarded: number;
  /** Links not sent because the target partition's Bloom filter says it has them (cluster-bloom.ts). */
  bloomSkipped: number;
  /** Stream entries appended (batches). */
  batches: number;
  /** Bytes of link JSON appended. */
  bytes: number;
}

export class ClusterLinkRouter implements LinkRouter {
  readonly #redis: Redis;
  readonly #keys: ClusterKeys;
  readonly #own: number;
  readonly #partitions: number;
  readonly #bloom: BloomProbe | null;
  /** Links waiting per partition, in the order found. */
  #outbox = new Map<number, ForwardedLink[]>();
  #waiting = 0;
  /** Links of the batch on its way to Redis. */
  #sending = 0;
  /** Drains run one after another: a later commit must not pass links an earlier drain still holds. */
  #chain: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | null = null;
  readonly counters: RouterCounters = { routed: 0, forwarded: 0, bloomSkipped: 0, batches: 0, bytes: 0 };

  constructor(options: { redis: Redis; keys: ClusterKeys; partition: number; partitions: number; bloom?: BloomProbe | null }) {
    this.#redis = options.redis;
    this.#keys = options.keys;
    this.#own = options.partition;
    this.#partitions = options.partitions;
    this.#bloom = options.bloom ?? null;
  }

  forward(url: NormalizedUrl, depth: number, score: number): boolean {
    const partition = partitionOfUrl(url, this.#partitions);
    if (partition === this.#own) return false;
    let links = this.#outbox.get(partition);
    if (links === undefined) this.#outbox.set(partition, (links = []));
    links.push([url, depth, score]);
    this.#waiting++;
    this.counters.routed++;
    // Links also leave between commits (a quiet crawl's seeds), never later than the next commit.
    this.#timer ??= setTimeout(() => {
      this.#timer = null;
      this.drain().catch(() => undefined);
    }, 200);
    return true;
  }

  /** Links routed and not yet acknowledged by Redis (in the outbox or on their way). */
  get waiting(): number {
    return this.#waiting + this.#sending;
  }

  /**
   * Appends everything in the outbox to the streams; resolves when Redis acknowledged all of it and
   * the outbox is empty (links routed while a batch was on its way are sent too). On failure the
   * links go back to the outbox and it throws.
   */
  drain(): Promise<void> {
    const run = this.#chain.then(async () => {
      while (this.#waiting > 0) await this.#sendOnce();
    });
    this.#chain = run.catch(() => undefined);
    return run;
  }

  async #sendOnce(): Promise<void> {
    const taken = this.#outbox;
    const count = this.#waiting;
    this.#outbox = new Map();
    this.#waiting = 0;
    this.#sending = count;
    try {
      await withTimeout(this.#send(taken), DRAIN_TIMEOUT_MS);
      this.#sending = 0;
    } catch (error) {
      this.#sending = 0;
      // Back in front of what came meanwhile, order kept; a batch Redis took after all comes twice, which the owner's seen-set absorbs.
      for (const [partition, links] of this.#outbox) taken.set(partition, [...(taken.get(partition) ?? []), ...links]);
      this.#outbox = taken;
      this.#waiting += count;
      throw error;
    }
  }

  async #send(taken: Map<number, ForwardedLink[]>): Promise<void> {
    let sending = taken;
    if (this.#bloom !== null) {
      const known = await this.#bloom.knownOf(taken);
      sending = new Map();
      for (const [partition, links] of taken) {
        const kept = links.filter((_, i) => !known.get(partition)![i]);
        this.counters.bloomSkipped += links.length - kept.length;
        if (kept.length > 0) sending.set(partition, kept);
      }
    }
    let batches = 0;
    let bytes = 0;
    let links = 0;
    const entries = [...sending].map(([partition, list]) => {
      const jsons: string[] = [];
      for (let at = 0; at < list.length; at += BATCH_LINKS) jsons.push(JSON.stringify(list.slice(at, at + BATCH_LINKS)));
      batches += jsons.length;
      bytes += jsons.reduce((total, json) => total + json.length, 0);
      links += list.length;
      return [partition, jsons] as const;
    });
    if (batches === 0) return;
    await pipelinePerGroup(this.#redis, entries, (pipeline, [partition, jsons]) => {
      for (const json of jsons) pipeline.xadd(this.#keys.links(partition), '*', 'from', String(this.#own), 'links', json);
    });
    this.counters.forwarded += links;
    this.counters.batches += batches;
    this.counters.bytes += bytes;
  }

  close(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
