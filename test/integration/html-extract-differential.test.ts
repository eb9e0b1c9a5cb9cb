/**
 * The streaming extractor (fetcher/html-extract.ts) against the DOM extractor it replaced
 * (scripts/bench-extract/cheerio-extract.ts): on every page of the test web, fetched over loopback and
 * decoded as the fetcher decodes it, on the hostile host's markup, link and charset pages, on messy
 * HTML written by hand, and on random tag soup, both must give the same page: links in the same order,
 * title, description, language, canonical, robots flags, excerpt and simhash (so the same text).
 */
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeHtml } from '../../fetcher/decode.js';
import { extractPage } from '../../fetcher/html-extract.js';
import { extractPageWithCheerio } from '../../scripts/bench-extract/cheerio-extract.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';

const PAGE = 'http://site.example/dir/page.html';

function expectSameExtraction(html: string, pageUrl: string, maxLinks?: number): void {
  // The index data's sources (headings, anchor text) are the streaming extractor's alone; the rest is compared.
  const { indexSource: _indexSource, ...streamed } = extractPage(html, pageUrl, maxLinks);
  const fromDom = extractPageWithCheerio(html, pageUrl, maxLinks);
  expect(streamed).toEqual(fromDom);
}

async function fetchHtml(url: string): Promise<{ status: number; html: string }> {
  const response = await request(url);
  const body = Buffer.from(await response.body.arrayBuffer());
  const contentType = response.headers['content-type'];
  return { status: response.statusCode, html: decodeHtml(body, typeof contentType === 'string' ? contentType : null) };
}

describe('on the test web', () => {
  let web: TestWeb;
  let bench: TestWeb;
  beforeAll(async () => {
    web = await startTestWeb({ pagesPerHost: 40 });
    bench = await startTestWeb({ pagesPerHost: 40, hosts: 2, profile: 'bench' });
  });
  afterAll(async () => {
    await web?.close();
    await bench?.close();
  });

  it('extracts the same from every reachable page of the full and the bench profile', async () => {
    let compared = 0;
    for (const site of [web, bench]) {
      const urls = [...site.model.reachable({ seeds: site.seeds, inScope: () => true, maxDepth: 20 }).keys()];
      expect(urls.length).toBeGreaterThan(40);
      for (const url of urls) {
        const { status, html } = await fetchHtml(url);
        if (status !== 200) continue;
        expectSameExtraction(html, url);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(80);
  });

  it('extracts the same from the hostile host\'s markup, link, charset and trap pages', async () => {
    const cases = web.hostile.cases.filter((c) => ['index', 'markup', 'links', 'charset', 'trap'].includes(c.group) && c.expect.kind === 'response' && c.expect.status === 200);
    expect(cases.length).toBeGreaterThanOrEqual(10);
    for (const hostileCase of cases) {
      const url = `${web.hostile.origin}${hostileCase.path}`;
      const { html } = await fetchHtml(url);
      expectSameExtraction(html, url);
    }
  }, 120_000);
});

describe('on messy HTML', () => {
  it.each([
    ['unclosed elements and implied closes', '<html><body><p>one<p>two<li>three<li>four<div>five<table><tr><td>six<td>seven</table></div>'],
    ['stray end tags', '</div></p>text</br>more</span><p>para</p></p></html>after html'],
    ['upper-case tags and attributes', '<HTML LANG="de"><HEAD><TITLE>Groß</TITLE><META NAME="Description" CONTENT="Beschreibung"></HEAD><BODY><A HREF="/x">X</A><AREA HREF="/y"></BODY></HTML>'],
    ['duplicate attributes: the first wins', '<a href="/first" href="/second" rel="x" rel="nofollow">a</a><html lang="en" lang="fr"><base href="/b1/" href="/b2/"><a href="c">c</a>'],
    ['unquoted and valueless attributes', '<a href=/plain>p</a><a href = "/spaced" >s</a><a href>empty</a><a href=\'/single\'>q</a><link rel=canonical href=/canon>'],
    ['entities split text nodes', '<p>Fish &amp; chips &lt;3 &copy; 2024 &#x41;&#66; &nbsp;&nbsp;spaced &unknown; &amp</p><title>A &amp; B &mdash; C</title>'],
    ['comments, doctype and processing instructions inside text', '<!DOCTYPE html><?xml version="1.0"?><p>before<!-- a comment -->after<!---->again<![CDATA[cdata text]]>end</p>'],
    ['an unterminated comment', '<p>visible</p><!-- never closed <a href="/hidden">x</a>'],
    ['script and style holding tags', '<script>document.write("<a href=\'/fake\'>x</a></script-not>");</script><style>a::after{content:"</div>"}</style><a href="/real">r</a>'],
    ['raw text in title and textarea', '<title>Tag <b>inside</b> &amp; text</title><textarea><a href="/in-textarea">t</a></textarea><a href="/out">o</a>'],
    ['svg and math with their own titles', '<svg><title>svg title</title><a href="/svg-link"><text>t</text></a></svg><title>page title</title><math><mi>x</mi></math>'],
    ['block elements add word breaks', '<div>one</div><div>two</div><span>three</span><span>four</span><br>five<hr>six<li>seven'],
    ["a block element's end breaks words too", '<p>seabirds and petrels</p><a href="/home">home</a><h2>Second</h2>next<ul><li>a<li>b</ul>after<td>cell</td>x'],
    ['text inside head, noscript and template is hidden', '<head>head text<meta name="robots" content="NOINDEX"></head><noscript>ns <a href="/ns">ns</a></noscript><template>tpl<a href="/tpl">t</a></template><p>body</p>'],
    ['meta robots none, petrel and other bots', '<meta name="robots" content="none"><meta name="petrel" content="index"><meta name="googlebot" content="noindex"><a href="/a">a</a>'],
    ['content-language and a language that is no tag', '<meta http-equiv="CONTENT-LANGUAGE" content=" pt-BR "><html lang="x_y">text'],
    ['links that are no URLs or not crawlable', '<a href="  javascript:x()">j</a><a href="#frag">f</a><a href="http://[::1">bad</a><a href="//other.example/p">proto-relative</a><a href="mailto:a@b">m</a><a href="?q=1">q</a><a href="">empty</a>'],
    ['NUL and control characters', '<p>a\u0000b\u0001c</p><a href="/nul\u0000">n</a><title>t\u0000t</title>'],
    ['whitespace of every kind', '<p>\t\n\r\u00a0\u2003 spaced \u3000 out \n</p><title>\n\t Title \n</title>'],
    ['two titles and a title in the body', '<title></title><title>second</title><body><title>third</title>'],
    ['a page cut inside an open tag', '<p>text<a href="/kept">k</a><a href="/cut" rel="x"'],
    ['a page cut after the slash of a self-closing tag', '<p>text</p><a href="/cut-self" /'],
    ['meta refresh links among anchors, in document order', '<a href="/first">1</a><meta http-equiv="Refresh" content="0; URL=\'/moved.html\'"><a href="/last">2</a><meta http-equiv="refresh" content="30">'],
    ['meta refresh under meta robots nofollow', '<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0;url=/moved.html">'],
    ['a page cut inside a meta tag', '<a href="/a">a</a><meta name="robots" content="noindex, nofollow"'],
    ['self-closing tags in HTML and in svg', '<a href="/html-self"/>t<br/>u<base href="/b/"/><svg><a href="/svg-self"/><path d="M0"/></svg><a href="after">a</a>'],
    ['attributes only some tags are read for', '<div href="/not-a-link" lang="fr" rel="canonical"><span name="description" content="no">x</span></div><a class="c" id="i" href="/real" data-href="/data">r</a>'],
    ['a page that is only text', 'just some text & no tags at all'],
    ['an empty page', ''],
    ['nesting past recursion depth', `${'<div><span>'.repeat(20_000)}deep<a href="/deep">d</a>${'</span></div>'.repeat(20_000)}`],
    ['more start tags than a page once had parsed (33,000 flat paragraphs)', `${'<p>para</p>'.repeat(33_000)}<a href="/after-many">late</a>`],
    ['parse work past the budget: end tags that close nothing under a deep stack', `<a href="/before">b</a>${'<b>'.repeat(31_000)}${'</x>'.repeat(5_000)}<a href="/after-budget">late</a>`],
    ['one nested element past the budget, with attributes', `${'<i>'.repeat(32_000)}<a href="/cut">cut</a>`],
    ['one nested element past the budget, without', `${'<i>'.repeat(32_000)}<a>cut</a><a href="/after">late</a>`],
  ])('%s', (_name, html) => {
    expectSameExtraction(html, PAGE);
  });

  it('cuts text at the same text node when the page has more than 64 K characters of it', () => {
    const nodes = Array.from({ length: 3_000 }, (_, i) => `<span>word${i} &amp; more text here</span><!--c-->`).join('');
    expectSameExtraction(`<body>${nodes}${nodes}</body>`, PAGE);
    expectSameExtraction(`<title>${'t &amp; '.repeat(1_000)}</title><p>${'x'.repeat(70_000)}</p><p>after</p>`, PAGE);
    // A comment ends a text node: the text after it is a node of its own, over the budget.
    expectSameExtraction(`<p>${'x'.repeat(70_000)}<!-- c -->after</p>`, PAGE);
    expectSameExtraction(`<p>${'y'.repeat(70_000)}<?pi?>after</p>`, PAGE);
    // An entity does not: the text after it belongs to the node that was under the budget.
    expectSameExtraction(`<p>${'z '.repeat(33_000)}&amp;${'w'.repeat(5_000)} after</p>`, PAGE);
  });

  it('keeps the same links under a small cap', () => {
    const anchors = Array.from({ length: 50 }, (_, i) => `<a href="/p${i % 20}">${i}</a><a href="javascript:void(${i})">j</a>`).join('');
    expectSameExtraction(anchors, PAGE, 7);
  });

  it('extracts the same from random tag soup', () => {
    const piece = fc.oneof(
      fc.constantFrom('<p>', '</p>', '<div>', '</div>', '<li>', '<ul>', '</ul>', '<br>', '</br>', '<table>', '<tr>', '<td>', '</table>', '<b>', '</i>', '<html lang="nl">', '<head>', '</head>', '<body>'),
      fc.constantFrom('<title>', '</title>', '<script>', '</script>', '<style>', '</style>', '<noscript>', '</noscript>', '<template>', '</template>', '<svg>', '</svg>', '<textarea>', '</textarea>'),
      fc.constantFrom('<!-- c -->', '<!--', '-->', '<!doctype html>', '<?pi?>', '<![CDATA[x]]>', '&amp;', '&lt;', '&nbsp;', '&#x263a;', '&bogus;', '<', '>', '"', "'", '=', ' ', '\n'),
      fc.constantFrom('<a href="/x">', '<a href="y.html" rel="nofollow">', '<a href=z>', '</a>', '<area href="/area">', '<base href="/base/">', '<link rel="canonical" href="/c">', '<meta name="description" content="d">', '<meta name="robots" content="nofollow">', '<a href="/self"/>', '<a href="/cut"', '<a href="/cs" /', '<meta name="robots" content="noindex"', '<svg><a href="/s"/>', '<meta http-equiv="refresh" content="1; url=/r">', '<meta http-equiv="refresh" content="0;javascript:x()">'),
      fc.stringMatching(/^[a-zA-Z0-9 .,!?éß日本-]{0,12}$/),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 80, size: 'max' }), (pieces) => {
        expectSameExtraction(pieces.join(''), PAGE);
      }),
      { numRuns: 400, seed: 20261203 },
    );
  });
});
