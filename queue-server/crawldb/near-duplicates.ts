/**
 * In-memory indexes that find the original a freshly fetched page duplicates: SignatureIndex for exact
 * copies (same body signature), NearDuplicateIndex for near copies (simhash within
 * NEAR_DUPLICATE_DISTANCE bits). URLs are 16-hex URL hashes; both indexes are rebuilt from the crawl
 * database when the queue server starts, and are owned by the crawl database (single-threaded).
 *
 * What to index: originals only, that is records whose status is fetched or notmodified. A duplicate is
 * never indexed, so a page can only be found to duplicate a page that is not itself a duplicate, and
 * duplicate pointers never form a cycle. When two originals do share content (one came back through a
 * 304, which carries no body to compare), the older entry is the original: a look-up never answers with
 * an entry newer than the page asking, so the older page stays original and the newer one becomes its
 * duplicate at its next fetch, never the other way round. Age is insertion order; re-adding a URL with
 * the fingerprint it already has keeps its age, and after a restart age is the order of the rebuild.
 *
 * Memory: one entry per indexed page, so bounded by the number of fetched pages, not by the number of
 * URLs known, and released when a page leaves fetched/notmodified (remove). SignatureIndex holds a map
 * entry per page and per distinct signature; NearDuplicateIndex an entry object per page, referenced
 * from four band buckets. Measured on V8 with random fingerprints, counting the 16-hex key strings:
 * about 170 bytes per page in each index at a million pages (so ~350 MB for both), more per page in
 * small indexes whose buckets are sparse (~350 bytes in the near index at 200,000 pages).
 *
 * Look-up cost (NearDuplicateIndex): two 64-bit fingerprints within 3 bits differ in at most 3 of the
 * four 16-bit bands, so they agree exactly on at least one (pigeonhole; Manku, Jain and Das Sarma, WWW
 * 2007, section 3). A look-up visits the four buckets that share a band with the query and computes the
 * distance only for their members: about 4 * n / 65,536 candidates for n uniformly spread fingerprints
 * (60 at a million pages), never a scan of all n. Pages that are near copies of each other share
 * buckets, which is the point: those candidates are the answers.
 */
import { NEAR_DUPLICATE_DISTANCE, popcount32, simhashHalves } from '../../shared/simhash.js';

/** Exact duplicates: pages (URL hashes) by body signature, oldest first. */
export class SignatureIndex {
  /** signature -> URL hashes holding it, oldest first (almost always exactly one). */
  readonly #bySignature = new Map<string, string[]>();
  /** URL hash -> its indexed signature (a page has one body at a time). */
  readonly #signatureOf = new Map<string, string>();

  /** Indexes a page under its signature; a page indexed under another signature moves (and becomes newest). */
  add(signature: string, urlHash: string): void {
    const current = this.#signatureOf.get(urlHash);
    if (current === signature) return;
    if (current !== undefined) this.remove(current, urlHash);
    this.#signatureOf.set(urlHash, signature);
    const holders = this.#bySignature.get(signature);
    if (holders === undefined) this.#bySignature.set(signature, [urlHash]);
    else holders.push(urlHash);
  }

  /** Removes a page indexed under this signature; does nothing if it is not (so it is safe on any record). */
  remove(signature: string, urlHash: string): void {
    if (this.#signatureOf.get(urlHash) !== signature) return;
    this.#signatureOf.delete(urlHash);
    const holders = this.#bySignature.get(signature);
    if (holders === undefined) return;
    const at = holders.indexOf(urlHash);
    if (at >= 0) holders.splice(at, 1);
    if (holders.length === 0) this.#bySignature.delete(signature);
  }

  /**
   * The first (oldest) URL that had that signature, other than `excludeUrlHash`; null when there is none,
   * or when `excludeUrlHash` is itself the oldest holder (then it is the original).
   */
  find(signature: string, excludeUrlHash: string): string | null {
    const holders = this.#bySignature.get(signature);
    if (holders === undefined) return null;
    const oldest = holders[0];
    return oldest === undefined || oldest === excludeUrlHash ? null : oldest;
  }

  /** Number of pages indexed. */
  get size(): number {
    return this.#signatureOf.size;
  }
}

interface NearEntry {
  readonly urlHash: string;
  readonly high: number;
  readonly low: number;
  /** Insertion order: smaller is older. */
  readonly age: number;
}

const BANDS = 4;

/** Near duplicates: pages (URL hashes) by 64-bit simhash, found by 16-bit band (see the file comment). */
export class NearDuplicateIndex {
  readonly #entries = new Map<string, NearEntry>();
  /** One map per band: band value (16 bits) -> entries with that value in that band. */
  readonly #bands: Map<number, NearEntry[]>[] = Array.from({ length: BANDS }, () => new Map());
  #nextAge = 0;

  /** Indexes a page under its simhash; a page indexed under another simhash moves (and becomes newest). */
  add(urlHash: string, simhash: string): void {
    const [high, low] = simhashHalves(simhash);
    const current = this.#entries.get(urlHash);
    if (current !== undefined) {
      if (current.high === high && current.low === low) return;
      this.#delete(current);
    }
    const entry: NearEntry = { urlHash, high, low, age: this.#nextAge++ };
    this.#entries.set(urlHash, entry);
    bandsOf(high, low).forEach((value, band) => {
      const bucket = this.#bands[band]!.get(value);
      if (bucket === undefined) this.#bands[band]!.set(value, [entry]);
      else bucket.push(entry);
    });
  }

  /** Removes a page indexed under this simhash; does nothing if it is not. */
  remove(urlHash: string, simhash: string): void {
    const current = this.#entries.get(urlHash);
    if (current === undefined) return;
    const [high, low] = simhashHalves(simhash);
    if (current.high !== high || current.low !== low) return;
    this.#delete(current);
  }

  /**
   * The urlHash of a page within NEAR_DUPLICATE_DISTANCE bits of `simhash`, other than `excludeUrlHash`:
   * the oldest such page, and only one older than `excludeUrlHash` when that page is indexed itself.
   * Null when there is none.
   */
  findNear(simhash: string, excludeUrlHash: string): string | null {
    const [high, low] = simhashHalves(simhash);
    const ageLimit = this.#entries.get(excludeUrlHash)?.age ?? Number.POSITIVE_INFINITY;
    let best: NearEntry | null = null;
    const bands = bandsOf(high, low);
    for (let band = 0; band < BANDS; band++) {
      const bucket = this.#bands[band]!.get(bands[band]!);
      if (bucket === undefined) continue;
      for (const entry of bucket) {
        if (entry.age >= ageLimit || (best !== null && entry.age >= best.age)) continue;
        if (popcount32(entry.high ^ high) + popcount32(entry.low ^ low) <= NEAR_DUPLICATE_DISTANCE) best = entry;
      }
    }
    return best === null ? null : best.urlHash;
  }

  /** Number of pages indexed. */
  get size(): number {
    return this.#entries.size;
  }

  #delete(entry: NearEntry): void {
    this.#entries.delete(entry.urlHash);
    bandsOf(entry.high, entry.low).forEach((value, band) => {
      const bucket = this.#bands[band]!.get(value);
      if (bucket === undefined) return;
      const at = bucket.indexOf(entry);
      if (at >= 0) bucket.splice(at, 1);
      if (bucket.length === 0) this.#bands[band]!.delete(value);
    });
  }
}

/** The four 16-bit bands of a 64-bit fingerprint, most significant first. */
function bandsOf(high: number, low: number): [number, number, number, number] {
  return [high >>> 16, high & 0xffff, low >>> 16, low & 0xffff];
}
