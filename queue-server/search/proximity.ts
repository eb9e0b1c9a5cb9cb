/**
 * Term proximity of the best results: how close together a page has the query's words, from the
 * positions the index keeps for phrases (no extra storage). The scoring is Büttcher, Clarke and
 * Lushman's ("Term proximity scoring for ad-hoc retrieval on very large text collections", SIGIR
 * 2006); ranking.ts gives the formula and why.
 *
 * Cost: for each segment holding candidates, each query word's page postings are read once (doc
 * stream and position stream, as a phrase does) and walked forward to the candidates' docs; only
 * the candidates' positions are decoded. Candidates are a bounded window (PROXIMITY_WINDOW).
 */
import { PostingCursor } from './posting-cursor.js';
import { proximityScore } from './ranking.js';
import type { LiveSegment } from './live-segment.js';
import { MAX_POSITIONS } from './segment-format.js';
import type { UrlGroups } from './url-groups.js';

/** One word of the query: its terms (one per stemmer in the index) and its idf. */
export interface ProximityWord {
  readonly terms: readonly string[];
  readonly idf: number;
}

export interface ProximityView {
  readonly segments: readonly LiveSegment[];
  readonly groups: UrlGroups;
  /** Mean body length in tokens over live pages. */
  readonly avgBodyLength: number;
}

const positions = new Int32Array(MAX_POSITIONS);

/** Proximity score of each candidate group (0 where its words are never near each other). */
export function proximityScores(view: ProximityView, words: readonly ProximityWord[], candidates: readonly number[]): Float64Array {
  const out = new Float64Array(candidates.length);
  if (words.length < 2 || candidates.length === 0) return out;
  const { groups } = view;
  const bySegment = new Map<number, Array<{ page: number; at: number }>>();
  for (let at = 0; at < candidates.length; at++) {
    const g = candidates[at]!;
    const id = groups.entrySegment[g]!;
    const segment = view.segments.find((s) => s.id === id);
    const page = segment === undefined ? -1 : segment.pageOf(groups.entryIndex[g]!);
    if (page < 0) continue;
    let list = bySegment.get(id);
    if (list === undefined) bySegment.set(id, (list = []));
    list.push({ page, at });
  }
  const idf = Float64Array.from(words, (w) => w.idf);
  const acc = new Float64Array(words.length);
  for (const segment of view.segments) {
    const docs = bySegment.get(segment.id);
    if (docs === undefined) continue;
    docs.sort((a, b) => a.page - b.page);
    const cursors: Array<{ word: number; cursor: PostingCursor }> = [];
    words.forEach((word, w) => {
      for (const term of word.terms) {
        const info = segment.reader.lookup(term);
        if (info === null || info.pageDf === 0) continue;
        const bytes = segment.reader.read(info.pageDocsAt, info.pageDocsLength + info.pagePositionsLength);
        cursors.push({ word: w, cursor: new PostingCursor(bytes.subarray(0, info.pageDocsLength), bytes.subarray(info.pageDocsLength), info.pageDf, false) });
      }
    });
    const bodyLength = segment.reader.columns.pageBodyLength;
    for (const { page, at } of docs) {
      acc.fill(0);
      // Each field (title, headings, body) is its own run of positions: a pair never spans two.
      for (let f = 0; f < 3; f++) {
        // Occurrences as position * 32 + word (at most 32 words), sorted by position.
        const occurrences: number[] = [];
        for (const { word, cursor } of cursors) {
          if (f === 0 && !cursor.advanceTo(page)) continue;
          if (cursor.doc !== page) continue;
          const n = cursor.positions(f, positions);
          for (let k = 0; k < n; k++) occurrences.push(positions[k]! * 32 + word);
        }
        occurrences.sort((a, b) => a - b);
        for (let k = 1; k < occurrences.length; k++) {
          const a = occurrences[k - 1]!;
          const b = occurrences[k]!;
          const wa = a % 32;
          const wb = b % 32;
          const distance = Math.floor(b / 32) - Math.floor(a / 32);
          if (wa === wb || distance === 0) continue;
          acc[wa] = acc[wa]! + idf[wb]! / (distance * distance);
          acc[wb] = acc[wb]! + idf[wa]! / (distance * distance);
        }
      }
      out[at] = proximityScore(idf, acc, bodyLength[page]!, view.avgBodyLength);
    }
  }
  return out;
}
