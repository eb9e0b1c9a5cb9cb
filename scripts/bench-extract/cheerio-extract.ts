/**
 * The fetcher's extractor as it was before the streaming one (fetcher/html-extract.ts): a cheerio
 * (htmlparser2) DOM, then one iterative walk over it. Kept, unchanged in what it extracts, as the
 * reference that test/unit/html-extract-differential.test.ts compares the streaming extractor with,
 * and as the "before" of `node dist/scripts/bench-extract.js`. Not used by the fetcher.
 */
import { load } from 'cheerio/slim';
import { DomHandler } from 'htmlparser2';
import { metaRefreshUrl } from '../../fetcher/meta-refresh.js';
import { BudgetedParser } from '../../fetcher/parse-budget.js';
import { DEFAULT_MAX_LINKS_PER_PAGE, LIMITS, type PageData } from '../../shared/protocol.js';
import { simhash } from '../../shared/simhash.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import type { ExtractedPage } from '../../fetcher/html-extract.js';

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

export function extractPageWithCheerio(input: string, pageUrl: string, maxLinks: number = DEFAULT_MAX_LINKS_PER_PAGE): Omit<ExtractedPage, 'indexSource'> {
  // cheerio's own parse (htmlparser2 with a DomHandler, entities decoded), with the streaming
  // extractor's bound on parse work (fetcher/parse-budget.ts): the DOM holds what was parsed before it.
  const handler = new DomHandler();
  const parser = new BudgetedParser(handler, { decodeEntities: true });
  parser.end(input);
  const $ = load(handler.root);
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
  // Followable hrefs past twice the bound: counted as written (the streaming extractor's `outlinks`).
  let hrefsBeyond = 0;
  let text = '';
  // Text is kept for the excerpt and for the near-duplicate fingerprint (simhash), up to this much.
  const textBudget = SIMHASH_TEXT_CHARS;

  // Each stack entry is a node and whether text inside it is invisible; `closes`: the end of that element.
  const stack: { node: DomNode; hidden: boolean; closes?: true }[] = [{ node: root, hidden: false }];
  const blockBoundary = (name: string | undefined, hidden: boolean) => {
    if (name !== undefined && BLOCK.has(name) && !hidden && text.length > 0 && text.length < textBudget && !text.endsWith(' ')) text += ' ';
  };
  while (stack.length > 0) {
    const { node, hidden, closes } = stack.pop()!;
    if (closes === true) {
      blockBoundary(node.name, hidden);
      continue;
    }
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
          if (href !== undefined && !hasToken(attribs.rel, 'nofollow') && !NOT_CRAWLABLE.test(href) && !href.startsWith('#')) {
            if (hrefs.length < maxLinks * 2) hrefs.push(href);
            else hrefsBeyond++;
          }
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
          else if (attribs['http-equiv']?.toLowerCase() === 'refresh') {
            const href = metaRefreshUrl(content);
            if (href !== null && !NOT_CRAWLABLE.test(href) && !href.startsWith('#')) {
              if (hrefs.length < maxLinks * 2) hrefs.push(href);
              else hrefsBeyond++;
            }
          }
          break;
        }
      }
    }
    blockBoundary(name, hidden);
    const children = node.children;
    // A block element's end separates words too: its text and the text after it.
    if (name !== undefined && BLOCK.has(name)) stack.push({ node, hidden, closes: true });
    if (children !== undefined) {
      const childHidden = hidden || (name !== undefined && SKIP_TEXT.has(name));
      for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i]!, hidden: childHidden });
    }
  }

  const baseUrl = resolveBase(base, pageUrl);
  const links: string[] = [];
  let outlinks = 0;
  if (!nofollow) {
    const seen = new Set<string>();
    for (const href of hrefs) {
      const result = normalizeUrl(href.trim(), baseUrl, LIMITS.urlChars);
      if (!result.ok || seen.has(result.url)) continue;
      seen.add(result.url);
      if (links.length < maxLinks) links.push(result.url);
    }
    outlinks = seen.size + hrefsBeyond;
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
      outlinks,
      simhash: visibleText.length === 0 ? null : simhash(visibleText),
    },
    links,
    truncated: parser.truncated,
  };
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
function bound(text: string, max: number): string {
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
