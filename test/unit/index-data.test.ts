/**
 * A page's index data (shared/index-data.ts): what the builder makes of a page, and the schema that
 * the queue server applies to what a fetcher posts: every bound enforced, positions checked.
 */
import { describe, expect, it } from 'vitest';
import { buildIndexData, cutUtf8, INDEX_LIMITS, indexDataSchema, positionsOf, type IndexData } from '../../shared/index-data.js';

function build(partial: Partial<Parameters<typeof buildIndexData>[0]>): IndexData {
  return buildIndexData({ title: null, headings: [], bodyText: '', language: null, anchors: [], ...partial });
}

describe('index data', () => {
  it('lists each term once per field with its frequency and delta-encoded positions', () => {
    const data = build({ title: 'Crawling the Web', bodyText: 'a crawler crawls; crawlers crawl the web', language: 'en-US' });
    expect(data.stemmer).toBe('english');
    expect(data.fields.title).toEqual([['crawl', 1, [0]], ['the', 1, [1]], ['web', 1, [2]]]);
    expect(data.fields.body).toEqual([['a', 1, [0]], ['crawler', 2, [1, 2]], ['crawl', 2, [2, 2]], ['the', 1, [5]], ['web', 1, [6]]]);
    expect(positionsOf(data.fields.body[2]!)).toEqual([2, 4]);
    expect(indexDataSchema.parse(data)).toEqual(data);
  });

  it('keeps headings apart by a position gap, so a phrase never spans two', () => {
    const data = build({ headings: ['Getting started', 'Installing'] });
    expect(data.fields.heading.map((e) => [e[0], positionsOf(e)])).toEqual([['get', [0]], ['start', [1]], ['instal', [2 + INDEX_LIMITS.headingGap]]]);
  });

  it('joins the anchor texts of links to one URL and drops links without text', () => {
    const data = build({ anchors: [{ url: 'http://x.test/a', text: 'Read more' }, { url: 'http://x.test/b', text: '   ' }, { url: 'http://x.test/a', text: 'about birds' }] });
    expect(data.anchors).toEqual([{ url: 'http://x.test/a', terms: ['read', 'more', 'about', 'bird'] }]);
  });

  it('bounds tokens per field, positions per term, anchor terms and stored text', () => {
    const data = build({
      title: 'w '.repeat(250),
      bodyText: 'spam '.repeat(30_000),
      anchors: [{ url: 'http://x.test/', text: 'one two three four five six seven eight nine ten '.repeat(5) }],
      storedText: 'é'.repeat(20_000),
    });
    expect(data.fields.title[0]![1]).toBe(INDEX_LIMITS.titleTokens);
    expect(data.fields.body[0]![1]).toBe(INDEX_LIMITS.bodyTokens);
    expect(data.fields.body[0]![2]).toHaveLength(INDEX_LIMITS.positionsPerTerm);
    expect(data.anchors[0]!.terms).toHaveLength(INDEX_LIMITS.anchorTerms);
    expect(Buffer.byteLength(data.text, 'utf8')).toBe(INDEX_LIMITS.storedTextBytes);
    expect(indexDataSchema.safeParse(data).success).toBe(true);
  });

  it('refuses posted data beyond a bound or with positions that do not make sense', () => {
    const ok = build({ bodyText: 'alpha beta', title: 'T' });
    const refuses = (mutate: (d: IndexData) => unknown) => {
      const copy = JSON.parse(JSON.stringify(ok)) as IndexData;
      mutate(copy);
      return indexDataSchema.safeParse(copy).success === false;
    };
    expect(refuses((d) => (d.text = 'x'.repeat(INDEX_LIMITS.storedTextBytes + 1)))).toBe(true);
    expect(refuses((d) => (d.text = '€'.repeat(6000)))).toBe(true); // 18,000 bytes of UTF-8
    expect(refuses((d) => d.fields.body.push(['alpha', 1, [5]]))).toBe(true); // listed twice
    expect(refuses((d) => (d.fields.body[1]![2] = [1, 0]))).toBe(true); // more positions than frequency
    expect(refuses((d) => (d.fields.body[1] = ['beta', 2, [1, 0]]))).toBe(true); // not increasing
    expect(refuses((d) => (d.fields.title[0] = ['t', 1, [INDEX_LIMITS.titleTokens]]))).toBe(true); // beyond the field
    expect(refuses((d) => (d.fields.body[0]![0] = 'x'.repeat(65)))).toBe(true);
    expect(refuses((d) => (d.anchors = [{ url: 'http://x.test/', terms: [] }]))).toBe(true);
    expect(refuses((d) => (d.anchors = Array.from({ length: INDEX_LIMITS.anchors + 1 }, (_, i) => ({ url: `http://x.test/${i}`, terms: ['a'] }))))).toBe(true);
    expect(refuses((d) => ((d as { stemmer: string }).stemmer = 'klingon'))).toBe(true);
    expect(refuses(() => {})).toBe(false);
  });

  it('cuts a long title and anchor text between characters, never inside a surrogate pair', () => {
    // A character beyond the BMP straddling the title's bound: cut before it, not after its first half.
    const title = `${'t'.repeat(INDEX_LIMITS.titleChars - 1)}\u{1D11E}tail`;
    const data = buildIndexData({ title, headings: [], bodyText: 'body', language: null, anchors: [{ url: 'http://a.example/', text: `${'a '.repeat(5000)}\u{1D11E}` }] });
    expect(data.title).toBe('t'.repeat(INDEX_LIMITS.titleChars - 1));
    expect(Buffer.from(data.title!, 'utf8').toString('utf8')).toBe(data.title);
    expect(indexDataSchema.parse(data)).toEqual(data);
  });

  it('cuts UTF-8 without splitting a character', () => {
    expect(cutUtf8('aé😀b', 3)).toBe('aé');
    expect(cutUtf8('aé😀b', 6)).toBe('aé');
    expect(cutUtf8('aé😀b', 7)).toBe('aé😀');
    expect(Buffer.byteLength(cutUtf8('😀'.repeat(10), 17), 'utf8')).toBe(16);
  });
});
