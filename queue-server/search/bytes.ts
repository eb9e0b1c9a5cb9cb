/**
 * Byte codecs of the search index: unsigned LEB128 varints (7 bits per byte, low bits first, high bit
 * = more follows; values up to 2^53 - 1), a growable writer and a bounds-checked reader.
 *
 * Every posting list, dictionary block and document record is built from these. The reader throws
 * IndexError INDEX_CORRUPT on a varint that runs past its buffer or past 2^53, so a damaged segment
 * is reported, never read as garbage numbers.
 */
import { IndexError } from './errors.js';

export class ByteWriter {
  #bytes: Uint8Array;
  #length = 0;

  constructor(initialCapacity = 64) {
    this.#bytes = new Uint8Array(Math.max(8, initialCapacity));
  }

  get length(): number {
    return this.#length;
  }

  /** Bytes allocated (for memory accounting). */
  get capacity(): number {
    return this.#bytes.length;
  }

  #ensure(extra: number): void {
    const need = this.#length + extra;
    if (need <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < need) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#bytes.subarray(0, this.#length));
    this.#bytes = grown;
  }

  varint(value: number): void {
    if (this.#length + 8 > this.#bytes.length) this.#ensure(8);
    const bytes = this.#bytes;
    let at = this.#length;
    let v = value;
    while (v >= 0x80) {
      bytes[at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    bytes[at++] = v;
    this.#length = at;
  }

  byte(value: number): void {
    this.#ensure(1);
    this.#bytes[this.#length++] = value;
  }

  u32(value: number): void {
    this.#ensure(4);
    const b = this.#bytes;
    const at = this.#length;
    b[at] = value & 0xff;
    b[at + 1] = (value >>> 8) & 0xff;
    b[at + 2] = (value >>> 16) & 0xff;
    b[at + 3] = (value >>> 24) & 0xff;
    this.#length += 4;
  }

  bytes(value: Uint8Array): void {
    this.#ensure(value.length);
    this.#bytes.set(value, this.#length);
    this.#length += value.length;
  }

  /** Appends source[start, end) (a loop for short ranges: cheaper than making a view to copy). */
  range(source: Uint8Array, start: number, end: number): void {
    const n = end - start;
    this.#ensure(n);
    if (n < 64) {
      const bytes = this.#bytes;
      let at = this.#length;
      for (let i = start; i < end; i++) bytes[at++] = source[i]!;
    } else this.#bytes.set(source.subarray(start, end), this.#length);
    this.#length += n;
  }

  /** A length-prefixed UTF-8 string. */
  string(value: string): void {
    const encoded = Buffer.from(value, 'utf8');
    this.varint(encoded.length);
    this.bytes(encoded);
  }

  /** The backing array (valid up to `length`, until the next write): for copying without a view object. */
  get raw(): Uint8Array {
    return this.#bytes;
  }

  /** A view of the bytes written so far (valid until the next write). */
  view(): Uint8Array {
    return this.#bytes.subarray(0, this.#length);
  }

  /** A copy of the bytes written so far. */
  toBytes(): Uint8Array {
    return this.#bytes.slice(0, this.#length);
  }

  reset(): void {
    this.#length = 0;
  }
}

export class ByteReader {
  readonly bytes: Uint8Array;
  pos: number;
  readonly end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.pos = start;
    this.end = end;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  varint(): number {
    const bytes = this.bytes;
    let at = this.pos;
    let b = at < this.end ? bytes[at++]! : overrun();
    if (b < 0x80) {
      this.pos = at;
      return b;
    }
    let value = b & 0x7f;
    let scale = 0x80;
    for (;;) {
      b = at < this.end ? bytes[at++]! : overrun();
      value += (b & 0x7f) * scale;
      if (b < 0x80) break;
      scale *= 0x80;
      if (scale > 2 ** 49) throw new IndexError('INDEX_CORRUPT', 'varint longer than 53 bits');
    }
    this.pos = at;
    return value;
  }

  byte(): number {
    if (this.pos >= this.end) overrun();
    return this.bytes[this.pos++]!;
  }

  u32(): number {
    if (this.pos + 4 > this.end) overrun();
    const b = this.bytes;
    const at = this.pos;
    this.pos += 4;
    return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
  }

  take(length: number): Uint8Array {
    if (length < 0 || this.pos + length > this.end) overrun();
    const out = this.bytes.subarray(this.pos, this.pos + length);
    this.pos += length;
    return out;
  }

  string(): string {
    const length = this.varint();
    const bytes = this.take(length);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  }
}

function overrun(): never {
  throw new IndexError('INDEX_CORRUPT', 'read past the end of an encoded block');
}

/** A 64-bit URL hash as two unsigned 32-bit halves (hi, lo): what the index's typed arrays hold. */
export function hashHalves(hash: bigint): [number, number] {
  return [Number((hash >> 32n) & 0xffffffffn), Number(hash & 0xffffffffn)];
}

export function hashHex(hi: number, lo: number): string {
  return hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');
}

/** Bytes as either a finished array or a writer's contents (the writer avoids a view object per term). */
export type Bytes = Uint8Array | ByteWriter;

export function rawBytes(bytes: Bytes): Uint8Array {
  return bytes instanceof ByteWriter ? bytes.raw : bytes;
}
