/**
 * URL groups: every URL the index has met (a page's own URL, an anchor's target, a duplicate's
 * original) gets a dense in-memory number, its group, so that query evaluation can accumulate scores
 * across segments in typed arrays indexed by group. A group is one result candidate: the URL's page
 * doc (if live) plus all live anchor docs that target it, plus those that target its duplicates.
 *
 * Rebuilt from the segments at every open (groups are never stored), owned by the SearchIndex.
 *
 * Per group: the hash (8 bytes), where its live entry is (segment id and entry number, -1 when the URL
 * has none), its original when it is a duplicate (one hop: aliases are not followed further), and its
 * anchor-text length (its own inlinks, and the group's total with its duplicates' inlinks). With the
 * hash table (open addressing over three Uint32Arrays at most 70 % full) that is about 55 bytes per URL.
 */
export class UrlGroups {
  #slotsHi: Uint32Array;
  #slotsLo: Uint32Array;
  /** group + 1 per slot; 0 = empty */
  #slotsGroup: Int32Array;
  #mask: number;
  #size = 0;

  hashHi = new Uint32Array(1024);
  hashLo = new Uint32Array(1024);
  /** Segment id of the group's live entry, or -1. */
  entrySegment = new Int32Array(1024).fill(-1);
  entryIndex = new Int32Array(1024).fill(-1);
  /** Group of the original when this URL is a duplicate, or -1. */
  alias = new Int32Array(1024).fill(-1);
  /** Anchor tokens of live anchor docs targeting this URL itself. */
  ownAnchorLength = new Float64Array(1024);
  /** Anchor tokens that count for this group: its own, plus those of URLs whose alias it is. */
  groupAnchorLength = new Float64Array(1024);

  constructor() {
    this.#slotsHi = new Uint32Array(2048);
    this.#slotsLo = new Uint32Array(2048);
    this.#slotsGroup = new Int32Array(2048);
    this.#mask = 2047;
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#slotsHi.byteLength * 3 + this.hashHi.byteLength * 2 + this.entrySegment.byteLength * 3 + this.ownAnchorLength.byteLength * 2;
  }

  /** The group of a hash, or -1. */
  find(hi: number, lo: number): number {
    let slot = mix(hi, lo) & this.#mask;
    for (;;) {
      const g = this.#slotsGroup[slot]!;
      if (g === 0) return -1;
      if (this.#slotsHi[slot] === hi && this.#slotsLo[slot] === lo) return g - 1;
      slot = (slot + 1) & this.#mask;
    }
  }

  /** The group of a hash, created when new. */
  ensure(hi: number, lo: number): number {
    let slot = mix(hi, lo) & this.#mask;
    for (;;) {
      const g = this.#slotsGroup[slot]!;
      if (g === 0) break;
      if (this.#slotsHi[slot] === hi && this.#slotsLo[slot] === lo) return g - 1;
      slot = (slot + 1) & this.#mask;
    }
    const group = this.#size++;
    if (group >= this.hashHi.length) this.#growGroups();
    this.hashHi[group] = hi;
    this.hashLo[group] = lo;
    this.#slotsHi[slot] = hi;
    this.#slotsLo[slot] = lo;
    this.#slotsGroup[slot] = group + 1;
    if (this.#size > this.#slotsGroup.length * 0.7) this.#rehash();
    return group;
  }

  /** The group whose results a URL's anchor text counts for (its original when it is a duplicate). */
  canonical(group: number): number {
    const original = this.alias[group]!;
    return original >= 0 ? original : group;
  }

  addAnchorLength(target: number, length: number): void {
    this.ownAnchorLength[target] = this.ownAnchorLength[target]! + length;
    const canonical = this.canonical(target);
    this.groupAnchorLength[canonical] = this.groupAnchorLength[canonical]! + length;
  }

  setAlias(group: number, original: number): void {
    const own = this.ownAnchorLength[group]!;
    const before = this.canonical(group);
    this.groupAnchorLength[before] = this.groupAnchorLength[before]! - own;
    this.alias[group] = original === group ? -1 : original;
    const after = this.canonical(group);
    this.groupAnchorLength[after] = this.groupAnchorLength[after]! + own;
  }

  #growGroups(): void {
    const n = this.hashHi.length * 2;
    const grow32 = (a: Uint32Array) => {
      const b = new Uint32Array(n);
      b.set(a);
      return b;
    };
    const growI = (a: Int32Array) => {
      const b = new Int32Array(n).fill(-1);
      b.set(a);
      return b;
    };
    const growF = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    this.hashHi = grow32(this.hashHi);
    this.hashLo = grow32(this.hashLo);
    this.entrySegment = growI(this.entrySegment);
    this.entryIndex = growI(this.entryIndex);
    this.alias = growI(this.alias);
    this.ownAnchorLength = growF(this.ownAnchorLength);
    this.groupAnchorLength = growF(this.groupAnchorLength);
  }

  #rehash(): void {
    const slots = this.#slotsGroup.length * 2;
    this.#slotsHi = new Uint32Array(slots);
    this.#slotsLo = new Uint32Array(slots);
    this.#slotsGroup = new Int32Array(slots);
    this.#mask = slots - 1;
    for (let group = 0; group < this.#size; group++) {
      const hi = this.hashHi[group]!;
      const lo = this.hashLo[group]!;
      let slot = mix(hi, lo) & this.#mask;
      while (this.#slotsGroup[slot] !== 0) slot = (slot + 1) & this.#mask;
      this.#slotsHi[slot] = hi;
      this.#slotsLo[slot] = lo;
      this.#slotsGroup[slot] = group + 1;
    }
  }
}

/** The hashes are xxHash64 already; fold the halves so both contribute to the slot. */
function mix(hi: number, lo: number): number {
  return (lo ^ Math.imul(hi, 0x9e3779b1)) >>> 0;
}
