/**
 * The hostile host's documents as bytes: charsets, markup in strings, link bombs, traps, the index and
 * robots.txt. Deterministic; the big ones are built once per process on first use and kept.
 */
import { createHash } from 'node:crypto';
import { escapeAttribute, escapeText } from '../html.js';
import {
  DISALLOWED_PREFIX,
  LINK_BOMB_LINKS,
  LONG_URL_CHARS,
  NESTED_ELEMENTS,
  ROBOTS_BYTES,
  SESSION_ID_LINKS,
  UNCLOSED_ELEMENTS,
  UNCLOSED_PAGE_BYTES,
  type HostileCase,
} from './cases.js';

export function page(title: string, body: string, head = '<meta charset="utf-8">'): Buffer {
  return Buffer.from(`<!DOCTYPE html>\n<html lang="en"><head>${head}<title>${escapeText(title)}</title></head>\n<body>${body}</body></html>\n`, 'utf8');
}

function links(hrefs: readonly string[]): string {
  return hrefs.map((href) => `<a href="${escapeAttribute(href)}">${escapeText(href.slice(0, 80))}</a>`).join('\n');
}

export function indexPage(cases: readonly HostileCase[]): Buffer {
  const items = cases.filter((entry) => entry.linked).map((entry) => `<li><a href="${escapeAttribute(entry.path)}">${escapeText(entry.path)}</a>: ${escapeText(entry.what)}</li>`);
  return page('The hostile host', `<h1>The hostile host</h1>\n<ul>\n${items.join('\n')}\n</ul>`);
}

/** First rule: `Disallow: /private/` for every agent; then filler rules up to ROBOTS_BYTES. */
export function robotsTxt(): Buffer {
  const head = `# Petrel test web: the hostile host, ${ROBOTS_BYTES} bytes of robots.txt\nUser-agent: *\nDisallow: ${DISALLOWED_PREFIX}\n`;
  const lines: string[] = [head];
  let size = head.length;
  for (let i = 0; size < ROBOTS_BYTES; i++) {
    const line = `Disallow: /filler/${String(i).padStart(6, '0')}/nothing-here/\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('').slice(0, ROBOTS_BYTES), 'latin1');
}

// Charsets. Bytes are written out, not encoded by a library, so the test web depends on nothing.

/** 日本語のページ in Shift_JIS. */
const SHIFT_JIS_TITLE = [0x93, 0xfa, 0x96, 0x7b, 0x8c, 0xea, 0x82, 0xcc, 0x83, 0x79, 0x81, 0x5b, 0x83, 0x57];

export function shiftJisPage(): Buffer {
  return Buffer.concat([
    Buffer.from('<!DOCTYPE html>\n<html lang="ja"><head><meta charset="Shift_JIS"><title>', 'latin1'),
    Buffer.from(SHIFT_JIS_TITLE),
    Buffer.from('</title></head><body><p>', 'latin1'),
    Buffer.from(SHIFT_JIS_TITLE),
    Buffer.from('</p><a href="/index.html">home</a></body></html>\n', 'latin1'),
  ]);
}

export function utf16Page(title: string): Buffer {
  const text = `<!DOCTYPE html>\n<html><head><title>${escapeText(title)}</title></head><body><p>${escapeText(title)}</p><a href="/index.html">home</a></body></html>\n`;
  return Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]);
}

export function invalidUtf8Page(): Buffer {
  const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');
  return Buffer.concat([
    bytes('<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>bad '),
    Buffer.from([0xff]),
    bytes(' bytes '),
    Buffer.from([0xc3]),
    bytes('( here '),
    Buffer.from([0xed, 0xa0, 0x80]),
    bytes(' end</title></head><body><p>broken</p><a href="/index.html">home</a></body></html>\n'),
  ]);
}

/** "café “quoted”" in windows-1252: é is 0xE9, the curly quotes 0x93 and 0x94. */
export function lyingPage(): Buffer {
  return Buffer.concat([
    Buffer.from('<!DOCTYPE html>\n<html><head><title>caf', 'latin1'),
    Buffer.from([0xe9, 0x20, 0x93]),
    Buffer.from('quoted', 'latin1'),
    Buffer.from([0x94]),
    Buffer.from('</title></head><body><p>windows-1252</p></body></html>\n', 'latin1'),
  ]);
}

// Markup in strings. These pages are written raw on purpose: the hostility is in the bytes.

export const SCRIPT_TITLE = '<script>alert(1)</script><img src=x onerror=alert(2)>';

export function scriptTitlePage(): Buffer {
  return Buffer.from(`<!DOCTYPE html><html><head><title>${SCRIPT_TITLE}</title></head><body><p>see the title</p></body></html>\n`, 'utf8');
}

export function attributeBreakoutPage(): Buffer {
  return Buffer.from(
    `<!DOCTYPE html><html><head><title>Attribute breakouts</title></head><body>
<a href="/markup/target.html?q="><script>alert(1)</script>">quote then script</a>
<a href='/markup/target.html?q=' onmouseover='alert(2)'>single quotes, handler</a>
<a href=/markup/target.html?q=<svg/onload=alert(3)>>unquoted svg</a>
<a href="/markup/target.html?q=%22%3E%3Cscript%3E">escaped</a>
<a href="/markup/target.html?q=&quot;&gt;&lt;img src=x onerror=alert(4)&gt;">entities</a>
</body></html>\n`,
    'utf8',
  );
}

export function schemeLinksPage(): Buffer {
  const hrefs = [
    'javascript:alert(1)',
    ' JaVaScRiPt:alert(2)',
    'java&#x09;script:alert(3)',
    'java\nscript:alert(4)',
    '&#106;avascript:alert(5)',
    'data:text/html;base64,PHNjcmlwdD5hbGVydCg2KTwvc2NyaXB0Pg==',
    'DATA:text/html,<script>alert(7)</script>',
    'vbscript:msgbox(8)',
    '\u0001javascript:alert(9)',
    '/markup/fine.html',
  ];
  const anchors = hrefs.map((href) => `<a href="${href.replace(/"/g, '&quot;')}">link</a>`).join('\n');
  return Buffer.from(`<!DOCTYPE html><html><head><title>Scheme links</title></head><body>\n${anchors}\n</body></html>\n`, 'utf8');
}

export function hugeTitlePage(): Buffer {
  return page('T'.repeat(100 * 1024), '<p>a page with a 100 KB title</p>');
}

// Link bombs, built once per process.

let linkBomb: Buffer | undefined;
let longUrl: Buffer | undefined;
let nested: Buffer | undefined;
let unclosed: Buffer | undefined;
let sessionIds: Buffer | undefined;

export function linkBombPage(): Buffer {
  if (linkBomb === undefined) {
    const parts: string[] = [];
    for (let i = 0; i < LINK_BOMB_LINKS; i++) parts.push(`<a href="/links/target-${i}.html">${i}</a>`);
    linkBomb = page('200,000 links', parts.join('\n'));
  }
  return linkBomb;
}

export function longUrlPage(): Buffer {
  longUrl ??= page('A 100,000-character URL', `<a href="/links/${'x'.repeat(LONG_URL_CHARS)}.html">long</a>\n<a href="/links/short.html">short</a>`);
  return longUrl;
}

export function nestedPage(): Buffer {
  nested ??= page(`${NESTED_ELEMENTS} nested elements`, `<a href="/links/before-nesting.html">before</a>${'<div>'.repeat(NESTED_ELEMENTS)}deep${'</div>'.repeat(NESTED_ELEMENTS)}<a href="/links/after-nesting.html">after</a>`);
  return nested;
}

export function unclosedPage(): Buffer {
  if (unclosed === undefined) {
    const open = `<a href="/links/before-unclosed.html">before</a>${'<b>'.repeat(UNCLOSED_ELEMENTS)}`;
    const closing = '</x>'.repeat(Math.floor((UNCLOSED_PAGE_BYTES - open.length) / 4));
    unclosed = page(`${UNCLOSED_ELEMENTS} open elements, then end tags that close nothing`, `${open}${closing}<a href="/links/after-unclosed.html">after</a>`);
  }
  return unclosed;
}

export function sessionIdPage(): Buffer {
  if (sessionIds === undefined) {
    const hrefs: string[] = [];
    for (let i = 0; i < SESSION_ID_LINKS; i++) hrefs.push(`/links/item.html?sid=${createHash('sha1').update(`sid:${i}`).digest('hex').slice(0, 24)}`);
    sessionIds = page('10,000 session ids', links(hrefs));
  }
  return sessionIds;
}

// Traps.

export function calendarPage(year: number, month: number): Buffer {
  const shift = (delta: number): string => {
    const index = year * 12 + (month - 1) + delta;
    return `/trap/calendar/${Math.floor(index / 12)}/${String((index % 12) + 1).padStart(2, '0')}`;
  };
  return page(`Calendar ${year}-${String(month).padStart(2, '0')}`, links([shift(-1), shift(1), '/index.html']));
}

export function endlessPathPage(depth: number): Buffer {
  return page(`a × ${depth}`, links(['a/', '/index.html']));
}
