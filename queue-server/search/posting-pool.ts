/**
 * Growable byte streams for the staging buffer's postings, all in one pool of 64 KiB blocks (the
 * scheme of Lucene's ByteBlockPool): a stream is a chain of slices of growing size (16 bytes, then
 * 32, 64 ... up to 2 KiB), each ending in the 4-byte address of the next. A term's postings cost a
 * few integers in typed arrays instead of objects and arrays of their own, and the blocks are kept
 * and reused after a flush, so staging leaves almost no garbage for the collector (which otherwise
 * let the queue server's heap grow by tens of megabytes per commit).
 *
 * Addresses are block * 64 KiB + offset in 31 bits, so a pool holds at most 2 GiB (the index's
 * staging bound is far below).
 */
import type { ByteWriter } from './bytes.js';

const BLOCK = 1 << 16;
const SLICE_SIZES = [16, 32, 64, 128, 256, 512, 1024, 2048] as const;
const MAX_BLOCKS = 2 ** 31 / BLOCK;

function grown(array: Int32Array<ArrayBuffer>, need: number): Int32Array<ArrayBuffer> {
  if (need <= array.length) return array;
  let size = array.length * 2;
  while (size < need) size *= 2;
  const out = new Int32Array(size);
  out.set(array);
  return out;
}

export class PostingPool {
  readonly #blocks: Uint8Array[] = [];
  /** Block being filled and bytes used in it. */
  #block = -1;
  #used = BLOCK;
  #streams = 0;
  #start = new Int32Array(1024);
  #write = new Int32Array(1024);
  /** Address of the current slice's 4-byte next pointer: writing reaches it, a new slice begins. */
  #end = new Int32Array(1024);
  #level = new Int32Array(1024);
  #length = new Int32Array(1024);

  /** Bytes of the blocks the pool holds (used or kept for reuse). */
  get bytes(): number {
    return this.#blocks.length * BLOCK;
  }

  /** Bytes of the blocks in use since the last reset. */
  get usedBytes(): number {
    return this.#block < 0 ? 0 : this.#block * BLOCK + this.#used;
  }

  /** Forgets every stream; the blocks stay for reuse. */
  reset(): void {
    this.#block = -1;
    this.#used = BLOCK;
    this.#streams = 0;
  }

  #allocate(size: number): number {
    if (this.#used + size > BLOCK) {
      this.#block++;
      if (this.#block >= MAX_BLOCKS) throw new Error('posting pool over 2 GiB');
      if (this.#block === this.#blocks.length) this.#blocks.push(new Uint8Array(BLOCK));
      this.#used = 0;
    }
    const address = this.#block * BLOCK + this.#used;
    this.#used += size;
    return address;
  }

  newStream(): number {
    const s = this.#streams++;
    if (s >= this.#start.length) {
      const n = s + 1;
      this.#start = grown(this.#start, n);
      this.#write = grown(this.#write, n);
      this.#end = grown(this.#end, n);
      this.#level = grown(this.#level, n);
      this.#length = grown(this.#length, n);
    }
    const address = this.#allocate(SLICE_SIZES[0]);
    this.#start[s] = address;
    this.#write[s] = address;
    this.#end[s] = address + SLICE_SIZES[0] - 4;
    this.#level[s] = 0;
    this.#length[s] = 0;
    return s;
  }

  length(stream: number): number {
    return this.#length[stream]!;
  }

  byte(stream: number, value: number): void {
    let at = this.#write[stream]!;
    if (at === this.#end[stream]) {
      const level = Math.min(this.#level[stream]! + 1, SLICE_SIZES.length - 1);
      const size = SLICE_SIZES[level]!;
      const next = this.#allocate(size);
      const block = this.#blocks[at >>> 16]!;
      const offset = at & (BLOCK - 1);
      block[offset] = next & 0xff;
      block[offset + 1] = (next >>> 8) & 0xff;
      block[offset + 2] = (next >>> 16) & 0xff;
      block[offset + 3] = (next >>> 24) & 0xff;
      this.#level[stream] = level;
      this.#end[stream] = next + size - 4;
      at = next;
    }
    this.#blocks[at >>> 16]![at & (BLOCK - 1)] = value;
    this.#write[stream] = at + 1;
    this.#length[stream]!++;
  }

  varint(stream: number, value: number): void {
    // Fast path (almost every posting value): a value under 2^28 takes at most 4 bytes; when the
    // slice has room for them, write straight into its block, without byte()'s per-byte slice check.
    const at = this.#write[stream]!;
    if (value < 0x10000000 && this.#end[stream]! - at >= 4) {
      const block = this.#blocks[at >>> 16]!;
      let offset = at & (BLOCK - 1);
      const start = offset;
      let v = value;
      while (v >= 0x80) {
        block[offset++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      block[offset++] = v;
      const n = offset - start;
      this.#write[stream] = at + n;
      this.#length[stream]! += n;
      return;
    }
    let v = value;
    while (v >= 0x80) {
      this.byte(stream, (v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(stream, v);
  }

  /** Appends the stream's bytes to `out`, following its slices. */
  copyTo(stream: number, out: ByteWriter): void {
    let remaining = this.#length[stream]!;
    let at = this.#start[stream]!;
    let level = 0;
    while (remaining > 0) {
      const size = SLICE_SIZES[level]!;
      const block = this.#blocks[at >>> 16]!;
      const offset = at & (BLOCK - 1);
      const data = Math.min(size - 4, remaining);
      out.range(block, offset, offset + data);
      remaining -= data;
      if (remaining === 0) break;
      const p = offset + size - 4;
      at = (block[p]! | (block[p + 1]! << 8) | (block[p + 2]! << 16) | (block[p + 3]! << 24)) >>> 0;
      level = Math.min(level + 1, SLICE_SIZES.length - 1);
    }
  }
}
