/**
 * Recently seen URLs: a bounded in-memory set of URL hashes known to be in the seen-set's exact store,
 * asked before the exact store for the Bloom filter's "maybe" answers.
 *
 * Why: in a large crawl most links of a page are known already (a site's navigation repeats on every
 * page, pages link back to their parents and to a few popular pages), so the filter says "maybe" for
 * nearly all of them, and each costs the exact store a look-up: a crawl database leaf read once the
 * database outgrows its page cache (at 6 million known URLs, 9.2 s of a 60 s profile of the queue
 * server, README "Queue server benchmark"). The same URLs come back again and again while their
 * hosts are crawled: a set of the hashes confirmed or admitted lately answers them from memory.
 *
 * Exactness: a hash enters only once the exact store holds its URL (a "maybe" it confirmed) or once
 * admission stages the URL's record (`SeenSet.addNew`); the crawl database never deletes a record, so
 * "seen" stays true. Forgetting is always safe: the URL just asks the exact store again.
 *
 * Memory bound: two generations of at most `generationUrls` hashes each (UrlHashSet, growing as it
 * fills: at most 16 bytes of table a URL); when the current one is full the older is cleared and
 * becomes the current, keeping its table, so the URLs met lately stay. 524,288 a generation: at most
 * 2 x 8 MiB, reached in a crawl that has met about a million URLs.
 */
import { UrlHashSet } from './url-hash-set.js';

export const RECENTLY_SEEN_GENERATION_URLS = 1 << 19;

export class RecentlySeen {
  readonly #generationUrls: number;
  #current: UrlHashSet;
  #older: UrlHashSet;

  constructor(generationUrls = RECENTLY_SEEN_GENERATION_URLS) {
    if (!Number.isInteger(generationUrls) || generationUrls < 1) throw new RangeError(`recently seen: ${generationUrls} URLs a generation is not a positive integer`);
    this.#generationUrls = generationUrls;
    this.#current = new UrlHashSet();
    this.#older = new UrlHashSet();
  }

  has(hi: number, lo: number): boolean {
    return this.#current.has(hi, lo) || this.#older.has(hi, lo);
  }

  /** Remembers a hash whose URL the exact store holds (or is staging). */
  add(hi: number, lo: number): void {
    if (this.#current.has(hi, lo)) return;
    if (this.#current.size >= this.#generationUrls) {
      const emptied = this.#older;
      emptied.clear();
      this.#older = this.#current;
      this.#current = emptied;
    }
    this.#current.add(hi, lo);
  }

  get size(): number {
    return this.#current.size + this.#older.size;
  }

  get bytes(): number {
    return this.#current.bytes + this.#older.bytes;
  }
}
