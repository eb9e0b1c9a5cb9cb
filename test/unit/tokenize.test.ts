/**
 * The tokenizer (shared/tokenize.ts): UAX #29 words, NFKC, case folding, stemming per language, and
 * the fast path for alphabetic scripts, which must give exactly the words Intl.Segmenter gives.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldCase, forEachWord, MAX_TERM_CHARS, normalizeText, stemmerFor, termOf, termSpans, tokenize } from '../../shared/tokenize.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`tokenize fast-check seed ${seed} (set FC_SEED to replay)`);

/** What Intl.Segmenter alone says the words are (the reference the fast path must equal). */
function icuWords(text: string): string[] {
  const segmenter = new Intl.Segmenter('en', { granularity: 'word' });
  return [...segmenter.segment(text)].filter((s) => s.isWordLike === true && /[\p{L}\p{N}]/u.test(s.segment)).map((s) => s.segment);
}

function petrelWords(text: string): string[] {
  const words: string[] = [];
  forEachWord(text, (word) => {
    words.push(word);
    return true;
  });
  return words;
}

describe('tokenize', () => {
  it('splits Chinese, Japanese and Thai into dictionary words', () => {
    expect(tokenize('我们在北京大学学习中文搜索引擎', { language: 'zh' })).toEqual(['我们', '在', '北京', '大学', '学习', '中文', '搜索', '引擎']);
    expect(tokenize('東京都に住んでいる', { language: 'ja' })).toEqual(['東京', '都', 'に', '住', 'んで', 'いる']);
    expect(tokenize('ภาษาไทยเป็นภาษาที่สวยงาม', { language: 'th' })).toEqual(['ภาษา', 'ไทย', 'เป็น', 'ภาษา', 'ที่', 'สวยงาม']);
  });

  it('folds compatibility forms and case, removes soft hyphens, stems English by default', () => {
    expect(tokenize('ＲＵＮＮＩＮＧ Crawlers ﬁxed hy\u00ADphen STRASSE Straße ὈΔΥΣΣΕΎΣ')).toEqual(['run', 'crawler', 'fix', 'hyphen', 'strass', 'strass', 'ὀδυσσεύσ']);
    expect(tokenize("don't e.g. 3.14 1,000 x-ray")).toEqual(["don't", 'e.g', '3.14', '1,000', 'x', 'ray']);
  });

  it('makes typographic apostrophes the one people type: "don’t" is "don\'t", "user’s" stems to "user"', () => {
    expect(tokenize('I don’t like the user’s guide ‘quoted’ O’Brien')).toEqual(['i', "don't", 'like', 'the', 'user', 'guid', 'quot', "o'brien"]);
    expect(tokenize("I don't like the user's guide")).toEqual(['i', "don't", 'like', 'the', 'user', 'guid']);
    expect(termOf('don’t', 'english')).toBe(termOf("don't", 'english'));
    expect(termOf('user’s', 'english')).toBe(termOf('user', 'english'));
  });

  it('drops elided articles in French, Italian and Catalan, so the word itself is found', () => {
    expect(tokenize("L'homme et l’école, qu’il dit d’accord aujourd’hui", { language: 'fr' })).toEqual(['homm', 'et', 'écol', 'il', 'dit', 'accord', "aujourd'hui"]);
    expect(tokenize('L’homme', { language: 'fr' })).toEqual([termOf('homme', 'french')]);
    expect(tokenize("dell'anno un'amica", { language: 'it' })).toEqual([termOf('anno', 'italian'), termOf('amica', 'italian')]);
    expect(tokenize("l'aigua", { language: 'ca' })).toEqual([termOf('aigua', 'catalan')]);
    // English keeps them: "l'homme" in an English page is one word.
    expect(tokenize("l'homme", { language: 'en' })).toEqual(["l'homm"]);
  });

  it('stems with the page language and falls back to English', () => {
    expect(stemmerFor('de-AT')).toBe('german');
    expect(stemmerFor('pt_BR')).toBe('portuguese');
    expect(stemmerFor('xx')).toBe('english');
    expect(stemmerFor(null)).toBe('english');
    expect(tokenize('Häuser laufen', { language: 'de' })).toEqual(['haus', 'lauf']);
    expect(tokenize('Häuser laufen', { language: 'en' })).toEqual(['häuser', 'laufen']);
  });

  it('mixes scripts in one text and keeps positions in order', () => {
    expect(tokenize('Petrel は東京の crawler です', { language: 'ja' })).toEqual(['petrel', 'は', '東京', 'の', 'crawler', 'です']);
  });

  it('drops tokens over the term length bound and stops at maxTerms', () => {
    const long = 'a'.repeat(MAX_TERM_CHARS + 1);
    expect(tokenize(`one ${long} two three`, { maxTerms: 2 })).toEqual(['one', 'two']);
  });

  it('gives offsets into the normalized text', () => {
    const text = normalizeText('Ｈｅｌｌｏ, wide world');
    const spans = termSpans(text, 'english');
    expect(spans.map((s) => text.slice(s.start, s.end))).toEqual(['Hello', 'wide', 'world']);
    expect(spans.map((s) => s.term)).toEqual(['hello', 'wide', 'world']);
  });

  it('finds exactly the words Intl.Segmenter finds, for random alphabetic text', () => {
    const alphabet = [...'abcXYZéßΣσдЖ019_.,;:\'’‘·-!?()"/ \t\n', '\u0301', '\u0308', 'ǅ', 'ŉ', 'ʼ', '$', '%', '@', '#', '+', '…', '‧', '٣', 'ア', '東', 'ก', '😀', '\u200d',
      // Edges of the ranges the fast path takes (tokenize.ts isComplexUnit): an unassigned Greek code point,
      // spaces outside Basic Latin, superscripts, a currency sign, Greek Extended, Cyrillic Supplement's end.
      '\u0378', '\u0384', '\u1680', '\u3000', '\u2028', '\u00a0', '\u2070', '\u20ac', '\u1f00', '\u052f', '\u0530'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 60, size: 'max' }), (chars) => {
        const text = normalizeText(chars.join(''));
        expect(petrelWords(text)).toEqual(icuWords(text));
      }),
      { seed, numRuns: 3000 },
    );
  });

  it('finds exactly the words Intl.Segmenter finds, for random ASCII text (the char-code path)', () => {
    const alphabet = [...'abzAZ09_.,;:\'-!?()"/@#$%&*+=<>[]{}|~` \t\n'];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...alphabet), { maxLength: 60, size: 'max' }), (chars) => {
        const text = chars.join('');
        expect(petrelWords(text)).toEqual(icuWords(text));
      }),
      { seed, numRuns: 3000 },
    );
  });

  it("stems English exactly as snowball-stemmers' english does (porter2 stands in for it)", () => {
    const reference = (createRequire(import.meta.url)('snowball-stemmers') as { newStemmer(a: string): { stem(w: string): string } }).newStemmer('english');
    const expected = (word: string): string => {
      const stem = reference.stem(foldCase(word));
      return stem.length > 0 ? stem : foldCase(word);
    };
    // Real English: every word of this repository's README and ARCHITECTURE.md (prose, commands, figures).
    const words = new Set<string>();
    for (const doc of ['../../README.md', '../../ARCHITECTURE.md']) {
      forEachWord(normalizeText(readFileSync(new URL(doc, import.meta.url), 'utf8')), (word) => {
        if (!/\d/.test(word)) words.add(word);
        return true;
      });
    }
    expect(words.size).toBeGreaterThan(2500);
    for (const word of words) expect([word, termOf(word, 'english')]).toEqual([word, expected(word)]);
    // Random words over letters that steer Porter2's rules (vowels, y, doubles, suffix letters) and the
    // apostrophes and non-ASCII letters a word may carry.
    const letters = [..."aeiouybcdlmnrstgfhkpvwxz'’éüı"];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...letters), { minLength: 1, maxLength: 14 }), (chars) => {
        const word = chars.join('');
        expect(termOf(word, 'english')).toBe(expected(word));
      }),
      { seed, numRuns: 20000 },
    );
  });
});
