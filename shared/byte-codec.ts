/**
 * Bytes in and out for the binary wire forms (shared/results-frame.ts): unsigned LEB128 varints (up to
 * 2^53 - 1, JavaScript's safe integers), little-endian float64, length-prefixed byte runs. The writer
 * grows one buffer by doubling; the reader never reads past its end and never allocates on a length it
 * has not checked against the bytes left, so a hostile length fails as `FRAME_TRUNCATED` instead of
 * allocating.
 */
import { isUtf8 } from 'node:buffer';

/** Why a frame was refused; `code` is stable (tests and answers name it). */
export type FrameErrorCode =
  | 'FRAME_BAD_MAGIC'
  | 'FRAME_VERSION'
  | 'FRAME_TRUNCATED'
  | 'FRAME_TRAILING_BYTES'
  | 'FRAME_BAD_VARINT'
  | 'FRAME_BAD_UTF8'
  | 'FRAME_BAD_VALUE'
  | 'FRAME_TOO_COMPLEX'
  | 'FRAME_MISMATCH';

export class FrameError extends Error {
  readonly code: FrameErrorCode;
  constructor(code: FrameErrorCode, message: string) {
    super(message);
    this.code = code;
  }
}

export class ByteWriter {
  #buf: Buffer;
  #at = 0;

  constructor(initialBytes = 4096) {
    this.#buf = Buffer.allocUnsafe(initialBytes);
  }

  get length(): number {
    return this.#at;
  }

  /** Empties the writer, keeping its buffer (for a writer used again and again). */
  reset(): void {
    this.#at = 0;
  }

  #room(bytes: number): void {
    if (this.#at + bytes <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#at + bytes) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.#buf.copy(grown, 0, 0, this.#at);
    this.#buf = grown;
  }

  u8(value: number): void {
    this.#room(1);
    this.#buf[this.#at++] = value;
  }

  /** An unsigned integer up to 2^53 - 1 as LEB128 (7 bits a byte, low first). */
  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`varint of ${value}: not a safe non-negative integer`);
    this.#room(8);
    let v = value;
    while (v >= 0x80) {
      this.#buf[this.#at++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.#buf[this.#at++] = v;
  }

  f64(value: number): void {
    this.#room(8);
    this.#buf.writeDoubleLE(value, this.#at);
    this.#at += 8;
  }

  raw(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#buf.set(bytes, this.#at);
    this.#at += bytes.length;
  }

  /** A varint length, then the bytes. */
  bytes(bytes: Uint8Array): void {
    this.varint(bytes.length);
    this.raw(bytes);
  }

  /** UTF-8 of `text`, written in place; returns its byte length. */
  utf8(text: string): number {
    this.#room(text.length * 3);
    const written = this.#buf.write(text, this.#at, 'utf8');
    this.#at += written;
    return written;
  }

  /** A varint byte length, then the UTF-8. */
  string(text: string): void {
    // Most strings here are short ASCII: write the length in one byte when it surely fits, else measure.
    if (text.length < 0x80 / 3) {
      this.#room(1 + text.length * 3);
      const at = this.#at++;
      const written = this.#buf.write(text, this.#at, 'utf8');
      this.#buf[at] = written;
      this.#at += written;
      return;
    }
    this.varint(Buffer.byteLength(text, 'utf8'));
    this.utf8(text);
  }

  /** 0 for null, else the byte length + 1, then the UTF-8. */
  nullableString(text: string | null): void {
    if (text === null) return this.u8(0);
    this.varint(Buffer.byteLength(text, 'utf8') + 1);
    this.utf8(text);
  }

  /** The bytes written (a view of the writer's buffer, valid until the next write). */
  finish(): Buffer {
    return this.#buf.subarray(0, this.#at);
  }
}

export class ByteReader {
  readonly #buf: Buffer;
  #at: number;
  readonly #end: number;

  constructor(bytes: Buffer, start = 0, end = bytes.length) {
    this.#buf = bytes;
    this.#at = start;
    this.#end = end;
  }

  get offset(): number {
    return this.#at;
  }

  get remaining(): number {
    return this.#end - this.#at;
  }

  /** The bytes read and the end, for a hot loop that decodes varints inline (results-frame.ts); it hands its offset back with `seek`. */
  get buffer(): Buffer {
    return this.#buf;
  }

  get end(): number {
    return this.#end;
  }

  seek(offset: number): void {
    if (offset < this.#at || offset > this.#end) throw new RangeError(`seek to ${offset} outside ${this.#at}..${this.#end}`);
    this.#at = offset;
  }

  #need(bytes: number, what: string): void {
    if (bytes > this.#end - this.#at) throw new FrameError('FRAME_TRUNCATED', `frame ends inside ${what} at byte ${this.#at} (${bytes} bytes needed, ${this.#end - this.#at} left)`);
  }

  u8(what: string): number {
    this.#need(1, what);
    return this.#buf[this.#at++]!;
  }

  varint(what: string): number {
    const first = this.#at < this.#end ? this.#buf[this.#at]! : -1;
    if (first >= 0 && first < 0x80) {
      this.#at++;
      return first;
    }
    let value = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      this.#need(1, what);
      const byte = this.#buf[this.#at++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        // A last byte of 0 after the first is a longer-than-needed encoding: one value, one form.
        if (byte === 0 && i > 0) throw new FrameError('FRAME_BAD_VARINT', `${what}: a varint with a redundant last byte`);
        break;
      }
      scale *= 0x80;
      if (i >= 7) throw new FrameError('FRAME_BAD_VARINT', `${what}: a varint longer than 8 bytes`);
    }
    if (!Number.isSafeInteger(value)) throw new FrameError('FRAME_BAD_VARINT', `${what}: ${value} beyond 2^53 - 1`);
    return value;
  }

  /** A varint count of items of at least `minBytesEach` bytes each, at most `max`: never more than the bytes left could hold. */
  count(what: string, max: number, minBytesEach = 1): number {
    const n = this.varint(what);
    if (n > max) throw new FrameError('FRAME_BAD_VALUE', `${what}: ${n}, at most ${max}`);
    if (n * minBytesEach > this.remaining) throw new FrameError('FRAME_TRUNCATED', `${what}: ${n} items cannot fit in the ${this.remaining} bytes left`);
    return n;
  }

  f64(what: string): number {
    this.#need(8, what);
    const value = this.#buf.readDoubleLE(this.#at);
    this.#at += 8;
    return value;
  }

  /** `length` bytes as a view of the frame (no copy). */
  raw(length: number, what: string): Buffer {
    this.#need(length, what);
    const out = this.#buf.subarray(this.#at, this.#at + length);
    this.#at += length;
    return out;
  }

  /** A varint length (at most `max`), then that many bytes, copied out of the frame so the frame can be dropped. */
  bytes(max: number, what: string): Buffer {
    const length = this.varint(what);
    if (length > max) throw new FrameError('FRAME_BAD_VALUE', `${what}: ${length} bytes, at most ${max}`);
    return Buffer.from(this.raw(length, what));
  }

  /** `length` bytes of UTF-8 as a string; invalid UTF-8 is refused, not replaced. */
  utf8(length: number, what: string): string {
    const bytes = this.raw(length, what);
    if (!isUtf8Bytes(bytes)) throw new FrameError('FRAME_BAD_UTF8', `${what} is not valid UTF-8`);
    return bytes.toString('utf8');
  }

  /** A varint byte length (at most `maxBytes`), then UTF-8. */
  string(maxBytes: number, what: string): string {
    const length = this.varint(what);
    if (length > maxBytes) throw new FrameError('FRAME_BAD_VALUE', `${what}: ${length} bytes, at most ${maxBytes}`);
    return this.utf8(length, what);
  }

  /** `nullableString`'s form. */
  nullableString(maxBytes: number, what: string): string | null {
    const length = this.varint(what);
    if (length === 0) return null;
    if (length - 1 > maxBytes) throw new FrameError('FRAME_BAD_VALUE', `${what}: ${length - 1} bytes, at most ${maxBytes}`);
    return this.utf8(length - 1, what);
  }
}

/** Whether `bytes` is well-formed UTF-8 (ASCII checked in JS; anything else by Node's native validator). */
function isUtf8Bytes(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! >= 0x80) return isUtf8(bytes);
  return true;
}
