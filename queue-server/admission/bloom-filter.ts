/**
 * A scalable Bloom filter over 64-bit URL hashes: the fast "definitely new" answer in front of the
 * exact URL store (see seen-set.ts).
 *
 * Sizing: the first stage holds `capacity` items at false-positive rate `falsePositiveRate / 2`; when a
 * stage is full a new one twice as large is added at half the previous rate, so the rate over all
 * stages stays below `falsePositiveRate` (p/2 + p/4 + ... < p) however far the crawl outgrows its
 * estimate (Almeida et al., "Scalable Bloom Filters", 2007). Memory: about 1.44 * log2(1/p) bits per
 * item, e.g. 1.8 MB for a million URLs at p = 0.001.
 *
 * Hashing: the k probe positions come from the two 32-bit halves of the URL's xxHash64 by double
 * hashing (Kirsch and Mitzenmacher), so no further hashing is done per probe.
 */

interface Stage {
  readonly bits: Uint32Array;
  readonly bitCount: number;
  readonly probes: number;
  readonly capacity: number;
  count: number;
}

export interface BloomFilterOptions {
  /** Items the first stage is sized for. */
  readonly capacity: number;
  /** Upper bound of the false-positive rate over all stages, 0 < p < 1. */
  readonly falsePositiveRate: number;
}

export class ScalableBloomFilter {
  readonly #stages: Stage[] = [];
  readonly #falsePositiveRate: number;

  constructor({ capacity, falsePositiveRate }: BloomFilterOptions) {
    if (!(capacity >= 1)) throw new RangeError(`Bloom filter capacity must be at least 1, got ${capacity}`);
    if (!(falsePositiveRate > 0 && falsePositiveRate < 1)) {
      throw new RangeError(`Bloom filter false-positive rate must be between 0 and 1, got ${falsePositiveRate}`);
    }
    this.#falsePositiveRate = falsePositiveRate;
    this.#stages.push(makeStage(Math.ceil(capacity), falsePositiveRate / 2));
  }

  /** False means certainly never added; true means probably added. */
  mightContain(hi: number, lo: number): boolean {
    for (const stage of this.#stages) if (stageHas(stage, hi, lo)) return true;
    return false;
  }

  add(hi: number, lo: number): void {
    let stage = this.#stages[this.#stages.length - 1]!;
    if (stage.count >= stage.capacity) {
      const rate = this.#falsePositiveRate / 2 ** (this.#stages.length + 1);
      stage = makeStage(stage.capacity * 2, rate);
      this.#stages.push(stage);
    }
    const { bits, bitCount, probes } = stage;
    let position = lo >>> 0;
    const step = (hi >>> 0) | 1;
    for (let i = 0; i < probes; i++) {
      const bit = position % bitCount;
      bits[bit >>> 5]! |= 1 << (bit & 31);
      position = (position + step) >>> 0;
    }
    stage.count++;
  }

  stats(): { stages: number; items: number; bytes: number; falsePositiveRateBound: number } {
    let items = 0;
    let bytes = 0;
    for (const stage of this.#stages) {
      items += stage.count;
      bytes += stage.bits.byteLength;
    }
    return { stages: this.#stages.length, items, bytes, falsePositiveRateBound: this.#falsePositiveRate };
  }
}

function makeStage(capacity: number, rate: number): Stage {
  const bitCount = Math.max(64, Math.ceil((-capacity * Math.log(rate)) / Math.LN2 ** 2));
  const probes = Math.max(1, Math.round((bitCount / capacity) * Math.LN2));
  return { bits: new Uint32Array(Math.ceil(bitCount / 32)), bitCount, probes, capacity, count: 0 };
}

function stageHas({ bits, bitCount, probes }: Stage, hi: number, lo: number): boolean {
  let position = lo >>> 0;
  const step = (hi >>> 0) | 1;
  for (let i = 0; i < probes; i++) {
    const bit = position % bitCount;
    if ((bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    position = (position + step) >>> 0;
  }
  return true;
}
