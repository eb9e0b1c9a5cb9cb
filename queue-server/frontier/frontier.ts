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
 * calls: the frontier's own, and OriginQueue's verbs (a slot back, a delay). Heap entries carry the origin's version at insertion; an entry whose version is old is
 * stale and skipped, so nothing is ever removed from the middle of a heap.
 *
 * Memory: about 100 bytes per queued URL plus the URL text. The bound on queued URLs is enforced by
 * the caller (admission/admission.ts, `maxQueuedUrls`).
 */
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import type { UrlHash } from '../../shared/url-hash.js';
import { OriginRobots, type RobotsState } from '../robots/origin-robots.js';
import { MinHeap } from './heap.js';
import type { PolitenessGroup } from './politeness-group.js';

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

/** What only the frontier touches of an origin: its line of URLs and the version its filings carry. */
class OriginLine {
  readonly urls = new MinHeap<QueuedUrl>((a, b) => a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq));
  /** Queued URLs already counted against --max-pages (back from an expired lease). */
  chargedQueued = 0;
  version = 0;
}

/** The frontier's way into an origin's line; no other module can reach it (set by OriginQueue's static block). */
let lineOf: (queue: OriginQueue) => OriginLine;

/**
 * One origin's place in the crawl: its queued URLs (the frontier's), its slots out, the earliest start
 * of its next slot, and its robots.txt state (robots/origin-robots.ts). Its fields change only through
 * its verbs; those that can change whether or when it gets a slot re-file it in the frontier.
 */
export class OriginQueue {
  readonly origin: string;
  /** The origin's robots.txt state; robots/origin-robots.ts is its only writer. */
  readonly robots: OriginRobots;
  readonly #line = new OriginLine();
  /** Re-files the origin in its frontier (Frontier.reconsider); nothing for an origin outside one. */
  readonly #refile: (queue: OriginQueue, now: number) => void;
  #slotsOut = 0;
  /** URLs of this origin admitted in this process (the per-host page budget counts them). */
  #admitted = 0;
  /** Earliest start of the next slot, ms since epoch (politeness, Retry-After, robots.txt retries). */
  #nextStartAt = 0;
  /** The origins on the same address, whose slots count with this one's (politeness-group.ts); null until its address is known. */
  #group: PolitenessGroup | null = null;

  static {
    lineOf = (queue) => queue.#line;
  }

  constructor(origin: string, refile: (queue: OriginQueue, now: number) => void = () => {}) {
    this.origin = origin;
    this.robots = new OriginRobots(origin);
    this.#refile = refile;
  }

  /** Slots out that count against the origin's concurrency: its own, or its address group's. */
  get slotsOut(): number {
    return this.#group?.slotsOut ?? this.#slotsOut;
  }

  get admitted(): number {
    return this.#admitted;
  }

  /** Earliest start of its next slot: its own, and its address group's. */
  get nextStartAt(): number {
    return Math.max(this.#nextStartAt, this.#group?.nextStartAt ?? 0);
  }

  /** Joins (or with null leaves) an address group (politeness-group.ts); its slots out move with it. */
  joinGroup(group: PolitenessGroup | null, now: number): void {
    if (this.#group === group) return;
    if (this.#group !== null) this.#group.slotsOut -= this.#slotsOut;
    this.#group = group;
    if (group !== null) group.slotsOut += this.#slotsOut;
    this.#refile(this, now);
  }

  /** Re-files the origin in its frontier (its address group freed a slot). */
  refile(now: number): void {
    this.#refile(this, now);
  }

  /** URLs waiting in the origin's queue. */
  get queuedUrls(): number {
    return this.#line.urls.size;
  }

  /** Queued URLs already counted against --max-pages. */
  get chargedQueued(): number {
    return this.#line.chargedQueued;
  }

  get robotsState(): RobotsState {
    return this.robots.state;
  }

  needsRobots(now: number): boolean {
    return this.robots.needsFetch(now);
  }

  /** A URL of the origin was admitted (counts against --max-pages-per-host). */
  countAdmitted(): void {
    this.#admitted++;
  }

  /** A new crawl starts: the per-host budget counts from zero again. */
  resetAdmitted(): void {
    this.#admitted = 0;
  }

  /**
   * A slot of the origin goes out. Not re-filed here: the schedule cutter holds the origin out of line
   * (popEligible) while it cuts, and re-files every origin it touched when the cut is done.
   */
  startSlot(): void {
    this.#slotsOut++;
    if (this.#group !== null) this.#group.slotsOut++;
  }

  /** A slot came back (its results arrived, or its lease ran out); the next may start no earlier than `restUntil`. */
  finishSlot(now: number, restUntil = 0): void {
    if (this.#slotsOut === 0) throw new Error(`origin ${this.origin}: a slot finished that never started`);
    this.#slotsOut--;
    this.#nextStartAt = Math.max(this.#nextStartAt, restUntil);
    // The group first: the origin is filed against the group's count after this slot.
    this.#group?.released(this, restUntil, now);
    this.#refile(this, now);
  }

  /** No new slot of the origin before `at`, ms since epoch (Retry-After, an unreachable robots.txt). */
  delayUntil(at: number, now: number): void {
    this.#nextStartAt = Math.max(this.#nextStartAt, at);
    this.#refile(this, now);
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
    return this.#origins.get(origin)?.queuedUrls ?? 0;
  }

  get originCount(): number {
    return this.#origins.size;
  }

  origin(origin: string): OriginQueue {
    let queue = this.#origins.get(origin);
    if (queue === undefined) {
      queue = new OriginQueue(origin, (refiled, now) => this.reconsider(refiled, now));
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
    const line = lineOf(queue);
    const wasEmpty = line.urls.size === 0;
    const head = line.urls.peek();
    line.urls.push(entry);
    this.#queued++;
    if (wasEmpty) this.#queuedOrigins++;
    if (entry.charged) {
      line.chargedQueued++;
      this.#chargedQueued++;
    }
    if (wasEmpty || (head !== undefined && line.urls.peek() !== head)) this.reconsider(queue, now);
  }

  /** Drops every queued URL (robots knowledge and slot accounting stay); returns how many. */
  clear(now: number): number {
    const dropped = this.#queued;
    for (const queue of this.#origins.values()) {
      const line = lineOf(queue);
      line.urls.clear();
      line.chargedQueued = 0;
      this.reconsider(queue, now);
    }
    this.#queued = 0;
    this.#chargedQueued = 0;
    this.#queuedOrigins = 0;
    this.#eligible.clear();
    this.#timed.clear();
    return dropped;
  }

  /** A new crawl: every origin's page budget (--max-pages-per-host) counts from zero. */
  resetBudgets(): void {
    for (const queue of this.#origins.values()) queue.resetAdmitted();
  }

  /** Takes the next URL of an origin, in breadth-first order. */
  take(queue: OriginQueue): QueuedUrl | undefined {
    const line = lineOf(queue);
    const entry = line.urls.pop();
    if (entry === undefined) return undefined;
    this.#queued--;
    if (line.urls.size === 0) this.#queuedOrigins--;
    if (entry.charged) {
      line.chargedQueued--;
      this.#chargedQueued--;
    }
    return entry;
  }

  /** Re-files an origin after anything that may change whether, or when, it can get a slot. */
  reconsider(queue: OriginQueue, now: number): void {
    const line = lineOf(queue);
    line.version++;
    const head = line.urls.peek();
    if (head === undefined) return;
    if (queue.robotsState === 'fetching') return;
    if (queue.slotsOut >= this.#policy.concurrencyOf(queue)) return;
    const entry = { queue, version: line.version, priority: head.priority, seq: head.seq, at: queue.nextStartAt };
    if (queue.nextStartAt > now) this.#timed.push(entry);
    else this.#eligible.push(entry);
  }

  /** The origin whose head URL comes first among those that may start a slot now, removed from the line. */
  popEligible(now: number): OriginQueue | undefined {
    this.#promoteTimed(now);
    for (;;) {
      const entry = this.#eligible.pop();
      if (entry === undefined) return undefined;
      const line = lineOf(entry.queue);
      if (entry.version !== line.version) continue;
      line.version++;
      return entry.queue;
    }
  }

  /** When the earliest origin still waiting on time may start (after `now`), ms since epoch; null when none. */
  nextWakeAt(now: number): number | null {
    this.#promoteTimed(now);
    for (;;) {
      const entry = this.#timed.peek();
      if (entry === undefined) return null;
      if (entry.version === lineOf(entry.queue).version) return entry.at;
      this.#timed.pop();
    }
  }

  #promoteTimed(now: number): void {
    for (;;) {
      const entry = this.#timed.peek();
      if (entry === undefined || entry.at > now) return;
      this.#timed.pop();
      if (entry.version === lineOf(entry.queue).version) this.#eligible.push(entry);
    }
  }
}
