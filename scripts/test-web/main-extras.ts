/**
 * The main host's special pages (profile 'full' only), all linked from its /index.html:
 *
 *   /private/secret.html          disallowed by robots.txt: never requested
 *   /private/open.html            allowed by a more specific Allow rule
 *   /hidden/nofollow-only.html    linked only with rel="nofollow": never requested
 *   /meta/noindex-nofollow.html   <meta name="robots" content="noindex,nofollow">: fetched, links ignored
 *   /meta/behind-nofollow.html    linked only from the page above: never requested
 *   /meta/x-robots-none.html      X-Robots-Tag: none: fetched, links ignored (noindex)
 *   /meta/behind-x-robots.html    linked only from the page above: never requested
 *   /meta/x-robots-other-bot.html X-Robots-Tag: otherbot: noindex, nofollow: for another bot, so indexed and followed
 *   /meta/behind-other-bot.html   linked only from the page above: requested
 *   /meta/noarchive.html          <meta name="robots" content="noarchive">: indexed and followed, but no
 *                                 public cached copy
 *   /meta/x-robots-noarchive.html X-Robots-Tag: petrel: noarchive: the same, by the header
 *   /redirect/start -> 301 /redirect/step-1 -> 302 /redirect/step-2 -> 307 /redirect/end.html (200)
 *   /errors/404.html /errors/410.html /errors/500.html /errors/503.html (Retry-After: 1)
 *   /slow.html                    answers after `slowMs`
 *   /large.html                   ~3 MB of HTML, over a typical 2 MB body limit
 *   /files/image.png /files/doc.pdf /files/data.json
 *   /evil.html                    its <title> carries markup and script (EVIL_TITLE), escaped in the HTML:
 *                                 whatever shows page titles must show it as text and run nothing; its
 *                                 body ends with real script (EVIL_MARKUP): whatever shows the page
 *                                 itself (a cached copy) must run none of it
 *   /markup/text.html             its text carries markup and script (EVIL_TEXT), escaped: search snippets
 *                                 must show it as text
 *   /lang/zh.html, /lang/ja.html  Chinese and Japanese prose (ZH_TEXT, JA_TEXT), for word segmentation
 *   /anchor/target.html           linked from the index as ANCHOR_TEXT, words found nowhere else in the
 *                                 web: a search finds it by its inlinks' words alone
 */
import type { WebContext } from './context.js';
import type { HtmlDoc, HtmlLink, HtmlSection } from './html.js';
import { jsonBytes, pdfBytes, pngBytes } from './files.js';
import { errorPage, link, NEVER_FOLLOW_LINKS, redirect, simpleDoc } from './pages.js';
import { htmlPage, type HtmlResource, type Resource } from './resource.js';
import { paragraphs } from './text.js';

/** The title of /evil.html, as a crawler extracts it: markup that would run if put into a page as HTML. */
export const EVIL_TITLE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';

/**
 * Real script at the end of /evil.html: what a cached copy of it must not run. Each part that ran
 * would leave a trace a test can read: `window.__pwned`, the document's title, a `pwned` element.
 */
export const EVIL_MARKUP =
  '<script>window.__pwned=3;document.title="pwned";try{window.__stolen=document.cookie;fetch("/admin/api/status").then(function(r){return r.text()}).then(function(t){window.__leak=t})}catch(e){}</script>\n' +
  '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" onload="window.__pwned=4" onerror="window.__pwned=5">\n' +
  '<svg><script>window.__pwned=6</script></svg>\n' +
  '<iframe srcdoc="<script>parent.__pwned=7</script>"></iframe>\n' +
  '<form action="/admin/api/stop" method="post"><button id="evil-submit">stop</button></form>\n';
/** Text of /markup/text.html's paragraph, escaped in the HTML: a page that shows it must show it as text. */
export const EVIL_TEXT = 'Zygomorphic orchid <script>window.__pwned=3</script><img src=x onerror="window.__pwned=4"> <b>bold</b> end.';
/** Prose of /lang/zh.html and /lang/ja.html (within `<html lang="en">`, as every page of the test web). */
export const ZH_TEXT = '网络爬虫是一种自动抓取网页的程序。搜索引擎使用爬虫建立索引。';
export const JA_TEXT = 'ウェブクローラーはウェブページを自動的に収集するプログラムです。検索エンジンは索引を作ります。';
/** The text of the index's link to /anchor/target.html: none of its words is in the test web's vocabulary. */
export const ANCHOR_TEXT = 'Lighthouse almanac';

/** Prose characters of /large.html: a little over 3 MiB of HTML once marked up. */
const LARGE_PAGE_CHARS = 3 * 1024 * 1024;

export interface MainExtras {
  indexLinks: readonly HtmlLink[];
  resolve(pathAndQuery: string): Resource | null;
}

export function mainExtras(ctx: WebContext, origin: string): MainExtras {
  const home = link('/index.html', 'Home');
  const page = (path: string, title: string, links: readonly HtmlLink[] = [home], metaRobots: string | null = null): HtmlResource =>
    htmlPage(simpleDoc({ url: `${origin}${path}`, title, links: [...links, ...NEVER_FOLLOW_LINKS], textSeed: `main:${path}`, metaRobots }));

  const textPage = (path: string, title: string, text: string): HtmlResource =>
    htmlPage({ ...simpleDoc({ url: `${origin}${path}`, title, links: [home], textSeed: `main:${path}` }), sections: () => [{ heading: title, paragraphs: [text] }] });

  let largeSections: readonly HtmlSection[] | undefined;
  const largePage = (): Resource => {
    const doc: HtmlDoc = {
      ...(simpleDoc({ url: `${origin}/large.html`, title: 'A very large page', links: [home], textSeed: 'main:/large.html' })),
      // Built once per web: ~3 MB of prose is worth keeping rather than regenerating per request.
      sections: () => (largeSections ??= [{ heading: 'Much text', paragraphs: paragraphs('large', { minCount: 1, minChars: LARGE_PAGE_CHARS }) }]),
    };
    return htmlPage(doc);
  };

  const routes = new Map<string, () => Resource>([
    ['/private/secret.html', () => page('/private/secret.html', 'Private: secret')],
    ['/private/open.html', () => page('/private/open.html', 'Private: open to robots')],
    ['/hidden/nofollow-only.html', () => page('/hidden/nofollow-only.html', 'Reachable only through rel=nofollow')],
    [
      '/meta/noindex-nofollow.html',
      () => page('/meta/noindex-nofollow.html', 'Meta robots: noindex, nofollow', [home, link('behind-nofollow.html', 'Behind a nofollow page')], 'noindex,nofollow'),
    ],
    ['/meta/behind-nofollow.html', () => page('/meta/behind-nofollow.html', 'Linked only from a meta-nofollow page')],
    [
      '/meta/x-robots-none.html',
      () => ({ ...page('/meta/x-robots-none.html', 'X-Robots-Tag: none', [home, link('behind-x-robots.html', 'Behind an X-Robots-Tag: none page')]), headers: { 'X-Robots-Tag': 'none' } }),
    ],
    ['/meta/behind-x-robots.html', () => page('/meta/behind-x-robots.html', 'Linked only from an X-Robots-Tag none page')],
    [
      '/meta/x-robots-other-bot.html',
      () => ({
        ...page('/meta/x-robots-other-bot.html', 'X-Robots-Tag for another bot', [home, link('behind-other-bot.html', 'Behind a page that tells another bot not to follow')]),
        headers: { 'X-Robots-Tag': 'otherbot: noindex, nofollow' },
      }),
    ],
    ['/meta/behind-other-bot.html', () => page('/meta/behind-other-bot.html', 'Linked from a page whose X-Robots-Tag names another bot')],
    ['/meta/noarchive.html', () => page('/meta/noarchive.html', 'Meta robots: noarchive', [home], 'noarchive')],
    ['/meta/x-robots-noarchive.html', () => ({ ...page('/meta/x-robots-noarchive.html', 'X-Robots-Tag: noarchive for petrel'), headers: { 'X-Robots-Tag': 'petrel: noarchive' } })],
    ['/redirect/start', () => redirect(301, '/redirect/step-1')],
    ['/redirect/step-1', () => redirect(302, `${origin}/redirect/step-2`)],
    ['/redirect/step-2', () => redirect(307, 'end.html')],
    ['/redirect/end.html', () => page('/redirect/end.html', 'End of the redirect chain')],
    ['/errors/404.html', () => errorPage(`${origin}/errors/404.html`, 404)],
    ['/errors/410.html', () => errorPage(`${origin}/errors/410.html`, 410)],
    ['/errors/500.html', () => errorPage(`${origin}/errors/500.html`, 500)],
    ['/errors/503.html', () => errorPage(`${origin}/errors/503.html`, 503, { 'Retry-After': '1' })],
    ['/slow.html', () => ({ ...page('/slow.html', 'A slow page'), delayMs: ctx.slowMs })],
    ['/large.html', largePage],
    ['/files/image.png', () => ({ kind: 'file', status: 200, contentType: 'image/png', body: pngBytes() })],
    ['/files/doc.pdf', () => ({ kind: 'file', status: 200, contentType: 'application/pdf', body: pdfBytes() })],
    ['/files/data.json', () => ({ kind: 'file', status: 200, contentType: 'application/json', body: jsonBytes(origin) })],
    ['/evil.html', () => ({ ...page('/evil.html', EVIL_TITLE), doc: { ...page('/evil.html', EVIL_TITLE).doc, rawMarkup: EVIL_MARKUP } })],
    ['/markup/text.html', () => textPage('/markup/text.html', 'Markup in the text', EVIL_TEXT)],
    ['/lang/zh.html', () => textPage('/lang/zh.html', '中文网页', ZH_TEXT)],
    ['/lang/ja.html', () => textPage('/lang/ja.html', '日本語のページ', JA_TEXT)],
    ['/anchor/target.html', () => page('/anchor/target.html', 'Found by its inlinks')],
  ]);

  const indexLinks: HtmlLink[] = [
    link('/private/secret.html', 'A private page (disallowed)'),
    link('/private/open.html', 'A private page open to robots'),
    link('/hidden/nofollow-only.html', 'Do not follow', 'nofollow'),
    link('/meta/noindex-nofollow.html', 'A noindex, nofollow page'),
    link('/meta/x-robots-none.html', 'A page with X-Robots-Tag: none'),
    link('/meta/x-robots-other-bot.html', 'A page with X-Robots-Tag for another bot'),
    link('/meta/noarchive.html', 'A page that asks not to be archived'),
    link('/meta/x-robots-noarchive.html', 'A page whose X-Robots-Tag asks not to be archived'),
    link('/redirect/start', 'A redirect chain'),
    link('/errors/404.html', 'Not found'),
    link('/errors/410.html', 'Gone'),
    link('/errors/500.html', 'Server error'),
    link('/errors/503.html', 'Unavailable'),
    link('/slow.html', 'A slow page'),
    link('/large.html', 'A very large page'),
    link('/files/image.png', 'An image'),
    link('/files/doc.pdf', 'A PDF'),
    link('/files/data.json', 'Some JSON'),
    link('/evil.html', 'A page whose title carries markup'),
    link('/markup/text.html', 'A page whose text carries markup'),
    link('/lang/zh.html', 'Chinese'),
    link('/lang/ja.html', 'Japanese'),
    link('/anchor/target.html', ANCHOR_TEXT),
  ];
  for (const [role, special] of Object.entries(ctx.specialOrigins)) indexLinks.push(link(`${special}/index.html`, `Special host: ${role}`));

  return {
    indexLinks,
    resolve: (pathAndQuery) => routes.get(pathAndQuery)?.() ?? null,
  };
}
