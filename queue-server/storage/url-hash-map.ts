/**
 * An exact in-memory map from 64-bit URL hashes to where a value lies in a file: open addressing with
 * linear probing over parallel typed arrays (hash high and low halves, file offset, value length, file
 * generation), 15 bytes per slot, kept at most 70 % full, so about 21 bytes per entry; doubling when
 * full. The pair (0, 0) marks an empty slot, so the one hash that is all zero bits is kept apart.
 * Deletion shifts the following entries of the probe run back (no tombstones), so a map that has
 * seen many deletions probes no longer than a fresh one.
 */
export interface FileSpan {
  readonly generation: number;
  readonly offset: number;
  readonly length: number;
}

export class UrlHashMap {
  #hi: Uint32Array;
  #lo: Uint32Array;
  #offset: Uint32Array;
  #length: Uint16Array;
  #generation: Uint8Array;
  #mask: number;
  #size = 0;
  #zero: FileSpan | null = null;

  constructor(initialCapacity = 1024) {
    let slots = 16;
    while (slots * 0.7 < initialCapacity) slots *= 2;
    [this.#hi, this.#lo, this.#offset, this.#length, this.#generation] = tables(slots);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#hi.byteLength + this.#lo.byteLength + this.#offset.byteLength + this.#length.byteLength + this.#generation.byteLength;
  }

  get(hi: number, lo: number): FileSpan | null {
    hi >>>= 0;
    lo >>>= 0;
    if ((hi | lo) === 0) return this.#zero;
    const slot = this.#find(hi, lo);
    return slot < 0 ? null : { generation: this.#generation[slot]!, offset: this.#offset[slot]!, length: this.#length[slot]! };
  }

  has(hi: number, lo: number): boolean {
    hi >>>= 0;
    lo >>>= 0;
    if ((hi | lo) === 0) return this.#zero !== null;
    return this.#find(hi, lo) >= 0;
  }

  /** Whether the hash's span is (generation, offset): the frame at that place is the one the map answers with. */
  holdsSpan(hi: number, lo: number, generation: number, offset: number): boolean {
    hi >>>= 0;
    lo >>>= 0;
    if ((hi | lo) === 0) return this.#zero !== null && this.#zero.generation === generation && this.#zero.offset === offset;
    const slot = this.#find(hi, lo);
    return slot >= 0 && this.#generation[slot] === generation && this.#offset[slot] === offset;
  }

  /** Sets or replaces the hash's span. Generation 0 to 255, offset below 2^32, length below 2^16. */
  set(hi: number, lo: number, span: FileSpan): void {
    hi >>>= 0;
    lo >>>= 0;
    if ((hi | lo) === 0) {
      if (this.#zero === null) this.#size++;
      this.#zero = span;
      return;
    }
    const found = this.#find(hi, lo);
    if (found >= 0) {
      this.#write(found, span);
      return;
    }
    if (this.#size + 1 > this.#hi.length * 0.7) this.#grow();
    let slot = (lo ^ hi) & this.#mask;
    while ((this.#hi[slot]! | this.#lo[slot]!) !== 0) slot = (slot + 1) & this.#mask;
    this.#hi[slot] = hi;
    this.#lo[slot] = lo;
    this.#write(slot, span);
    this.#size++;
  }

  /** Removes the hash; returns whether it was there. */
  delete(hi: number, lo: number): boolean {
    hi >>>= 0;
    lo >>>= 0;
    if ((hi | lo) === 0) {
      if (this.#zero === null) return false;
      this.#zero = null;
      this.#size--;
      return true;
    }
    let hole = this.#find(hi, lo);
    if (hole < 0) return false;
    // Backward-shift deletion: an entry after the hole moves into it unless its home slot lies
    // cyclically in (hole, entry], where it would no longer be found.
    let next = (hole + 1) & this.#mask;
    while ((this.#hi[next]! | this.#lo[next]!) !== 0) {
      const home = (this.#lo[next]! ^ this.#hi[next]!) & this.#mask;
      const stays = hole <= next ? hole < home && home <= next : hole < home || home <= next;
      if (!stays) {
        this.#move(next, hole);
        hole = next;
      }
      next = (next + 1) & this.#mask;
    }
    this.#hi[hole] = 0;
    this.#lo[hole] = 0;
    this.#size--;
    return true;
  }

  /** Every entry, in no particular order: the hash's halves and its span. */
  forEach(visit: (hi: number, lo: number, span: FileSpan) => void): void {
    if (this.#zero !== null) visit(0, 0, this.#zero);
    for (let slot = 0; slot < this.#hi.length; slot++) {
      if ((this.#hi[slot]! | this.#lo[slot]!) === 0) continue;
      visit(this.#hi[slot]!, this.#lo[slot]!, { generation: this.#generation[slot]!, offset: this.#offset[slot]!, length: this.#length[slot]! });
    }
  }

  clear(): void {
    this.#hi.fill(0);
    this.#lo.fill(0);
    this.#size = 0;
    this.#zero = null;
  }

  #find(hi: number, lo: number): number {
    let slot = (lo ^ hi) & this.#mask;
    for (;;) {
      const slotHi = this.#hi[slot]!;
      const slotLo = this.#lo[slot]!;
      if ((slotHi | slotLo) === 0) return -1;
      if (slotHi === hi && slotLo === lo) return slot;
      slot = (slot + 1) & this.#mask;
    }
  }

  #write(slot: number, span: FileSpan): void {
    this.#offset[slot] = span.offset;
    this.#length[slot] = span.length;
    this.#generation[slot] = span.generation;
  }

  #move(from: number, to: number): void {
    this.#hi[to] = this.#hi[from]!;
    this.#lo[to] = this.#lo[from]!;
    this.#offset[to] = this.#offset[from]!;
    this.#length[to] = this.#length[from]!;
    this.#generation[to] = this.#generation[from]!;
  }

  #grow(): void {
    const old = { hi: this.#hi, lo: this.#lo, offset: this.#offset, length: this.#length, generation: this.#generation };
    const slots = old.hi.length * 2;
    [this.#hi, this.#lo, this.#offset, this.#length, this.#generation] = tables(slots);
    this.#mask = slots - 1;
    for (let i = 0; i < old.hi.length; i++) {
      const hi = old.hi[i]!;
      const lo = old.lo[i]!;
      if ((hi | lo) === 0) continue;
      let slot = (lo ^ hi) & this.#mask;
      while ((this.#hi[slot]! | this.#lo[slot]!) !== 0) slot = (slot + 1) & this.#mask;
      this.#hi[slot] = hi;
      this.#lo[slot] = lo;
      this.#offset[slot] = old.offset[i]!;
      this.#length[slot] = old.length[i]!;
      this.#generation[slot] = old.generation[i]!;
    }
  }
}

/** The parallel arrays of `slots` slots: hash high and low halves, offset, length, generation. */
function tables(slots: number): [Uint32Array, Uint32Array, Uint32Array, Uint16Array, Uint8Array] {
  return [new Uint32Array(slots), new Uint32Array(slots), new Uint32Array(slots), new Uint16Array(slots), new Uint8Array(slots)];
}
