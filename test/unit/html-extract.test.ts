/**
 * What a fetcher takes from an HTML page (fetcher/html-extract.ts) and how it turns bytes into text
 * first (fetcher/decode.ts). Every page extracted here must also fit the wire contract
 * (pageDataSchema), since it is posted to the queue server as is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeHtml, decodeHtmlChunks, charsetFromContentType } from '../../fetcher/decode.js';
import { bound, collapseWhitespace, extractPage, type ExtractedPage } from '../../fetcher/html-extract.js';
import { DEFAULT_MAX_LINKS_PER_PAGE, LIMITS, pageDataSchema } from '../../shared/protocol.js';

const PAGE = 'http://site.example/dir/page.html';

function extract(html: string, pageUrl = PAGE, maxLinks?: number): ExtractedPage {
  const result = extractPage(html, pageUrl, maxLinks);
  // Whatever the page, the result crosses the wire.
  pageDataSchema.parse(result.page);
  // Links past the bound are counted in outlinks; below it, outlinks are the links.
  if (result.links.length < (maxLinks ?? DEFAULT_MAX_LINKS_PER_PAGE)) expect(result.page.outlinks).toBe(result.links.length);
  else expect(result.page.outlinks).toBeGreaterThanOrEqual(result.links.length);
  return result;
}

function linksOf(body: string, pageUrl = PAGE): string[] {
  return extract(`<html><body>${body}</body></html>`, pageUrl).links;
}

describe('links', () => {
  it('resolves links against the page URL and normalizes them', () => {
    expect(linksOf('<a href="other.html">x</a><a href="../up">x</a><a href="/Root?%7e=1">x</a><a href="HTTP://Other.EXAMPLE:80/b">x</a>')).toEqual([
      'http://site.example/dir/other.html',
      'http://site.example/up',
      'http://site.example/Root?~=1',
      'http://other.example/b',
    ]);
  });

  it('resolves links against <base href>, itself resolved against the page URL', () => {
    expect(extract('<head><base href="http://cdn.example/root/"></head><a href="x/y">x</a><a href="/abs">a</a>').links).toEqual([
      'http://cdn.example/root/x/y',
      'http://cdn.example/abs',
    ]);
    expect(extract('<head><base href="/other/dir/"></head><a href="x">x</a>').links).toEqual(['http://site.example/other/dir/x']);
  });

  it('uses only the first <base href>', () => {
    expect(extract('<base href="http://first.example/a/"><base href="http://second.example/b/"><a href="x">x</a>').links).toEqual(['http://first.example/a/x']);
  });

  it('falls back to the page URL when <base href> is not a crawlable URL', () => {
    expect(extract('<base href="javascript:void(0)"><a href="x">x</a>').links).toEqual(['http://site.example/dir/x']);
  });

  it('follows <area href> like <a href>', () => {
    expect(linksOf('<map><area href="/map-target" shape="rect"></map>')).toEqual(['http://site.example/map-target']);
  });

  it('skips links with rel=nofollow, whatever the case and the other tokens', () => {
    expect(linksOf('<a rel="nofollow" href="/a">a</a><a rel="external NoFollow" href="/b">b</a><a rel="nofollowish" href="/c">c</a><a href="/d">d</a>')).toEqual([
      'http://site.example/c',
      'http://site.example/d',
    ]);
  });

  it.each([
    ['<meta name="robots" content="nofollow">'],
    ['<meta name="ROBOTS" content="index, NOFOLLOW">'],
    ['<meta name="robots" content="none">'],
    ['<meta name="petrel" content="nofollow">'],
  ])('follows no link at all with %s', (meta) => {
    const result = extract(`<html><head>${meta}</head><body><a href="/a">a</a><a href="/b">b</a></body></html>`);
    expect(result.links).toEqual([]);
    expect(result.page.nofollow).toBe(true);
    expect(result.page.outlinks).toBe(0);
  });

  it('does not treat another crawler\'s meta tag as ours', () => {
    const result = extract('<meta name="otherbot" content="noindex, nofollow"><a href="/a">a</a>');
    expect(result.links).toEqual(['http://site.example/a']);
    expect(result.page).toMatchObject({ noindex: false, nofollow: false });
  });

  it('drops javascript:, mailto:, data:, tel: and other non-http links', () => {
    expect(linksOf('<a href="javascript:go()">j</a><a href="mailto:a@b.example">m</a><a href="data:text/html,hi">d</a><a href="tel:+1">t</a><a href="ftp://f.example/">f</a><a href="/ok">ok</a>')).toEqual([
      'http://site.example/ok',
    ]);
  });

  it('drops fragments and the duplicates they and other spellings create, keeping first-seen order', () => {
    expect(linksOf('<a href="/a#one">1</a><a href="/b">2</a><a href="/a#two">3</a><a href="http://SITE.example:80/a">4</a><a href="../dir/../a">5</a><a href="  /b  ">6</a>')).toEqual([
      'http://site.example/a',
      'http://site.example/b',
    ]);
  });

  it('ignores anchors without href and hrefs that are not URLs', () => {
    expect(linksOf('<a name="x">x</a><a href="http://[bad">y</a><a href="http://">z</a><a href="/fine">f</a>')).toEqual(['http://site.example/fine']);
  });

  it('keeps at most maxLinks links, the first ones in document order', () => {
    const anchors = Array.from({ length: 100 }, (_, i) => `<a href="/p${i}">${i}</a>`).join('');
    const result = extract(anchors, PAGE, 10);
    expect(result.links).toEqual(Array.from({ length: 10 }, (_, i) => `http://site.example/p${i}`));
    // 20 kept as written (twice the bound), 80 counted as written past them.
    expect(result.page.outlinks).toBe(100);
  });

  it('keeps at most DEFAULT_MAX_LINKS_PER_PAGE links by default, and counts the rest in outlinks', () => {
    const anchors = Array.from({ length: DEFAULT_MAX_LINKS_PER_PAGE + 50 }, (_, i) => `<a href="/p${i}">.</a>`).join('');
    const result = extract(anchors);
    expect(result.links).toHaveLength(DEFAULT_MAX_LINKS_PER_PAGE);
    expect(result.links.at(-1)).toBe(`http://site.example/p${DEFAULT_MAX_LINKS_PER_PAGE - 1}`);
    expect(result.page.outlinks).toBe(DEFAULT_MAX_LINKS_PER_PAGE + 50);
  });

  it('keeps the first maxLinks distinct links and counts every distinct one, then those past twice the bound as written', () => {
    // Links 0-9, each written twice, then 10 more written once: 20 distinct.
    const hrefs = [...Array.from({ length: 10 }, (_, i) => [`/p${i}`, `/p${i}#again`]).flat(), ...Array.from({ length: 10 }, (_, i) => `/q${i}`)];
    const html = hrefs.map((href) => `<a href="${href}">${href}</a>`).join('');
    const five = extractPage(html, 'http://site.example/', 5);
    expect(five.links).toEqual([0, 1, 2, 3, 4].map((i) => `http://site.example/p${i}`));
    // 10 hrefs kept as written (twice the bound): p0-p4 twice; the 20 after them counted as written.
    expect(five.page.outlinks).toBe(5 + 20);
    // Anchor text is gathered for the links kept only.
    expect(new Set(five.indexSource.anchors.map((a) => a.url))).toEqual(new Set(five.links));
    const fifteen = extractPage(html, 'http://site.example/', 15);
    expect(fifteen.links).toHaveLength(15);
    expect(fifteen.page.outlinks).toBe(20);
    const all = extractPage(html, 'http://site.example/', 20);
    expect(all.links).toHaveLength(20);
    expect(all.page.outlinks).toBe(20);
  });
});

describe('index data', () => {
  const html = `<!doctype html><html lang="en-GB"><head>
    <title>  The   Title
      of the page </title>
    <meta name="Description" content="  A  short
      description ">
    <link rel="canonical" href="../canonical/page#top">
    <style>.hidden { color: red }</style>
    <script>var secretScript = 1;</script>
  </head><body>
    <h1>Heading</h1>
    <p>Some   visible
       text.</p>
    <script>var alsoSecret = 2;</script>
    <noscript>noscript text</noscript>
    <template>template text</template>
    <style>.x{}</style>
  </body></html>`;

  it('takes title, description, language and canonical, whitespace collapsed', () => {
    const { page } = extract(html);
    expect(page.title).toBe('The Title of the page');
    expect(page.description).toBe('A short description');
    expect(page.language).toBe('en-GB');
    expect(page.canonical).toBe('http://site.example/canonical/page');
  });

  it('keeps script, style, noscript, template and title text out of the excerpt', () => {
    const { excerpt } = extract(html).page;
    expect(excerpt).toContain('Heading');
    expect(excerpt).toContain('Some visible text.');
    for (const hidden of ['secretScript', 'alsoSecret', 'color: red', 'noscript text', 'template text', 'The Title']) expect(excerpt).not.toContain(hidden);
  });

  it('takes the language from <meta http-equiv="content-language"> when <html> has no lang', () => {
    expect(extract('<html><head><meta http-equiv="Content-Language" content="de-AT"></head></html>').page.language).toBe('de-AT');
    expect(extract('<html lang="fr"><head><meta http-equiv="content-language" content="de"></head></html>').page.language).toBe('fr');
  });

  it('drops a language that is not a language tag', () => {
    expect(extract('<html lang="en_US!"></html>').page.language).toBeNull();
    expect(extract(`<html lang="${'a'.repeat(40)}"></html>`).page.language).toBeNull();
  });

  it('returns nulls and an empty excerpt for a page with none of these', () => {
    expect(extract('').page).toEqual({
      title: null,
      description: null,
      language: null,
      excerpt: '',
      canonical: null,
      noindex: false,
      nofollow: false,
      outlinks: 0,
      simhash: null,
    });
  });

  it('fingerprints the visible text with a simhash: equal text, equal fingerprint; other text, far apart', () => {
    const text = (words: string) => `<html><body><p>${words}</p><script>var ignored = 1;</script></body></html>`;
    const base = 'the quick brown fox jumps over the lazy dog while the crawler reads every page of the web politely';
    const a = extract(text(base)).page.simhash;
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(extract(text(base)).page.simhash).toBe(a);
    expect(extract(`<html><body><p>${base}</p><script>var other = 2;</script></body></html>`).page.simhash).toBe(a);
  });

  it('drops a canonical link that is not crawlable, and resolves one against <base>', () => {
    expect(extract('<link rel="canonical" href="javascript:x()">').page.canonical).toBeNull();
    expect(extract('<base href="http://b.example/x/"><link rel="Canonical" href="y">').page.canonical).toBe('http://b.example/x/y');
  });

  it.each([
    ['<meta name="robots" content="noindex">', true, false],
    ['<meta name="robots" content="NoIndex,follow">', true, false],
    ['<meta name="robots" content="none">', true, true],
    ['<meta name="petrel" content="noindex">', true, false],
    ['<meta name="robots" content="index, follow">', false, false],
  ])('reads %s as noindex=%s nofollow=%s', (meta, noindex, nofollow) => {
    expect(extract(`<head>${meta}</head>`).page).toMatchObject({ noindex, nofollow });
  });

  it('bounds a 100 KB title to LIMITS.titleChars', () => {
    const { page } = extract(`<title>${'t'.repeat(100_000)}</title>`);
    expect(page.title).toHaveLength(LIMITS.titleChars);
  });

  it('bounds description and excerpt', () => {
    const { page } = extract(`<meta name="description" content="${'d'.repeat(50_000)}"><p>${'word '.repeat(50_000)}</p>`);
    expect(page.description).toHaveLength(LIMITS.descriptionChars);
    expect(page.excerpt.length).toBeLessThanOrEqual(LIMITS.excerptChars);
    expect(page.excerpt.length).toBeGreaterThan(LIMITS.excerptChars - 10);
  });

  it('never cuts a title in the middle of a surrogate pair', () => {
    const { page } = extract(`<title>${'😀'.repeat(400)}</title>`);
    const title = page.title!;
    expect(title.length).toBeLessThanOrEqual(LIMITS.titleChars);
    const last = title.charCodeAt(title.length - 1);
    expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
    expect(bound('a😀', 2)).toBe('a');
    expect(bound('ab', 5)).toBe('ab');
  });

  it('survives deeply nested elements without overflowing the stack', () => {
    // 30,000 levels: about three times the depth at which a recursive walk overflows V8's default stack
    // (200,000 would take tens of seconds in the parser, not in this module: see the test report).
    const depth = 30_000;
    const html = `${'<div>'.repeat(depth)}<a href="/deep">deep text</a>${'</div>'.repeat(depth)}`;
    const result = extract(html);
    expect(result.page.excerpt).toBe('deep text');
    expect(result.links).toEqual(['http://site.example/deep']);
  });
});

describe('decodeHtml', () => {
  const SHIFT_JIS_NIHON = [0x93, 0xfa, 0x96, 0x7b]; // "日本"
  const ascii = (text: string) => [...Buffer.from(text, 'latin1')];

  it('decodes windows-1252 as WHATWG says, 0x80-0x9F included, under its own label and those mapped to it', () => {
    // “Café” – 5 € … Ÿ, and 0x81, which windows-1252 leaves unmapped (U+0081).
    const bytes = Buffer.from([0x93, 0x43, 0x61, 0x66, 0xe9, 0x94, 0x20, 0x96, 0x20, 0x35, 0x20, 0x80, 0x20, 0x85, 0x20, 0x9f, 0x81]);
    for (const label of ['windows-1252', 'iso-8859-1', 'latin1', 'us-ascii']) {
      expect(decodeHtml(bytes, `text/html; charset=${label}`)).toBe('“Café” – 5 € … Ÿ\u0081');
      expect([...decodeHtmlChunks(bytes, `text/html; charset=${label}`, 3)].join('')).toBe('“Café” – 5 € … Ÿ\u0081');
    }
  });

  it('decodes UTF-8 by default', () => {
    expect(decodeHtml(Buffer.from('<p>héllo 日本</p>', 'utf8'), null)).toBe('<p>héllo 日本</p>');
  });

  it('lets a UTF-16LE byte-order mark win over every declaration', () => {
    const bytes = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<meta charset="shift_jis"><p>héllo 日本</p>', 'utf16le')]);
    expect(decodeHtml(bytes, 'text/html; charset=windows-1252')).toBe('<meta charset="shift_jis"><p>héllo 日本</p>');
  });

  it('honours UTF-16BE and UTF-8 byte-order marks', () => {
    const le = Buffer.from('<p>日本</p>', 'utf16le');
    const be = Buffer.from(le).swap16();
    expect(decodeHtml(Buffer.concat([Buffer.from([0xfe, 0xff]), be]), null)).toBe('<p>日本</p>');
    expect(decodeHtml(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('<p>é</p>')]), 'text/html; charset=shift_jis')).toBe('<p>é</p>');
  });

  it('decodes Shift_JIS declared by <meta charset>', () => {
    const bytes = new Uint8Array([...ascii('<html><head><meta charset="shift_jis"><title>'), ...SHIFT_JIS_NIHON, ...ascii('</title>')]);
    const text = decodeHtml(bytes, 'text/html');
    expect(text).toContain('<title>日本</title>');
    expect(extract(text).page.title).toBe('日本');
  });

  it('decodes a charset declared by <meta http-equiv="Content-Type">', () => {
    const bytes = new Uint8Array([...ascii('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><p>'), ...SHIFT_JIS_NIHON]);
    expect(decodeHtml(bytes, null)).toBe('<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"><p>日本');
  });

  it('lets the Content-Type charset win over <meta charset>', () => {
    const bytes = new Uint8Array([...ascii('<meta charset="utf-8"><p>'), ...SHIFT_JIS_NIHON]);
    expect(decodeHtml(bytes, 'text/html; charset="Shift_JIS"')).toBe('<meta charset="utf-8"><p>日本');
    // The same bytes read as the meta tag says are not Japanese.
    expect(decodeHtml(bytes, null)).not.toContain('日本');
  });

  it('looks for <meta charset> only in the first 1024 bytes', () => {
    const bytes = new Uint8Array([...ascii(`<!--${' '.repeat(1100)}--><meta charset="shift_jis"><p>`), ...SHIFT_JIS_NIHON]);
    expect(decodeHtml(bytes, null)).not.toContain('日本');
  });

  it('falls back when a declared label is unknown', () => {
    const bytes = new Uint8Array([...ascii('<meta charset="shift_jis"><p>'), ...SHIFT_JIS_NIHON]);
    expect(decodeHtml(bytes, 'text/html; charset=x-no-such-charset')).toContain('日本');
    expect(decodeHtml(Buffer.from('<meta charset="x-bogus">é'), null)).toBe('<meta charset="x-bogus">é');
  });

  it('reads a UTF-16 meta declaration without a byte-order mark as UTF-8', () => {
    expect(decodeHtml(Buffer.from('<meta charset="utf-16"><p>é</p>'), null)).toBe('<meta charset="utf-16"><p>é</p>');
  });

  it('turns invalid UTF-8 into U+FFFD instead of throwing', () => {
    expect(decodeHtml(new Uint8Array([0x61, 0xff, 0x62, 0xc3]), null)).toBe('a\ufffdb\ufffd');
    expect(decodeHtml(new Uint8Array([0xe6, 0x97]), 'text/html; charset=utf-8')).toBe('\ufffd');
  });

  it('decodes an empty body to an empty string', () => {
    expect(decodeHtml(new Uint8Array(0), null)).toBe('');
    expect(decodeHtml(new Uint8Array([0xff, 0xfe]), null)).toBe('');
  });

  it('reads the charset parameter of a Content-Type in its usual spellings', () => {
    expect(charsetFromContentType('text/html; charset=UTF-8')).toBe('utf-8');
    expect(charsetFromContentType('text/html;charset="Shift_JIS"')).toBe('shift_jis');
    expect(charsetFromContentType('text/html; foo=bar; Charset = euc-kr')).toBe('euc-kr');
    expect(charsetFromContentType('text/html')).toBeNull();
    expect(charsetFromContentType(null)).toBeNull();
  });
});

describe('what the search index data is built from', () => {
  it('separates the last word of a block element from what follows it (minified HTML has no white space there)', () => {
    const { page, indexSource } = extract('<p>Seabirds and petrels</p><a href="home.html">home</a><div>Welcome.</div>A B');
    expect(page.excerpt).toBe('Seabirds and petrels home Welcome. A B');
    expect(indexSource.bodyText.split(/\s+/).filter((w) => w !== '')).toEqual(['Seabirds', 'and', 'petrels', 'home', 'Welcome.', 'A', 'B']);
  });

  it('gathers headings, the visible text and the anchor text of each followable link, repeated links included', () => {
    const { indexSource } = extract(
      '<html><head><title>T</title><script>var hidden = 1</script></head><body><h1>Grey <em>herons</em></h1><p>Body words.</p>' +
        '<a href="a.html">Wading <b>birds</b></a> <a href="a.html">egrets</a> <area href="map.html"><h2>Second</h2>' +
        '<a href="b.html" rel="nofollow">secret anchor</a><a href="c.html"><script>no</script>visible</a></body></html>',
    );
    expect(indexSource.headings).toEqual(['Grey herons', 'Second']);
    expect(indexSource.anchors).toEqual([
      { url: 'http://site.example/dir/a.html', text: 'Wading birds' },
      { url: 'http://site.example/dir/a.html', text: 'egrets' },
      { url: 'http://site.example/dir/c.html', text: 'visible' },
    ]);
    expect(indexSource.bodyText).toContain('Body words.');
    expect(indexSource.bodyText).not.toContain('hidden');
    // A block element's start and its end separate words, as a browser's line breaks do ("Second" and
    // "secret" were one word when only the start did); inline elements do not ("anchorvisible").
    expect(indexSource.storedText).toBe('Grey herons Body words. Wading birds egrets Second secret anchorvisible');
  });

  it('gives no anchor text when the page says nofollow (no link is followed)', () => {
    const { indexSource, links } = extract('<html><head><meta name="robots" content="nofollow"></head><body><a href="a.html">anchor words</a></body></html>');
    expect(links).toEqual([]);
    expect(indexSource.anchors).toEqual([]);
  });
});

describe('collapseWhitespace', () => {
  it("gives what replace(/\\s+/g, ' ').trim() gives, on any mix of words and every kind of white space", () => {
    const spaces = [' ', '\t', '\n', '\v', '\f', '\r', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
    const piece = fc.oneof(fc.constantFrom(...spaces), fc.string({ maxLength: 5 }), fc.constantFrom('word', 'é', '\u200b', '\u180e'));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40, size: 'max' }), (pieces) => {
        const text = pieces.join('');
        expect(collapseWhitespace(text)).toBe(text.replace(/\s+/g, ' ').trim());
      }),
      { numRuns: 3000 },
    );
    for (const text of ['', ' ', '  ', 'a', ' a', 'a ', 'a b', 'a  b', 'a\tb', '\n a \n', 'a \u3000 b']) expect(collapseWhitespace(text), JSON.stringify(text)).toBe(text.replace(/\s+/g, ' ').trim());
  });
});
