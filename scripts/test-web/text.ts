/**
 * Filler prose for generated pages: deterministic sentences from a fixed vocabulary, so pages look like
 * text (spaces, punctuation, varied word lengths) to parsers, compressors and size limits.
 */
import { prng, type Prng } from './prng.js';

const WORDS = (
  'petrel storm ocean wind wave shearwater albatross fulmar gannet tern plover sandpiper cliff colony nest ' +
  'burrow island harbour tide current swell spray foam reef shoal kelp plankton krill squid herring mackerel ' +
  'north south east west dawn dusk night season migration flight glide soar skim dive feed rest breed moult ' +
  'observer survey census record count estimate measure ring band track signal beacon satellite logger ' +
  'weather pressure front gale calm fog drizzle squall horizon latitude longitude chart compass bearing ' +
  'vessel deck mast sail hull keel crew captain watch log entry report archive index page link crawler ' +
  'fetch queue schedule revisit politeness delay robots sitemap header cache validator response request ' +
  'network address host port socket stream buffer byte frame packet route path segment fragment query ' +
  'slowly quietly often rarely always never early late far near high low long short wide narrow ' +
  'grey white dark pale bright silver black brown small large young old first last many few'
).split(' ');

export function sentence(rng: Prng): string {
  const length = 8 + rng.int(10);
  const words: string[] = [];
  for (let i = 0; i < length; i++) words.push(rng.pick(WORDS));
  const first = words[0] ?? 'petrel';
  words[0] = first.charAt(0).toUpperCase() + first.slice(1);
  if (length > 12) words[5] = `${words[5] ?? 'wind'},`;
  return `${words.join(' ')}.`;
}

export function paragraph(rng: Prng): string {
  const count = 3 + rng.int(4);
  const sentences: string[] = [];
  for (let i = 0; i < count; i++) sentences.push(sentence(rng));
  return sentences.join(' ');
}

/**
 * Paragraphs seeded by `seed`, until their total length reaches `minChars` (at least `minCount` of them).
 * Drawn from a fixed pool, so a 14 KB page costs microseconds rather than a fresh 2,000-word draw: the
 * test web must not be the bottleneck of a throughput benchmark.
 */
export function paragraphs(seed: string, opts: { minCount: number; minChars: number }): string[] {
  const pool = paragraphPool();
  const rng = prng(seed);
  const out: string[] = [];
  let chars = 0;
  while (out.length < opts.minCount || chars < opts.minChars) {
    const text = rng.pick(pool);
    out.push(text);
    chars += text.length;
  }
  return out;
}

const POOL_SIZE = 1024;
let pool: readonly string[] | undefined;

function paragraphPool(): readonly string[] {
  if (pool === undefined) {
    const rng = prng('paragraph-pool');
    const texts: string[] = [];
    for (let i = 0; i < POOL_SIZE; i++) texts.push(paragraph(rng));
    pool = texts;
  }
  return pool;
}

/**
 * `text` with a run of `count` consecutive words, from the middle on, swapped for other words of the
 * vocabulary (an edited phrase); only bare lowercase words are swapped, so capitals and punctuation
 * stay. Makes near duplicates: a page and its near copy differ in these words only, and a run changes
 * fewer word shingles than scattered words would, which keeps simhashes close.
 */
export function swapWords(text: string, count: number): string {
  const words = text.split(' ');
  const bare = (i: number): boolean => /^[a-z]+$/.test(words[i] ?? '');
  let start = Math.floor(words.length / 2);
  const runAt = (at: number): boolean => Array.from({ length: count }, (_, k) => bare(at + k)).every(Boolean);
  while (start + count <= words.length && !runAt(start)) start++;
  if (start + count > words.length) throw new Error(`swapWords: no run of ${count} bare words in the second half of the text`);
  for (let k = start; k < start + count; k++) {
    // The vocabulary has no repeated word, so the next one always differs.
    words[k] = WORDS[(WORDS.indexOf(words[k] ?? '') + 1) % WORDS.length] ?? 'petrel';
  }
  return words.join(' ');
}
