/**
 * Reading one term's postings with their positions, a posting at a time (see LAYOUT.md, "Postings
 * section"): for phrases, which need the positions of the docs every word has, and for the proximity
 * of the best results, which need the positions of a few docs.
 */
import { FIELD_BODY, FIELD_HEADING, FIELD_TITLE, MAX_POSITIONS } from './segment-format.js';

/**
 * Skip points of a page doc stream, one every SKIP_EVERY postings, as evaluate.ts records them while it
 * scores a word (proximity then needs only a few docs of each stream): before the posting with ordinal
 * i (a multiple of SKIP_EVERY), four numbers: the doc of the posting before it, its byte offset in the
 * doc stream, the varint index where its positions start in the position stream, and i.
 */
export const SKIP_EVERY = 32;

/**
 * A cursor over one doc stream (page or anchor docs) and its position stream: the doc stream is
 * decoded one posting at a time as the caller advances (nothing is materialized), the position
 * stream is read forward only for the docs asked; skipping positions is a count of varint
 * terminators (bytes below 0x80), four bytes at a time (skipVarints), without decoding numbers.
 */
export class PostingCursor {
  doc = -1;
  /** Kept positions of title, heading, body of the current posting (0: field absent). */
  readonly counts = new Int32Array(3);
  readonly #docs: Uint8Array;
  readonly #positions: Uint8Array;
  readonly #positionWords: DataView;
  readonly #df: number;
  readonly #anchor: boolean;
  #i = 0;
  #docAt = 0;
  /** Varint index in the position stream where the current posting's positions start. */
  #start = 0;
  #next = 0;
  /** Read position in the position stream: byte offset and varint index. */
  #byte = 0;
  #index = 0;

  constructor(docBytes: Uint8Array, positions: Uint8Array, df: number, anchor: boolean) {
    this.#docs = docBytes;
    this.#positions = positions;
    this.#positionWords = new DataView(positions.buffer, positions.byteOffset, positions.byteLength);
    this.#df = df;
    this.#anchor = anchor;
  }

  #varint(): number {
    const bytes = this.#docs;
    let b = bytes[this.#docAt++]!;
    let value = b & 0x7f;
    for (let scale = 0x80; b >= 0x80; scale *= 0x80) {
      b = bytes[this.#docAt++]!;
      value += (b & 0x7f) * scale;
    }
    return value;
  }

  /** Moves to the next posting; false (doc = +Infinity) when there is none. */
  next(): boolean {
    if (this.#i >= this.#df) {
      this.doc = Number.POSITIVE_INFINITY;
      return false;
    }
    this.#i++;
    this.#start = this.#next;
    const c = this.counts;
    if (this.#anchor) {
      this.doc += this.#varint();
      c[0] = 0;
      c[1] = 0;
      c[2] = Math.min(this.#varint(), MAX_POSITIONS);
    } else {
      const head = this.#varint();
      this.doc += Math.floor(head / 16);
      c[0] = head & FIELD_TITLE ? Math.min(this.#varint(), MAX_POSITIONS) : 0;
      c[1] = head & FIELD_HEADING ? Math.min(this.#varint(), MAX_POSITIONS) : 0;
      c[2] = head & FIELD_BODY ? Math.min(this.#varint(), MAX_POSITIONS) : 0;
    }
    this.#next = this.#start + c[0]! + c[1]! + c[2]!;
    return true;
  }

  /**
   * Moves forward to the last skip point before `target` without decoding the postings in between
   * (then advanceTo decodes the rest, at most SKIP_EVERY). `skips` are the page doc stream's skip
   * points (see SKIP_EVERY); the position stream is not moved: the next positions() skips to the
   * posting's positions by their varint index, which the skip point carries.
   */
  skipToward(skips: readonly number[], target: number): void {
    // The last skip point whose posting before it has a doc below target, and that is ahead.
    let lo = 0;
    let hi = skips.length / 4 - 1;
    let best = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (skips[mid * 4]! < target) {
        best = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (best < 0 || skips[best * 4 + 3]! <= this.#i) return;
    this.doc = skips[best * 4]!;
    this.#docAt = skips[best * 4 + 1]!;
    this.#next = skips[best * 4 + 2]!;
    this.#i = skips[best * 4 + 3]!;
  }

  /** Moves to the first posting with doc >= target. */
  advanceTo(target: number): boolean {
    while (this.doc < target) if (!this.next()) return false;
    return true;
  }

  /** Decodes the current posting's positions in field slot f (0 title, 1 heading, 2 body) into `out`; returns how many. Fields must be asked in ascending order. */
  positions(f: number, out: Int32Array): number {
    const c = this.counts;
    const n = c[f]!;
    if (n === 0) return 0;
    let target = this.#start;
    for (let k = 0; k < f; k++) target += c[k]!;
    const bytes = this.#positions;
    let at = skipVarints(bytes, this.#positionWords, this.#byte, target - this.#index);
    let position = 0;
    for (let k = 0; k < n; k++) {
      let b = bytes[at++]!;
      let value = b & 0x7f;
      for (let scale = 0x80; b >= 0x80; scale *= 0x80) {
        b = bytes[at++]!;
        value += (b & 0x7f) * scale;
      }
      position = k === 0 ? value : position + value;
      out[k] = position;
    }
    this.#byte = at;
    this.#index = target + n;
    return n;
  }
}

/**
 * The byte offset `skip` varints after `at` in `bytes` (`words`: a view of the same bytes). Whole
 * 32-bit words are passed while they hold fewer terminators than are left to skip (so the varint
 * that ends the skip is never passed), their terminators counted at once: the high bit of each byte,
 * inverted, gathered by a multiplication into the top byte. The rest goes a byte at a time.
 */
export function skipVarints(bytes: Uint8Array, words: DataView, at: number, skip: number): number {
  const lastWord = bytes.length - 4;
  while (at <= lastWord) {
    const n = Math.imul((~words.getUint32(at, true) & 0x80808080) >>> 7, 0x01010101) >>> 24;
    if (n >= skip) break;
    skip -= n;
    at += 4;
  }
  for (; skip > 0; at++) if (bytes[at]! < 0x80) skip--;
  return at;
}
