/**
 * The sitemap host (profile 'full'): a site most of whose pages are reachable only through its
 * sitemaps (sitemaps.org protocol 0.9). Its own loopback address after the hanging host's, in no
 * `origins` list and linked from nowhere. Its URLs are written with the authority the request named
 * (the Host header), as a virtual host's are, so the same site answers under any name a test resolves
 * to its address.
 *
 *   /robots.txt            Sitemap: /sitemap-index.xml, Sitemap: /blog/sitemap.xml,
 *                          Sitemap: <main host>/sitemap.xml (another host: not to be followed)
 *   /sitemap-index.xml     a sitemap index of /sitemaps/part-1.xml.gz and part-2.xml.gz (gzip files)
 *   /sitemaps/part-N.xml.gz  urlsets of /sitemaps/page-N-K.html (K = 1..3), each with its lastmod
 *   /blog/sitemap.xml      /blog/post-1.html, post-2.html (listed rightly), /shop/item.html (outside the
 *                          sitemap's directory) and a page of the main host (another host): both ignored
 *   /sitemap.xml           the default location: /from-default-sitemap.html
 *   /index.html            links only /linked.html
 *
 * Ground truth: SITEMAP_ONLY_PAGES are fetched only through sitemaps; SITEMAP_IGNORED_PAGES never.
 * `change(path)` gives a page a new body and a lastmod of now (ISO 8601, to the second), so a recrawl
 * must fetch it although its stored copy is still fresh (every page says max-age=3600).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { logClock } from './request-log.js';
import type { ServerState } from './server.js';

export const SITEMAP_ONLY_PAGES: readonly string[] = [
  ...[1, 2].flatMap((n) => [1, 2, 3].map((k) => `/sitemaps/page-${n}-${k}.html`)),
  '/blog/post-1.html',
  '/blog/post-2.html',
  '/from-default-sitemap.html',
];
/** Listed by a sitemap that may not list them (outside its directory; on another host). */
export const SITEMAP_IGNORED_PAGES: readonly string[] = ['/shop/item.html'];
export const SITEMAP_FILES: readonly string[] = ['/sitemap-index.xml', '/sitemaps/part-1.xml.gz', '/sitemaps/part-2.xml.gz', '/blog/sitemap.xml', '/sitemap.xml'];

const FIRST_LASTMOD = '2024-01-01';

export interface SitemapHost {
  origin: string;
  authority: string;
  /** A new version of the page at `path`, dated now in the sitemaps. */
  change(path: string): void;
}

interface SitemapHostState extends SitemapHost {
  readonly mainOrigin: string;
  readonly versions: Map<string, { version: number; lastmod: string }>;
}

export function createSitemapHost(address: string, port: number, mainOrigin: string): SitemapHost {
  const authority = `${address}:${port}`;
  const versions = new Map<string, { version: number; lastmod: string }>();
  const host: SitemapHostState = {
    origin: `http://${authority}`,
    authority,
    mainOrigin,
    versions,
    change(path) {
      const now = new Date();
      now.setMilliseconds(0);
      versions.set(path, { version: (versions.get(path)?.version ?? 0) + 1, lastmod: now.toISOString().replace('.000Z', 'Z') });
    },
  };
  return host;
}

const PAGES: ReadonlySet<string> = new Set(['/index.html', '/linked.html', ...SITEMAP_ONLY_PAGES, ...SITEMAP_IGNORED_PAGES]);

function urlset(base: string, host: SitemapHostState, paths: readonly string[], foreign: readonly string[] = []): string {
  const entry = (loc: string, lastmod: string | null) => `  <url><loc>${loc}</loc>${lastmod === null ? '' : `<lastmod>${lastmod}</lastmod>`}</url>\n`;
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n` +
    paths.map((path) => entry(`${base}${path}`, host.versions.get(path)?.lastmod ?? FIRST_LASTMOD)).join('') +
    foreign.map((loc) => entry(loc, null)).join('') +
    `</urlset>\n`
  );
}

function respond(host: SitemapHostState, path: string, base: string): { status: number; type: string; body: Buffer } {
  if (path === '/robots.txt') {
    const text = `User-agent: *\nDisallow: /private/\n\nSitemap: ${base}/sitemap-index.xml\nSitemap: ${base}/blog/sitemap.xml\nSitemap: ${host.mainOrigin}/sitemap.xml\n`;
    return { status: 200, type: 'text/plain; charset=utf-8', body: Buffer.from(text) };
  }
  if (path === '/sitemap-index.xml') {
    const entries = [1, 2].map((n) => `  <sitemap><loc>${base}/sitemaps/part-${n}.xml.gz</loc><lastmod>${FIRST_LASTMOD}</lastmod></sitemap>\n`).join('');
    return { status: 200, type: 'application/xml', body: Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${entries}</sitemapindex>\n`) };
  }
  const part = /^\/sitemaps\/part-([12])\.xml\.gz$/.exec(path);
  if (part !== null) {
    const paths = [1, 2, 3].map((k) => `/sitemaps/page-${part[1]}-${k}.html`);
    return { status: 200, type: 'application/gzip', body: gzipSync(urlset(base, host, paths)) };
  }
  if (path === '/blog/sitemap.xml') {
    const body = urlset(base, host, ['/blog/post-1.html', '/blog/post-2.html'], [`${base}/shop/item.html`, `${host.mainOrigin}/from-blog-sitemap.html`]);
    return { status: 200, type: 'application/xml', body: Buffer.from(body) };
  }
  if (path === '/sitemap.xml') return { status: 200, type: 'application/xml', body: Buffer.from(urlset(base, host, ['/from-default-sitemap.html'])) };
  if (PAGES.has(path)) {
    const version = host.versions.get(path)?.version ?? 0;
    const links = path === '/index.html' ? '<a href="/linked.html">linked</a>' : '<a href="/index.html">home</a>';
    const html = `<!doctype html><html><head><title>${path} v${version}</title></head><body><p>Page ${path}, version ${version}.</p>${links}</body></html>`;
    return { status: 200, type: 'text/html; charset=utf-8', body: Buffer.from(html) };
  }
  return { status: 404, type: 'text/plain; charset=utf-8', body: Buffer.from('not found\n') };
}

export function handleSitemapRequest(host: SitemapHost, req: IncomingMessage, res: ServerResponse, server: ServerState): void {
  const state = host as SitemapHostState;
  const start = logClock();
  const arrival = server.log.arrive();
  const path = req.url ?? '';
  // Names resolved to this address are served as virtual hosts: URLs carry the name asked for.
  const named = typeof req.headers.host === 'string' && /^[A-Za-z0-9.-]+(:\d+)?$/.test(req.headers.host) ? req.headers.host : state.authority;
  const { status, type, body } = respond(state, path.split('?')[0] ?? '', `http://${named}`);
  const etag = `"${createHash('sha1').update(body).digest('hex').slice(0, 16)}"`;
  let handedOver = start;
  res.once('close', () => {
    server.log.record(arrival, {
      start,
      end: logClock(),
      handedOver,
      host: state.authority,
      hostHeader: named,
      method: req.method ?? '',
      path,
      status: res.statusCode,
      ifNoneMatch: typeof req.headers['if-none-match'] === 'string' ? req.headers['if-none-match'] : null,
      ifModifiedSince: typeof req.headers['if-modified-since'] === 'string' ? req.headers['if-modified-since'] : null,
      userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : null,
      bytes: status === 304 ? 0 : body.length,
      bodySha1: createHash('sha1').update(status === 304 ? Buffer.alloc(0) : body).digest('hex'),
    });
  });
  const headers: Record<string, string> = { 'Content-Type': type, 'Cache-Control': 'max-age=3600', ETag: etag };
  if (status === 200 && req.headers['if-none-match'] === etag) {
    res.writeHead(304, headers).end();
    handedOver = logClock();
    return;
  }
  res.writeHead(status, { ...headers, 'Content-Length': String(body.length) }).end(body);
  handedOver = logClock();
}
