/**
 * The frontier: URLs admitted to the crawl and not yet handed out, one queue per origin, plus the two
 * readiness queues that let a schedule be cut without scanning every origin.
 *
 *   origin queues        MinHeap of QueuedUrl by (priority, seq): the depth for breadth-first order,
 *                        minus the OPIC score for page-importance order (the score when queued)
 *   eligible             origins with work, a free slot and nothing to wait for, by their head URL
 *   timed                origins with work and a free slot that may start again at `nextStartAt`
 *   (neither)            origins at their concurrency limit, or waiting for their robots.txt
 *
 * An origin moves between these only through `reconsider`, which every change that can affect it
 * calls. Heap entries carry the origin's version at insertion; an entry whose version is old is
 * stale and skipped, so nothing is ever removed from the middle of a heap.
 *
 * Memory: about 100 bytes per queued URL plus the URL text. The bound on queued URLs is enforced by
 * the caller (see crawl.ts, `maxQueuedUrls`).
 */
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import type { UrlHash } from '../../shared/url-hash.js';
import { MinHeap } from './heap.js';
import type { RobotsRules } from '../robots/robots.js';

export interface QueuedUrl {
  readonly url: NormalizedUrl;
  readonly hash: UrlHash;
  readonly depth: number;
  /** Lower goes first: the depth (breadth-first) or minus the page-importance score (OPIC). */
  readonly priority: number;
  /** Admission order: ties in priority go first-come first-served. */
  readonly seq: number;
  /** True once the URL counted against --max-pages, so a re-leased URL is not counted twice. */
  charged: boolean;
  /** Out on a lease now. */
  leased?: boolean;
  /** Its result arrived by another way (after a restart): skip it when it comes up. */
  settled?: boolean;
  /** Redirects followed to reach it (0 for a link). */
  redirectHops?: number;
}

export type RobotsState = 'unknown' | 'fetching' | 'known';

export class OriginQueue {
  readonly origin: string;
  readonly urls = new MinHeap<QueuedUrl>((a, b) => a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq));
  slotsOut = 0;
  /** Queued URLs already counted against --max-pages (back from an expired lease). */
  chargedQueued = 0;
  /** URLs of this origin admitted in this process (the per-host page budget counts them). */
  admitted = 0;
  /** Consecutive robots.txt fetches that found the origin unreachable. */
  robotsFailures = 0;
  /** Earliest start of the next slot, ms since epoch (politeness at concurrency 1). */
  nextStartAt = 0;
  robotsState: RobotsState = 'unknown';
  /** The robots.txt kept on disk was consulted (once per process). */
  robotsLoaded = false;
  robots: RobotsRules | null = null;
  version = 0;

  constructor(origin: string) {
    this.origin = origin;
  }

  needsRobots(now: number): boolean {
    return this.robotsState === 'unknown' || (this.robotsState === 'known' && this.robots !== null && this.robots.expiresAt <= now);
  }
}

interface HeapEntry {
  readonly queue: OriginQueue;
  readonly version: number;
  readonly priority: number;
  readonly seq: number;
  readonly at: number;
}

export interface FrontierPolicy {
  /** Concurrent slots allowed for the origin right now (1 when robots.txt sets a Crawl-delay). */
  concurrencyOf(queue: OriginQueue): number;
}

export class Frontier {
  readonly #origins = new Map<string, OriginQueue>();
  readonly #eligible = new MinHeap<HeapEntry>((a, b) => a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq));
  readonly #timed = new MinHeap<HeapEntry>((a, b) => a.at < b.at);
  readonly #policy: FrontierPolicy;
  #queued = 0;
  #chargedQueued = 0;
  /** Origins whose queue is not empty (for the admin page's waiting hosts). */
  #queuedOrigins = 0;
  #seq = 0;

  constructor(policy: FrontierPolicy) {
    this.#policy = policy;
  }

  /** URLs waiting in origin queues. */
  get queued(): number {
    return this.#queued;
  }

  /** Queued URLs already counted against --max-pages: they are due even when the budget is spent. */
  get chargedQueued(): number {
    return this.#chargedQueued;
  }

  /** Origins with at least one queued URL. */
  get queuedOrigins(): number {
    return this.#queuedOrigins;
  }

  /** URLs of the origin waiting in its queue; 0 for an origin never seen. */
  queuedOf(origin: string): number {
    return this.#origins.get(origin)?.urls.size ?? 0;
  }

  get originCount(): number {
    return this.#origins.size;
  }

  origin(origin: string): OriginQueue {
    let queue = this.#origins.get(origin);
    if (queue === undefined) {
      queue = new OriginQueue(origin);
      this.#origins.set(origin, queue);
    }
    return queue;
  }

  origins(): IterableIterator<OriginQueue> {
    return this.#origins.values();
  }

  /** Queues a URL; `priority` defaults to its depth (breadth-first). */
  add(origin: string, url: NormalizedUrl, hash: UrlHash, depth: number, now: number, priority: number = depth): QueuedUrl {
    const entry: QueuedUrl = { url, hash, depth, priority, seq: this.#seq++, charged: false };
    this.push(this.origin(origin), entry, now);
    return entry;
  }

  /** Puts a URL back (lease expired), keeping its place in line. */
  push(queue: OriginQueue, entry: QueuedUrl, now: number): void {
    const wasEmpty = queue.urls.size === 0;
    const head = queue.urls.peek();
    queue.urls.push(entry);
    this.#queued++;
    if (wasEmpty) this.#queuedOrigins++;
    if (entry.charged) {
      queue.chargedQueued++;
      this.#chargedQueued++;
    }
    if (wasEmpty || (head !== undefined && queue.urls.peek() !== head)) this.reconsider(queue, now);
  }

  /** Drops every queued URL (robots knowledge and slot accounting stay); returns how many. */
  clear(now: number): number {
    const dropped = this.#queued;
    for (const queue of this.#origins.values()) {
      queue.urls.clear();
      queue.chargedQueued = 0;
      this.reconsider(queue, now);
    }
    this.#queued = 0;
    this.#chargedQueued = 0;
    this.#queuedOrigins = 0;
    this.#eligible.clear();
    this.#timed.clear();
    return dropped;
  }

  /** Takes the next URL of an origin, in breadth-first order. */
  take(queue: OriginQueue): QueuedUrl | undefined {
    const entry = queue.urls.pop();
    if (entry === undefined) return undefined;
    this.#queued--;
    if (queue.urls.size === 0) this.#queuedOrigins--;
    if (entry.charged) {
      queue.chargedQueued--;
      this.#chargedQueued--;
    }
    return entry;
  }

  /** Re-files an origin after anything that may change whether, or when, it can get a slot. */
  reconsider(queue: OriginQueue, now: number): void {
    queue.version++;
    const head = queue.urls.peek();
    if (head === undefined) return;
    if (queue.robotsState === 'fetching') return;
    if (queue.slotsOut >= this.#policy.concurrencyOf(queue)) return;
    const entry = { queue, version: queue.version, priority: head.priority, seq: head.seq, at: queue.nextStartAt };
    if (queue.nextStartAt > now) this.#timed.push(entry);
    else this.#eligible.push(entry);
  }

  /** The origin whose head URL comes first among those that may start a slot now, removed from the line. */
  popEligible(now: number): OriginQueue | undefined {
    this.#promoteTimed(now);
    for (;;) {
      const entry = this.#eligible.pop();
      if (entry === undefined) return undefined;
      if (entry.version !== entry.queue.version) continue;
      entry.queue.version++;
      return entry.queue;
    }
  }

  /** When the earliest origin still waiting on time may start (after `now`), ms since epoch; null when none. */
  nextWakeAt(now: number): number | null {
    this.#promoteTimed(now);
    for (;;) {
      const entry = this.#timed.peek();
      if (entry === undefined) return null;
      if (entry.version === entry.queue.version) return entry.at;
      this.#timed.pop();
    }
  }

  #promoteTimed(now: number): void {
    for (;;) {
      const entry = this.#timed.peek();
      if (entry === undefined || entry.at > now) return;
      this.#timed.pop();
      if (entry.version === entry.queue.version) this.#eligible.push(entry);
    }
  }
}
