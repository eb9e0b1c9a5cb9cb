/**
 * `<meta http-equiv="refresh">` as browsers read it (fetcher/meta-refresh.ts, the HTML standard's
 * shared declarative refresh steps), and the extractor following it as a link of the page.
 */
import { describe, expect, it } from 'vitest';
import { extractPage } from '../../fetcher/html-extract.js';
import { metaRefreshUrl } from '../../fetcher/meta-refresh.js';

describe('the URL of a meta refresh', () => {
  it.each([
    ['0; url=/next.html', '/next.html'],
    ['0;URL=/next.html', '/next.html'],
    ['5 ; Url = /next.html ', '/next.html'],
    ["0; url='/quoted.html'", '/quoted.html'],
    ['0; url="/quoted.html" trailing', '/quoted.html'],
    ["0; url='/unterminated.html", '/unterminated.html'],
    ['0, /comma.html', '/comma.html'],
    ['0 /space.html', '/space.html'],
    ['0;/bare.html', '/bare.html'],
    ['.5; url=/fraction.html', '/fraction.html'],
    ['3.5; url=/fraction.html', '/fraction.html'],
    // "url" with no "=" is the start of the URL itself, as in a browser.
    ['0; urlish.html', 'urlish.html'],
    ['0; url /no-equals.html', 'url /no-equals.html'],
  ])('%j names %j', (content, url) => {
    expect(metaRefreshUrl(content)).toBe(url);
  });

  it.each([
    ['30', 'a reload of the same page'],
    ['30; ', 'a reload of the same page'],
    ['', 'nothing'],
    ['url=/no-delay.html', 'no delay first: browsers ignore it'],
    ['0x; url=/x.html', 'a delay that is no number'],
    ["0; url=''", 'an empty URL'],
  ])('%j names none (%s)', (content) => {
    expect(metaRefreshUrl(content)).toBeNull();
  });
});

describe('a page that moves by meta refresh', () => {
  const PAGE = 'http://site.example/dir/old.html';

  it('links to where it moves, resolved against the base, like any link', () => {
    const { links, page } = extractPage('<html><head><base href="/base/"><meta http-equiv="refresh" content="0; url=new.html"></head><body>moved</body></html>', PAGE);
    expect(links).toEqual(['http://site.example/base/new.html']);
    expect(page.outlinks).toBe(1);
  });

  it('follows no refresh of a nofollow page, nor one to a script, nor a reload without a URL', () => {
    expect(extractPage('<meta name="robots" content="nofollow"><meta http-equiv="refresh" content="0; url=/new.html">', PAGE).links).toEqual([]);
    expect(extractPage('<meta http-equiv="refresh" content="0; url=javascript:go()"><meta http-equiv="refresh" content="60">', PAGE).links).toEqual([]);
  });
});
