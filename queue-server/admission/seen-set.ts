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
 * store of tests and models.
 *
 * Memory: the Bloom filter only, about 1.8 MB per million URLs at p = 0.001 (bloom-filter.ts).
 */
import { urlHashFromHalves, urlHashHigh, urlHashLow, type UrlHash } from '../../shared/url-hash.js';
import type { CrawlDb } from '../crawldb/crawl-db.js';
import { ScalableBloomFilter, type BloomFilterOptions } from './bloom-filter.js';
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
  /** Batches of "maybe" answers confirmed against the exact store (each one ordered pass). */
  exactBatches: number;
}

export class SeenSet {
  readonly #bloom: ScalableBloomFilter;
  readonly #exact: ExactUrlStore;
  #falsePositives = 0;
  #exactLookups = 0;
  #exactBatches = 0;

  constructor(options: BloomFilterOptions, exact: ExactUrlStore = new UrlHashSet(Math.min(options.capacity, 1 << 20))) {
    this.#bloom = new ScalableBloomFilter(options);
    this.#exact = exact;
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
    const maybe: number[] = [];
    for (let i = 0; i < hashes.length; i++) {
      const hash = hashes[i]!;
      if (this.#bloom.mightContain(urlHashHigh(hash), urlHashLow(hash))) maybe.push(i);
    }
    if (maybe.length === 0) return seen;
    this.#exactLookups += maybe.length;
    this.#exactBatches++;
    maybe.sort((a, b) => Buffer.compare(hashes[a]!, hashes[b]!));
    const answers = this.#confirm(maybe.map((i) => hashes[i]!));
    for (let j = 0; j < maybe.length; j++) {
      if (answers[j]!) seen[maybe[j]!] = true;
      else this.#falsePositives++;
    }
    return seen;
  }

  /** Records a URL the caller found new (`seenAmong`); its exact entry is the crawl database record the caller stages. */
  addNew(hash: UrlHash): void {
    const hi = urlHashHigh(hash);
    const lo = urlHashLow(hash);
    this.#bloom.add(hi, lo);
    this.#exact.add(hi, lo);
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

