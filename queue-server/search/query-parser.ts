/**
 * The query language, parsed into clauses (pure; the index expands words into terms later, once per
 * stemmer present, so a query matches pages of every language it has).
 *
 *   crawler index        words: every one must match (in any field, anchor text included)
 *   "exact phrase"       the words consecutive, in one field
 *   -spam  -"two words"  excluded: no result contains it
 *   site:example.org     the page's host is example.org or under it
 *   lang:de              the page's language (primary subtag)
 *
 * A bare token that segments into several words (x-ray, 搜索引擎, e-mail) is a phrase of them, which
 * is how CJK queries without spaces find their words in order. Words are NFKC-normalized and
 * case-folded as the pages were (shared/tokenize.ts).
 *
 * Refused with QUERY_INVALID: an empty query, a query over 512 characters (code points), more than 32 terms (words,
 * phrase words, exclusions, site: and lang: together), a query that only excludes, a malformed site:
 * host or lang: code.
 */
import { domainToASCII } from 'node:url';
import { forEachWord, normalizeText } from '../../shared/tokenize.js';
import { IndexError } from './errors.js';

export const QUERY_LIMITS = { chars: 512, terms: 32 } as const;

export type Clause =
  | { readonly kind: 'word'; readonly word: string }
  | { readonly kind: 'phrase'; readonly words: readonly string[] }
  | { readonly kind: 'site'; readonly host: string }
  | { readonly kind: 'lang'; readonly language: string };

export interface ParsedQuery {
  readonly required: readonly Clause[];
  readonly excluded: readonly Clause[];
  /** Words and phrase words of the required clauses, for snippets. */
  readonly highlight: readonly string[];
}

const TOKEN = /(-?)"([^"]*)"?|(\S+)/gu;
const HOST = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$|^\d+\.\d+\.\d+\.\d+$/;

function invalid(message: string): never {
  throw new IndexError('QUERY_INVALID', message);
}

function wordsOf(text: string): string[] {
  const words: string[] = [];
  forEachWord(normalizeText(text), (word) => {
    words.push(word);
    return words.length <= QUERY_LIMITS.terms;
  });
  return words;
}

/** Characters as people count them (code points: an emoji or a mathematical letter is one, not two UTF-16 units). */
function characters(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/**
 * Typographic quotation marks (“…”, „…“, «…», ‘…’ is left alone: it is an apostrophe too) are the ASCII
 * quote a phrase needs: phones type them by default.
 */
const TYPOGRAPHIC_QUOTES = /[\u201c\u201d\u201e\u201f\u00ab\u00bb\u301d\u301e]/g;

export function parseQuery(raw: string): ParsedQuery {
  if (raw.length > QUERY_LIMITS.chars) {
    const chars = characters(raw);
    if (chars > QUERY_LIMITS.chars) invalid(`the query has ${chars} characters; at most ${QUERY_LIMITS.chars}`);
  }
  // NFKC first, as every word is: a full-width ｓｉｔｅ： or ＂ is the operator or the quote it looks like.
  const query = raw.normalize('NFKC').replace(TYPOGRAPHIC_QUOTES, '"');
  if (query.trim() === '') invalid('the query is empty');
  const required: Clause[] = [];
  const excluded: Clause[] = [];
  let terms = 0;
  const add = (negated: boolean, clause: Clause | null, count: number): void => {
    if (clause === null) return;
    terms += count;
    if (terms > QUERY_LIMITS.terms) invalid(`the query has more than ${QUERY_LIMITS.terms} terms`);
    (negated ? excluded : required).push(clause);
  };
  const fromWords = (words: string[]): Clause | null => (words.length === 0 ? null : words.length === 1 ? { kind: 'word', word: words[0]! } : { kind: 'phrase', words });

  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(query); m !== null; m = TOKEN.exec(query)) {
    if (m[2] !== undefined) {
      const words = wordsOf(m[2]);
      add(m[1] === '-', fromWords(words), words.length);
      continue;
    }
    let token = m[3]!;
    const negated = token.length > 1 && token.startsWith('-');
    if (negated) token = token.slice(1);
    const operator = /^(site|lang):(.*)$/i.exec(token);
    if (operator !== null) {
      const value = operator[2]!.toLowerCase();
      if (operator[1]!.toLowerCase() === 'site') {
        // A Unicode name (bücher.example) is matched as the ASCII form URLs are normalized to.
        const named = value.replace(/\.$/, '');
        const host = /^[\x00-\x7f]*$/.test(named) ? named : domainToASCII(named);
        if (!HOST.test(host) || host.length > 253) invalid(`site: needs a host name such as example.org, got ${JSON.stringify(operator[2])}`);
        add(negated, { kind: 'site', host }, 1);
      } else {
        if (!/^[a-z]{2,3}$/.test(value)) invalid(`lang: needs a two- or three-letter language code such as de, got ${JSON.stringify(operator[2])}`);
        add(negated, { kind: 'lang', language: value }, 1);
      }
      continue;
    }
    const words = wordsOf(token);
    add(negated, fromWords(words), words.length);
  }
  if (required.length === 0) invalid(excluded.length > 0 ? 'the query only excludes: add a word to search for' : 'the query has no words to search for');
  const highlight = required.flatMap((c) => (c.kind === 'word' ? [c.word] : c.kind === 'phrase' ? [...c.words] : []));
  return { required, excluded, highlight };
}
