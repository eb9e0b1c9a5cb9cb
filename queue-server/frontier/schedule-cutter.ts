/**
 * Cutting a fetch schedule: which URLs a claiming fetcher gets now. Deterministic given the frontier
 * and `now` (ms since epoch); the only side effects are on the frontier it is handed.
 *
 * Rules:
 *  1. Origins are served breadth-first: the origin whose next URL is shallowest goes first.
 *  2. An origin whose robots.txt is unknown or expired gets a slot holding only its robots.txt
 *     (RFC 9309 section 2.4: fetched before any other URL of that origin); its other URLs wait.
 *  3. An origin never has more than its concurrency of slots out across all fetchers; one schedule
 *     takes at most its fair share, ceil(concurrency / live fetchers), so every fetcher gets work
 *     from a single-origin crawl.
 *  4. A slot holds up to `slotUrls` URLs of one origin (fewer when the origin's queue is short: its
 *     URLs are spread over the slots it may still have out), fetched serially with `delayMs` between the
 *     end of one response and the next request. At concurrency 1 a new slot of an origin starts no
 *     earlier than `nextStartAt` (set when the previous slot's results arrived plus the delay).
 *  5. URLs that robots.txt forbids are not handed out; they are returned as `denied`.
 *  6. No more page URLs than `budget` are handed out (for --max-pages); a URL re-leased after an
 *     expired lease was already counted, so it goes out even when the budget is spent.
 *  7. An origin whose robots.txt was unreachable waits (its `nextStartAt`) until robots.txt may be
 *     asked again; only after the last allowed attempt are its URLs denied (`robots-unreachable`).
 *  8. A URL whose stored response is still fresh is not sent (`skippedFresh`); a stale one with
 *     validators goes out with them, for a conditional request (cache-policy.ts).
 *  9. An origin given up for the pass (`givenUpOf`: its requests kept failing, host-backoff.ts) gets no
 *     slot: every URL of it that comes up is returned as `givenUp`, not requested; so is a URL that
 *     `refusalOf` refuses (its shape turned out to be a trap after it was queued).
 * 10. Once its robots.txt is known, an origin's sitemaps (queue-server/sitemaps/) get slots of their
 *     own before its pages; they are not page URLs, so the budget does not count them (but none is
 *     cut once it is spent).
 */
import type { Validators } from '../../shared/protocol.js';
import type { NormalizedUrl } from '../../shared/url-normalize.js';
import type { CacheDecision } from '../cache/cache-policy.js';
import type { Frontier, OriginQueue, QueuedUrl } from './frontier.js';
import { robotsVerdict, type RobotsVerdict } from '../robots/robots.js';
import type { PendingSitemap } from '../sitemaps/sitemaps.js';

export interface CutPolicy {
  /** Slots the fetcher can start now. */
  readonly capacity: number;
  readonly liveFetchers: number;
  /** Page URLs that may still be handed out (--max-pages), or null for no limit. */
  readonly budget: number | null;
  readonly userAgentToken: string;
  concurrencyOf(queue: OriginQueue): number;
  delayOf(queue: OriginQueue): number;
  slotUrlsOf(queue: OriginQueue): number;
  /** What the cache-validator store says of the URL (cache-policy.ts); absent: always fetch. */
  cacheDecisionOf?(entry: QueuedUrl): CacheDecision;
  /** The code under which the origin's URLs are given up without a request (host-backoff.ts), or null. */
  givenUpOf?(queue: OriginQueue): string | null;
  /** The code under which a queued URL is refused without a request (a trap shape, url-shape.ts), or null. */
  refusalOf?(entry: QueuedUrl): string | null;
  /** Sitemap files of the origin to read before its pages (queue-server/sitemaps/), taken out of pending; absent: none. */
  sitemapsOf?(queue: OriginQueue): readonly PendingSitemap[];
}

/** One URL of a slot: "in transit" from the cut until its result is applied. */
export interface SlotItem {
  readonly kind: 'page' | 'robots' | 'sitemap';
  readonly url: string;
  /** For a page, its frontier entry (put back as is if the lease expires); for robots.txt, null. */
  readonly entry: QueuedUrl | null;
  /** Validators for a conditional request, or null. */
  readonly validators: Validators | null;
  /** Its result was applied (leases.ts marks it). */
  applied: boolean;
  /** For a sitemap, where it stands among the origin's sitemaps (put back as is if the lease expires). */
  readonly sitemap?: PendingSitemap;
}

/**
 * A slot from the cut to its last result: a run of URLs of one origin, fetched one after another. The
 * lease (leases.ts) keeps it as cut, marks its items applied and counts what `remaining`; its wire form
 * is the protocol's Slot (leases.ts `scheduleOf`).
 */
export interface CutSlot {
  readonly queue: OriginQueue;
  readonly kind: 'page' | 'robots' | 'sitemap';
  readonly startAfterMs: number;
  readonly delayMs: number;
  readonly items: SlotItem[];
  /** Items whose result was not applied yet. */
  remaining: number;
}

export interface SkippedFresh {
  readonly entry: QueuedUrl;
  /** When the stored copy stops being fresh, ms since epoch. */
  readonly until: number;
  readonly savedBytes: number;
}

export interface DeniedUrl {
  readonly entry: QueuedUrl;
  readonly code: Extract<RobotsVerdict, { allowed: false }>['code'];
}

/** A URL not requested: its host was given up for the pass (host-backoff.ts), or its shape is a trap (url-shape.ts). */
export interface GivenUpUrl {
  readonly entry: QueuedUrl;
  readonly code: string;
}

export interface CutResult {
  readonly slots: CutSlot[];
  readonly denied: DeniedUrl[];
  readonly givenUp: GivenUpUrl[];
  /** URLs not sent because their stored copy is still fresh. */
  readonly skippedFresh: SkippedFresh[];
  /** Page URLs newly counted against the budget. */
  readonly charged: number;
}

export function cutSchedule(frontier: Frontier, policy: CutPolicy, now: number): CutResult {
  const slots: CutSlot[] = [];
  const denied: DeniedUrl[] = [];
  const givenUp: GivenUpUrl[] = [];
  const skippedFresh: SkippedFresh[] = [];
  const touched: OriginQueue[] = [];
  let budget = policy.budget;
  let charged = 0;

  while (slots.length < policy.capacity) {
    const queue = frontier.popEligible(now);
    if (queue === undefined) break;
    touched.push(queue);
    const startAfterMs = Math.max(0, queue.nextStartAt - now);

    // Filed before another origin on its address took the last slot (politeness-group.ts): it waits.
    if (queue.slotsOut >= policy.concurrencyOf(queue)) continue;

    const givenUpCode = policy.givenUpOf?.(queue) ?? null;
    if (givenUpCode !== null) {
      for (let entry = frontier.take(queue); entry !== undefined; entry = frontier.take(queue)) {
        if (entry.settled !== true) givenUp.push({ entry, code: givenUpCode });
      }
      continue;
    }

    if (queue.needsRobots(now)) {
      queue.robots.fetchStarted();
      queue.startSlot();
      const robotsTxt: SlotItem = { kind: 'robots', url: `${queue.origin}/robots.txt`, entry: null, validators: null, applied: false };
      slots.push({ queue, kind: 'robots', startAfterMs, delayMs: policy.delayOf(queue), items: [robotsTxt], remaining: 1 });
      continue;
    }

    // Sitemaps before pages (while the --max-pages budget lasts): what they list joins the queue, and
    // a <lastmod> is known before the page it dates is judged fresh.
    const sitemaps = budget === 0 ? [] : (policy.sitemapsOf?.(queue) ?? []);
    if (sitemaps.length > 0) {
      queue.startSlot();
      const items: SlotItem[] = sitemaps.map((sitemap) => ({ kind: 'sitemap', url: sitemap.url, entry: null, validators: sitemap.validators ?? null, applied: false, sitemap }));
      slots.push({ queue, kind: 'sitemap', startAfterMs, delayMs: policy.delayOf(queue), items, remaining: items.length });
      continue;
    }

    const concurrency = policy.concurrencyOf(queue);
    const fairShare = Math.max(1, Math.ceil(concurrency / Math.max(1, policy.liveFetchers)));
    const slotCount = Math.min(fairShare, concurrency - queue.slotsOut, policy.capacity - slots.length);
    const setAside: QueuedUrl[] = [];
    for (let s = 0; s < slotCount; s++) {
      // Spread the origin's URLs over the slots it may still have out, so that a short queue does not
      // end up in one slot (fetched one by one) while the origin's other slots stay empty.
      const openSlots = Math.max(1, concurrency - queue.slotsOut);
      const slotUrls = Math.max(1, Math.min(policy.slotUrlsOf(queue), Math.ceil(queue.queuedUrls / openSlots)));
      const items: SlotItem[] = [];
      while (items.length < slotUrls) {
        // With the budget spent only URLs already counted (back from an expired lease) may go out.
        if (budget === 0 && queue.chargedQueued === 0) break;
        const entry = frontier.take(queue);
        if (entry === undefined) break;
        if (entry.settled === true) continue;
        const refusal = policy.refusalOf?.(entry) ?? null;
        if (refusal !== null) {
          givenUp.push({ entry, code: refusal });
          continue;
        }
        if (!entry.charged && budget === 0) {
          setAside.push(entry);
          continue;
        }
        const verdict = robotsVerdict(queue.robots.rules!, entry.url as NormalizedUrl, policy.userAgentToken);
        if (!verdict.allowed) {
          denied.push({ entry, code: verdict.code });
          continue;
        }
        const cached = policy.cacheDecisionOf?.(entry) ?? { kind: 'fetch' };
        if (cached.kind === 'fresh') {
          skippedFresh.push({ entry, until: cached.until, savedBytes: cached.savedBytes });
          continue;
        }
        if (!entry.charged) {
          entry.charged = true;
          charged++;
          if (budget !== null) budget--;
        }
        items.push({ kind: 'page', url: entry.url, entry, validators: cached.kind === 'revalidate' ? cached.validators : null, applied: false });
      }
      if (items.length === 0) break;
      queue.startSlot();
      slots.push({ queue, kind: 'page', startAfterMs: s === 0 ? startAfterMs : 0, delayMs: policy.delayOf(queue), items, remaining: items.length });
    }
    for (const entry of setAside) frontier.push(queue, entry, now);
  }

  for (const queue of touched) frontier.reconsider(queue, now);
  return { slots, denied, givenUp, skippedFresh, charged };
}
