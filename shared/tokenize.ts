/**
 * Text to index terms, the same way on both sides: fetchers tokenize pages (shared/index-data.ts), the
 * queue server tokenizes queries (queue-server/search/query-parser.ts) and snippets. A term found in a
 * page and the same word typed in a query must come out identical, so this is the one definition.
 *
 * Pipeline, per text:
 *  1. NFKC (UAX #15): full-width forms, ligatures, compatibility digits fold to their plain forms
 *     ("ﬁ" → "fi", "１２" → "12", "①" → "1"). Soft hyphens and zero-width characters are removed
 *     ("hy­phen" is one word).
 *  2. Word segmentation by UAX #29 word boundaries, keeping the segments `Intl.Segmenter` marks
 *     `isWordLike` (letters, numbers, kana, ideographs). Chinese, Japanese, Thai, Lao, Khmer and
 *     Myanmar have no spaces between words: ICU's dictionaries split them.
 *  3. Case folding per word (`toLowerCase`, plus ß → ss and final sigma → σ, the two full case folds
 *     that matter for matching), and the typographic apostrophes ’ and ‘ made the ASCII one, as people
 *     type it ("don’t" and "don't" are one term; Porter2 then strips "’s" as it strips "'s").
 *  3b. For French, Italian and Catalan, an elided article or pronoun in front of a word is dropped
 *     ("l'homme" is indexed as "homme", as Lucene's ElisionFilter does), so that the word is found.
 *  4. Stemming with the Snowball stemmer of the page's language (24 languages: English from porter2,
 *     the others from snowball-stemmers; the `lang` primary subtag picks it, English when unknown or
 *     unsupported). Words in scripts that have no inflection to strip (CJK, Thai, ...) and words
 *     with digits are not stemmed.
 *
 * Cost. `Intl.Segmenter` costs about 7 µs per segment on Node 20 (V8 builds an object per segment and
 * crosses into ICU each step): 14 ms for a 14 KB English page, seven times the fetcher's whole per-page
 * budget (../PERFORMANCE.md). So text in the alphabetic scripts whose UAX #29 rules a regular
 * expression states exactly (Latin, Greek, Cyrillic: WB5-WB13b for ALetter, Numeric, MidLetter,
 * MidNum, MidNumLet, ExtendNumLet, Extend) goes through `WORD` below, and only the whitespace-delimited
 * runs that contain any other character go through `Intl.Segmenter`. test/unit/tokenize.test.ts checks
 * with random strings that both paths give the same words. Stems are memoized per language (bounded),
 * since word frequencies are Zipfian. Measured figures are in the README (search section).
 *
 * Bounds: a term longer than MAX_TERM_CHARS (after folding) is dropped (base64, hashes, URLs glued
 * together: not words anyone types); callers bound the number of tokens per field.
 */
import { createRequire } from 'node:module';
import { stem as porter2Stem } from 'porter2';
import { ownString } from './own-string.js';

/** Longest term kept, in UTF-16 code units after folding; longer tokens are dropped. */
export const MAX_TERM_CHARS = 64;

interface SnowballStemmer {
  stem(word: string): string;
}
interface SnowballFactory {
  newStemmer(algorithm: string): SnowballStemmer;
  algorithms(): string[];
}
// snowball-stemmers is CommonJS without type declarations: loaded through require, typed here. Loaded
// on first use (11 ms of CPU): shared/protocol.ts imports this module for the index data's schema, and
// a fetcher's start-up or a CLI command that stems nothing should not pay for it.
let snowballFactory: SnowballFactory | null = null;
function snowball(): SnowballFactory {
  snowballFactory ??= createRequire(import.meta.url)('snowball-stemmers') as SnowballFactory;
  return snowballFactory;
}

/**
 * English (Snowball's `english`, Porter2) comes from `porter2`, the rest from snowball-stemmers. Both
 * implement the same algorithm and give the same stems (none differed over 2.15 million words: every
 * word of the PostgreSQL and Python manuals and /usr/share/dict, and a million random strings with
 * apostrophes, digits and non-ASCII letters), and porter2 takes about 0.26 µs a word where
 * snowball-stemmers takes 5 µs warm and 28 µs cold. English is most of what a crawl stems, and a
 * fetcher meets new words for its whole life, so the stem cache below does not hide the difference.
 */
function newStemmer(algorithm: string): SnowballStemmer {
  return algorithm === 'english' ? { stem: porter2Stem } : snowball().newStemmer(algorithm);
}

/** BCP 47 primary language subtag → Snowball algorithm. Anything else is stemmed as English. */
const STEMMER_OF_LANGUAGE: Readonly<Record<string, string>> = {
  ar: 'arabic', hy: 'armenian', eu: 'basque', ca: 'catalan', cs: 'czech', da: 'danish', nl: 'dutch',
  en: 'english', fi: 'finnish', fr: 'french', de: 'german', hu: 'hungarian', it: 'italian', ga: 'irish',
  no: 'norwegian', nb: 'norwegian', nn: 'norwegian', pt: 'portuguese', ro: 'romanian', ru: 'russian',
  es: 'spanish', sl: 'slovene', sv: 'swedish', ta: 'tamil', tr: 'turkish',
};

/** Every stemmer name `stemmerFor` can return. */
export const STEMMERS: readonly string[] = [...new Set(Object.values(STEMMER_OF_LANGUAGE))].sort();

/** The Snowball algorithm for a language tag such as `de-AT` or `pt_BR` (English when unknown). */
export function stemmerFor(language: string | null | undefined): string {
  if (language === null || language === undefined) return 'english';
  const primary = /^\s*([A-Za-z]{2,3})(?:$|[-_\s])/.exec(language)?.[1]?.toLowerCase();
  return (primary !== undefined && STEMMER_OF_LANGUAGE[primary]) || 'english';
}

/**
 * Memoized stems of one language, in two generations: when the young map is full it becomes the old
 * one (the previous old one is dropped) and words found in the old one move back to the young one, so
 * the hot words stay and memory stays under 2 x GENERATION entries (about 15 MB).
 */
class StemCache {
  static readonly GENERATION = 65_536;
  readonly #stemmer: SnowballStemmer;
  readonly #elision: RegExp | null;
  #young = new Map<string, string>();
  #old = new Map<string, string>();

  constructor(algorithm: string) {
    this.#stemmer = newStemmer(algorithm);
    this.#elision = ELISION[algorithm] ?? null;
  }

  /** The term for a raw word: folded, then stemmed when the word is alphabetic. */
  term(word: string): string {
    let term = this.#young.get(word);
    if (term !== undefined) return term;
    // Kept as strings of their own: `word` is cut from a page's text (and so may be its stem).
    term = this.#old.get(word) ?? ownString(stemWord(this.#stemmer, withoutElision(foldCase(word), this.#elision)));
    if (this.#young.size >= StemCache.GENERATION) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(ownString(word), term);
    return term;
  }
}

const caches = new Map<string, StemCache>();
function cacheFor(algorithm: string): StemCache {
  let cache = caches.get(algorithm);
  if (cache === undefined) {
    cache = new StemCache(algorithm);
    caches.set(algorithm, cache);
  }
  return cache;
}

/** Case folding for matching: lower case, ß → ss, ς → σ (Unicode full case folding for the two that differ from lower case in practice). */
export function foldCase(word: string): string {
  const lower = word.toLowerCase();
  const folded = /[ßς]/.test(lower) ? lower.replace(/ß/g, 'ss').replace(/ς/g, 'σ') : lower;
  return /[\u2018\u2019]/.test(folded) ? folded.replace(/[\u2018\u2019]/g, "'") : folded;
}

/**
 * Elided articles, pronouns and prepositions that stand before a word with an apostrophe (after
 * foldCase, so the ASCII one), by Snowball algorithm: French l', d', qu', jusqu'...; Italian l', dell',
 * un'...; Catalan l', d', s'... A word that is only such a prefix and an apostrophe keeps it.
 */
const ELISION: Readonly<Record<string, RegExp>> = {
  french: /^(?:l|d|j|m|n|s|t|c|qu|jusqu|lorsqu|puisqu|quoiqu)'(?=.)/,
  italian: /^(?:l|d|c|m|n|s|t|v|un|dell|all|dall|nell|sull|coll|pell|quell|quest|nessun|buon|sant)'(?=.)/,
  catalan: /^(?:l|d|m|n|s|t)'(?=.)/,
};

function withoutElision(folded: string, elision: RegExp | null): string {
  return elision === null ? folded : folded.replace(elision, '');
}

/** Scripts whose words carry no suffixes for Snowball (and digits): left as folded. */
const UNSTEMMED = /[\p{Nd}\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}\p{Script=Thai}\p{Script=Lao}\p{Script=Khmer}\p{Script=Myanmar}]/u;

function stemWord(stemmer: SnowballStemmer, folded: string): string {
  if (UNSTEMMED.test(folded)) return folded;
  const stem = stemmer.stem(folded);
  return stem.length > 0 ? stem : folded;
}

/** Soft hyphen, zero-width space and joiners, direction marks, word joiner, BOM: removed before segmenting. */
const INVISIBLE = /[\u00AD\u200B-\u200F\u2060\uFEFF]/g;

/** NFKC plus removal of invisible characters: the text tokens and their offsets refer to. */
export function normalizeText(text: string): string {
  if (!NOT_ASCII.test(text)) return text; // NFKC leaves ASCII as it is, and it has no invisible characters
  const nfkc = text.normalize('NFKC');
  return INVISIBLE.test(nfkc) ? nfkc.replace(INVISIBLE, '') : nfkc;
}

/**
 * Characters the fast path handles: C0/C1 controls, Basic Latin, Latin-1, Latin Extended-A/B, IPA,
 * spacing modifiers, combining diacritics, Greek, Cyrillic (+ supplement), Latin Extended Additional,
 * general punctuation, currency signs, and whitespace. A whitespace-delimited run with any other
 * character is segmented by ICU.
 */
function isComplexUnit(c: number): boolean {
  if (c <= 0x36f) return false;
  if (c <= 0x52f) return !((c >= 0x370 && c <= 0x377) || (c >= 0x37a && c <= 0x37f) || c >= 0x384);
  if (c < 0x1e00) return c !== 0x1680;
  if (c <= 0x206f) return false;
  if (c >= 0x20a0 && c <= 0x20cf) return false;
  return !isSpace(c);
}
// Greek range notes: U+0378/0379/0380-0383 are unassigned (ICU treats them as Other), so they go to ICU.
// A surrogate (any character beyond the BMP) is complex, so a pair is found at its first unit.

/**
 * Index of the first complex UTF-16 unit (`isComplexUnit`) at or after `from`, or -1. A loop over the
 * char codes: a regular expression with the `u` flag and this class took 80 µs to scan 14 KB of
 * ASCII text, this about a quarter of that, and it does not restart on every non-ASCII character
 * that is not complex (a no-break space, a curly quote).
 */
function nextComplex(text: string, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80 && isComplexUnit(c)) return i;
  }
  return -1;
}

/** Index of the first non-ASCII unit in `text[from, to)`, or -1. */
function nextNonAscii(text: string, from: number, to: number): number {
  NON_ASCII_CHAR.lastIndex = from;
  const found = NON_ASCII_CHAR.exec(text)?.index ?? -1;
  return found < to ? found : -1;
}

/**
 * UAX #29 words over the fast-path characters. A word starts with a letter, digit or connector
 * (ExtendNumLet) and continues with those and combining marks (WB4, WB5, WB8-WB10, WB13a/b); a
 * MidLetter (: · ‧) or MidNumLet (. ' ‘ ’) joins two letters (WB6/7); a MidNum (, ;) or MidNumLet joins
 * two digits (WB11/12).
 */
const WORD = /[\p{L}\p{Nd}\p{Pc}][\p{L}\p{Nd}\p{Pc}\p{M}]*(?:(?:(?<=\p{L}\p{M}*)[:\u00B7\u2027.'\u2018\u2019](?=\p{M}*\p{L})|(?<=\p{Nd}\p{M}*)[,;.'\u2018\u2019](?=\p{M}*\p{Nd}))[\p{L}\p{Nd}\p{Pc}\p{M}]+)*/gu;

const NOT_ASCII = /[^\u0000-\u007f]/;
const NON_ASCII_CHAR = /[^\u0000-\u007f]/g;

/** JavaScript's \s (and `trim`'s white space): the characters no word contains (UAX #29 breaks around all of them). */
export function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

/**
 * The next whitespace-delimited run of `text` at or after `from` that holds a character `marker`
 * matches, as [start, end), or null. (A regular expression for the whole run, non-spaces around X,
 * backtracks over every word: 0.5 ms per 14 KB page; finding X and widening to the spaces around
 * it does not.)
 */
function nextRun(text: string, from: number, to: number, marker: (text: string, from: number, to: number) => number): [number, number] | null {
  const found = marker(text, from, to);
  if (found < 0) return null;
  let start = found;
  while (start > from && !isSpace(text.charCodeAt(start - 1))) start--;
  let end = found + 1;
  while (end < to && !isSpace(text.charCodeAt(end))) end++;
  return [start, end];
}

/** A segment is kept only if it has a letter or digit (ICU calls "_" alone not word-like; "__" neither). */
const HAS_WORD_CHARACTER = /[\p{L}\p{N}]/u;

/** ICU reports a word that ends in a connector followed by combining marks ("a_\u0308") as not word-like; matched here so both paths agree. */
const ICU_NOT_WORD_LIKE = /\p{Pc}\p{M}+$/u;

const segmenters = new Map<string, Intl.Segmenter>();
function segmenterFor(locale: string): Intl.Segmenter {
  let segmenter = segmenters.get(locale);
  if (segmenter === undefined) {
    segmenter = new Intl.Segmenter(locale, { granularity: 'word' });
    segmenters.set(locale, segmenter);
  }
  return segmenter;
}

/** A word of the normalized text: the raw segment and its UTF-16 offsets in `normalizeText(text)`. */
export interface WordSpan {
  readonly word: string;
  readonly start: number;
  readonly end: number;
}

/**
 * Calls `visit` for each word of an already normalized text, in order, until it returns false.
 * `locale` only picks ICU's segmenter instance (its dictionaries apply whatever the locale).
 */
export function forEachWord(normalized: string, visit: (word: string, start: number, end: number) => boolean, locale = 'en'): void {
  // Pure ASCII text (most pages in Latin scripts, once NFKC has made no-break spaces plain ones):
  // the char-code scanner alone, with no search for characters that need ICU.
  if (!NOT_ASCII.test(normalized)) {
    asciiWords(normalized, 0, normalized.length, visit);
    return;
  }
  let cursor = 0;
  const fast = (from: number, to: number): boolean => {
    if (from >= to) return true;
    if (!NOT_ASCII.test(from === 0 && to === normalized.length ? normalized : normalized.slice(from, to))) return asciiWords(normalized, from, to, visit);
    // Whitespace-delimited runs with a non-ASCII character take the regular expression, the ASCII
    // text between them the char-code scanner (no word spans whitespace, so the split is exact).
    let at = from;
    for (let run = nextRun(normalized, at, to, nextNonAscii); run !== null; run = nextRun(normalized, at, to, nextNonAscii)) {
      const [start, end] = run;
      if (start > at && !asciiWords(normalized, at, start, visit)) return false;
      const text = normalized.slice(start, end);
      WORD.lastIndex = 0;
      for (let m = WORD.exec(text); m !== null; m = WORD.exec(text)) {
        const word = m[0];
        if (!HAS_WORD_CHARACTER.test(word) || ICU_NOT_WORD_LIKE.test(word)) continue;
        const wordAt = start + m.index;
        if (!visit(word, wordAt, wordAt + word.length)) return false;
      }
      at = end;
    }
    return at >= to || asciiWords(normalized, at, to, visit);
  };
  for (let run = nextRun(normalized, 0, normalized.length, nextComplex); run !== null; run = nextRun(normalized, cursor, normalized.length, nextComplex)) {
    const [start, end] = run;
    if (!fast(cursor, start)) return;
    for (const segment of segmenterFor(locale).segment(normalized.slice(start, end))) {
      if (segment.isWordLike !== true || !HAS_WORD_CHARACTER.test(segment.segment)) continue;
      if (!visit(segment.segment, start + segment.index, start + segment.index + segment.segment.length)) return;
    }
    cursor = end;
  }
  fast(cursor, normalized.length);
}

/** ASCII letter or digit (ALetter, Numeric) or "_" (ExtendNumLet): the characters words are made of. */
function wordChar(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}
function letter(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90);
}
function digit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/**
 * `WORD` for pure ASCII text (`text[from, to)`), by char codes: about ten times faster than the
 * regular expression, and the same words (the property test in test/unit/tokenize.test.ts includes
 * ASCII-only strings). Mid characters: ":" (MidLetter) between letters, "," ";" (MidNum) between
 * digits, "." "'" (MidNumLet) between two letters or two digits. Offsets are `text`'s.
 */
function asciiWords(text: string, from: number, to: number, visit: (word: string, start: number, end: number) => boolean): boolean {
  let i = from;
  while (i < to) {
    let c = text.charCodeAt(i);
    if (!wordChar(c)) {
      i++;
      continue;
    }
    const start = i++;
    let hasAlnum = c !== 95;
    for (;;) {
      while (i < to && wordChar((c = text.charCodeAt(i)))) {
        if (c !== 95) hasAlnum = true;
        i++;
      }
      if (i + 1 >= to) break;
      const mid = text.charCodeAt(i);
      const before = text.charCodeAt(i - 1);
      const after = text.charCodeAt(i + 1);
      const letters = letter(before) && letter(after) && (mid === 58 || mid === 46 || mid === 39);
      const digits = digit(before) && digit(after) && (mid === 44 || mid === 59 || mid === 46 || mid === 39);
      if (!letters && !digits) break;
      i += 2;
      hasAlnum = true;
    }
    if (hasAlnum && !visit(text.slice(start, i), start, i)) return false;
  }
  return true;
}

export interface TokenizeOptions {
  /** Language tag of the text (the page's `lang`), picks the stemmer; English when null. */
  readonly language?: string | null;
  /** Stop after this many terms (the field's bound). */
  readonly maxTerms?: number;
}

/**
 * The terms of a text in order; a term's position is its index. Long tokens (over MAX_TERM_CHARS)
 * are dropped without taking a position.
 */
export function tokenize(text: string, options: TokenizeOptions = {}): string[] {
  const max = options.maxTerms ?? Number.MAX_SAFE_INTEGER;
  const terms: string[] = [];
  if (max <= 0 || text.length === 0) return terms;
  const cache = cacheFor(stemmerFor(options.language));
  forEachWord(normalizeText(text), (word) => {
    const term = cache.term(word);
    if (term.length <= MAX_TERM_CHARS) terms.push(term);
    return terms.length < max;
  }, localeFor(options.language));
  return terms;
}

/** Terms of a text with their offsets in `normalized` (already `normalizeText`ed), for snippets. */
export function termSpans(normalized: string, stemmer: string, maxTerms = Number.MAX_SAFE_INTEGER): Array<WordSpan & { term: string }> {
  const cache = cacheFor(stemmer);
  const spans: Array<WordSpan & { term: string }> = [];
  forEachWord(normalized, (word, start, end) => {
    const term = cache.term(word);
    if (term.length <= MAX_TERM_CHARS) spans.push({ word, start, end, term });
    return spans.length < maxTerms;
  });
  return spans;
}

/** The term a single word becomes under a given stemmer (queries expand a word over the stemmers present). */
export function termOf(word: string, stemmer: string): string {
  return cacheFor(stemmer).term(word);
}

function localeFor(language: string | null | undefined): string {
  const primary = language === null || language === undefined ? null : /^\s*([A-Za-z]{2,3})/.exec(language)?.[1]?.toLowerCase();
  return primary === null || primary === undefined ? 'en' : primary;
}
