/**
 * Term proximity of the best results: how close together a page has the query's words, from the
 * positions the index keeps for phrases (no extra storage). The scoring is Büttcher, Clarke and
 * Lushman's ("Term proximity scoring for ad-hoc retrieval on very large text collections", SIGIR
 * 2006); ranking.ts gives the formula and why.
 *
 * Cost: the query has just read each word's page doc streams to score it (evaluate.ts), and hands
 * them over with their dictionary entries and a skip point every SKIP_EVERY (32) postings, so here
 * only the position streams are read, one per word, term and segment holding candidates. Each cursor
 * jumps to the skip point before a candidate and decodes at most 32 postings to reach it; the
 * positions of the docs in between are passed four bytes at a time (skipVarints), and only the
 * candidates' positions are decoded. Candidates are a bounded window (PROXIMITY_WINDOW). It used to
 * look each word up again, read its doc and position streams again and walk both a posting and a
 * byte at a time: in a profile of 1,000 two- and three-word queries on the benchmark's 100,000
 * documents that was 22% of search time, and this is 6%.
 */
import { PostingCursor } from './posting-cursor.js';
import { proximityScore } from './ranking.js';
import type { LiveSegment } from './live-segment.js';
import { MAX_POSITIONS } from './segment-format.js';
import type { TermInfo } from './segment-reader.js';
import type { UrlGroups } from './url-groups.js';

/** One term's page postings in one segment, as the query read them: its dictionary entry, doc stream and skip points (posting-cursor.ts). */
export interface WordPostings {
  readonly segment: LiveSegment;
  readonly info: TermInfo;
  readonly docs: Uint8Array;
  readonly skips: readonly number[];
}

/** One word of the query: its idf, and its terms' page postings (a term per stemmer in the index) in each segment that has them. */
export interface ProximityWord {
  readonly idf: number;
  readonly postings: readonly WordPostings[];
}

export interface ProximityView {
  readonly segments: readonly LiveSegment[];
  readonly groups: UrlGroups;
  /** Mean body length in tokens over live pages. */
  readonly avgBodyLength: number;
}

const positions = new Int32Array(MAX_POSITIONS);
/** One field's occurrences of every word (reused; grown when a page has more). */
let occurrenceBuffer: Float64Array = new Float64Array(32 * MAX_POSITIONS);

function grown(buffer: Float64Array, atLeast: number): Float64Array {
  const bigger = new Float64Array(Math.max(atLeast, buffer.length * 2));
  bigger.set(buffer);
  return bigger;
}

/**
 * Proximity score of each candidate group (0 where its words are never near each other). A group
 * given twice, or two groups whose entries are one page, get that page's score each: the cursors
 * move forward only, so a page is scored once and its score copied.
 */
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
    const cursors: Array<{ word: number; cursor: PostingCursor; skips: readonly number[] }> = [];
    words.forEach((word, w) => {
      for (const { segment: of, info, docs: docStream, skips } of word.postings) {
        if (of === segment) cursors.push({ word: w, cursor: new PostingCursor(docStream, segment.reader.pagePositions(info), info.pageDf, false), skips });
      }
    });
    const bodyLength = segment.reader.columns.pageBodyLength;
    for (let d = 0; d < docs.length; d++) {
      const { page, at } = docs[d]!;
      if (d > 0 && docs[d - 1]!.page === page) {
        out[at] = out[docs[d - 1]!.at]!;
        continue;
      }
      acc.fill(0);
      // Each field (title, headings, body) is its own run of positions: a pair never spans two.
      for (let f = 0; f < 3; f++) {
        // Occurrences as position * 32 + word (at most 32 words), sorted by position.
        let m = 0;
        for (const { word, cursor, skips } of cursors) {
          if (f === 0) {
            cursor.skipToward(skips, page);
            if (!cursor.advanceTo(page)) continue;
          }
          if (cursor.doc !== page) continue;
          const n = cursor.positions(f, positions);
          if (m + n > occurrenceBuffer.length) occurrenceBuffer = grown(occurrenceBuffer, m + n);
          for (let k = 0; k < n; k++) occurrenceBuffer[m++] = positions[k]! * 32 + word;
        }
        const occurrences = occurrenceBuffer.subarray(0, m).sort();
        for (let k = 1; k < m; k++) {
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
