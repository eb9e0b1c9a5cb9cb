/**
 * Known links: absolute link strings, exactly as fetchers sent them, whose URL is already in the
 * seen-set. Most links of a page were seen before (the navigation of a site repeats on every page), and
 * for those normalizing, the crawl rules, the scope check and the hash would only find out again that
 * there is nothing to do: a look-up here skips all of it.
 *
 * Exactness: a string is remembered only after admission found its URL seen (or admitted it), and the
 * way a link string turns into a URL is fixed (normalization and crawl rules do not depend on the
 * crawl; an absolute `http(s)://` link does not depend on the page it is on). A URL stays seen for the
 * life of the seen-set, and the scope only widens meanwhile, so "known" stays true; Admission drops
 * this memory together with the seen-set when a new crawl starts. Forgetting is always safe: the link
 * just takes the long way again.
 *
 * Memory bound: two generations of at most GENERATION_LINKS strings or GENERATION_CHARS characters
 * each; when the current one is full, the older is dropped, so recently met links stay.
 */
import type { UrlHash } from '../../shared/url-hash.js';

export const GENERATION_LINKS = 32_768;
export const GENERATION_CHARS = 2_000_000;

export class KnownLinks {
  /** link -> its URL hash (kept for the OPIC score of known pages), or null when nobody needs it. */
  #current = new Map<string, UrlHash | null>();
  #older = new Map<string, UrlHash | null>();
  #chars = 0;

  /** The entry for `link`: undefined when unknown, else its hash or null. */
  get(link: string): UrlHash | null | undefined {
    const found = this.#current.get(link);
    return found !== undefined ? found : this.#older.get(link);
  }

  /** Remembers a link whose URL is seen. Only absolute http(s) links: their URL does not depend on the page. */
  add(link: string, hash: UrlHash | null): void {
    if (!isAbsoluteHttp(link) || this.#current.has(link)) return;
    if (this.#current.size >= GENERATION_LINKS || this.#chars + link.length > GENERATION_CHARS) {
      this.#older = this.#current;
      this.#current = new Map();
      this.#chars = 0;
    }
    this.#current.set(link, hash);
    this.#chars += link.length;
  }

  clear(): void {
    this.#current = new Map();
    this.#older = new Map();
    this.#chars = 0;
  }

  get size(): number {
    return this.#current.size + this.#older.size;
  }
}

function isAbsoluteHttp(link: string): boolean {
  return link.startsWith('http://') || link.startsWith('https://');
}
