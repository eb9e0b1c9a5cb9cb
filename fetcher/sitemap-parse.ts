/**
 * Parsing one sitemap file (sitemaps.org protocol 0.9) in one streaming pass of htmlparser2's `Parser`
 * in XML mode (the parser already under the HTML extractor; no DOM is built): the `<loc>` and
 * `<lastmod>` of each `<url>` of a `<urlset>`, or of each `<sitemap>` of a `<sitemapindex>`. A gzip
 * file (`sitemap.xml.gz`, told by its magic bytes, not its name or type) is inflated first, bounded
 * like any body. Names are matched without their namespace prefix and case, so `<sm:loc>` counts.
 * What an entry may be (same host, under the sitemap's directory) is the queue server's decision.
 * htmlparser2 expands no DTD and no external entity (only the five XML ones and character references),
 * so a hostile file gets neither an entity bomb nor a file read.
 */
import { createGunzip } from 'node:zlib';
import { Parser } from 'htmlparser2';
import { parseLastmod, SITEMAP_LIMITS, type SitemapData, type SitemapEntry } from '../shared/sitemap.js';

/** Whether the bytes are a gzip member (RFC 1952 section 2.3.1: ID1 0x1f, ID2 0x8b). */
export function isGzip(body: Uint8Array): boolean {
  return body.length >= 2 && body[0] === 0x1f && body[1] === 0x8b;
}

/** Inflates a gzip body to at most `maxBytes`; `truncated` when there was more (or the stream broke off). */
export function gunzipBounded(body: Uint8Array, maxBytes: number): Promise<{ body: Buffer; truncated: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let done = false;
    const gunzip = createGunzip();
    const finish = (truncated: boolean) => {
      if (done) return;
      done = true;
      gunzip.destroy();
      resolve({ body: Buffer.concat(chunks, length), truncated });
    };
    gunzip.on('data', (chunk: Buffer) => {
      const room = maxBytes - length;
      if (chunk.length >= room) {
        chunks.push(chunk.subarray(0, room));
        length += room;
        // At the bound: whatever follows is cut.
        finish(true);
        return;
      }
      chunks.push(chunk);
      length += chunk.length;
    });
    gunzip.on('end', () => finish(false));
    gunzip.on('error', () => finish(true));
    gunzip.end(body);
  });
}

const localName = (name: string): string => {
  const colon = name.indexOf(':');
  return (colon === -1 ? name : name.slice(colon + 1)).toLowerCase();
};

/** The entries of one sitemap file's text, bounded by SITEMAP_LIMITS. */
export function parseSitemap(xml: string): SitemapData {
  let kind: SitemapData['kind'] = 'none';
  const entries: SitemapEntry[] = [];
  let truncated = false;
  let locChars = 0;
  /** Inside an entry (`<url>` of a urlset, `<sitemap>` of an index): its fields so far. */
  let entry: { loc: string | null; lastmod: number | null } | null = null;
  /** The field whose text is being read, and the text. */
  let field: 'loc' | 'lastmod' | null = null;
  let text = '';
  let depth = 0;
  const parser = new Parser(
    {
      onopentag(name) {
        depth++;
        const local = localName(name);
        if (depth === 1) {
          kind = local === 'urlset' ? 'urlset' : local === 'sitemapindex' ? 'index' : 'none';
          return;
        }
        if (kind === 'none') return;
        if (depth === 2 && local === (kind === 'urlset' ? 'url' : 'sitemap')) entry = { loc: null, lastmod: null };
        else if (depth === 3 && entry !== null && (local === 'loc' || local === 'lastmod')) {
          field = local;
          text = '';
        }
      },
      ontext(data) {
        // A <loc> longer than a URL may be is dropped, not kept growing.
        if (field !== null && text.length <= SITEMAP_LIMITS.urlChars) text += data;
      },
      onclosetag() {
        if (depth === 3 && field !== null && entry !== null) {
          if (field === 'loc') entry.loc = text.trim();
          else entry.lastmod = parseLastmod(text);
          field = null;
        } else if (depth === 2 && entry !== null) {
          const loc = entry.loc;
          if (loc !== null && loc.length > 0 && loc.length <= SITEMAP_LIMITS.urlChars) {
            if (entries.length >= SITEMAP_LIMITS.entries || locChars + loc.length > SITEMAP_LIMITS.locChars) truncated = true;
            else {
              entries.push({ loc, lastmod: entry.lastmod });
              locChars += loc.length;
            }
          }
          entry = null;
        }
        depth--;
      },
    },
    { xmlMode: true, decodeEntities: true },
  );
  parser.write(xml);
  parser.end();
  return { kind, entries, truncated };
}
