/**
 * The frontier: URLs admitted to the crawl and not yet handed out, one queue per origin, plus the two
 * readiness queues that let a schedule be cut without scanning every origin.
 *
 *   origin queues        the heads in memory, a MinHeap of QueuedUrl by (priority, seq): the depth for
 *                        breadth-first order, minus the OPIC score for page-importance order (the score
 *                        when queued); the rest on disk (frontier-store.ts), read back in batches in
 *                        priority order when an origin's heads run out
 *   eligible             origins with work, a free slot and nothing to wait for, by their head URL
 *   timed                origins with work and a free slot that may start again at `nextStartAt`
 *   (neither)            origins at their concurrency limit, or waiting for their robots.txt
 *
 * An origin moves between these only through `reconsider`, which every change that can affect it
 * calls: the frontier's own, and OriginQueue's verbs (a slot back, a delay). Heap entries carry the origin's version at insertion; an entry whose version is old is
 * stale and skipped, so nothing is ever removed from the middle of a heap.
 *
 * With a store every queued URL is on disk from the moment it is queued until it is settled (its
 * result, denial or skip applied: `settle`), and at most `memoryUrls` of them (plus `refillSlack`,
 * as many again, and URLs given back from leases) are in memory as heads; a URL queued while memory
 * is full, or behind URLs of its origin that are on disk only, stays on disk only. Nothing is dropped for lack of memory. Within an origin the URLs come
 * in priority order, except that heads already in memory go before a better URL queued after them
 * while memory was full (the next refill reads the disk in order again).
 *
 * Memory: about 100 bytes per URL in memory (at most `memoryUrls`) plus the URL text, and per origin
 * with work its OriginQueue (about 300 bytes). Without a store (unit tests of the cutter) every URL
 * is in memory.
 */
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import { urlHashFromHalves, urlHashHigh, urlHashLow, type UrlHash } from '../../shared/url-hash.js';
import { OriginRobots, type RobotsState } from '../robots/origin-robots.js';
import { crawlDelayOf } from '../robots/robots.js';
import { BiggestQueues } from './biggest-queues.js';
import { MinHeap } from './heap.js';
import type { PolitenessGroup } from './politeness-group.js';
import { priorityBucket, seqOfKey, urlKey, type FrontierStore, type StoreKey } from './frontier-store.js';

export interface QueuedUrl {
  readonly url: NormalizedUrl;
  readonly hash: UrlHash;
  /** The hash's first and last four bytes as unsigned 32-bit numbers (urlHashHigh, urlHashLow): compared without making the hash's bytes. */
  readonly hashHigh: number;
  readonly hashLow: number;
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
  /** Its key in the frontier store; absent for a frontier without one. */
  readonly key?: StoreKey;
}

/**
 * A queued URL as the frontier holds it in memory. Its hash is kept as two 32-bit halves, and `hash`
 * makes the 8 bytes when asked (short-lived, from Node's Buffer pool). 8 bytes of its own cost far
 * more than 8: a heap snapshot after a 300,000-URL inject held 100,003 such arrays of 8 bytes, each a
 * Uint8Array (96 bytes) over an ArrayBuffer (88) over a native backing store, and a slice of the pool
 * instead keeps a whole 8 KiB slab alive (shared/url-hash.ts).
 */
class ResidentUrl implements QueuedUrl {
  readonly #high: number;
  readonly #low: number;
  charged = false;
  leased?: boolean;
  settled?: boolean;
  redirectHops?: number;

  constructor(
    readonly url: NormalizedUrl,
    hash: UrlHash,
    readonly depth: number,
    readonly priority: number,
    readonly seq: number,
    readonly key?: StoreKey,
  ) {
    this.#high = urlHashHigh(hash);
    this.#low = urlHashLow(hash);
  }

  get hash(): UrlHash {
    return urlHashFromHalves(this.#high, this.#low);
  }

  get hashHigh(): number {
    return this.#high;
  }

  get hashLow(): number {
    return this.#low;
  }
}

/** Which of two queued URLs of an origin goes first. One function for every origin's heap: a closure per origin costs memory per host. */
const queuedFirst = (a: QueuedUrl, b: QueuedUrl): boolean => a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq);

/** What only the frontier touches of an origin: its line of URLs and the version its filings carry. */
class OriginLine {
  /** The URLs in memory (the heads). */
  readonly urls = new MinHeap<QueuedUrl>(queuedFirst);
  /** Queued URLs already counted against --max-pages (back from an expired lease). */
  chargedQueued = 0;
  version = 0;
  /** The origin's id in the store; 0 before its first URL is stored. */
  id = 0;
  /** The origin's next admission counter in the store. */
  seq = 0;
  /** Store keys with a smaller counter were written by an earlier process: checked when read back. */
  firstSeqOfRun = 0;
  /** Queued URLs on disk only (not in memory, not out on lease). */
  onDisk = 0;
  /** Queued URLs of the origin in the store (written or staged), for its directory record. */
  stored = 0;
  /** The priority (and tie order) to file the origin under while its heads are on disk only. */
  diskPriority = 0;
  diskSeq = 0;
  /** An operator named the origin (inject): its host may be on a private address, as a seed's host may. */
  trusted = false;
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

  /** URLs waiting in the origin's queue (in memory and on disk). */
  get queuedUrls(): number {
    return this.#line.urls.size + this.#line.onDisk;
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

export interface FrontierOptions {
  /** Where the queues live (frontier-store.ts); absent: in memory only. */
  readonly store?: FrontierStore | null;
  /** URLs held in memory at most (the heads); the rest wait on disk. Only with a store. */
  readonly memoryUrls?: number;
  /** A URL came into memory (queued, or read back from disk): it is pending from now on. */
  readonly onResident?: (entry: QueuedUrl) => void;
  /** A URL read back that an earlier process wrote: whether it is still due (false: it is settled and dropped). */
  readonly validate?: (entry: QueuedUrl) => boolean;
  /** Whether a URL is pending now (in memory or out on lease): a second copy read back is settled, not queued. */
  readonly isPending?: (hash: UrlHash) => boolean;
  /** The URL of a hash (the crawl database's record), for one the store kept without its text (too long for its pages); null: unknown. */
  readonly urlOf?: (hash: UrlHash) => string | null;
}

/** URLs read back from disk at a time, at least and at most (the claim path reads one batch per origin, not one URL). */
const REFILL_MIN = 32;
const REFILL_MAX = 512;

/**
 * How far refills may take the URLs in memory past `memoryUrls`: a refill reads REFILL_MIN URLs even
 * when memory is full (so an origin is not read back one URL per take), and each origin refilled so
 * keeps the rest of its batch as heads. Without a cap that added up to 31 URLs for every origin taken
 * from while memory was full, a number that grows with the crawl's hosts (found by the frontier's model
 * test once it generated long runs). Past the slack a refill reads only the URL being taken. As many
 * again as `memoryUrls`: with an eighth, `bench-queue-server scale --target-urls 1000000` (100,000
 * hosts) spent 0.968, 1.219 and 1.130 times the queue server's CPU a page of the build without a cap
 * (one-URL refills), with as many again 1.005 (2026-12-07).
 */
export function refillSlack(memoryUrls: number): number {
  return Math.max(REFILL_MIN, memoryUrls);
}

export class Frontier {
  readonly #origins = new Map<string, OriginQueue>();
  readonly #eligible = new MinHeap<HeapEntry>((a, b) => a.priority < b.priority || (a.priority === b.priority && a.seq < b.seq));
  readonly #timed = new MinHeap<HeapEntry>((a, b) => a.at < b.at);
  readonly #policy: FrontierPolicy;
  readonly #store: FrontierStore | null;
  readonly #memoryUrls: number;
  readonly #refillSlack: number;
  readonly #onResident: (entry: QueuedUrl) => void;
  readonly #validate: (entry: QueuedUrl) => boolean;
  readonly #urlOf: (hash: UrlHash) => string | null;
  readonly #isPending: (hash: UrlHash) => boolean;
  /** Store keys of URLs in memory or taken (out on lease, being cut) and not settled: a refill skips them. */
  readonly #out = new Set<StoreKey>();
  /** Origins of the store's directory that have no OriginQueue (nothing queued when the process started). */
  readonly #dormant = new Map<string, { id: number; seq: number; trusted: boolean }>();
  /** Origins by store id, for the store's deletion counts. */
  readonly #byId = new Map<number, OriginQueue>();
  #queued = 0;
  #resident = 0;
  #chargedQueued = 0;
  /** Origins whose queue is not empty (for the admin page's waiting hosts). */
  #queuedOrigins = 0;
  /** The origins with the most queued URLs per Crawl-delay, for the time-left estimate (biggest-queues.ts). */
  readonly #biggest = new BiggestQueues<OriginQueue>();
  #seq = 0;

  constructor(policy: FrontierPolicy, options: FrontierOptions = {}) {
    this.#policy = policy;
    this.#store = options.store ?? null;
    this.#memoryUrls = this.#store === null ? Infinity : (options.memoryUrls ?? 100_000);
    this.#refillSlack = refillSlack(this.#memoryUrls);
    this.#onResident = options.onResident ?? (() => {});
    this.#validate = options.validate ?? (() => true);
    this.#urlOf = options.urlOf ?? (() => null);
    this.#isPending = options.isPending ?? (() => false);
  }

  /** Handed to every origin queue: one closure for all of them, not one (and its context) per host. */
  readonly #refile = (queue: OriginQueue, now: number): void => this.reconsider(queue, now);

  /** URLs waiting in origin queues (in memory and on disk). */
  get queued(): number {
    return this.#queued;
  }

  /** Queued URLs in memory now. */
  get resident(): number {
    return this.#resident;
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

  /** URLs of the origin queued on disk only (none of its heads in memory); 0 for an origin never seen. */
  onDiskOf(origin: string): number {
    const queue = this.#origins.get(origin);
    return queue === undefined ? 0 : lineOf(queue).onDisk;
  }

  get originCount(): number {
    return this.#origins.size;
  }

  origin(origin: string): OriginQueue {
    let queue = this.#origins.get(origin);
    if (queue === undefined) {
      queue = new OriginQueue(origin, this.#refile);
      this.#origins.set(origin, queue);
      const dormant = this.#dormant.get(origin);
      if (dormant !== undefined) {
        this.#dormant.delete(origin);
        const line = lineOf(queue);
        line.id = dormant.id;
        line.seq = dormant.seq;
        line.firstSeqOfRun = dormant.seq;
        line.trusted = dormant.trusted;
        this.#byId.set(line.id, queue);
      }
    }
    return queue;
  }

  origins(): IterableIterator<OriginQueue> {
    return this.#origins.values();
  }

  /**
   * Takes up the queues the store holds (queue server start): every origin with queued URLs gets its
   * queue, its URLs on disk only; `met` is told of each (its robots.txt may be on disk). Reads the
   * store's directory, not its URLs: those are read when their origin comes up.
   */
  restore(now: number, met: (queue: OriginQueue) => void): void {
    this.#readDirectory(now, met, { queues: true });
  }

  /**
   * Takes up only the store's origin directory (ids and counters), its queues being emptied (the
   * frontier is derived from the crawl database instead): origins keep their ids, keys stay unique.
   */
  adoptDirectory(now: number): void {
    this.#readDirectory(now, () => {}, { queues: false });
  }

  #readDirectory(now: number, met: (queue: OriginQueue) => void, options: { queues: boolean }): void {
    if (this.#store === null) return;
    const trusted = this.#store.trustedOrigins();
    for (const stored of this.#store.origins()) {
      const known = { id: stored.id, seq: stored.seq, trusted: trusted.has(stored.id) };
      if (stored.stored === 0 || !options.queues || this.#origins.has(stored.origin)) {
        if (!this.#origins.has(stored.origin)) this.#dormant.set(stored.origin, known);
        continue;
      }
      this.#dormant.set(stored.origin, known);
      const queue = this.origin(stored.origin);
      const line = lineOf(queue);
      line.stored = stored.stored;
      line.onDisk = stored.stored;
      line.diskPriority = -Infinity;
      line.diskSeq = this.#seq++;
      this.#queued += stored.stored;
      this.#queuedOrigins++;
      met(queue);
      this.reconsider(queue, now);
    }
  }

  /** Queues a URL; `priority` defaults to its depth (breadth-first). Returns the entry when it is in memory, null when on disk only. */
  add(origin: string, url: NormalizedUrl, hash: UrlHash, depth: number, now: number, priority: number = depth, redirectHops = 0): QueuedUrl | null {
    const queue = this.origin(origin);
    const store = this.#store;
    if (store === null) {
      const entry = new ResidentUrl(url, hash, depth, priority, this.#seq++);
      if (redirectHops > 0) entry.redirectHops = redirectHops;
      this.push(queue, entry, now);
      this.#onResident(entry);
      return entry;
    }
    const line = lineOf(queue);
    if (line.id === 0) {
      line.id = store.newOriginId();
      this.#byId.set(line.id, queue);
    }
    const key = urlKey(line.id, priorityBucket(priority), line.seq);
    line.seq = (line.seq + 1) >>> 0;
    line.stored++;
    const inMemory = line.onDisk === 0 && this.#resident < this.#memoryUrls;
    store.putUrl(key, { hash, priority, depth, charged: false, redirectHops, url }, { inMemory });
    this.#directoryChanged(queue, line);
    const seq = this.#seq++;
    if (inMemory) {
      const entry = new ResidentUrl(url, hash, depth, priority, seq, key);
      if (redirectHops > 0) entry.redirectHops = redirectHops;
      this.#out.add(key);
      this.push(queue, entry, now);
      this.#onResident(entry);
      return entry;
    }
    // On disk only: memory is full, or the origin's line continues on disk already.
    const wasEmpty = queue.queuedUrls === 0;
    line.onDisk++;
    this.#queued++;
    if (wasEmpty) this.#queuedOrigins++;
    this.#track(queue);
    if (line.onDisk === 1 || priority < line.diskPriority) {
      line.diskPriority = priority;
      line.diskSeq = seq;
      if (line.urls.size === 0) this.reconsider(queue, now);
    }
    return null;
  }

  /** Puts a URL in memory (queued, back from a lease, set aside by the cutter), keeping its place in line. */
  push(queue: OriginQueue, entry: QueuedUrl, now: number): void {
    const line = lineOf(queue);
    const wasEmpty = queue.queuedUrls === 0;
    const head = line.urls.peek();
    line.urls.push(entry);
    this.#queued++;
    this.#resident++;
    if (wasEmpty) this.#queuedOrigins++;
    if (entry.charged) {
      line.chargedQueued++;
      this.#chargedQueued++;
    }
    this.#track(queue);
    if (wasEmpty || line.urls.peek() !== head) this.reconsider(queue, now);
  }

  /**
   * The URL is settled (its result applied, denied, skipped as fresh, given up): it leaves the store
   * once the crawl database has committed that (frontier-store.ts). Nothing for a URL of no store.
   */
  settle(entry: QueuedUrl): void {
    if (entry.key === undefined || this.#store === null) return;
    if (!this.#out.delete(entry.key)) return;
    this.#store.settle(entry.key);
  }

  /** Drops every queued URL (robots knowledge and slot accounting stay); returns how many. */
  clear(now: number): number {
    const dropped = this.#queued;
    for (const queue of this.#origins.values()) {
      const line = lineOf(queue);
      line.urls.clear();
      line.chargedQueued = 0;
      line.onDisk = 0;
      line.stored = 0;
      if (line.id !== 0) this.#directoryChanged(queue, line);
      this.reconsider(queue, now);
    }
    this.#store?.clearUrls();
    this.#out.clear();
    this.#biggest.clear();
    this.#queued = 0;
    this.#resident = 0;
    this.#chargedQueued = 0;
    this.#queuedOrigins = 0;
    this.#eligible.clear();
    this.#timed.clear();
    return dropped;
  }

  /**
   * An operator named the origin (an inject): its host may be on a private address, as a seed's host
   * may (leases.ts `allowPrivateAddresses`). Kept in the store from the next commit, so it outlives a
   * restart as the URLs queued with it do; a new crawl (`forgetTrusted`) ends it.
   */
  trust(origin: string): void {
    const queue = this.origin(origin);
    const line = lineOf(queue);
    if (line.trusted) return;
    line.trusted = true;
    if (this.#store === null) return;
    if (line.id === 0) {
      line.id = this.#store.newOriginId();
      this.#byId.set(line.id, queue);
      this.#directoryChanged(queue, line);
    }
    this.#store.setTrusted(line.id, true);
  }

  /** Whether an operator named the origin (`trust`); false for an origin never seen. */
  isTrusted(origin: string): boolean {
    const queue = this.#origins.get(origin);
    return queue === undefined ? this.#dormant.get(origin)?.trusted === true : lineOf(queue).trusted;
  }

  /** A new crawl: the origins injected into the one before are trusted no more (their seeds are gone too). */
  forgetTrusted(): void {
    for (const queue of this.#origins.values()) {
      const line = lineOf(queue);
      if (!line.trusted) continue;
      line.trusted = false;
      if (line.id !== 0) this.#store?.setTrusted(line.id, false);
    }
    for (const dormant of this.#dormant.values()) {
      if (!dormant.trusted) continue;
      dormant.trusted = false;
      this.#store?.setTrusted(dormant.id, false);
    }
  }

  /** A new crawl: every origin's page budget (--max-pages-per-host) counts from zero. */
  resetBudgets(): void {
    for (const queue of this.#origins.values()) queue.resetAdmitted();
  }

  /** Takes the next URL of an origin, in priority order; reads a batch back from disk when the heads ran out. */
  take(queue: OriginQueue): QueuedUrl | undefined {
    const line = lineOf(queue);
    let entry = line.urls.pop();
    // A batch read back may hold only URLs settled meanwhile (dropped as it is read): read on.
    while (entry === undefined && line.onDisk > 0) {
      this.#refill(queue, line);
      entry = line.urls.pop();
    }
    if (entry === undefined) return undefined;
    this.#queued--;
    this.#resident--;
    if (queue.queuedUrls === 0) this.#queuedOrigins--;
    if (entry.charged) {
      line.chargedQueued--;
      this.#chargedQueued--;
    }
    this.#track(queue);
    return entry;
  }

  /** The store committed: `count` queued URLs of the origin `id` left its file (negative: a failed commit takes them back). */
  storeDeleted(id: number, count: number): void {
    const queue = this.#byId.get(id);
    if (queue === undefined) return;
    const line = lineOf(queue);
    line.stored = Math.max(0, line.stored - count);
    this.#directoryChanged(queue, line);
  }

  /**
   * Up to `perGroup` origins with the most queued URLs for each Crawl-delay (none being one): the
   * origins the time-left estimate needs (crawl/time-left.ts, biggest-queues.ts), never a walk of all.
   */
  biggestQueues(perGroup: number): IterableIterator<OriginQueue> {
    return this.#biggest.candidates(perGroup);
  }

  /** Re-files an origin after anything that may change whether, or when, it can get a slot. */
  reconsider(queue: OriginQueue, now: number): void {
    const line = lineOf(queue);
    line.version++;
    // Its robots.txt (a Crawl-delay) may have changed: the biggest queues file it by that.
    this.#track(queue);
    const head = line.urls.peek();
    if (head === undefined && line.onDisk === 0) return;
    if (queue.robotsState === 'fetching') return;
    if (queue.slotsOut >= this.#policy.concurrencyOf(queue)) return;
    const priority = head?.priority ?? line.diskPriority;
    const seq = head?.seq ?? line.diskSeq;
    const entry = { queue, version: line.version, priority, seq, at: queue.nextStartAt };
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

  /**
   * Reads the next batch of the origin's URLs from disk into memory, in key (priority) order, skipping
   * those in memory or out on lease. URLs an earlier process wrote are checked first (`validate`): a
   * kill between the store's commit and the crawl database's can leave settled ones behind.
   */
  #refill(queue: OriginQueue, line: OriginLine): void {
    const store = this.#store!;
    // A batch up to the room left in memory; with less room than REFILL_MIN, REFILL_MIN while the
    // slack past `memoryUrls` lasts, then the one URL being taken.
    const room = this.#memoryUrls - this.#resident;
    const slack = this.#memoryUrls + this.#refillSlack - this.#resident;
    const limit = Math.min(line.onDisk, room >= REFILL_MIN ? Math.min(REFILL_MAX, room) : Math.max(1, Math.min(REFILL_MIN, slack)));
    const rows = store.readOrigin(line.id, limit, (key) => this.#out.has(key));
    // Fewer than asked: the disk holds no more of the origin than this (counts from a directory record
    // written before a kill may be high).
    const missing = rows.length < limit ? line.onDisk - rows.length : 0;
    line.onDisk -= rows.length + missing;
    this.#queued -= rows.length + missing;
    for (const { key, entry: stored } of rows) {
      // Kept without its text (too long for the store's pages): the crawl database has it. None there: a
      // kill fell between the two commits, and the link comes again with its unacknowledged post.
      const url = stored.url !== '' ? stored.url : this.#urlOf(stored.hash);
      if (url === null) {
        store.settle(key);
        continue;
      }
      const entry = new ResidentUrl(url as NormalizedUrl, stored.hash, stored.depth, stored.priority, this.#seq++, key);
      if (stored.redirectHops > 0) entry.redirectHops = stored.redirectHops;
      // Settled without a request: written by an earlier process and done since, or a second copy of a
      // URL pending now (queued again while this copy was on disk only: releaseDue, an inject).
      if ((seqOfKey(key) < line.firstSeqOfRun && !this.#validate(entry)) || this.#isPending(entry.hash)) {
        store.settle(key);
        continue;
      }
      this.#out.add(key);
      line.urls.push(entry);
      this.#queued++;
      this.#resident++;
      this.#onResident(entry);
    }
    if (queue.queuedUrls === 0 && rows.length + missing > 0) this.#queuedOrigins--;
    this.#track(queue);
  }

  #track(queue: OriginQueue): void {
    this.#biggest.set(queue, crawlDelayOf(queue.robots.rules), queue.queuedUrls);
  }

  #directoryChanged(queue: OriginQueue, line: OriginLine): void {
    this.#store?.originChanged(line.id, () => ({ id: line.id, origin: queue.origin, seq: line.seq, stored: line.stored }));
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
