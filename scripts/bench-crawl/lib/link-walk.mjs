/**
 * The pages a crawler can reach on a directory served by nginx (lib/nginx.mjs), found by walking the
 * files themselves, not by asking any of the crawlers: the yardstick the server's access log is held
 * against after each crawl.
 *
 * It follows what every crawler in the benchmark follows: `<a href>` and `<area href>` in HTML files,
 * resolved against the first `<base href>`, fragments dropped, only URLs on the server's own origin.
 * `<meta name="robots" content="nofollow|none">` stops a page's links. Links marked `rel="nofollow"`
 * are not followed either (Petrel skips them; wget and Crawlee do not, so they may fetch more than this
 * set, which shows as "beyond the reachable set"); the walk counts how many it saw on the origin.
 *
 * nginx's view of a URL, mirrored here: the path is percent-decoded and dot segments and repeated
 * slashes are resolved; a path ending in `/` serves its `index.html` (403 without one); a directory
 * without the slash is a 301 to the slashed URL (the query kept); a missing file is a 404. Only 200s are
 * pages. An HTML file is one whose extension nginx's mime.types maps to text/html or XHTML.
 *
 * pageKey() is the one spelling of a URL used on both sides of the comparison, so URLs that differ only
 * in percent-encoding (which nginx maps to the same file) count as one page.
 */
import { readFileSync, statSync } from 'node:fs';
import { posix } from 'node:path';
import { Parser } from 'htmlparser2';

const HTML_EXTENSIONS = new Set(['html', 'htm', 'shtml', 'xhtml']);

/**
 * @param {{ root: string, origin: string, seeds: string[] }} site
 * @returns {{ pages: Map<string, { bytes: number, html: boolean }>, redirects: number, notFound: number,
 *             forbidden: number, nofollowLinks: number, links: number }}
 */
export function walkSite({ root, origin, seeds }) {
  /** pageKey → { bytes, html } for every URL answered 200. */
  const pages = new Map();
  const visited = new Set();
  const queue = [];
  let redirects = 0;
  let notFound = 0;
  let forbidden = 0;
  let nofollowLinks = 0;
  let links = 0;
  const visit = (url) => {
    if (url.origin !== origin) return;
    url.hash = '';
    const key = pageKey(url.pathname + url.search);
    if (visited.has(key)) return;
    visited.add(key);
    queue.push(url);
  };
  for (const seed of seeds) visit(new URL(seed));
  for (let next = 0; next < queue.length; next++) {
    const url = queue[next];
    const answer = resolveLikeNginx(root, url);
    if (answer.status === 301) {
      redirects++;
      visit(new URL(answer.location, url));
      continue;
    }
    if (answer.status === 404) notFound++;
    if (answer.status === 403) forbidden++;
    if (answer.status !== 200) continue;
    const html = HTML_EXTENSIONS.has(extensionOf(answer.file));
    pages.set(pageKey(url.pathname + url.search), { bytes: answer.bytes, html });
    if (!html) continue;
    const found = extractLinks(readFileSync(answer.file, 'utf8'));
    nofollowLinks += found.nofollow.filter((href) => sameOrigin(href, found.base, url, origin)).length;
    if (found.metaNofollow) continue;
    const base = found.base === null ? url : tryUrl(found.base, url) ?? url;
    for (const href of found.hrefs) {
      const target = tryUrl(href, base);
      if (target === null || (target.protocol !== 'http:' && target.protocol !== 'https:')) continue;
      links++;
      visit(target);
    }
  }
  return { pages, redirects, notFound, forbidden, nofollowLinks, links };
}

/**
 * One spelling per resource: the path percent-decoded (as nginx decodes it before mapping it to a
 * file), dot segments and repeated slashes resolved; the query with escapes of unreserved characters
 * decoded and hex digits upper-cased (RFC 3986 section 6.2.2), kept only when non-empty.
 */
export function pageKey(pathAndQuery) {
  const mark = pathAndQuery.indexOf('?');
  const rawPath = mark === -1 ? pathAndQuery : pathAndQuery.slice(0, mark);
  const query = mark === -1 ? '' : pathAndQuery.slice(mark + 1);
  let path = posix.normalize(percentDecode(rawPath));
  if (rawPath.endsWith('/') && !path.endsWith('/')) path += '/';
  const uniformQuery = query.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /[A-Za-z0-9\-._~]/.test(char) ? char : escape.toUpperCase();
  });
  return uniformQuery === '' ? path : `${path}?${uniformQuery}`;
}

function resolveLikeNginx(root, url) {
  const path = posix.normalize(percentDecode(url.pathname));
  if (path.includes('\0')) return { status: 400 };
  if (path.endsWith('/')) {
    const file = root + path + 'index.html';
    const stat = statOrNull(file);
    return stat?.isFile() ? { status: 200, file, bytes: stat.size } : { status: 403 };
  }
  const file = root + path;
  const stat = statOrNull(file);
  if (stat === null) return { status: 404 };
  if (stat.isDirectory()) return { status: 301, location: `${url.pathname}/${url.search}` };
  if (!stat.isFile()) return { status: 404 };
  return { status: 200, file, bytes: stat.size };
}

/** hrefs of a and area, the first base href, rel=nofollow hrefs apart, meta robots nofollow. */
export function extractLinks(html) {
  const hrefs = [];
  const nofollow = [];
  let base = null;
  let metaNofollow = false;
  const parser = new Parser(
    {
      onopentag(name, attributes) {
        if ((name === 'a' || name === 'area') && attributes.href !== undefined) {
          if (/(^|\s)nofollow(\s|$)/i.test(attributes.rel ?? '')) nofollow.push(attributes.href);
          else hrefs.push(attributes.href);
        } else if (name === 'base' && base === null && attributes.href !== undefined) {
          base = attributes.href;
        } else if (name === 'meta' && /^(robots)$/i.test(attributes.name ?? '') && /(^|[\s,])(nofollow|none)([\s,]|$)/i.test(attributes.content ?? '')) {
          metaNofollow = true;
        }
      },
    },
    { decodeEntities: true },
  );
  parser.write(html);
  parser.end();
  return { hrefs, nofollow, base, metaNofollow };
}

function sameOrigin(href, base, pageUrl, origin) {
  const resolvedBase = base === null ? pageUrl : tryUrl(base, pageUrl) ?? pageUrl;
  return tryUrl(href, resolvedBase)?.origin === origin;
}

function tryUrl(href, base) {
  try {
    return new URL(href, base);
  } catch {
    return null;
  }
}

/** %XX escapes to bytes, read as UTF-8 (invalid sequences become U+FFFD, as a lookup would fail). */
function percentDecode(text) {
  if (!text.includes('%')) return text;
  const parts = text.split(/((?:%[0-9A-Fa-f]{2})+)/);
  const buffers = parts.map((part, i) => (i % 2 === 1 ? Buffer.from(part.replaceAll('%', ''), 'hex') : Buffer.from(part, 'utf8')));
  return Buffer.concat(buffers).toString('utf8');
}

function statOrNull(file) {
  try {
    return statSync(file);
  } catch {
    return null;
  }
}

function extensionOf(file) {
  const name = file.slice(file.lastIndexOf('/') + 1);
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}
