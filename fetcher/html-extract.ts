/**
 * Index data and links from one HTML page, in one pass over the DOM that cheerio builds.
 *
 * The parser is cheerio's htmlparser2 entry point (`cheerio/slim`): on 14 KB pages it costs about
 * 0.75 ms against parse5's 1.7 ms (../shared/PERFORMANCE.md), and it extracts the same links, title
 * and text on the test web's messy pages (test/unit/html-extract.test.ts). This is the one place the
 * parser is chosen.
 *
 * The walk is iterative (an explicit stack), so 200,000 nested elements cannot overflow the call
 * stack. Every string taken from the page is bounded before it leaves this module.
 *
 * Work is bounded too: htmlparser2 keeps its open-element stack with `Array#unshift`, so each start
 * tag costs time in proportion to the nesting depth and a deeply nested page is quadratic (measured,
 * Node 20, cheerio load alone: 25,000 nested `<div>`s 0.2 s, 50,000 0.3-0.4 s, 100,000 2-5 s, 200,000
 * 16-24 s). Only the first MAX_START_TAGS start tags are handed to the parser; the rest of the page is
 * cut and the result marked `truncated`. With 32,000 (above the 30,000 levels that
 * test/unit/html-extract.test.ts walks), extracting the hostile host's 200,000-deep page takes 0.15-0.3 s on
 * a 2-CPU machine and 2 MiB of its 200,000 links about 0.2 s (5,000 links kept either way; with 40,000
 * tags the deep page takes 0.5-0.6 s). Ordinary pages have a few thousand elements, very large ones
 * 10,000-20,000.
 *
 * Rules:
 *  - Links: `<a href>` and `<area href>`, resolved against `<base href>` (the first one, itself
 *    resolved against the page URL) and normalized; `rel~=nofollow` links are skipped; with
 *    `<meta name="robots" content="nofollow">` (or `none`) no link is followed. Non-http(s) links
 *    (`javascript:`, `mailto:`, `data:`) are dropped; duplicates are dropped; at most `maxLinks`.
 *  - meta robots `noindex` (or `none`) marks the page noindex. `<meta name="petrel">` counts too.
 *  - canonical: `<link rel="canonical" href>`, resolved and normalized.
 *  - language: `<html lang>`, else `<meta http-equiv="content-language">`.
 *  - excerpt: the visible text (not script, style, noscript, template), whitespace collapsed.
 *  - simhash: 64-bit fingerprint of the first 64 K characters of that text, for near duplicates.
 */
import { load } from 'cheerio/slim';
import { LIMITS, type PageData } from '../shared/protocol.js';
import { simhash } from '../shared/simhash.js';
import { normalizeUrl } from '../shared/url-normalize.js';

export interface ExtractedPage {
  readonly page: PageData;
  readonly links: string[];
  /** The page had more than MAX_START_TAGS start tags and only the part before was parsed. */
  readonly truncated: boolean;
}

/** Start tags handed to the parser at most (see the header comment for the measurement). */
export const MAX_START_TAGS = 32_000;

interface DomNode {
  type: string;
  name?: string;
  data?: string;
  attribs?: Record<string, string>;
  children?: DomNode[];
}

const SIMHASH_TEXT_CHARS = 64 * 1024;
const SKIP_TEXT = new Set(['script', 'style', 'noscript', 'template', 'head', 'title']);
/** Elements whose boundaries separate words in the excerpt. */
const BLOCK = new Set(['p', 'div', 'li', 'ul', 'ol', 'br', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'tr', 'td', 'th', 'section', 'article', 'header', 'footer', 'nav', 'main', 'aside', 'blockquote', 'pre', 'dt', 'dd', 'table', 'form', 'hr']);
/** Links that can never be crawled, dropped before they take a place under the cap. */
const NOT_CRAWLABLE = /^\s*(javascript|mailto|data|tel|about|blob|vbscript|sms|ftp):/i;

export function extractPage(input: string, pageUrl: string, maxLinks: number = LIMITS.linksPerPage): ExtractedPage {
  const cut = startTagBudgetEnd(input, MAX_START_TAGS);
  const html = cut === null ? input : input.slice(0, cut);
  const $ = load(html);
  const root = $.root()[0] as unknown as DomNode;

  let base: string | null = null;
  let title: string | null = null;
  let description: string | null = null;
  let language: string | null = null;
  let contentLanguage: string | null = null;
  let canonicalHref: string | null = null;
  let noindex = false;
  let nofollow = false;
  const hrefs: string[] = [];
  let text = '';
  // Text is kept for the excerpt and for the near-duplicate fingerprint (simhash), up to this much.
  const textBudget = SIMHASH_TEXT_CHARS;

  // Each stack entry is a node and whether text inside it is invisible.
  const stack: { node: DomNode; hidden: boolean }[] = [{ node: root, hidden: false }];
  while (stack.length > 0) {
    const { node, hidden } = stack.pop()!;
    if (node.type === 'text') {
      if (!hidden && text.length < textBudget) text += node.data ?? '';
      continue;
    }
    const name = node.name;
    const attribs = node.attribs;
    if (name !== undefined && attribs !== undefined) {
      switch (name) {
        case 'a':
        case 'area': {
          const href = attribs.href;
          if (href !== undefined && hrefs.length < maxLinks * 2 && !hasToken(attribs.rel, 'nofollow') && !NOT_CRAWLABLE.test(href) && !href.startsWith('#')) hrefs.push(href);
          break;
        }
        case 'base':
          if (base === null && attribs.href !== undefined) base = attribs.href;
          break;
        case 'title':
          if (title === null) title = textOf(node);
          break;
        case 'html':
          if (attribs.lang !== undefined) language = attribs.lang;
          break;
        case 'link':
          if (canonicalHref === null && hasToken(attribs.rel, 'canonical') && attribs.href !== undefined) canonicalHref = attribs.href;
          break;
        case 'meta': {
          const metaName = attribs.name?.toLowerCase();
          const content = attribs.content ?? '';
          if (metaName === 'description' && description === null) description = content;
          else if (metaName === 'robots' || metaName === 'petrel') {
            const directives = content.toLowerCase();
            if (/\b(noindex|none)\b/.test(directives)) noindex = true;
            if (/\b(nofollow|none)\b/.test(directives)) nofollow = true;
          } else if (attribs['http-equiv']?.toLowerCase() === 'content-language' && contentLanguage === null) contentLanguage = content;
          break;
        }
      }
    }
    if (name !== undefined && BLOCK.has(name) && !hidden && text.length > 0 && text.length < textBudget && !text.endsWith(' ')) text += ' ';
    const children = node.children;
    if (children !== undefined) {
      const childHidden = hidden || (name !== undefined && SKIP_TEXT.has(name));
      for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, hidden: childHidden });
    }
  }

  const baseUrl = resolveBase(base, pageUrl);
  const links: string[] = [];
  if (!nofollow) {
    const seen = new Set<string>();
    for (const href of hrefs) {
      const result = normalizeUrl(href.trim(), baseUrl, LIMITS.urlChars);
      if (!result.ok || seen.has(result.url)) continue;
      seen.add(result.url);
      links.push(result.url);
      if (links.length >= maxLinks) break;
    }
  }
  const canonical = canonicalHref === null ? null : normalizeUrl(canonicalHref.trim(), baseUrl);
  const visibleText = collapse(text);

  return {
    page: {
      title: title === null ? null : bound(collapse(title), LIMITS.titleChars),
      description: description === null ? null : bound(collapse(description), LIMITS.descriptionChars),
      language: boundLanguage(language ?? contentLanguage),
      excerpt: bound(visibleText, LIMITS.excerptChars),
      canonical: canonical?.ok === true ? canonical.url : null,
      noindex,
      nofollow,
      outlinks: links.length,
      simhash: visibleText.length === 0 ? null : simhash(visibleText),
    },
    links,
    truncated: cut !== null,
  };
}

/**
 * Where the (budget+1)-th start tag begins (`<` followed by a letter), or null when the page has no
 * more than `budget`. Counting is a linear scan; `<` inside scripts and comments counts too, which only
 * makes the cut earlier on pages that are huge anyway.
 */
function startTagBudgetEnd(html: string, budget: number): number | null {
  let count = 0;
  for (let at = html.indexOf('<'); at !== -1; at = html.indexOf('<', at + 1)) {
    const next = html.charCodeAt(at + 1);
    if ((next >= 0x61 && next <= 0x7a) || (next >= 0x41 && next <= 0x5a)) {
      if (++count > budget) return at;
    }
  }
  return null;
}

function resolveBase(base: string | null, pageUrl: string): string {
  if (base === null) return pageUrl;
  const resolved = normalizeUrl(base.trim(), pageUrl);
  return resolved.ok ? resolved.url : pageUrl;
}

function textOf(node: DomNode): string {
  let text = '';
  const stack = [...(node.children ?? [])].reverse();
  while (stack.length > 0 && text.length < LIMITS.titleChars * 4) {
    const child = stack.pop()!;
    if (child.type === 'text') text += child.data ?? '';
    else if (child.children !== undefined) for (let i = child.children.length - 1; i >= 0; i--) stack.push(child.children[i]!);
  }
  return text;
}

function hasToken(list: string | undefined, token: string): boolean {
  if (list === undefined) return false;
  return list.toLowerCase().split(/\s+/).includes(token);
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Cuts to at most `max` characters without splitting a surrogate pair. */
export function bound(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return text.slice(0, end);
}

function boundLanguage(language: string | null): string | null {
  if (language === null) return null;
  const trimmed = language.trim();
  return /^[A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*$/.test(trimmed) && trimmed.length <= 35 ? trimmed : null;
}
