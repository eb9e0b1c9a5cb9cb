/**
 * A page handed to the extractor in pieces (fetcher/decode.ts `decodeHtmlChunks`, then one parser write
 * per piece) gives exactly what the whole page gives: wherever the pieces are cut (inside a tag, an
 * attribute, an entity, a comment, between `<` and a tag name), whatever the encoding, and with the
 * parse-work budget's cut (fetcher/parse-budget.ts) falling in any piece.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodedPrefix, decodeHtml, decodeHtmlChunks } from '../../fetcher/decode.js';
import { extractPage } from '../../fetcher/html-extract.js';
import { PARSE_WORK_BUDGET } from '../../fetcher/parse-budget.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`html-extract-pieces fast-check seed ${seed} (set FC_SEED to replay)`);

const PAGE = 'http://site.example/dir/page.html';

/** `text` cut at `cuts` (positions, any order, repeats allowed: empty pieces too). */
function piecesOf(text: string, cuts: readonly number[]): string[] {
  const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let from = 0;
  for (const c of at) {
    out.push(text.slice(from, c));
    from = c;
  }
  out.push(text.slice(from));
  return out;
}

function expectSameInPieces(html: string, pieces: readonly string[]): void {
  expect(pieces.join('')).toBe(html);
  expect(extractPage(pieces, PAGE)).toEqual(extractPage(html, PAGE));
}

const piece = fc.oneof(
  fc.constantFrom('<p>', '</p>', '<div>', '</div>', '<li>', '<br>', '</br>', '<b>', '</i>', '<html lang="nl">', '<head>', '</head>', '<body>', '<h2>', '</h2>'),
  fc.constantFrom('<title>', '</title>', '<script>', '</script>', '<style>', '</style>', '<noscript>', '</noscript>', '<template>', '</template>', '<svg>', '</svg>', '<textarea>', '</textarea>'),
  fc.constantFrom('<!-- c -->', '<!--', '-->', '<!doctype html>', '<?pi?>', '<![CDATA[x]]>', '&amp;', '&lt;', '&nbsp;', '&#x263a;', '&#233;', '&bogus;', '&eacute', '<', '>', '"', "'", '=', ' ', '\n'),
  fc.constantFrom('<a href="/x">', '<a href="y.html" rel="nofollow">', '<a href=z>', '</a>', '<area href="/area">', '<base href="/base/">', '<link rel="canonical" href="/c">', '<meta name="description" content="d &amp; e">', '<meta name="robots" content="nofollow">', '<a href="/self"/>', '<a href="/cut"', '<a href="/cs" /', '<meta name="robots" content="noindex"', '<svg><a href="/s"/>'),
  fc.stringMatching(/^[a-zA-Z0-9 .,!?éß日本-]{0,12}$/),
);
const page = fc.array(piece, { maxLength: 120, size: 'max' }).map((pieces) => pieces.join(''));

describe('extractPage in pieces', () => {
  it('extracts from random tag soup cut anywhere what it extracts from the whole page', () => {
    fc.assert(
      fc.property(page, fc.array(fc.nat(), { maxLength: 40, size: 'max' }), (html, cuts) => expectSameInPieces(html, piecesOf(html, cuts))),
      { seed, numRuns: 400 },
    );
  });

  it('gives the same at every single cut of a page that uses each construct once', () => {
    const html =
      '<!doctype html><html lang="de"><head><title>T &amp; t</title><base href="/b/"><meta name="description" content="D">' +
      '<link rel="canonical" href="/c"></head><body><h1>Head&eacute;</h1><!-- a <a href="/no"> comment --><p>One&nbsp;two</p>' +
      '<script>if (a < b) document.write("<a href=/s>")</script><a href="x.html">Anchor <b>text</b></a><a href=y rel=nofollow>Y</a>' +
      '<svg><a href="/svg"/></svg><textarea><a href="/t"></textarea><p>tail &#x263a;<';
    for (let cut = 0; cut <= html.length; cut++) expectSameInPieces(html, [html.slice(0, cut), html.slice(cut)]);
    expectSameInPieces(html, [...html]);
  });

  it('bounds anchor and heading texts per text node, however the nodes are cut', () => {
    // Anchor texts are gathered up to 256 characters and headings up to 1,024, a text node at a time:
    // a node that begins under the bound is kept whole.
    const node = (c: string, n: number) => `<b>${c.repeat(n - 5)} &amp;</b>`;
    const html = `<h1>${node('h', 400).repeat(4)}</h1><a href="/l">${node('x', 100).repeat(5)}</a>`;
    const whole = extractPage(html, PAGE);
    expect(whole.indexSource.anchors).toEqual([{ url: 'http://site.example/l', text: `${'x'.repeat(95)} &`.repeat(3) }]);
    expect(whole.indexSource.headings).toEqual([`${'h'.repeat(395)} &`.repeat(3)]);
    for (const size of [1, 7, 50, 99, 100, 101, 333]) {
      const pieces = piecesOf(html, [...Array(Math.ceil(html.length / size)).keys()].map((k) => k * size));
      expect(extractPage(pieces, PAGE)).toEqual(whole);
    }
  });

  it('cuts a page whose parse work passes the budget where the whole page is cut, wherever the pieces end', () => {
    // 31,000 open elements, then end tags that close nothing: each one scans the whole stack.
    const html = `<body><a href="/before">b</a>${'<b>'.repeat(31_000)}${'</x>'.repeat(5_000)}<a href="/after">a</a>`;
    const whole = extractPage(html, PAGE);
    expect(whole.truncated).toBe(true);
    expect(whole.links).toEqual(['http://site.example/before']);
    // The shortest prefix that is cut ends with the end tag whose work passes the budget.
    let lo = 0;
    let hi = html.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (extractPage(html.slice(0, mid), PAGE).truncated) hi = mid;
      else lo = mid + 1;
    }
    expect(html.slice(lo - 4, lo)).toBe('</x>');
    for (const cuts of [[lo], [lo - 1], [lo - 4], [lo + 1], [lo - 2, lo + 2], [1000, 60_000, lo - 3], [...Array(60).keys()].map((k) => k * 2_003)]) {
      expect(extractPage(piecesOf(html, cuts), PAGE)).toEqual(whole);
    }
  });

  it('walks 32,000 nested elements whole, the budget exactly, and cuts the next one', () => {
    // The k-th of n nested elements is pushed onto a stack of k - 1: n (n + 1) / 2 in all.
    expect(PARSE_WORK_BUDGET).toBe((32_000 * 32_001) / 2);
    const full = `${'<i>'.repeat(32_000)}deep<`;
    expect(extractPage(full, PAGE).truncated).toBe(false);
    expect(extractPage(full, PAGE).page.excerpt).toBe('deep<');
    expect(extractPage(piecesOf(full, [full.length - 1, 50_000]), PAGE)).toEqual(extractPage(full, PAGE));
    const over = `${'<i>'.repeat(32_001)}deep`;
    expect(extractPage(over, PAGE).truncated).toBe(true);
    expect(extractPage(over, PAGE).page.excerpt).toBe('');
  });

  it('does not cut flat pages, however many tags they have', () => {
    const html = `<body>${Array.from({ length: 60_000 }, (_, i) => `<p><a href="/p${i}">x</a></p>`).join('')}<h1>the end</h1>`;
    const result = extractPage(html, PAGE);
    expect(result.truncated).toBe(false);
    expect(result.indexSource.headings).toEqual(['the end']);
  });
});

describe('decodeHtmlChunks', () => {
  const cases: Array<[string, Uint8Array, string | null]> = [
    ['UTF-8, a character cut by every piece size', Buffer.from('<p>héllo 日本 \u{1F600} ß</p>'.repeat(20), 'utf8'), null],
    ['invalid UTF-8', new Uint8Array([0x3c, 0x70, 0x3e, 0x61, 0xff, 0x62, 0xe6, 0x97, 0x63, 0xf0, 0x9f, 0x98, 0xc3]), 'text/html; charset=utf-8'],
    ['a UTF-8 byte-order mark', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<p>é日本</p>'.repeat(9))]), null],
    ['UTF-16BE with its mark', Buffer.concat([Buffer.from([0xfe, 0xff]), Buffer.from('<p>日本 é</p>'.repeat(9), 'utf16le').swap16()]), null],
    ['UTF-16LE from the header', Buffer.from('<p>日本 é \u{1F600}</p>'.repeat(9), 'utf16le'), 'text/html; charset=utf-16le'],
    ['Shift_JIS from the meta prescan', Buffer.concat([Buffer.from('<meta charset="shift_jis"><p>'), Buffer.from('93fa967b8cea'.repeat(12), 'hex'), Buffer.from('</p>')]), null],
    ['windows-1252 from the header', Buffer.from('<p>caf\xe9 \x80 na\xefve</p>'.repeat(9), 'latin1'), 'text/html; charset=windows-1252'],
    ['nothing', new Uint8Array(0), null],
  ];
  for (const [name, bytes, contentType] of cases) {
    it(`joins to what decodeHtml gives: ${name}`, () => {
      const whole = decodeHtml(bytes, contentType);
      for (const size of [1, 2, 3, 5, 7, 64, 1 << 20]) {
        const pieces = [...decodeHtmlChunks(bytes, contentType, size)];
        expect(pieces.join('')).toBe(whole);
        expect(pieces.every((p) => p.length > 0) || whole.length === 0).toBe(true);
      }
    });
  }

  it('decodes a prefix as the whole text cut to its length', () => {
    const big = Buffer.from('<p>héllo 日本 \u{1F600}</p>\n'.repeat(10_000), 'utf8');
    for (const [bytes, contentType] of [...cases.map(([, b, c]) => [b, c] as const), [big, null] as const]) {
      const whole = decodeHtml(bytes, contentType);
      for (const n of [0, 1, 5, 17, 40_000, 200_000, 10_000_000]) expect(decodedPrefix(bytes, contentType, n)).toBe(whole.slice(0, n));
    }
  });

  it('extracts from a page decoded in pieces what it extracts from the page decoded whole', () => {
    const html = `<html lang="ja"><title>日本語のページ</title><body>${'<p>段落 é <a href="/リンク">リンク</a></p>\n'.repeat(3000)}</body>`;
    for (const [bytes, contentType] of [
      [Buffer.from(html, 'utf8'), null],
      [Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(html, 'utf16le')]), null],
    ] as const) {
      expect(bytes.length).toBeGreaterThan(64 * 1024);
      const pieces = [...decodeHtmlChunks(bytes, contentType)];
      expect(pieces.length).toBeGreaterThan(2);
      expect(extractPage(pieces, PAGE)).toEqual(extractPage(decodeHtml(bytes, contentType), PAGE));
    }
  });
});
