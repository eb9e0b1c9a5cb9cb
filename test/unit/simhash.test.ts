/**
 * Simhash (shared/simhash.ts) and the duplicate indexes (queue-server/crawldb/near-duplicates.ts).
 * Texts come from a seeded generator, so every number here is reproducible.
 */
import { describe, expect, it } from 'vitest';
import { NearDuplicateIndex, SignatureIndex } from '../../queue-server/crawldb/near-duplicates.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';
import { hammingDistance, NEAR_DUPLICATE_DISTANCE, simhash } from '../../shared/simhash.js';

const prng = mulberry32;

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'be', 'da', 'fe', 'gu', 'ho', 'ji', 'pe', 'wa'];
/** 2,000 made-up words (with repeats, as real vocabularies have near-homographs). */
const VOCABULARY = (() => {
  const random = prng(7);
  return Array.from({ length: 2000 }, () => {
    let word = '';
    for (let i = 0, n = 1 + Math.floor(random() * 3); i < n; i++) word += SYLLABLES[Math.floor(random() * SYLLABLES.length)];
    return word;
  });
})();

/** `count` words drawn with a skew towards common ones, as in prose. */
function words(seed: number, count: number): string[] {
  const random = prng(seed);
  return Array.from({ length: count }, () => VOCABULARY[Math.floor(random() ** 2 * VOCABULARY.length)]!);
}

/** `text` with a run of `count` words from position `at` replaced by words that occur nowhere else. */
function editRun(text: readonly string[], at: number, count: number): string[] {
  const edited = [...text];
  for (let k = 0; k < count; k++) edited[at + k] = `edited${k}`;
  return edited;
}

function distanceAfterEdit(seed: number, length: number, editedWords: number): number {
  const original = words(seed, length);
  return hammingDistance(simhash(original.join(' ')), simhash(editRun(original, Math.floor(length / 2), editedWords).join(' ')));
}

/**
 * The definition of shared/simhash.ts written plainly, as it was first implemented: lowercase the whole
 * text, split it into words with a regular expression, hash every word 3-shingle, count each distinct
 * feature's bits one by one. The fast implementation must agree with it bit for bit.
 */
function plainSimhash(text: string): string {
  const fmix = (value: number): number => {
    let h = value ^ (value >>> 16);
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    return (h ^ (h >>> 16)) >>> 0;
  };
  const hashes = (text.toLowerCase().match(/[\p{L}\p{M}\p{N}]+/gu) ?? []).map((word) => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193);
    return fmix(hash);
  });
  const features: [number, number][] = [];
  if (hashes.length < 3) for (const h of hashes) features.push([h, fmix(h ^ 0x9e3779b9)]);
  else {
    for (let i = 0; i + 2 < hashes.length; i++) {
      const [a, b, c] = [hashes[i]!, hashes[i + 1]!, hashes[i + 2]!];
      features.push([
        fmix((Math.imul(a, 0x9e3779b1) ^ Math.imul(b, 0x85ebca77) ^ Math.imul(c, 0xc2b2ae3d)) >>> 0),
        fmix((Math.imul(a, 0x27d4eb2f) + Math.imul(b ^ 0x165667b1, 0x9e3779b1) + Math.imul(c, 0x85ebca77)) >>> 0),
      ]);
    }
  }
  const seen = new Set<number>();
  const ones = new Array<number>(64).fill(0);
  for (const [high, low] of features) {
    const key = high * 2097152 + (low >>> 11);
    if (seen.has(key)) continue;
    seen.add(key);
    for (let bit = 0; bit < 32; bit++) {
      ones[bit]! += (low >>> bit) & 1;
      ones[32 + bit]! += (high >>> bit) & 1;
    }
  }
  let bits = 0n;
  for (let bit = 0; bit < 64; bit++) if (ones[bit]! * 2 > seen.size) bits |= 1n << BigInt(bit);
  return bits.toString(16).padStart(16, '0');
}

describe('simhash', () => {
  it('is 16 lowercase hex digits, and 0 bits apart for identical texts', () => {
    const text = words(1, 500).join(' ');
    expect(simhash(text)).toMatch(/^[0-9a-f]{16}$/);
    expect(hammingDistance(simhash(text), simhash(text))).toBe(0);
  });

  it('agrees bit for bit with the plain definition, on ASCII and on any script, long texts and short ones after them', () => {
    const texts = [
      words(11, 500).join(' '),
      'The QUICK brown Fox, 42 times: fox-trot & fox_trot.',
      'Größe Maße STRASSE straße Ärger Œuvre naïve façade',
      '日本語のページです。東京タワー、富士山 と 京都',
      'İstanbul IŞIK ıi Iİ',
      'ΟΔΥΣΣΕΥΣ ΣΟΦΟΣ σοφός',
      'Mathematical 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and emoji 😀 between 🎉 words',
      'cafe\u0301 combining e\u0301 marks a\u0308b',
      'lone \ud800 surrogate \udc00 here \ud83d',
      'K (Kelvin sign) Å (Angstrom) ﬁ ligature ⅰⅱⅲ Ⅻ ①②',
      'العربية والفارسية עברית हिन्दी ไทย',
      '',
      '   \n\t  ',
      'one',
      'two words',
      words(12, 20_000).join(' '),
      'short after long: the scratch space must not remember the long text',
      words(13, 9_000).join('\u00a0'),
    ];
    for (const text of texts) expect(simhash(text), JSON.stringify(text.slice(0, 40))).toBe(plainSimhash(text));
    const random = prng(99);
    for (let round = 0; round < 200; round++) {
      const units = Array.from({ length: Math.floor(random() * 300) }, () => (random() < 0.7 ? 0x20 + Math.floor(random() * 0x60) : Math.floor(random() * 0x10000)));
      const text = String.fromCharCode(...units);
      expect(simhash(text), `random text ${round} (seed 99)`).toBe(plainSimhash(text));
    }
  });

  it('ignores case, punctuation and spacing: only the words count', () => {
    expect(simhash('The quick, brown fox -- jumps over the LAZY dog!')).toBe(simhash('the quick brown fox jumps over the lazy dog'));
    expect(simhash('Café au lait, 2 euros.')).toBe(simhash('café   AU lait 2 EUROS'));
  });

  it('hashes a text without words to zero, and uses the words themselves when there are fewer than three', () => {
    expect(simhash('')).toBe('0000000000000000');
    expect(simhash(' -- !! ')).toBe('0000000000000000');
    expect(simhash('petrel')).not.toBe('0000000000000000');
    expect(simhash('petrel crawler')).not.toBe(simhash('crawler'));
  });

  it('keeps most 500-word texts within NEAR_DUPLICATE_DISTANCE when a run of three words is edited', () => {
    // About 70 % stay within 3 bits at this length (the rate grows with length, see below).
    const distances = Array.from({ length: 60 }, (_, seed) => {
      const original = words(700 + seed, 500);
      return hammingDistance(simhash(original.join(' ')), simhash(editRun(original, 250, 3).join(' ')));
    });
    expect(distances.filter((d) => d <= NEAR_DUPLICATE_DISTANCE).length).toBeGreaterThanOrEqual(33);
    expect(Math.max(...distances)).toBeLessThanOrEqual(12);
  });

  it('keeps most one-word edits of 500-word texts, and nearly all three-word edits of 2,000-word texts, near', () => {
    // The fraction within distance 3 grows with length: one changed word moves 6 of ~500 shingle votes.
    const short = Array.from({ length: 100 }, (_, seed) => distanceAfterEdit(100 + seed, 500, 1));
    const long = Array.from({ length: 50 }, (_, seed) => distanceAfterEdit(300 + seed, 2000, 3));
    const within = (distances: number[]): number => distances.filter((d) => d <= NEAR_DUPLICATE_DISTANCE).length;
    console.log(`simhash: one-word edit of 500 words within 3 bits ${within(short)}/100, three-word edit of 2,000 words ${within(long)}/50`);
    expect(within(short)).toBeGreaterThanOrEqual(75);
    expect(within(long)).toBeGreaterThanOrEqual(43);
  });

  it('puts unrelated texts far apart (about 32 bits, never within 10)', () => {
    const distances = Array.from({ length: 50 }, (_, i) => hammingDistance(simhash(words(1000 + 2 * i, 500).join(' ')), simhash(words(1001 + 2 * i, 500).join(' '))));
    expect(Math.min(...distances)).toBeGreaterThan(10);
    const mean = distances.reduce((sum, d) => sum + d, 0) / distances.length;
    expect(mean).toBeGreaterThan(26);
    expect(mean).toBeLessThan(38);
  });

  it('tells a text from its words shuffled (shingles carry word order)', () => {
    const text = words(5, 500);
    const random = prng(6);
    const shuffled = [...text].sort(() => random() - 0.5);
    expect(hammingDistance(simhash(text.join(' ')), simhash(shuffled.join(' ')))).toBeGreaterThan(10);
  });

  it('counts differing bits', () => {
    expect(hammingDistance('0000000000000000', 'ffffffffffffffff')).toBe(64);
    expect(hammingDistance('8000000000000001', '0000000000000000')).toBe(2);
    expect(hammingDistance('0123456789abcdef', 'fedcba9876543210')).toBe(hammingDistance('fedcba9876543210', '0123456789abcdef'));
    expect(() => hammingDistance('xyz', '0000000000000000')).toThrow(/simhash/);
  });
});

/** `base` with the given bits (0 = least significant) flipped. */
function flip(base: string, ...bits: number[]): string {
  let value = BigInt(`0x${base}`);
  for (const bit of bits) value ^= 1n << BigInt(bit);
  return value.toString(16).padStart(16, '0');
}

const F = '9e3779b97f4a7c15';
const A = 'aaaaaaaaaaaaaaaa';
const B = 'bbbbbbbbbbbbbbbb';
const C = 'cccccccccccccccc';

describe('NearDuplicateIndex', () => {
  it('finds a page within 3 bits, wherever the bits fall, and not one 4 bits away', () => {
    const index = new NearDuplicateIndex();
    index.add(A, F);
    expect(index.findNear(F, C)).toBe(A);
    expect(index.findNear(flip(F, 0, 17, 40), C)).toBe(A); // three bits in three different bands
    expect(index.findNear(flip(F, 1, 2, 3), C)).toBe(A); // three bits in one band
    expect(index.findNear(flip(F, 63, 47, 31), C)).toBe(A);
    expect(index.findNear(flip(F, 0, 17, 40, 60), C)).toBeNull(); // four bits, one per band: no band shared
    expect(index.findNear(flip(F, 1, 2, 3, 4), C)).toBeNull(); // four bits in one band
    expect(index.findNear(flip(F, 0, 1, 2, 3, 4, 5, 6, 7, 8), C)).toBeNull();
  });

  it('never answers with the page asking', () => {
    const index = new NearDuplicateIndex();
    index.add(A, F);
    expect(index.findNear(F, A)).toBeNull();
    expect(index.findNear(flip(F, 5), A)).toBeNull();
  });

  it('answers with the oldest near page, and never with one newer than the page asking', () => {
    const index = new NearDuplicateIndex();
    index.add(A, F);
    index.add(B, flip(F, 1));
    expect(index.findNear(flip(F, 2), C)).toBe(A);
    expect(index.findNear(flip(F, 1), B)).toBe(A); // B duplicates the older A
    expect(index.findNear(F, A)).toBeNull(); // A is the original: B is newer
    index.add(A, F); // same fingerprint again: A keeps its age
    expect(index.findNear(F, A)).toBeNull();
    index.add(A, flip(F, 60)); // new fingerprint: A moves and is now the newest
    expect(index.findNear(flip(F, 60), A)).toBe(B);
  });

  it('forgets a removed page, and ignores a remove with another fingerprint or an unknown page', () => {
    const index = new NearDuplicateIndex();
    index.add(A, F);
    index.add(B, flip(F, 63));
    index.remove(A, flip(F, 3)); // not A's fingerprint: nothing happens
    index.remove(C, F);
    expect(index.size).toBe(2);
    index.remove(A, F);
    expect(index.size).toBe(1);
    expect(index.findNear(F, C)).toBe(B);
    index.remove(B, flip(F, 63));
    expect(index.size).toBe(0);
    expect(index.findNear(F, C)).toBeNull();
  });

  it('finds every near variant and no random fingerprint among 20,000 pages', () => {
    const random = prng(42);
    const hex = (): string => Array.from({ length: 4 }, () => Math.floor(random() * 0x10000).toString(16).padStart(4, '0')).join('');
    const index = new NearDuplicateIndex();
    const pages: [string, string][] = Array.from({ length: 20_000 }, (_, i) => [i.toString(16).padStart(16, '0'), hex()]);
    for (const [url, fingerprint] of pages) index.add(url, fingerprint);
    expect(index.size).toBe(20_000);
    let found = 0;
    let falsePositives = 0;
    for (let i = 0; i < 2_000; i++) {
      const [url, fingerprint] = pages[Math.floor(random() * pages.length)]!;
      const bits = Array.from({ length: 3 }, () => Math.floor(random() * 64));
      if (index.findNear(flip(fingerprint, ...new Set(bits)), 'ffffffffffffffff') === url) found++;
      if (index.findNear(hex(), 'ffffffffffffffff') !== null) falsePositives++;
    }
    expect(found).toBe(2_000);
    expect(falsePositives).toBe(0);
  });
});

describe('SignatureIndex', () => {
  it('finds the oldest page with the same signature, never the page asking', () => {
    const index = new SignatureIndex();
    index.add('0000000000000001', A);
    index.add('0000000000000001', B);
    index.add('0000000000000002', C);
    expect(index.find('0000000000000001', C)).toBe(A);
    expect(index.find('0000000000000001', B)).toBe(A);
    expect(index.find('0000000000000001', A)).toBeNull(); // A is the original
    expect(index.find('0000000000000002', C)).toBeNull();
    expect(index.find('0000000000000003', C)).toBeNull();
    expect(index.size).toBe(3);
  });

  it('forgets a removed page and moves a page whose signature changed', () => {
    const index = new SignatureIndex();
    index.add('0000000000000001', A);
    index.add('0000000000000001', B);
    index.remove('0000000000000009', A); // not A's signature: nothing happens
    expect(index.find('0000000000000001', C)).toBe(A);
    index.remove('0000000000000001', A);
    expect(index.find('0000000000000001', C)).toBe(B);
    index.add('0000000000000002', B);
    expect(index.find('0000000000000001', C)).toBeNull();
    expect(index.find('0000000000000002', C)).toBe(B);
    expect(index.size).toBe(1);
  });

  it('keeps the age of a page added again with the signature it has', () => {
    const index = new SignatureIndex();
    index.add('0000000000000001', A);
    index.add('0000000000000001', B);
    index.add('0000000000000001', A);
    expect(index.find('0000000000000001', B)).toBe(A);
  });
});
