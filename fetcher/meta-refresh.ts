/**
 * The URL of a `<meta http-equiv="refresh" content="...">`, read as browsers read it (the HTML
 * standard's "shared declarative refresh steps"): `5; url=/next.html`, `0;URL='/next.html'`,
 * `0, /next.html`. Sites move pages this way where they cannot send a redirect (static hosting, old
 * CMSs); a crawler that ignores it never finds the page moved to. The extractors
 * (fetcher/html-extract.ts and the DOM reference beside the benchmarks) follow it as a link, whatever
 * its delay: a refresh to the page itself is only a link to a URL already known.
 *
 * Returns the URL as written (not resolved), or null when the content names none (`30`: reload the
 * same page) or is not a refresh the browser would act on.
 */
export function metaRefreshUrl(content: string): string | null {
  let at = skipSpace(content, 0);
  const timeStart = at;
  while (at < content.length && isDigit(content.charCodeAt(at))) at++;
  if (at === timeStart && content.charCodeAt(at) !== DOT) return null;
  while (at < content.length && (isDigit(content.charCodeAt(at)) || content.charCodeAt(at) === DOT)) at++;
  if (at === content.length) return null;
  const separator = content.charCodeAt(at);
  if (separator !== SEMICOLON && separator !== COMMA && !isSpaceCode(separator)) return null;
  at = skipSpace(content, at);
  if (at < content.length && (content.charCodeAt(at) === SEMICOLON || content.charCodeAt(at) === COMMA)) at = skipSpace(content, at + 1);
  if (at === content.length) return null;
  // `url=` is optional: without the `=`, what follows the delay is the URL itself, "url" included.
  if (content.slice(at, at + 3).toLowerCase() === 'url') {
    const afterName = skipSpace(content, at + 3);
    if (content.charCodeAt(afterName) === EQUALS) at = skipSpace(content, afterName + 1);
  }
  const quote = content.charCodeAt(at);
  let url: string;
  if (quote === QUOTE || quote === APOSTROPHE) {
    const end = content.indexOf(content[at]!, at + 1);
    url = content.slice(at + 1, end === -1 ? content.length : end);
  } else url = content.slice(at);
  url = url.trim();
  return url.length === 0 ? null : url;
}

const DOT = 0x2e;
const SEMICOLON = 0x3b;
const COMMA = 0x2c;
const EQUALS = 0x3d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;

function isDigit(code: number): boolean {
  return code >= 0x30 && code <= 0x39;
}

/** ASCII whitespace as the HTML standard counts it: tab, line feed, form feed, carriage return, space. */
function isSpaceCode(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d;
}

function skipSpace(text: string, from: number): number {
  let at = from;
  while (at < text.length && isSpaceCode(text.charCodeAt(at))) at++;
  return at;
}
