/**
 * Query evaluation over the committed segments: which groups match, and their BM25F scores.
 *
 * Term at a time, clause by clause, rarest first. Each clause's postings are read from every segment
 * and accumulated per GROUP (url-groups.ts) in typed arrays: a group is a page plus the anchor text
 * of its inlinks, and those live in different docs and often different segments, so matching "all
 * words" means all words somewhere in the group. After the first clause only groups that matched
 * every earlier clause are looked at. Phrases are verified per segment doc at a time (positions of
 * the words in one field of one doc), then accumulated like a term. A clause's document frequency (for
 * its idf) is counted as its postings are read: live groups, each once. Excluded clauses remove groups;
 * a group is a result only if its page doc is live (not gone, not a duplicate, not noindex).
 *
 * Cost: the postings of the query's terms, decoded once (doc streams only for words; positions only
 * for phrases), plus a few typed-array operations per posting. No allocation per posting. For a query
 * of two words or more, each word's doc streams are kept with a skip point every SKIP_EVERY postings,
 * for proximity (proximity.ts).
 */
import { termOf } from '../../shared/tokenize.js';
import { ByteReader } from './bytes.js';
import type { LiveSegment } from './live-segment.js';
import { langTerm, siteTerm } from './meta-terms.js';
import type { Clause, ParsedQuery } from './query-parser.js';
import { FIELD_B, FIELD_WEIGHTS, idf, saturate } from './ranking.js';
import { PostingCursor, SKIP_EVERY } from './posting-cursor.js';
import type { ProximityWord, WordPostings } from './proximity.js';
import { FIELD_BODY, FIELD_HEADING, FIELD_TITLE, MAX_POSITIONS } from './segment-format.js';
import type { TermInfo } from './segment-reader.js';
import type { UrlGroups } from './url-groups.js';

export interface IndexStats {
  livePages: number;
  titleTokens: number;
  headingTokens: number;
  bodyTokens: number;
  anchorTokens: number;
}

export interface IndexView {
  readonly segments: readonly LiveSegment[];
  readonly groups: UrlGroups;
  readonly stats: Readonly<IndexStats>;
  readonly stemmers: readonly string[];
  readonly scratch: Scratch;
}

/** Per-group accumulators, reused across queries (stamped, so nothing is cleared between queries). */
export class Scratch {
  stamp = new Uint32Array(0);
  mask = new Uint32Array(0);
  clause = new Int32Array(0);
  score = new Float64Array(0);
  tf = new Float64Array(0);
  /** Per group: the mark of the last clause that counted it in its document frequency (nextClause). */
  counted = new Uint32Array(0);
  #query = 0;
  #clause = 0;

  begin(groups: number): number {
    if (this.stamp.length < groups) {
      const n = Math.max(groups, this.stamp.length * 2, 1024);
      this.stamp = new Uint32Array(n);
      this.mask = new Uint32Array(n);
      this.clause = new Int32Array(n).fill(-1);
      this.score = new Float64Array(n);
      this.tf = new Float64Array(n);
      this.counted = new Uint32Array(n);
      this.#query = 0;
      this.#clause = 0;
    }
    this.#query++;
    if (this.#query >= 0xffffffff) {
      this.stamp.fill(0);
      this.#query = 1;
    }
    return this.#query;
  }

  /** A fresh mark for one clause's document frequency count (compared with `counted`). */
  nextClause(): number {
    this.#clause++;
    if (this.#clause >= 0xffffffff) {
      this.counted.fill(0);
      this.#clause = 1;
    }
    return this.#clause;
  }
}

export interface Match {
  readonly group: number;
  readonly bm25f: number;
}

/** One alternative of a clause: a term, or a phrase of terms (under one stemmer). */
type Alternative = readonly string[];

interface ResolvedClause {
  readonly alternatives: readonly Alternative[];
  readonly scored: boolean;
  df: number;
}

function alternativesOf(clause: Clause, stemmers: readonly string[]): Alternative[] {
  const seen = new Map<string, Alternative>();
  if (clause.kind === 'site') return [[siteTerm(clause.host)]];
  if (clause.kind === 'lang') return [[langTerm(clause.language)]];
  const words = clause.kind === 'word' ? [clause.word] : clause.words;
  for (const stemmer of stemmers.length === 0 ? ['english'] : stemmers) {
    const terms = words.map((w) => termOf(w, stemmer));
    seen.set(terms.join('\u0000'), terms);
  }
  return [...seen.values()];
}

/** Term lookups of one query, cached per segment (each is a dictionary block read). */
class Lookups {
  readonly #cache = new Map<string, TermInfo | null>();
  get(segment: LiveSegment, term: string): TermInfo | null {
    const key = `${segment.id}\u0000${term}`;
    let info = this.#cache.get(key);
    if (info === undefined) {
      info = segment.reader.lookup(term);
      this.#cache.set(key, info);
    }
    return info;
  }
}

/**
 * Matching groups with live pages and their BM25F scores (unordered). `words`, when given, receives
 * each required word (not phrase) with its idf and the page postings it read (each segment's term
 * info and doc stream), for proximity (proximity.ts), which then reads only their positions.
 */
export function evaluate(view: IndexView, query: ParsedQuery, words?: ProximityWord[]): Match[] {
  const { segments, groups, stats, scratch } = view;
  const q = scratch.begin(groups.size);
  const lookups = new Lookups();
  const resolve = (clause: Clause): ResolvedClause => {
    const alternatives = alternativesOf(clause, view.stemmers);
    let df = 0;
    for (const segment of segments) {
      for (const alternative of alternatives) {
        // A phrase is at most as common as its rarest word.
        let rarest = Number.POSITIVE_INFINITY;
        for (const term of alternative) {
          const info = lookups.get(segment, term);
          rarest = Math.min(rarest, info === null ? 0 : info.pageDf + info.anchorDf);
        }
        df += rarest;
      }
    }
    return { alternatives, scored: clause.kind === 'word' || clause.kind === 'phrase', df };
  };
  const required = query.required.map(resolve).sort((a, b) => a.df - b.df);
  const isWord = (clause: ResolvedClause) => clause.scored && clause.alternatives.every((a) => a.length === 1);
  // Proximity needs two words or more (search-index.ts): only then are their postings kept for it.
  const forProximity = words !== undefined && required.filter(isWord).length >= 2;
  const avg = {
    title: stats.livePages > 0 ? stats.titleTokens / stats.livePages : 1,
    heading: stats.livePages > 0 ? stats.headingTokens / stats.livePages : 1,
    body: stats.livePages > 0 ? stats.bodyTokens / stats.livePages : 1,
    anchor: stats.livePages > 0 ? stats.anchorTokens / stats.livePages : 1,
  };
  const context: Context = { view, q, lookups, avg, prevBits: 0, clauseIndex: 0, touched: [], prune: false, removing: false, dfMark: 0, df: 0, read: null };

  let survivors: number[] = [];
  let bits = 0;
  for (let c = 0; c < required.length; c++) {
    const clause = required[c]!;
    context.clauseIndex = c;
    context.prune = c > 0;
    context.prevBits = bits;
    context.touched = [];
    context.dfMark = scratch.nextClause();
    context.df = 0;
    context.read = forProximity && isWord(clause) ? [] : null;
    accumulateClause(context, clause);
    const bit = c === 31 ? 0x80000000 : 1 << c;
    const weight = clause.scored ? idf(stats.livePages, context.df) : 0;
    if (words !== undefined && isWord(clause)) words.push({ idf: weight, postings: context.read ?? [] });
    context.read = null;
    for (const g of context.touched) {
      if (clause.scored) scratch.score[g] = scratch.score[g]! + weight * saturate(scratch.tf[g]!);
      scratch.mask[g] = (scratch.mask[g]! | bit) >>> 0;
      scratch.tf[g] = 0;
    }
    bits = (bits | bit) >>> 0;
    survivors = context.touched;
    if (survivors.length === 0) return [];
  }

  context.removing = true;
  context.prune = false;
  for (const clause of query.excluded.map(resolve)) {
    context.touched = [];
    accumulateClause(context, clause);
    for (const g of context.touched) scratch.mask[g] = 0;
  }

  const byId = new Map(segments.map((s) => [s.id, s]));
  const out: Match[] = [];
  for (const g of survivors) {
    if (scratch.mask[g] !== bits) continue;
    const segment = byId.get(groups.entrySegment[g]!);
    if (segment === undefined) continue;
    const entry = groups.entryIndex[g]!;
    const page = segment.pageOf(entry);
    if (page < 0 || segment.pageDeleted[page] === 1) continue;
    out.push({ group: g, bm25f: scratch.score[g]! });
  }
  return out;
}

interface Context {
  readonly view: IndexView;
  readonly q: number;
  readonly lookups: Lookups;
  readonly avg: { title: number; heading: number; body: number; anchor: number };
  prevBits: number;
  clauseIndex: number;
  touched: number[];
  prune: boolean;
  /** Excluded clauses: only mark groups (no scoring), no pruning. */
  removing: boolean;
  /** The clause's document frequency: live groups with a posting of it, each counted once (`dfMark`). */
  dfMark: number;
  df: number;
  /** Where a word's page postings go as they are read, for proximity; null when not asked for. */
  read: WordPostings[] | null;
}

/** Adds one doc's contribution to group g (tf~ for this clause), marking g as touched by the clause. */
function credit(ctx: Context, g: number, tf: number): void {
  const s = ctx.view.scratch;
  if (ctx.removing) {
    if (s.stamp[g] === ctx.q && s.clause[g] !== -2 - ctx.clauseIndex) {
      s.clause[g] = -2 - ctx.clauseIndex;
      ctx.touched.push(g);
    }
    return;
  }
  if (s.counted[g] !== ctx.dfMark) {
    s.counted[g] = ctx.dfMark;
    if (ctx.view.groups.entrySegment[g]! >= 0) ctx.df++;
  }
  if (ctx.prune) {
    if (s.stamp[g] !== ctx.q || (s.mask[g]! & ctx.prevBits) !== ctx.prevBits) return;
  } else if (s.stamp[g] !== ctx.q) {
    s.stamp[g] = ctx.q;
    s.mask[g] = 0;
    s.score[g] = 0;
    s.tf[g] = 0;
    s.clause[g] = -1;
  }
  if (s.clause[g] !== ctx.clauseIndex) {
    s.clause[g] = ctx.clauseIndex;
    ctx.touched.push(g);
  }
  s.tf[g] = s.tf[g]! + tf;
}

function accumulateClause(ctx: Context, clause: ResolvedClause): void {
  for (const segment of ctx.view.segments) {
    for (const alternative of clause.alternatives) {
      if (alternative.length === 1) accumulateTerm(ctx, segment, alternative[0]!);
      else accumulatePhrase(ctx, segment, alternative);
    }
  }
}

function accumulateTerm(ctx: Context, segment: LiveSegment, term: string): void {
  const info = ctx.lookups.get(segment, term);
  if (info === null) return;
  const { avg } = ctx;
  const groups = ctx.view.groups;
  const cols = segment.reader.columns;
  if (info.pageDf > 0) {
    const bytes = segment.reader.pageDocs(info);
    // For proximity: the doc stream, and a skip point every SKIP_EVERY postings (skips in
    // posting-cursor.ts), so that it reaches its few docs without decoding every posting again.
    const skips: number[] | null = ctx.read === null ? null : [];
    if (skips !== null) ctx.read!.push({ segment, info, docs: bytes, skips });
    /** Varint index in the position stream where the next posting's positions start. */
    let positionsAt = 0;
    const deleted = segment.pageDeleted;
    const pageGroup = segment.pageGroup;
    cursor = 0;
    let doc = -1;
    for (let i = 0; i < info.pageDf; i++) {
      if (skips !== null && i % SKIP_EVERY === 0 && i > 0) skips.push(doc, cursor, positionsAt, i);
      const head = nextVarint(bytes);
      doc += Math.floor(head / 16);
      const mask = head & 15;
      const ft = mask & FIELD_TITLE ? nextVarint(bytes) : 0;
      const fh = mask & FIELD_HEADING ? nextVarint(bytes) : 0;
      const fb = mask & FIELD_BODY ? nextVarint(bytes) : 0;
      if (skips !== null) {
        // Each field keeps at most MAX_POSITIONS positions (its frequency counts them all).
        const kept = ft + fh + fb;
        positionsAt += kept <= MAX_POSITIONS ? kept : Math.min(ft, MAX_POSITIONS) + Math.min(fh, MAX_POSITIONS) + Math.min(fb, MAX_POSITIONS);
      }
      if (deleted[doc] === 1) continue;
      let tf = 0;
      if (ft > 0) tf += (FIELD_WEIGHTS.title * ft) / (1 - FIELD_B.title + (FIELD_B.title * cols.pageTitleLength[doc]!) / avg.title);
      if (fh > 0) tf += (FIELD_WEIGHTS.heading * fh) / (1 - FIELD_B.heading + (FIELD_B.heading * cols.pageHeadingLength[doc]!) / avg.heading);
      if (fb > 0) tf += (FIELD_WEIGHTS.body * fb) / (1 - FIELD_B.body + (FIELD_B.body * cols.pageBodyLength[doc]!) / avg.body);
      credit(ctx, pageGroup[doc]!, tf);
    }
  }
  if (info.anchorDf > 0) {
    const bytes = segment.reader.anchorDocs(info);
    const reader = new ByteReader(bytes);
    let doc = -1;
    for (let i = 0; i < info.anchorDf; i++) {
      doc += reader.varint();
      const freq = reader.varint();
      if (segment.anchorDeleted[doc] === 1) continue;
      const g = groups.canonical(segment.anchorTarget[doc]!);
      const tf = (FIELD_WEIGHTS.anchor * freq) / (1 - FIELD_B.anchor + (FIELD_B.anchor * groups.groupAnchorLength[g]!) / avg.anchor);
      credit(ctx, g, tf);
    }
  }
}

/** Read position of nextVarint: module state so the posting loop allocates nothing (single-threaded). */
let cursor = 0;

/** The varint at `cursor` in bytes (bounds are the dictionary's lengths; check verifies them). */
function nextVarint(bytes: Uint8Array): number {
  let b = bytes[cursor++]!;
  let value = b & 0x7f;
  for (let scale = 0x80; b >= 0x80; scale *= 0x80) {
    b = bytes[cursor++]!;
    value += (b & 0x7f) * scale;
  }
  return value;
}

const phraseScratch = Array.from({ length: 32 }, () => new Int32Array(MAX_POSITIONS));
const phraseLengths = new Int32Array(32);
const phraseCursors = new Int32Array(32);

/** Occurrences of the phrase in field f of the current doc: positions p of word 0 with word w at p + w. */
function phraseCount(lists: readonly PostingCursor[], f: number): number {
  const words = lists.length;
  for (let w = 0; w < words; w++) if (lists[w]!.counts[f] === 0) return 0;
  // A word repeated in the phrase ("new new york") shares its list: decode its positions once.
  for (let w = 0; w < words; w++) {
    const first = lists.indexOf(lists[w]!);
    if (first < w) {
      phraseScratch[w]!.set(phraseScratch[first]!.subarray(0, phraseLengths[first]!));
      phraseLengths[w] = phraseLengths[first]!;
    } else phraseLengths[w] = lists[w]!.positions(f, phraseScratch[w]!);
  }
  // Word w must be at p + w: walk each list's sorted positions forward once (a merge, not a search).
  for (let w = 0; w < words; w++) phraseCursors[w] = 0;
  let count = 0;
  const firstPositions = phraseScratch[0]!;
  outer: for (let k = 0; k < phraseLengths[0]!; k++) {
    const p = firstPositions[k]!;
    for (let w = 1; w < words; w++) {
      const list = phraseScratch[w]!;
      const n = phraseLengths[w]!;
      let c = phraseCursors[w]!;
      while (c < n && list[c]! < p + w) c++;
      phraseCursors[w] = c;
      if (c >= n) break outer;
      if (list[c] !== p + w) continue outer;
    }
    count++;
  }
  return count;
}

/** Docs every list has (leapfrog over the distinct cursors): calls visit(doc) with each cursor on it. */
function intersect(lists: readonly PostingCursor[], visit: (doc: number) => void): void {
  const cursors = [...new Set(lists)];
  for (const c of cursors) if (!c.next()) return;
  for (;;) {
    let max = -1;
    for (const c of cursors) if (c.doc > max) max = c.doc;
    let aligned = true;
    for (const c of cursors) {
      if (!c.advanceTo(max)) return;
      if (c.doc !== max) aligned = false;
    }
    if (!aligned) continue;
    visit(max);
    for (const c of cursors) if (!c.next()) return;
  }
}

/** One PostingCursor per distinct term of the phrase (the same object where a word repeats). */
function sharedLists(infos: readonly TermInfo[], make: (info: TermInfo) => PostingCursor): PostingCursor[] {
  const byTerm = new Map<string, PostingCursor>();
  return infos.map((info) => {
    let list = byTerm.get(info.term);
    if (list === undefined) {
      list = make(info);
      byTerm.set(info.term, list);
    }
    return list;
  });
}

function accumulatePhrase(ctx: Context, segment: LiveSegment, terms: readonly string[]): void {
  const infos: TermInfo[] = [];
  for (const term of terms) {
    const info = ctx.lookups.get(segment, term);
    if (info === null) return;
    infos.push(info);
  }
  const { avg } = ctx;
  const cols = segment.reader.columns;
  const groups = ctx.view.groups;
  if (infos.every((i) => i.pageDf > 0)) {
    const lists = sharedLists(infos, (info) => {
      const p = segment.reader.postings(info);
      return new PostingCursor(p.pageDocs, p.pagePositions, p.pageDf, false);
    });
    intersect(lists, (doc) => {
      if (segment.pageDeleted[doc] === 1) return;
      const ft = phraseCount(lists, 0);
      const fh = phraseCount(lists, 1);
      const fb = phraseCount(lists, 2);
      if (ft + fh + fb === 0) return;
      let tf = 0;
      if (ft > 0) tf += (FIELD_WEIGHTS.title * ft) / (1 - FIELD_B.title + (FIELD_B.title * cols.pageTitleLength[doc]!) / avg.title);
      if (fh > 0) tf += (FIELD_WEIGHTS.heading * fh) / (1 - FIELD_B.heading + (FIELD_B.heading * cols.pageHeadingLength[doc]!) / avg.heading);
      if (fb > 0) tf += (FIELD_WEIGHTS.body * fb) / (1 - FIELD_B.body + (FIELD_B.body * cols.pageBodyLength[doc]!) / avg.body);
      credit(ctx, segment.pageGroup[doc]!, tf);
    });
  }
  if (infos.every((i) => i.anchorDf > 0)) {
    const lists = sharedLists(infos, (info) => {
      const p = segment.reader.postings(info);
      return new PostingCursor(p.anchorDocs, p.anchorPositions, p.anchorDf, true);
    });
    intersect(lists, (doc) => {
      if (segment.anchorDeleted[doc] === 1) return;
      const f = phraseCount(lists, 2);
      if (f === 0) return;
      const g = groups.canonical(segment.anchorTarget[doc]!);
      credit(ctx, g, (FIELD_WEIGHTS.anchor * f) / (1 - FIELD_B.anchor + (FIELD_B.anchor * groups.groupAnchorLength[g]!) / avg.anchor));
    });
  }
}
