/**
 * The seen-set: has this URL ever been admitted? A Bloom filter in memory answers "certainly new" for
 * almost every new URL without touching the exact store; only when the filter says "maybe" is the
 * exact store asked, so a Bloom false positive costs one exact look-up and can never drop a URL.
 *
 * The exact store of the queue server is the crawl database itself (`crawlDbExactStore`): every URL
 * admitted gets a record there, staged in the current group commit window and then committed, so the
 * set of keys of `crawldb.btree` plus its stage is exactly the set of URLs seen, on disk, costing no
 * memory per URL (the stage is the bounded pending set: one commit window of records). Look-ups come in
 * batches (`seenAmong`): the "maybe" answers of a whole results post or inject batch are sorted and
 * confirmed in one ordered pass over the B-Tree (IRLbot's DRUM, Lee et al., WWW 2008), so admission
 * pays no random disk read per link. `UrlHashSet` (12 bytes per URL in memory) remains as the exact
 * store of tests and models. Before the exact store, the "maybe" answers ask a bounded set of the URLs
 * confirmed or admitted lately (recently-seen.ts): most links of a large crawl's pages are known, and
 * the same ones come back while their hosts are crawled.
 *
 * Memory: the Bloom filter, about 1.8 MB per million URLs at p = 0.001 (bloom-filter.ts), and the
 * recently seen URLs' tables, at most 16 MiB.
 */
import { urlHashFromHalves, urlHashHigh, urlHashLow, type UrlHash } from '../../shared/url-hash.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import { ScalableBloomFilter, type BloomFilterOptions } from './bloom-filter.js';
import { RECENTLY_SEEN_GENERATION_URLS, RecentlySeen } from './recently-seen.js';
import { UrlHashSet } from './url-hash-set.js';

export interface ExactUrlStore {
  has(hi: number, lo: number): boolean;
  /** Records the hash; a store whose entries are written by someone else (the crawl database) does nothing. */
  add(hi: number, lo: number): boolean;
  readonly size: number;
  /** Which of `hashes` (ascending byte order) are in the store, in one ordered pass; absent: `has` one by one. */
  hasSorted?(hashes: readonly UrlHash[]): boolean[];
}

export interface SeenSetStats {
  urls: number;
  bloomBytes: number;
  bloomStages: number;
  bloomFalsePositiveRateBound: number;
  /** Look-ups where the filter said "maybe" for a URL that was in fact new. */
  bloomFalsePositives: number;
  exactLookups: number;
  /** "Maybe" answers the recently seen URLs confirmed without asking the exact store. */
  recentHits: number;
  recentUrls: number;
  recentBytes: number;
  /** Batches of "maybe" answers confirmed against the exact store (each one ordered pass). */
  exactBatches: number;
}

export interface SeenSetOptions extends BloomFilterOptions {
  /** URLs a generation of the recently seen set holds (default RECENTLY_SEEN_GENERATION_URLS); 0: none, every "maybe" asks the exact store. */
  readonly recentUrls?: number;
}

export class SeenSet {
  readonly #bloom: ScalableBloomFilter;
  readonly #exact: ExactUrlStore;
  readonly #recent: RecentlySeen | null;
  #falsePositives = 0;
  #exactLookups = 0;
  #exactBatches = 0;
  #recentHits = 0;

  constructor(options: SeenSetOptions, exact: ExactUrlStore = new UrlHashSet(Math.min(options.capacity, 1 << 20))) {
    this.#bloom = new ScalableBloomFilter(options);
    this.#exact = exact;
    const recentUrls = options.recentUrls ?? RECENTLY_SEEN_GENERATION_URLS;
    this.#recent = recentUrls === 0 ? null : new RecentlySeen(recentUrls);
  }

  /** Records the URL; returns true if it had never been seen before. */
  addIfNew(hash: UrlHash): boolean {
    if (this.seenAmong([hash])[0]!) return false;
    this.addNew(hash);
    return true;
  }

  /**
   * Which of `hashes` were seen: the Bloom filter for each, then the "maybe" ones sorted and confirmed
   * in one batch. Marks nothing: the caller admits the new ones with `addNew` (a hash twice in one batch
   * is answered the same both times; the caller keeps its own note of what it admitted from the batch).
   */
  seenAmong(hashes: readonly UrlHash[]): boolean[] {
    const seen = new Array<boolean>(hashes.length).fill(false);
    const recent = this.#recent;
    const maybe: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const hash = hashes[i]!;
      const hi = urlHashHigh(hash);
      const lo = urlHashLow(hash);
      if (!this.#bloom.mightContain(hi, lo)) continue;
      if (recent !== null && recent.has(hi, lo)) {
        seen[i] = true;
        this.#recentHits++;
      } else maybe.push(i);
    }
    if (maybe.length === 0) return seen;
    this.#exactLookups += maybe.length;
    this.#exactBatches++;
    maybe.sort((a, b) => Buffer.compare(hashes[a]!, hashes[b]!));
    const answers = this.#confirm(maybe.map((i) => hashes[i]!));
    for (let j = 0; j < maybe.length; j++) {
      if (answers[j]!) {
        seen[maybe[j]!] = true;
        const hash = hashes[maybe[j]!]!;
        recent?.add(urlHashHigh(hash), urlHashLow(hash));
      } else this.#falsePositives++;
    }
    return seen;
  }

  /** Records a URL the caller found new (`seenAmong`); its exact entry is the crawl database record the caller stages. */
  addNew(hash: UrlHash): void {
    const hi = urlHashHigh(hash);
    const lo = urlHashLow(hash);
    this.#bloom.add(hi, lo);
    this.#exact.add(hi, lo);
    this.#recent?.add(hi, lo);
  }

  /** A URL known from the exact store (the crawl database on start): into the filter, once. */
  markKnown(hash: UrlHash): void {
    const hi = urlHashHigh(hash);
    const lo = urlHashLow(hash);
    if (!this.#bloom.mightContain(hi, lo)) this.#bloom.add(hi, lo);
    this.#exact.add(hi, lo);
  }

  has(hash: UrlHash): boolean {
    return this.seenAmong([hash])[0]!;
  }

  get size(): number {
    return this.#exact.size;
  }

  stats(): SeenSetStats {
    const bloom = this.#bloom.stats();
    return {
      urls: this.#exact.size,
      bloomBytes: bloom.bytes,
      bloomStages: bloom.stages,
      bloomFalsePositiveRateBound: bloom.falsePositiveRateBound,
      bloomFalsePositives: this.#falsePositives,
      exactLookups: this.#exactLookups,
      recentHits: this.#recentHits,
      recentUrls: this.#recent?.size ?? 0,
      recentBytes: this.#recent?.bytes ?? 0,
      exactBatches: this.#exactBatches,
    };
  }

  #confirm(sorted: readonly UrlHash[]): boolean[] {
    if (this.#exact.hasSorted !== undefined) return this.#exact.hasSorted(sorted);
    return sorted.map((hash) => this.#exact.has(urlHashHigh(hash), urlHashLow(hash)));
  }
}

/** The crawl database as the seen-set's exact store: a URL is seen when it has a record, staged or committed. */
export function crawlDbExactStore(crawlDb: CrawlDb): ExactUrlStore {
  return {
    has: (hi, lo) => crawlDb.hasSorted([urlHashFromHalves(hi, lo)])[0]!,
    // The record admission stages right after is the entry.
    add: () => true,
    get size() {
      return crawlDb.size;
    },
    hasSorted: (hashes) => crawlDb.hasSorted(hashes),
  };
}

