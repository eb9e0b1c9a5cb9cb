/**
 * 64-bit simhash of page text (Charikar, "Similarity estimation techniques from rounding algorithms",
 * STOC 2002), the fingerprint Manku, Jain and Das Sarma use to find near-duplicate web pages ("Detecting
 * Near-Duplicates for Web Crawling", WWW 2007). Similar texts get fingerprints a few bits apart;
 * unrelated texts differ in about half of the 64 bits.
 *
 * Features: the text is lowercased and split into words (maximal runs of Unicode letters, marks and
 * digits); the features are the distinct word 3-shingles ("a b c", "b c d", ...), or the distinct words
 * when there are fewer than three. Each feature is hashed to 64 bits (mixed from 32-bit hashes of its
 * words, see `wordHash`) and weighted 1; bit i of the simhash is 1 when more features have bit i set than clear. A text
 * without words hashes to 0000000000000000.
 *
 * Shingles rather than single words make the fingerprint sensitive to word order (a page and its
 * word-shuffled spam copy differ), while one changed word touches at most three features of a page's
 * hundreds, which moves a bit only where the vote was already close: in a 500-word text that is about
 * one bit per changed word.
 */
/**
 * Two simhashes at most this many bits apart are near duplicates. Manku, Jain and Das Sarma (WWW 2007)
 * chose k = 3 for 64-bit simhash fingerprints over 8 billion web pages: at that distance precision and
 * recall were both about 0.75, larger k found mostly false positives, smaller k missed most true near
 * duplicates. For two unrelated pages (independent, uniform fingerprints) the chance of landing within 3
 * bits is sum_{i<=3} C(64, i) / 2^64 ~ 2.4e-15, so even a billion-page crawl expects no accidental
 * match; and k = 3 lets the index split fingerprints into 4 bands of 16 bits, one of which two near
 * duplicates must share exactly (pigeonhole), so a look-up is 4 exact matches, not a scan.
 */
export const NEAR_DUPLICATE_DISTANCE = 3;

const WORD = /[\p{L}\p{M}\p{N}]+/gu;
const WORD_CHAR = /^[\p{L}\p{M}\p{N}]$/u;
const SHINGLE = 3;

/**
 * 32-bit FNV-1a over the UTF-16 code units of a word, then the murmur3 finalizer: each word is hashed
 * once, and a shingle's 64 bits are mixed from its three word hashes (no strings, no BigInt).
 */
function wordHash(word: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
  return fmix32(hash);
}

function fmix32(value: number): number {
  let h = value ^ (value >>> 16);
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** ASCII code units that belong to words (letters and digits), 1; the rest 0. */
const ASCII_WORD = (() => {
  const table = new Uint8Array(128);
  for (let c = 0; c < 128; c++) table[c] = /[A-Za-z0-9]/.test(String.fromCharCode(c)) ? 1 : 0;
  return table;
})();
/** Whether a BMP code point is a letter, mark or digit: 0 not yet known, 1 yes, 2 no (filled as met). */
const BMP_WORD = new Uint8Array(0x10000);

function isWordCodePoint(codePoint: number): boolean {
  if (codePoint >= 0x10000) return WORD_CHAR.test(String.fromCodePoint(codePoint));
  let known = BMP_WORD[codePoint]!;
  if (known === 0) {
    known = WORD_CHAR.test(String.fromCharCode(codePoint)) ? 1 : 2;
    BMP_WORD[codePoint] = known;
  }
  return known === 1;
}

/**
 * Scratch space reused by every call (the fetcher hashes one page at a time, synchronously): word
 * hashes, and the open-addressing set of features already counted. Grown when a text needs more.
 */
let wordHashes = new Uint32Array(4096);
let seenHigh = new Uint32Array(8192);
let seenLow = new Uint32Array(8192);
let seenUsed = new Uint8Array(8192);

function pushWordHash(count: number, hash: number): number {
  if (count === wordHashes.length) {
    const grown = new Uint32Array(wordHashes.length * 2);
    grown.set(wordHashes);
    wordHashes = grown;
  }
  wordHashes[count] = hash;
  return count + 1;
}

/**
 * The words of `text`, hashed, into `wordHashes`; returns how many. The same words as
 * `text.toLowerCase().match(WORD)`, found in one pass without a substring per word: an ASCII word is
 * lowercased and hashed as it is scanned; a word with other characters is cut out and lowercased
 * whole (lowercasing can change its length, e.g. U+0130), then hashed. Lowercasing word by word
 * differs from lowercasing the whole text only for a capital sigma followed by an apostrophe-like
 * character and a letter (Unicode's final-sigma context), which can change such a text's fingerprint
 * by a feature or two.
 */
function hashWords(text: string): number {
  let count = 0;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 0x80) {
      if (ASCII_WORD[c] === 0) {
        i++;
        continue;
      }
    } else {
      const codePoint = text.codePointAt(i)!;
      if (!isWordCodePoint(codePoint)) {
        i += codePoint >= 0x10000 ? 2 : 1;
        continue;
      }
    }
    const start = i;
    let hash = 0x811c9dc5;
    let ascii = true;
    while (i < n) {
      let unit = text.charCodeAt(i);
      if (unit < 0x80) {
        if (ASCII_WORD[unit] === 0) break;
        if (unit >= 0x41 && unit <= 0x5a) unit |= 0x20;
        hash = Math.imul(hash ^ unit, 0x01000193);
        i++;
      } else {
        const codePoint = text.codePointAt(i)!;
        if (!isWordCodePoint(codePoint)) break;
        ascii = false;
        i += codePoint >= 0x10000 ? 2 : 1;
      }
    }
    if (ascii) count = pushWordHash(count, fmix32(hash));
    else for (const word of text.slice(start, i).toLowerCase().match(WORD) ?? []) count = pushWordHash(count, wordHash(word));
  }
  return count;
}

/** Adds the feature to the seen set; false when it was there already. `size` is a power of two. */
function firstSighting(high: number, lowKey: number, size: number): boolean {
  const mask = size - 1;
  let slot = (Math.imul(high ^ Math.imul(lowKey, 0x9e3779b1), 0x85ebca6b) >>> 0) & mask;
  while (seenUsed[slot] === 1) {
    if (seenHigh[slot] === high && seenLow[slot] === lowKey) return false;
    slot = (slot + 1) & mask;
  }
  seenUsed[slot] = 1;
  seenHigh[slot] = high;
  seenLow[slot] = lowKey;
  return true;
}

/** The simhash of a text, 16 lowercase hex digits. */
export function simhash(text: string): string {
  const wordCount = hashWords(text);
  const hashes = wordHashes;
  const features = wordCount < SHINGLE ? wordCount : wordCount - SHINGLE + 1;
  // The seen set at most half full.
  let size = 16;
  while (size < features * 2) size *= 2;
  if (size > seenUsed.length) {
    seenHigh = new Uint32Array(size);
    seenLow = new Uint32Array(size);
    seenUsed = new Uint8Array(size);
  } else seenUsed.fill(0, 0, size);
  // Votes are counted as ones per bit position: bit i is set when more than half the features set it.
  // The counting is SWAR: a feature adds, for each of its 8 bytes, a table entry that spreads the
  // byte's 8 bits over 8 byte-wide lanes (two 32-bit words), so 16 additions count 64 bits; lanes are
  // emptied into `ones` before they can overflow (every 255 features).
  const ones = new Uint32Array(64);
  const lanes = new Uint32Array(16);
  let pending = 0;
  let distinct = 0;
  for (let i = 0; i < features; i++) {
    let high: number;
    let low: number;
    if (wordCount < SHINGLE) {
      high = hashes[i]!;
      low = fmix32(high ^ 0x9e3779b9);
    } else {
      const a = hashes[i]!;
      const b = hashes[i + 1]!;
      const c = hashes[i + 2]!;
      high = fmix32((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) >>> 0);
      low = fmix32((Math.imul(a, 0x27d4eb2f) + Math.imul(b ^ 0x165667b1, 0x9e3779b1) + Math.imul(c, 0x85ebca77)) >>> 0);
    }
    // Distinct features, weight 1 each, told apart by 53 bits (all of `high`, the top 21 of `low`;
    // a collision only merges two votes).
    if (!firstSighting(high, low >>> 11, size)) continue;
    distinct++;
    for (let byte = 0; byte < 4; byte++) {
      const lowByte = ((low >>> (byte * 8)) & 255) * 2;
      const highByte = ((high >>> (byte * 8)) & 255) * 2;
      lanes[byte * 2]! += SPREAD[lowByte]!;
      lanes[byte * 2 + 1]! += SPREAD[lowByte + 1]!;
      lanes[8 + byte * 2]! += SPREAD[highByte]!;
      lanes[8 + byte * 2 + 1]! += SPREAD[highByte + 1]!;
    }
    if (++pending === 255) {
      drainLanes(lanes, ones);
      pending = 0;
    }
  }
  drainLanes(lanes, ones);
  let high = 0;
  let low = 0;
  for (let bit = 0; bit < 32; bit++) {
    if (ones[32 + bit]! * 2 > distinct) high |= 1 << bit;
    if (ones[bit]! * 2 > distinct) low |= 1 << bit;
  }
  return hex32(high) + hex32(low);
}

/** For each byte value: its bits 0-3 in the four lanes of the first word, bits 4-7 in the second's. */
const SPREAD = (() => {
  const table = new Uint32Array(512);
  for (let value = 0; value < 256; value++) {
    let first = 0;
    let second = 0;
    for (let bit = 0; bit < 4; bit++) {
      first |= ((value >>> bit) & 1) << (bit * 8);
      second |= ((value >>> (bit + 4)) & 1) << (bit * 8);
    }
    table[value * 2] = first;
    table[value * 2 + 1] = second;
  }
  return table;
})();

/** Adds the lane counts to `ones` (bit position = byte index * 8 + bit) and empties the lanes. */
function drainLanes(lanes: Uint32Array, ones: Uint32Array): void {
  for (let byte = 0; byte < 8; byte++) {
    for (let half = 0; half < 2; half++) {
      const word = lanes[byte * 2 + half]!;
      for (let lane = 0; lane < 4; lane++) ones[byte * 8 + half * 4 + lane]! += (word >>> (lane * 8)) & 255;
      lanes[byte * 2 + half] = 0;
    }
  }
}

/** Number of bits in which two simhashes (16 hex digits each) differ. */
export function hammingDistance(a: string, b: string): number {
  const [aHigh, aLow] = simhashHalves(a);
  const [bHigh, bLow] = simhashHalves(b);
  return popcount32(aHigh ^ bHigh) + popcount32(aLow ^ bLow);
}

/** A simhash as its high and low 32 bits (unsigned); throws unless it is 16 hex digits. */
export function simhashHalves(value: string): [high: number, low: number] {
  if (!/^[0-9a-fA-F]{16}$/.test(value)) throw new Error(`not a 16-hex-digit simhash: ${JSON.stringify(value)}`);
  return [Number.parseInt(value.slice(0, 8), 16), Number.parseInt(value.slice(8), 16)];
}

export function popcount32(value: number): number {
  let v = value - ((value >>> 1) & 0x55555555);
  v = (v & 0x33333333) + ((v >>> 2) & 0x33333333);
  return Math.imul((v + (v >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}
