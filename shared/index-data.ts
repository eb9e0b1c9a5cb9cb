/**
 * A page's index data: what a fetcher extracts for the search index and posts with the page's result,
 * and what the queue server's index (queue-server/search/) stages. Fetchers do the text work (Yioop's
 * division): tokenizing, stemming and counting happen here, in the fetcher; the queue server only
 * merges postings.
 *
 * Shape on the wire (JSON):
 *
 *   { language: "en" | null,            the page's language tag as found (lang, Content-Language)
 *     stemmer: "english",               the Snowball algorithm its terms were stemmed with
 *     title: "Petrel docs" | null,      the title for display in results
 *     fields: { title:   [[term, frequency, [position deltas]], ...],
 *               heading: [...], body: [...] },
 *     text: "...",                      stored text for snippets, at most 16 KiB of UTF-8
 *     anchors: [{ url, terms: [...] }] } the anchor text of each outlink, as terms in order
 *
 * A field lists each distinct term once, in order of first appearance, with its frequency in the
 * field and its positions (0-based token index in the field), delta-encoded: the first is absolute,
 * each further one is the gap to the previous one (always >= 1). Positions are kept for phrase
 * queries; a term repeated more than `positionsPerTerm` times keeps its full frequency but only its
 * first 256 positions. Headings share one position space with a gap of `headingGap` between two
 * headings, so a phrase never spans two of them.
 *
 * Anchor text is indexed on the TARGET page (as Yioop and Nutch do): `anchors` carries, per distinct
 * outlink URL, the terms of its anchor texts (several links to one URL are joined), stemmed with this
 * page's language. Links marked nofollow and links without text carry none; the caller leaves them out.
 *
 * Every bound below is enforced by `indexDataSchema`, so the queue server rejects (4xx) a post that
 * exceeds one instead of storing it.
 */
import { z } from 'zod';
import { MAX_TERM_CHARS, normalizeText, STEMMERS, stemmerFor, tokenize } from './tokenize.js';
import { bound } from './text-bounds.js';

export const INDEX_LIMITS = {
  /** Stored text for snippets, UTF-8 bytes. */
  storedTextBytes: 16 * 1024,
  /** Display title, characters (the protocol's title bound). */
  titleChars: 512,
  /** Tokens indexed per field; the rest of a longer field is not indexed. */
  titleTokens: 128,
  headingTokens: 2048,
  bodyTokens: 16_384,
  /** Positions kept per term and field (its frequency is counted in full). */
  positionsPerTerm: 256,
  /** Position gap between two headings. */
  headingGap: 8,
  /** Outlinks with anchor text per page (the default --max-links-per-page; with a larger one, the links past these give no anchor text). */
  anchors: 5000,
  /** Terms of anchor text kept per outlink (all its links' texts together). */
  anchorTerms: 32,
  /** Characters of one link's anchor text looked at. */
  anchorTextChars: 256,
  urlChars: 2048,
  languageChars: 35,
  termChars: MAX_TERM_CHARS,
} as const;

export const PAGE_FIELDS = ['title', 'heading', 'body'] as const;
export type PageField = (typeof PAGE_FIELDS)[number];

const TOKENS_OF: Readonly<Record<PageField, number>> = {
  title: INDEX_LIMITS.titleTokens,
  heading: INDEX_LIMITS.headingTokens,
  body: INDEX_LIMITS.bodyTokens,
};

const term = z.string().min(1).max(INDEX_LIMITS.termChars);

/** One term of a field: [term, frequency, position deltas]. */
export type TermEntry = [string, number, number[]];

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/**
 * A field's term list, checked in one hand-written pass: a post carries hundreds of entries per page
 * and zod's generic tuple parsing cost about 1 ms per 14 KB page on the queue server; this costs a
 * fraction of that and states the same rules (with the path of the first offence).
 */
function fieldSchema(field: PageField) {
  const maxTokens = TOKENS_OF[field];
  // Positions may exceed the token count only by the gaps between headings.
  const maxPosition = field === 'heading' ? maxTokens * (1 + INDEX_LIMITS.headingGap) : maxTokens;
  return z.custom<TermEntry[]>((value) => Array.isArray(value), { message: 'a list of [term, frequency, positions]' }).superRefine((entries, ctx) => {
    const fail = (path: Array<string | number>, message: string): void => {
      ctx.addIssue({ code: 'custom', path, message });
    };
    if (entries.length > maxTokens) return fail([], `${entries.length} terms, at most ${maxTokens}`);
    const seen = new Set<string>();
    let tokens = 0;
    for (let i = 0; i < entries.length; i++) {
      const entry: unknown = entries[i];
      if (!Array.isArray(entry) || entry.length !== 3) return fail([i], 'not a [term, frequency, positions] triple');
      const [t, frequency, deltas] = entry as [unknown, unknown, unknown];
      if (typeof t !== 'string' || t.length < 1 || t.length > INDEX_LIMITS.termChars) return fail([i, 0], `a term of 1 to ${INDEX_LIMITS.termChars} characters`);
      if (seen.has(t)) return fail([i, 0], `term ${JSON.stringify(t)} listed twice`);
      seen.add(t);
      if (!isCount(frequency) || frequency < 1) return fail([i, 1], 'a frequency of at least 1');
      tokens += frequency;
      if (!Array.isArray(deltas)) return fail([i, 2], 'a list of position deltas');
      if (deltas.length !== Math.min(frequency, INDEX_LIMITS.positionsPerTerm)) return fail([i, 2], `${deltas.length} positions for frequency ${frequency} (expected min(frequency, ${INDEX_LIMITS.positionsPerTerm}))`);
      let position = -1;
      for (let k = 0; k < deltas.length; k++) {
        const d: unknown = deltas[k];
        if (!isCount(d) || (k > 0 && d < 1)) return fail([i, 2, k], 'positions must be whole numbers that increase');
        position = k === 0 ? d : position + d;
      }
      if (position >= maxPosition) return fail([i, 2], `position ${position} beyond ${maxPosition}`);
    }
    if (tokens > maxTokens) fail([], `${tokens} tokens, at most ${maxTokens}`);
  });
}

export const anchorSchema = z.object({
  url: z.string().min(1).max(INDEX_LIMITS.urlChars),
  terms: z.array(term).min(1).max(INDEX_LIMITS.anchorTerms),
});
export type AnchorTerms = z.infer<typeof anchorSchema>;

export const indexDataSchema = z.object({
  language: z.string().max(INDEX_LIMITS.languageChars).nullable(),
  stemmer: z.enum(STEMMERS as [string, ...string[]]),
  title: z.string().max(INDEX_LIMITS.titleChars).nullable(),
  fields: z.object({ title: fieldSchema('title'), heading: fieldSchema('heading'), body: fieldSchema('body') }),
  text: z
    .string()
    .max(INDEX_LIMITS.storedTextBytes)
    .refine((text) => Buffer.byteLength(text, 'utf8') <= INDEX_LIMITS.storedTextBytes, `stored text over ${INDEX_LIMITS.storedTextBytes} bytes of UTF-8`),
  anchors: z.array(anchorSchema).max(INDEX_LIMITS.anchors),
});
export type IndexData = z.infer<typeof indexDataSchema>;

export interface IndexDataInput {
  readonly title: string | null;
  /** Texts of h1-h6, in document order. */
  readonly headings: readonly string[];
  /** The visible text of the page (or the whole of a text/plain response). */
  readonly bodyText: string;
  /** `lang` / Content-Language; null when unknown (stemmed as English). */
  readonly language: string | null;
  /** Followable outlinks (normalized URLs) with their anchor text; nofollow links left out. */
  readonly anchors: ReadonlyArray<{ readonly url: string; readonly text: string }>;
  /** Text stored for snippets; default: the body text. Cut to 16 KiB of UTF-8 either way. */
  readonly storedText?: string;
}

/** Builds a page's index data (pure; the fetcher calls it once per indexable page). */
export function buildIndexData(input: IndexDataInput): IndexData {
  const language = input.language === null ? null : bound(input.language, INDEX_LIMITS.languageChars);
  const stemmer = stemmerFor(language);
  // Cut between characters: a lone surrogate would come out of UTF-8 (the results frame) as U+FFFD.
  const title = input.title === null ? null : bound(input.title, INDEX_LIMITS.titleChars);

  const headingTerms: string[] = [];
  const headingPositions: number[] = [];
  let next = 0;
  for (const heading of input.headings) {
    const budget = INDEX_LIMITS.headingTokens - headingTerms.length;
    if (budget <= 0) break;
    const terms = tokenize(heading, { language, maxTerms: budget });
    if (terms.length === 0) continue;
    if (headingTerms.length > 0) next += INDEX_LIMITS.headingGap;
    for (const t of terms) {
      headingTerms.push(t);
      headingPositions.push(next++);
    }
  }

  return {
    language,
    stemmer,
    title,
    fields: {
      title: fieldEntries(title === null ? [] : tokenize(title, { language, maxTerms: INDEX_LIMITS.titleTokens }), null),
      heading: fieldEntries(headingTerms, headingPositions),
      body: fieldEntries(tokenize(input.bodyText, { language, maxTerms: INDEX_LIMITS.bodyTokens }), null),
    },
    text: cutUtf8(normalizeText(input.storedText ?? input.bodyText), INDEX_LIMITS.storedTextBytes),
    anchors: anchorTerms(input.anchors, language),
  };
}

/** Last position kept per entry of `fieldEntries` (scratch, grown as needed: the fetcher builds one field at a time). */
let lastPositions = new Int32Array(1024);

/**
 * Terms in order of first appearance with frequency and delta-encoded positions. The entries are
 * built in place (the output's own arrays, the last position of each in a reused typed array):
 * no object per term besides the entry itself.
 */
function fieldEntries(terms: readonly string[], positions: readonly number[] | null): TermEntry[] {
  const indexOf = new Map<string, number>();
  const out: TermEntry[] = [];
  if (lastPositions.length < terms.length) lastPositions = new Int32Array(Math.max(terms.length, 2 * lastPositions.length));
  const last = lastPositions;
  for (let i = 0; i < terms.length; i++) {
    const t = terms[i]!;
    const position = positions === null ? i : positions[i]!;
    const k = indexOf.get(t);
    if (k === undefined) {
      indexOf.set(t, out.length);
      last[out.length] = position;
      out.push([t, 1, [position]]);
      continue;
    }
    const entry = out[k]!;
    entry[1]++;
    if (entry[2].length < INDEX_LIMITS.positionsPerTerm) {
      entry[2].push(position - last[k]!);
      last[k] = position;
    }
  }
  return out;
}

function anchorTerms(anchors: IndexDataInput['anchors'], language: string | null): AnchorTerms[] {
  const byUrl = new Map<string, string[]>();
  for (const anchor of anchors) {
    if (anchor.url.length === 0 || anchor.url.length > INDEX_LIMITS.urlChars) continue;
    let terms = byUrl.get(anchor.url);
    if (terms === undefined) {
      if (byUrl.size >= INDEX_LIMITS.anchors) continue;
      terms = [];
      byUrl.set(anchor.url, terms);
    }
    const budget = INDEX_LIMITS.anchorTerms - terms.length;
    if (budget <= 0) continue;
    terms.push(...tokenize(bound(anchor.text, INDEX_LIMITS.anchorTextChars), { language, maxTerms: budget }));
  }
  const out: AnchorTerms[] = [];
  for (const [url, terms] of byUrl) if (terms.length > 0) out.push({ url, terms });
  return out;
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes, never splitting a character. */
export function cutUtf8(text: string, maxBytes: number): string {
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text, 'utf8') <= maxBytes) return text;
  let bytes = 0;
  let i = 0;
  for (; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code >= 0xd800 && code <= 0xdbff ? 4 : 3;
    if (bytes + size > maxBytes) break;
    bytes += size;
    if (size === 4) i++;
  }
  return text.slice(0, i);
}

/** Absolute positions of one term entry (the deltas summed). */
export function positionsOf(entry: TermEntry): number[] {
  const out: number[] = [];
  let position = 0;
  for (let k = 0; k < entry[2].length; k++) {
    position = k === 0 ? entry[2][k]! : position + entry[2][k]!;
    out.push(position);
  }
  return out;
}
