/**
 * An exact in-memory set of 64-bit URL hashes: open addressing with linear probing over two parallel
 * Uint32Arrays (high and low halves). 8 bytes per slot, kept at most 70 % full, so about 12 bytes
 * per URL; doubling when full. The pair (0, 0) marks an empty slot, so the one hash that is all zero
 * bits is remembered in a flag of its own.
 */
export class UrlHashSet {
  #hi: Uint32Array;
  #lo: Uint32Array;
  #mask: number;
  #size = 0;
  #hasZero = false;

  constructor(initialCapacity = 1024) {
    let slots = 16;
    while (slots * 0.7 < initialCapacity) slots *= 2;
    this.#hi = new Uint32Array(slots);
    this.#lo = new Uint32Array(slots);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#hi.byteLength + this.#lo.byteLength;
  }

  has(hi: number, lo: number): boolean {
    if ((hi | lo) === 0) return this.#hasZero;
    let slot = (lo ^ hi) & this.#mask;
    for (;;) {
      const slotHi = this.#hi[slot]!;
      const slotLo = this.#lo[slot]!;
      if ((slotHi | slotLo) === 0) return false;
      if (slotHi === hi >>> 0 && slotLo === lo >>> 0) return true;
      slot = (slot + 1) & this.#mask;
    }
  }

  /** Forgets every hash, keeping the table's size (no allocation). */
  clear(): void {
    this.#hi.fill(0);
    this.#lo.fill(0);
    this.#size = 0;
    this.#hasZero = false;
  }

  /** Adds the hash; returns false if it was already present. */
  add(hi: number, lo: number): boolean {
    if ((hi | lo) === 0) {
      if (this.#hasZero) return false;
      this.#hasZero = true;
      this.#size++;
      return true;
    }
    if ((this.#size + 1) > this.#hi.length * 0.7) this.#grow();
    if (!this.#insert(hi >>> 0, lo >>> 0)) return false;
    this.#size++;
    return true;
  }

  #insert(hi: number, lo: number): boolean {
    let slot = (lo ^ hi) & this.#mask;
    for (;;) {
      const slotHi = this.#hi[slot]!;
      const slotLo = this.#lo[slot]!;
      if ((slotHi | slotLo) === 0) {
        this.#hi[slot] = hi;
        this.#lo[slot] = lo;
        return true;
      }
      if (slotHi === hi && slotLo === lo) return false;
      slot = (slot + 1) & this.#mask;
    }
  }

  #grow(): void {
    const oldHi = this.#hi;
    const oldLo = this.#lo;
    this.#hi = new Uint32Array(oldHi.length * 2);
    this.#lo = new Uint32Array(oldLo.length * 2);
    this.#mask = this.#hi.length - 1;
    for (let i = 0; i < oldHi.length; i++) {
      if ((oldHi[i]! | oldLo[i]!) !== 0) this.#insert(oldHi[i]!, oldLo[i]!);
    }
  }
}
