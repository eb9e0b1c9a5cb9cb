/**
 * 64-bit simhash of page text (Charikar, "Similarity estimation techniques from rounding algorithms",
 * STOC 2002), the fingerprint Manku, Jain and Das Sarma use to find near-duplicate web pages ("Detecting
 * Near-Duplicates for Web Crawling", WWW 2007). Similar texts get fingerprints a few bits apart;
 * unrelated texts differ in about half of the 64 bits.
 *
 * Features: the text is lowercased and split into words (maximal runs of Unicode letters, marks and
 * digits); the features are the distinct word 3-shingles ("a b c", "b c d", ...), or the distinct words
 * when there are fewer than three. Each feature is hashed to 64 bits (xxHash64, seed 0, of its UTF-8
 * bytes) and weighted 1; bit i of the simhash is 1 when more features have bit i set than clear. A text
 * without words hashes to 0000000000000000.
 *
 * Shingles rather than single words make the fingerprint sensitive to word order (a page and its
 * word-shuffled spam copy differ), while one changed word touches at most three features of a page's
 * hundreds, which moves a bit only where the vote was already close: in a 500-word text that is about
 * one bit per changed word.
 */
import xxhash from 'xxhash-wasm';

const hasher = await xxhash();

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
const SHINGLE = 3;

/** The simhash of a text, 16 lowercase hex digits. */
export function simhash(text: string): string {
  const words = text.toLowerCase().match(WORD) ?? [];
  const features = new Set<string>();
  if (words.length < SHINGLE) {
    for (const word of words) features.add(word);
  } else {
    for (let i = 0; i + SHINGLE <= words.length; i++) features.add(`${words[i]} ${words[i + 1]} ${words[i + 2]}`);
  }
  // votes[0..31]: bits 32..63 (the high word), votes[32..63]: bits 0..31.
  const votes = new Int32Array(64);
  for (const feature of features) {
    const hash = hasher.h64(feature);
    const high = Number(hash >> 32n);
    const low = Number(hash & 0xffffffffn);
    for (let bit = 0; bit < 32; bit++) {
      votes[bit]! += (high >>> bit) & 1 ? 1 : -1;
      votes[32 + bit]! += (low >>> bit) & 1 ? 1 : -1;
    }
  }
  let high = 0;
  let low = 0;
  for (let bit = 0; bit < 32; bit++) {
    if (votes[bit]! > 0) high |= 1 << bit;
    if (votes[32 + bit]! > 0) low |= 1 << bit;
  }
  return hex32(high) + hex32(low);
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
