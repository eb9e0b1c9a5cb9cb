/**
 * The bytes of the search index: varints, segments written and read back (every posting, position,
 * column and stored document as it went in), merges (a merge of segments with deletions equals a
 * segment built from the surviving entries alone), deletion files, and the merge policy's bound on
 * the number of segments.
 */
import * as path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildIndexData } from '../../shared/index-data.js';
import { ByteReader, ByteWriter, hashHalves } from '../../queue-server/search/bytes.js';
import { decodeDeletions, encodeDeletions } from '../../queue-server/search/manifest.js';
import { mergeSegments } from '../../queue-server/search/merge.js';
import { levelOf, MERGE_FACTOR, MIN_ENTRIES, planMerge } from '../../queue-server/search/merge-policy.js';
import { pageMetaTerms } from '../../queue-server/search/meta-terms.js';
import { PostingPool } from '../../queue-server/search/posting-pool.js';
import { SegmentBuilder, type StagedAnchor, type StagedPage } from '../../queue-server/search/segment-builder.js';
import { MAX_POSITIONS, NO_PAGE, POSITIONED_FIELDS } from '../../queue-server/search/segment-format.js';
import { SegmentReader } from '../../queue-server/search/segment-reader.js';
import { writeSegment } from '../../queue-server/search/segment-writer.js';
import { urlHash64 } from '../../shared/url-hash.js';
import { tempDir } from '../support/search-model.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`search-codec fast-check seed ${seed} (set FC_SEED to replay)`);

interface EntrySpec {
  readonly url: string;
  readonly page: StagedPage | null;
  readonly anchors: StagedAnchor[];
  readonly alias: [number, number] | null;
}

const WORDS = ['ant', 'bee', 'cat', 'dog', 'elk', 'fox', 'gnu', 'hen'];
const words = (max: number) => fc.array(fc.constantFrom(...WORDS), { maxLength: max }).map((w) => w.join(' '));
const entryArb: fc.Arbitrary<EntrySpec> = fc
  .record({ n: fc.nat(50), title: words(3), body: words(20), withPage: fc.boolean(), anchors: fc.array(fc.record({ t: fc.nat(50), text: words(4) }), { maxLength: 3 }), alias: fc.option(fc.nat(50), { nil: null }) })
  .map((r) => {
    const url = `http://h${r.n % 3}.test/${r.n}`;
    const data = buildIndexData({ title: r.title, headings: [], bodyText: r.body, language: 'en', anchors: r.anchors.map((a) => ({ url: `http://h.test/${a.t}`, text: a.text })) });
    return {
      url,
      page: r.withPage ? { url, fetchedAt: r.n, data, metaTerms: pageMetaTerms(url, 'en') } : null,
      anchors: data.anchors.map((a) => {
        const [targetHi, targetLo] = hashHalves(urlHash64(a.url));
        return { targetHi, targetLo, terms: a.terms };
      }),
      alias: r.withPage || r.alias === null ? null : hashHalves(urlHash64(`http://h.test/${r.alias}`)),
    };
  });

function buildSegment(file: string, entries: readonly EntrySpec[]): void {
  const builder = new SegmentBuilder();
  for (const e of entries) {
    const [hi, lo] = hashHalves(urlHash64(e.url));
    builder.addEntry(hi, lo, e.page, e.anchors, e.alias);
  }
  writeSegment(file, builder.content());
}

/** Everything a segment holds, decoded into plain values. */
function decodeAll(file: string): unknown {
  const reader = SegmentReader.open(file);
  try {
    const terms: Record<string, unknown> = {};
    for (const info of reader.terms()) {
      const p = reader.postings(info);
      const docs = new ByteReader(p.pageDocs);
      const positions = new ByteReader(p.pagePositions);
      const page: unknown[] = [];
      let doc = -1;
      for (let i = 0; i < p.pageDf; i++) {
        const head = docs.varint();
        doc += Math.floor(head / 16);
        const mask = head % 16;
        const freqs = POSITIONED_FIELDS.filter((bit) => (mask & bit) !== 0).map(() => docs.varint());
        page.push([doc, mask, freqs, freqs.map((f) => Array.from({ length: Math.min(f, MAX_POSITIONS) }, () => positions.varint()))]);
      }
      const adocs = new ByteReader(p.anchorDocs);
      const apos = new ByteReader(p.anchorPositions);
      const anchor: unknown[] = [];
      doc = -1;
      for (let i = 0; i < p.anchorDf; i++) {
        doc += adocs.varint();
        const f = adocs.varint();
        anchor.push([doc, f, Array.from({ length: Math.min(f, MAX_POSITIONS) }, () => apos.varint())]);
      }
      expect(docs.done && positions.done && adocs.done && apos.done).toBe(true);
      terms[info.term] = { page, anchor };
    }
    const c = reader.columns;
    const entries = Array.from({ length: reader.footer.entries }, (_, e) => {
      const page = c.entryPage[e]!;
      return {
        source: [c.entrySourceHi[e], c.entrySourceLo[e]],
        alias: [c.entryAliasHi[e], c.entryAliasLo[e], c.entryFlags[e]],
        page: page === NO_PAGE ? null : { lengths: [c.pageTitleLength[page], c.pageHeadingLength[page], c.pageBodyLength[page]], doc: reader.document(page) },
        anchors: Array.from({ length: c.entryAnchorCount[e]! }, (_, k) => {
          const a = c.entryAnchorFirst[e]! + k;
          return [c.anchorTargetHi[a], c.anchorTargetLo[a], c.anchorLength[a]];
        }),
      };
    });
    return { terms, entries, stemmers: reader.meta.stemmers };
  } finally {
    reader.close();
  }
}

describe('search index codec', () => {
  it('round-trips varints up to 2^53 - 1 and refuses a truncated one', () => {
    fc.assert(
      fc.property(fc.array(fc.maxSafeNat(), { maxLength: 50, size: 'max' }), (values) => {
        const out = new ByteWriter(8);
        for (const v of values) out.varint(v);
        const reader = new ByteReader(out.view());
        expect(values.map(() => reader.varint())).toEqual(values);
        expect(reader.done).toBe(true);
      }),
      { seed, numRuns: 300 },
    );
    const out = new ByteWriter();
    out.varint(300);
    expect(() => new ByteReader(out.view(), 0, 1).varint()).toThrow(/past the end/);
  });

  it('keeps interleaved streams of the posting pool apart, across slices, blocks and a reset', () => {
    fc.assert(
      // Small values (one to four bytes: the pool's fast path at a slice's end), up to 2^28 - 1, around
      // 2^28 (four bytes or five), and any up to 2^53 - 1.
      fc.property(fc.array(fc.tuple(fc.nat(20), fc.oneof(fc.nat(300), fc.nat(0x0fffffff), fc.integer({ min: 0x0ffffff0, max: 0x1000000f }), fc.maxSafeNat())), { maxLength: 30_000, size: 'max' }), (writes) => {
        const pool = new PostingPool();
        for (let round = 0; round < 2; round++) {
          pool.reset();
          const streams = Array.from({ length: 21 }, () => pool.newStream());
          const expected = streams.map(() => new ByteWriter());
          for (const [s, value] of writes) {
            pool.varint(streams[s]!, value + round);
            expected[s]!.varint(value + round);
          }
          streams.forEach((stream, s) => {
            const out = new ByteWriter();
            pool.copyTo(stream, out);
            expect(Buffer.from(out.view()).equals(Buffer.from(expected[s]!.view()))).toBe(true);
            expect(pool.length(stream)).toBe(expected[s]!.length);
          });
        }
      }),
      { seed, numRuns: 30 },
    );
  });

  it('reads back every posting, position, column and stored document a segment was built with', () => {
    const dir = tempDir();
    const entries: EntrySpec[] = fc.sample(entryArb, { seed, numRuns: 40 });
    buildSegment(path.join(dir, 'a.psg'), entries);
    const decoded = decodeAll(path.join(dir, 'a.psg')) as { terms: Record<string, { page: Array<[number, number, number[], number[][]]> }>; entries: unknown[] };
    expect(decoded.entries).toHaveLength(entries.length);
    // Spot-check against the input: every page's body terms appear in its doc's postings with its frequency.
    let pageDoc = 0;
    for (const e of entries) {
      if (e.page === null) continue;
      for (const [term, frequency] of e.page.data.fields.body) {
        const posting = decoded.terms[term]!.page.find((p) => p[0] === pageDoc)!;
        expect(posting[1] & 4).toBe(4);
        expect(posting[2].at(-1)).toBe(frequency);
      }
      pageDoc++;
    }
  });

  it('merges segments with deletions into exactly the segment the surviving entries make alone', () => {
    fc.assert(
      fc.property(fc.array(fc.array(entryArb, { maxLength: 12 }), { minLength: 1, maxLength: 4 }), fc.array(fc.boolean(), { minLength: 48, maxLength: 48 }), (segments, deleteFlags) => {
        const dir = tempDir();
        const inputs = segments.map((entries, i) => {
          const file = `in-${i}.psg`;
          buildSegment(path.join(dir, file), entries);
          const deleted = entries.map((_, e) => e).filter((e) => deleteFlags[(i * 12 + e) % 48]);
          return { id: i + 1, file, deleted };
        });
        mergeSegments({ dir, inputs, outputId: 99, outputFile: 'merged.psg' });
        const survivors = segments.flatMap((entries, i) => entries.filter((_, e) => !inputs[i]!.deleted.includes(e)));
        buildSegment(path.join(dir, 'direct.psg'), survivors);
        const merged = decodeAll(path.join(dir, 'merged.psg')) as { stemmers: string[] };
        const direct = decodeAll(path.join(dir, 'direct.psg')) as { stemmers: string[] };
        // A merge keeps the stemmers of all inputs, even of entries it dropped.
        expect({ ...merged, stemmers: [] }).toEqual({ ...direct, stemmers: [] });
      }),
      { seed, numRuns: 60 },
    );
  });

  it('round-trips deletion files and refuses one of another segment', () => {
    const bytes = encodeDeletions(7, 100, [0, 5, 99]);
    expect(decodeDeletions(bytes, 7, 100, 'x.del')).toEqual([0, 5, 99]);
    expect(() => decodeDeletions(bytes, 8, 100, 'x.del')).toThrow(/another segment/);
    expect(() => decodeDeletions(bytes, 7, 101, 'x.del')).toThrow(/another size/);
  });

  it('keeps the number of segments logarithmic in the entries committed', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 500 }), { minLength: 1, maxLength: 400, size: 'max' }), (commits) => {
        let segments: Array<{ id: number; entries: number; deleted: number }> = [];
        let id = 0;
        let total = 0;
        for (const entries of commits) {
          segments.push({ id: ++id, entries, deleted: 0 });
          total += entries;
          for (let plan = planMerge(segments); plan !== null; plan = planMerge(segments)) {
            const merged = segments.filter((s) => plan.includes(s.id));
            const at = segments.findIndex((s) => s.id === plan[0]);
            segments = segments.filter((s) => !plan.includes(s.id));
            segments.splice(at, 0, { id: ++id, entries: merged.reduce((n, s) => n + s.entries, 0), deleted: 0 });
          }
          const levels = levelOf(total) + 1;
          expect(segments.length).toBeLessThanOrEqual((MERGE_FACTOR - 1) * levels);
        }
      }),
      { seed, numRuns: 100 },
    );
    expect(levelOf(MIN_ENTRIES * MERGE_FACTOR ** 3)).toBe(3);
    expect(planMerge([{ id: 1, entries: 900, deleted: 400 }])).toEqual([1]);
  });
});
