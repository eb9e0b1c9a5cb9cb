import { describe, expect, it } from 'vitest';
import { mustNormalize } from '../../shared/url-normalize.js';
import { parseLastmod, SITEMAP_LIMITS } from '../../shared/sitemap.js';
import { gunzipBounded, isGzip, parseSitemap } from '../../fetcher/sitemap-parse.js';
import { listedUrl, MAX_SITEMAP_NESTING, MAX_SITEMAPS_PER_ORIGIN, topSitemapsOf } from '../../queue-server/sitemaps/sitemap-rules.js';
import { SitemapDiscovery } from '../../queue-server/sitemaps/sitemaps.js';
import { rulesFromFetch } from '../../queue-server/robots/robots.js';
import { gzipSync } from 'node:zlib';
import type { ItemResult } from '../../shared/protocol.js';
import { sitemapRecordAfter, sitemapRequestOf } from '../../queue-server/sitemaps/sitemap-revisit.js';

const ORIGIN = 'http://127.0.0.2:8080';

describe('what a sitemap may list (sitemaps.org: its own host, under its own directory)', () => {
  const blog = mustNormalize(`${ORIGIN}/blog/sitemap.xml`);
  it('takes URLs under the sitemap directory on its host', () => {
    expect(listedUrl(blog, `${ORIGIN}/blog/post-1.html`)).toBe(`${ORIGIN}/blog/post-1.html`);
    expect(listedUrl(blog, `${ORIGIN}/blog/2024/06/post.html?x=1`)).toBe(`${ORIGIN}/blog/2024/06/post.html?x=1`);
  });
  it('refuses another directory, another host, port or scheme, and what is no URL', () => {
    expect(listedUrl(blog, `${ORIGIN}/shop/item.html`)).toBeNull();
    expect(listedUrl(blog, `${ORIGIN}/blogger.html`)).toBeNull();
    expect(listedUrl(blog, 'http://127.0.0.3:8080/blog/post.html')).toBeNull();
    expect(listedUrl(blog, 'http://127.0.0.2:8081/blog/post.html')).toBeNull();
    expect(listedUrl(blog, 'https://127.0.0.2:8080/blog/post.html')).toBeNull();
    expect(listedUrl(blog, 'javascript:alert(1)')).toBeNull();
  });
  it('lets a sitemap at the root list the whole host', () => {
    expect(listedUrl(mustNormalize(`${ORIGIN}/sitemap.xml`), `${ORIGIN}/a/b/c.html`)).toBe(`${ORIGIN}/a/b/c.html`);
  });
});

describe('where sitemaps come from', () => {
  it('takes robots.txt Sitemap: lines of the same origin, then /sitemap.xml, each once', () => {
    const body = `User-agent: *\nDisallow:\nSitemap: ${ORIGIN}/maps/index.xml\nSitemap: http://127.0.0.9/other.xml\nsitemap: ${ORIGIN}/sitemap.xml\n`;
    const rules = rulesFromFetch({ origin: ORIGIN, status: 200, errorCode: null, body }, { userAgentToken: 'petrel', unreachableRetryMs: 1000 }, 0);
    expect(topSitemapsOf(ORIGIN, rules)).toEqual([`${ORIGIN}/maps/index.xml`, `${ORIGIN}/sitemap.xml`]);
    expect(topSitemapsOf(ORIGIN, null)).toEqual([`${ORIGIN}/sitemap.xml`]);
  });
});

describe('parsing a sitemap file', () => {
  it('reads a urlset with namespaces, entities and lastmods', () => {
    const xml = `<?xml version="1.0"?><sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">
      <sm:url><sm:loc> ${ORIGIN}/a?x=1&amp;y=2 </sm:loc><sm:lastmod>2024-06-15</sm:lastmod></sm:url>
      <sm:url><sm:loc>${ORIGIN}/b</sm:loc><sm:lastmod>not a date</sm:lastmod></sm:url>
      <sm:url><sm:lastmod>2024-06-15</sm:lastmod></sm:url></sm:urlset>`;
    expect(parseSitemap(xml)).toEqual({
      kind: 'urlset',
      truncated: false,
      entries: [{ loc: `${ORIGIN}/a?x=1&y=2`, lastmod: Date.UTC(2024, 5, 15) }, { loc: `${ORIGIN}/b`, lastmod: null }],
    });
  });
  it('reads a sitemap index; anything else is no sitemap', () => {
    const index = `<sitemapindex><sitemap><loc>${ORIGIN}/s1.xml.gz</loc><lastmod>2024-06-15T10:00:00+02:00</lastmod></sitemap></sitemapindex>`;
    expect(parseSitemap(index)).toEqual({ kind: 'index', truncated: false, entries: [{ loc: `${ORIGIN}/s1.xml.gz`, lastmod: Date.UTC(2024, 5, 15, 8) }] });
    expect(parseSitemap('<html><body><url><loc>x</loc></url></body></html>')).toEqual({ kind: 'none', truncated: false, entries: [] });
  });
  it('keeps at most the protocol\'s 50,000 entries and says it cut the rest', () => {
    const xml = `<urlset>${'<url><loc>http://h/p</loc></url>'.repeat(SITEMAP_LIMITS.entries + 5)}</urlset>`;
    const parsed = parseSitemap(xml);
    expect(parsed.entries).toHaveLength(SITEMAP_LIMITS.entries);
    expect(parsed.truncated).toBe(true);
  });
  it('expands no entity a DTD declares', () => {
    const xml = `<!DOCTYPE urlset [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]><urlset><url><loc>http://h/&b;</loc></url></urlset>`;
    expect(parseSitemap(xml).entries.map((e) => e.loc)).not.toContain('http://h/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa');
  });
  it('inflates a gzip sitemap no further than the bound', async () => {
    const body = gzipSync(Buffer.alloc(1_000_000, 0x20));
    expect(isGzip(body)).toBe(true);
    expect(isGzip(Buffer.from('<urlset/>'))).toBe(false);
    const cut = await gunzipBounded(body, 10_000);
    expect(cut).toMatchObject({ truncated: true });
    expect(cut.body.length).toBe(10_000);
    const whole = await gunzipBounded(gzipSync(Buffer.from('<urlset/>')), 10_000);
    expect(whole).toEqual({ body: Buffer.from('<urlset/>'), truncated: false });
  });
  it('reads W3C datetimes as lastmod, nothing else', () => {
    expect(parseLastmod('2024-06-15T10:00:00Z')).toBe(Date.UTC(2024, 5, 15, 10));
    expect(parseLastmod('yesterday')).toBeNull();
    expect(parseLastmod('2024-13-45')).toBeNull();
  });
});

describe('reading a sitemap again in the next pass (sitemap-revisit.ts)', () => {
  const DAY = 24 * 60 * 60 * 1000;
  const answer = (status: number, kind: 'urlset' | 'index' | null, etag: string | null = '"v1"'): ItemResult => ({
    slot: 0, i: 0, url: `${ORIGIN}/sitemap.xml`, fetchedAt: 1000, durationMs: 5, status, error: null, truncated: false, redirectTo: null, retryAfterMs: null,
    contentType: 'application/xml', bytes: 100, wireBytes: 100, signature: null, page: null, links: [], robotsTxt: null, index: null,
    cache: { etag, lastModified: null, date: null, age: null, expires: null, cacheControl: 'max-age=3600' },
    sitemap: kind === null ? null : { kind, entries: [] },
  } as unknown as ItemResult);

  it('asks with no validator first, then with the ETag of the urlset it read, even while that answer is fresh', () => {
    expect(sitemapRequestOf(null, 0)).toEqual({ kind: 'request', validators: null });
    const kept = sitemapRecordAfter(null, answer(200, 'urlset'), 1000, 30 * DAY)!;
    expect(sitemapRequestOf(kept, 2000)).toEqual({ kind: 'request', validators: { etag: '"v1"', lastModified: null } });
    // A 304 keeps the validators for the pass after.
    const after304 = sitemapRecordAfter(kept, answer(304, null, null), 5000, 30 * DAY)!;
    expect(sitemapRequestOf(after304, 6000)).toEqual({ kind: 'request', validators: { etag: '"v1"', lastModified: null } });
  });

  it('keeps nothing of a sitemap index or of a sitemap without validators: both are read in full', () => {
    expect(sitemapRecordAfter(null, answer(200, 'index'), 1000, 30 * DAY)).toBeNull();
    expect(sitemapRecordAfter(null, answer(200, 'urlset', null), 1000, 30 * DAY)).toBeNull();
  });

  it('does not ask for a sitemap that answered 404 or 410 again before the refetch interval, and asks after it', () => {
    for (const status of [404, 410]) {
      const missing = sitemapRecordAfter(null, answer(status, null), 1000, 30 * DAY)!;
      expect(sitemapRequestOf(missing, 1000 + 30 * DAY - 1)).toEqual({ kind: 'skip', until: 1000 + 30 * DAY });
      expect(sitemapRequestOf(missing, 1000 + 30 * DAY)).toEqual({ kind: 'request', validators: null });
    }
  });

  it('keeps what it knew when a sitemap request fails', () => {
    const kept = sitemapRecordAfter(null, answer(200, 'urlset'), 1000, 30 * DAY)!;
    expect(sitemapRecordAfter(kept, answer(503, null), 2000, 30 * DAY)).toBeUndefined();
    expect(sitemapRecordAfter(kept, { ...answer(200, null), status: null } as ItemResult, 2000, 30 * DAY)).toBeUndefined();
  });
});

describe('how many sitemaps an origin gets read (sitemaps.ts)', () => {
  const allow = () => true;
  const drain = (discovery: SitemapDiscovery): string[] => {
    const read: string[] = [];
    for (let batch = discovery.take(ORIGIN, null, allow); batch.length > 0; batch = discovery.take(ORIGIN, null, allow)) {
      for (const sitemap of batch) {
        read.push(sitemap.url);
        discovery.read(ORIGIN);
      }
    }
    return read;
  };

  it('takes up sitemaps an index lists one level down, tolerates one more, and skips deeper ones', () => {
    const discovery = new SitemapDiscovery();
    expect(discovery.take(ORIGIN, null, allow).map((s) => s.url)).toEqual([`${ORIGIN}/sitemap.xml`]);
    for (let level = 1; level <= MAX_SITEMAP_NESTING; level++) expect(discovery.listed(ORIGIN, mustNormalize(`${ORIGIN}/level-${level}.xml`), level), `level ${level}`).toBe(true);
    expect(discovery.listed(ORIGIN, mustNormalize(`${ORIGIN}/too-deep.xml`), MAX_SITEMAP_NESTING + 1)).toBe(false);
    expect(drain(discovery)).toEqual(Array.from({ length: MAX_SITEMAP_NESTING }, (_, k) => `${ORIGIN}/level-${k + 1}.xml`));
  });

  it('reads at most MAX_SITEMAPS_PER_ORIGIN sitemaps of an origin per pass, each once', () => {
    const discovery = new SitemapDiscovery();
    discovery.take(ORIGIN, null, allow);
    let taken = 0;
    for (let n = 0; n < 2 * MAX_SITEMAPS_PER_ORIGIN; n++) if (discovery.listed(ORIGIN, mustNormalize(`${ORIGIN}/part-${n % (MAX_SITEMAPS_PER_ORIGIN + 100)}.xml`), 1)) taken++;
    // The default /sitemap.xml counts against the cap too.
    expect(taken).toBe(MAX_SITEMAPS_PER_ORIGIN - 1);
    expect(new Set(drain(discovery)).size).toBe(MAX_SITEMAPS_PER_ORIGIN - 1);
  });
});
