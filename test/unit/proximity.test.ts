/**
 * Term proximity (queue-server/search/proximity.ts) against a straightforward computation of the same
 * formula (ranking.ts) from the pages' own index data: every occurrence of each query word in each
 * field, in position order, each two neighbours of different words adding idf / distance^2. The index
 * side reads positions from segment bytes (skipping other docs' positions a word at a time) with the
 * doc streams the query read; the two must agree exactly, for candidates in any segment, with deleted
 * pages, pages without some of the words, and repeated words. Seeded; the seed is printed.
 */
import { describe, expect, it } from 'vitest';
import { buildIndexData, positionsOf, type IndexData } from '../../shared/index-data.js';
import { termOf } from '../../shared/tokenize.js';
import { proximityScores, type ProximityWord } from '../../queue-server/search/proximity.js';
import { proximityScore } from '../../queue-server/search/ranking.js';
import { skipVarints } from '../../queue-server/search/posting-cursor.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import type { UrlGroups } from '../../queue-server/search/url-groups.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';
import { tempDir } from '../support/search-model.js';

/** Made-up words with no English suffix, so each is its own stem. */
const VOCABULARY = ['kalo', 'mine', 'rusa', 'tivo', 'bado', 'fugi', 'hoju', 'pawo', 'zeri', 'tumo', 'nuga', 'piso'];

/** The reference: Büttcher et al.'s score of one page for `words` (terms) with `idfs`, from its index data. */
function referenceProximity(data: IndexData, terms: readonly string[], idfs: Float64Array, bodyLength: number, avgBodyLength: number): number {
  const acc = new Float64Array(terms.length);
  for (const field of [data.fields.title, data.fields.heading, data.fields.body]) {
    const occurrences: { position: number; word: number }[] = [];
    terms.forEach((term, word) => {
      const entry = field.find((e) => e[0] === term);
      if (entry !== undefined) for (const position of positionsOf(entry)) occurrences.push({ position, word });
    });
    occurrences.sort((a, b) => a.position - b.position || a.word - b.word);
    for (let k = 1; k < occurrences.length; k++) {
      const a = occurrences[k - 1]!;
      const b = occurrences[k]!;
      const distance = b.position - a.position;
      if (a.word === b.word || distance === 0) continue;
      acc[a.word] = acc[a.word]! + idfs[b.word]! / (distance * distance);
      acc[b.word] = acc[b.word]! + idfs[a.word]! / (distance * distance);
    }
  }
  return proximityScore(idfs, acc, bodyLength, avgBodyLength);
}

describe('term proximity', () => {
  it('scores every candidate exactly as the straightforward computation from the pages does', async () => {
    const seed = Number(process.env.PROXIMITY_SEED ?? Date.now() % 1_000_000);
    console.log(`proximity seed ${seed} (PROXIMITY_SEED=${seed} repeats it)`);
    const rand = mulberry32(seed);
    const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => pick(VOCABULARY)).join(' ');
    const dir = tempDir();
    const index = SearchIndex.open(dir, { merges: 'off' });
    const live = new Map<string, IndexData>();
    // Several commits, so several segments; some pages staged again later, so their first docs are deleted.
    for (let commit = 0; commit < 5; commit++) {
      for (let i = 0; i < 150; i++) {
        const url = `http://example.test/${commit < 3 || rand() < 0.5 ? commit * 150 + i : Math.floor(rand() * 450)}`;
        // Bodies up to 250 tokens; now and then one word 300 times, more than the 256 positions kept
        // per term and field, so skips cross long runs of positions and the kept ones are counted.
        const body = rand() < 0.1 ? `${text(20)} ${Array.from({ length: 300 }, () => 'kalo').join(' ')} ${text(10)}` : text(1 + Math.floor(rand() * 250));
        const data = buildIndexData({ title: text(1 + Math.floor(rand() * 6)), headings: rand() < 0.5 ? [text(3), text(4)] : [], bodyText: body, language: 'en', anchors: [] });
        index.stage({ kind: 'page', url, fetchedAt: 0, data });
        live.set(url, data);
      }
      index.commit();
    }
    expect(index.segments.length).toBeGreaterThan(1);

    // Every live page is a candidate: a group of its own here (entrySegment, entryIndex).
    const pages: { segment: number; entry: number; url: string; page: number; segmentAt: number }[] = [];
    index.segments.forEach((segment, segmentAt) => {
      for (let page = 0; page < segment.pages; page++) {
        if (segment.pageDeleted[page] === 1) continue;
        const entry = segment.reader.columns.pageEntry[page]!;
        expect(segment.pageOf(entry)).toBe(page);
        pages.push({ segment: segment.id, entry, url: segment.reader.head(page).url, page, segmentAt });
      }
    });
    expect(pages.map((p) => p.url).sort()).toEqual([...live.keys()].sort());
    const groups = { entrySegment: Int32Array.from(pages, (p) => p.segment), entryIndex: Int32Array.from(pages, (p) => p.entry) } as unknown as UrlGroups;
    const avgBodyLength = 97.5;

    let compared = 0;
    for (let q = 0; q < 60; q++) {
      const n = 2 + Math.floor(rand() * 3);
      const terms = [...new Set(Array.from({ length: n }, () => termOf(pick(VOCABULARY), 'english')))];
      if (terms.length < 2) continue;
      // What the query read of each word while scoring it (doc streams, skip points), with idfs of our own.
      const read: ProximityWord[] = [];
      if (index.matches(terms.join(' '), read).length === 0) continue;
      // Rarest first, as the query scored them.
      terms.splice(0, terms.length, ...read.map((word) => word.postings[0]!.info.term));
      const idfs = Float64Array.from(terms, () => 0.05 + rand() * 3);
      const words = read.map((word, w) => ({ ...word, idf: idfs[w]! }));
      // The same without skip points: every posting walked, as before they existed.
      const walked = words.map((word) => ({ ...word, postings: word.postings.map((p) => ({ ...p, skips: [] })) }));
      // Up to 20 candidates in any order, as the best 20 by BM25F come; now and then one given twice
      // (the search never does, but each must still get its page's score).
      const candidates = Array.from({ length: 1 + Math.floor(rand() * 20) }, () => Math.floor(rand() * pages.length));
      if (rand() < 0.3) candidates.push(candidates[Math.floor(rand() * candidates.length)]!);
      const got = proximityScores({ segments: index.segments, groups, avgBodyLength }, words, candidates);
      const gotWalking = proximityScores({ segments: index.segments, groups, avgBodyLength }, walked, candidates);
      candidates.forEach((c, at) => {
        const { url, page, segmentAt } = pages[c]!;
        const bodyLength = index.segments[segmentAt]!.reader.columns.pageBodyLength[page]!;
        const expected = referenceProximity(live.get(url)!, terms, idfs, bodyLength, avgBodyLength);
        expect(got[at], `${url} for ${terms.join(' ')} (seed ${seed})`).toBe(expected);
        expect(gotWalking[at], `${url} for ${terms.join(' ')}, no skip points (seed ${seed})`).toBe(expected);
        compared++;
      });
    }
    expect(compared).toBeGreaterThan(200);
    // Skip points were there to use: a word's postings in a segment run to hundreds.
    expect(Math.max(...index.segments.map((segment) => segment.reader.lookup(termOf('kalo', 'english'))?.pageDf ?? 0))).toBeGreaterThan(4 * 32);
    await index.close();
  });

  it('skips varints four bytes at a time to the same byte as one at a time', () => {
    const seed = Number(process.env.PROXIMITY_SEED ?? Date.now() % 1_000_000);
    console.log(`skip seed ${seed}`);
    const rand = mulberry32(seed);
    const bytes = new Uint8Array(4096);
    let n = 0;
    for (let at = 0; at < bytes.length; ) {
      // Varints of 1 to 4 bytes: continuation bytes (>= 0x80), then a terminator.
      const length = 1 + Math.floor(rand() * 4);
      for (let k = 0; k < length - 1 && at < bytes.length; k++) bytes[at++] = 0x80 | Math.floor(rand() * 128);
      if (at < bytes.length) bytes[at++] = Math.floor(rand() * 128);
      n++;
    }
    const view = new DataView(bytes.buffer);
    const slow = (from: number, skip: number) => {
      let at = from;
      for (; skip > 0; at++) if (bytes[at]! < 0x80) skip--;
      return at;
    };
    for (let k = 0; k < 2000; k++) {
      const from = slow(0, Math.floor(rand() * (n / 2)));
      const skip = Math.floor(rand() * Math.min(n / 2, 600));
      expect(skipVarints(bytes, view, from, skip)).toBe(slow(from, skip));
    }
    // An unaligned view over a larger buffer, ending mid-word.
    const inner = bytes.subarray(3, 4093);
    const innerView = new DataView(inner.buffer, inner.byteOffset, inner.byteLength);
    let terminators = 0;
    for (const b of inner) if (b < 0x80) terminators++;
    expect(skipVarints(inner, innerView, 0, terminators)).toBe(inner.findLastIndex((b) => b < 0x80) + 1);
  });
});
