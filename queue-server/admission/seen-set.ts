/**
 * The seen-set: has this URL ever been admitted to the frontier? A Bloom filter answers "certainly
 * new" for almost every new URL without touching the exact store; only when the filter says
 * "maybe" is the exact store asked, so a Bloom false positive costs one exact look-up and can never
 * drop a URL. The exact store is behind a small interface so a persistent store can take its place.
 */
import type { UrlHash } from '../../shared/url-hash.js';
import { ScalableBloomFilter, type BloomFilterOptions } from './bloom-filter.js';
import { UrlHashSet } from './url-hash-set.js';

export interface ExactUrlStore {
  has(hi: number, lo: number): boolean;
  add(hi: number, lo: number): boolean;
  readonly size: number;
}

export interface SeenSetStats {
  urls: number;
  bloomBytes: number;
  bloomStages: number;
  bloomFalsePositiveRateBound: number;
  /** Look-ups where the filter said "maybe" for a URL that was in fact new. */
  bloomFalsePositives: number;
  exactLookups: number;
}

export class SeenSet {
  readonly #bloom: ScalableBloomFilter;
  readonly #exact: ExactUrlStore;
  #falsePositives = 0;
  #exactLookups = 0;

  constructor(options: BloomFilterOptions, exact: ExactUrlStore = new UrlHashSet(Math.min(options.capacity, 1 << 20))) {
    this.#bloom = new ScalableBloomFilter(options);
    this.#exact = exact;
  }

  /** Records the URL; returns true if it had never been seen before. */
  addIfNew(hash: UrlHash): boolean {
    const hi = readUint32(hash, 0);
    const lo = readUint32(hash, 4);
    if (this.#bloom.mightContain(hi, lo)) {
      this.#exactLookups++;
      if (this.#exact.has(hi, lo)) return false;
      this.#falsePositives++;
    }
    this.#bloom.add(hi, lo);
    this.#exact.add(hi, lo);
    return true;
  }

  has(hash: UrlHash): boolean {
    const hi = readUint32(hash, 0);
    const lo = readUint32(hash, 4);
    return this.#bloom.mightContain(hi, lo) && this.#exact.has(hi, lo);
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
    };
  }
}

function readUint32(bytes: Uint8Array, offset: number): number {
  return ((bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!) >>> 0;
}
