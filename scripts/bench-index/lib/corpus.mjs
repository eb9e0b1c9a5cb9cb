/**
 * The benchmark's documents: generated text over a Zipfian vocabulary (word of rank r drawn with
 * probability proportional to 1 / r^ZIPF_S, as in natural language), deterministic from a seed, made
 * on the fly so no engine holds the corpus in memory. Every engine process regenerates the same
 * documents.
 */
export const VOCABULARY_SIZE = 50_000;
export const ZIPF_S = 1.0;
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ba', 'do', 'fu', 'gi', 'ho', 'ju', 'pa', 'wo', 'ze', 'ri', 'tu', 'mo', 'nu', 'ga', 'pi', 'so'];

export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** VOCABULARY_SIZE distinct made-up words ending in a vowel (no English suffix for a stemmer to strip). */
export function vocabulary(seed = 1) {
  const rand = mulberry32(seed);
  const seen = new Set();
  const words = [];
  while (words.length < VOCABULARY_SIZE) {
    const n = 2 + Math.floor(rand() * 3);
    let w = '';
    for (let i = 0; i < n; i++) w += SYLLABLES[Math.floor(rand() * SYLLABLES.length)];
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
}

/** Draws word ranks (0-based) from the Zipf distribution by binary search over its CDF. */
export function zipf(size = VOCABULARY_SIZE, s = ZIPF_S) {
  const cdf = new Float64Array(size);
  let total = 0;
  for (let r = 0; r < size; r++) cdf[r] = total += 1 / (r + 1) ** s;
  for (let r = 0; r < size; r++) cdf[r] /= total;
  return (rand) => {
    const x = rand();
    let lo = 0;
    let hi = size - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const words = vocabulary();
const rank = zipf();

/** Word count of a body: 40 to ~940, median ~230, mean ~310 (skewed, like the text of web pages). */
function bodyLength(rand) {
  const u = rand();
  return 40 + Math.floor(110 * Math.exp(2.1 * u * u));
}

/** Document i: { id, url, title, body }. */
export function documentAt(i, seed = 7) {
  const rand = mulberry32(Math.imul(i + 1, 0x9e3779b1) ^ seed);
  const titleWords = 3 + Math.floor(rand() * 6);
  const title = [];
  for (let k = 0; k < titleWords; k++) title.push(words[rank(rand)]);
  const n = bodyLength(rand);
  const body = [];
  for (let k = 0; k < n; k++) body.push(words[rank(rand)] + (rand() < 0.08 ? '.' : ''));
  return { id: i, url: `https://site${i % 97}.bench.test/doc/${i}`, title: title.join(' '), body: body.join(' ') };
}

export function* documents(count, seed = 7) {
  for (let i = 0; i < count; i++) yield documentAt(i, seed);
}

/** Sizes of the corpus, printed with the results. */
export function corpusStats(count, seed = 7) {
  let bytes = 0;
  let min = Infinity;
  let max = 0;
  let wordsTotal = 0;
  for (const d of documents(count, seed)) {
    const b = Buffer.byteLength(d.title) + Buffer.byteLength(d.body);
    bytes += b;
    min = Math.min(min, b);
    max = Math.max(max, b);
    wordsTotal += d.body.split(' ').length;
  }
  return { documents: count, textBytes: bytes, meanBytesPerDoc: Math.round(bytes / count), minBytes: min, maxBytes: max, meanWordsPerDoc: Math.round(wordsTotal / count), vocabulary: VOCABULARY_SIZE, zipfS: ZIPF_S };
}

/**
 * 1,000 queries of each kind. Words are drawn from the same Zipf distribution without its 10 most
 * common words (stop words nobody searches alone); phrases are two consecutive words of a random
 * document, so each has at least one match.
 */
export function queries(count, docs, seed = 11) {
  const rand = mulberry32(seed);
  const word = () => {
    for (;;) {
      const r = rank(rand);
      if (r >= 10) return words[r];
    }
  };
  const out = { one: [], and2: [], and3: [], phrase: [] };
  for (let q = 0; q < count; q++) {
    out.one.push([word()]);
    out.and2.push([word(), word()]);
    out.and3.push([word(), word(), word()]);
    const d = documentAt(Math.floor(rand() * docs));
    const body = d.body.replace(/\./g, '').split(' ');
    const at = Math.floor(rand() * (body.length - 1));
    out.phrase.push([body[at], body[at + 1]]);
  }
  return out;
}
