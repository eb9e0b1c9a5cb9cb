/**
 * Snippets: the part of a page's stored text around the query's words, HTML-escaped, the matching
 * words in <mark>. Pure. The stored text is what the fetcher sent (NFKC already), so offsets of the
 * tokenizer's spans are offsets into it. Only the first SCAN_CHARS characters are looked at (the
 * tokenizer's ICU path costs ~7 µs a word; a results page makes ten snippets).
 */
import { termOf, termSpans } from '../../shared/tokenize.js';

export const SNIPPET_CHARS = 240;
const SCAN_CHARS = 8000;
const LEAD_CHARS = 40;

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : c === '"' ? '&quot;' : '&#39;'));
}

/** The snippet (HTML) of `text` for the query words, stemmed as the page was (`stemmer`). */
export function buildSnippet(text: string, words: readonly string[], stemmer: string, maxChars = SNIPPET_CHARS): string {
  const wanted = new Set(words.map((w) => termOf(w, stemmer)));
  const scanned = text.length > SCAN_CHARS ? text.slice(0, SCAN_CHARS) : text;
  const hits = termSpans(scanned, stemmer).filter((s) => wanted.has(s.term));
  if (hits.length === 0) return cut(text, 0, maxChars, []);
  // The window with the most distinct query terms, then the most hits, earliest first.
  let best = 0;
  let bestDistinct = -1;
  let bestCount = -1;
  for (let i = 0; i < hits.length; i++) {
    const start = Math.max(0, hits[i]!.start - LEAD_CHARS);
    const distinct = new Set<string>();
    let count = 0;
    for (let j = i; j < hits.length && hits[j]!.end <= start + maxChars; j++) {
      distinct.add(hits[j]!.term);
      count++;
    }
    if (distinct.size > bestDistinct || (distinct.size === bestDistinct && count > bestCount)) {
      best = i;
      bestDistinct = distinct.size;
      bestCount = count;
    }
  }
  let start = Math.max(0, hits[best]!.start - LEAD_CHARS);
  if (text.length <= maxChars || start <= LEAD_CHARS / 2) start = 0;
  else {
    // Start at a word boundary: after the nearest space before `start`, if it is near.
    const space = text.lastIndexOf(' ', start);
    if (space >= 0 && hits[best]!.start - space <= LEAD_CHARS * 2) start = space + 1;
  }
  return cut(text, start, maxChars, hits);
}

function cut(text: string, start: number, maxChars: number, hits: ReadonlyArray<{ start: number; end: number }>): string {
  let end = Math.min(text.length, start + maxChars);
  if (end < text.length) {
    const space = text.lastIndexOf(' ', end);
    if (space > start + maxChars / 2) end = space;
  }
  let html = start > 0 ? '…' : '';
  let at = start;
  for (const hit of hits) {
    if (hit.start < at || hit.end > end) continue;
    html += escapeHtml(text.slice(at, hit.start)) + '<mark>' + escapeHtml(text.slice(hit.start, hit.end)) + '</mark>';
    at = hit.end;
  }
  html += escapeHtml(text.slice(at, end));
  if (end < text.length) html += '…';
  return html;
}
