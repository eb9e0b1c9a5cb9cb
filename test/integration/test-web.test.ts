/**
 * The test web is the fixture every crawl test trusts, so it is tested against itself: what the server
 * sends must agree with the model, byte for byte where it matters, and the model must encode the
 * crawling rules (robots, nofollow, redirects, depth) the crawler will be judged by.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { Agent, request, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalUrl, startTestWeb, type ModelPage, type TestWeb } from '../../scripts/test-web.js';
import { planHosts } from '../../scripts/test-web/hosts.js';
import { EVIL_TITLE } from '../../scripts/test-web/main-extras.js';
import { buildWeb } from '../../scripts/test-web/web.js';
import { createSiteModel } from '../../scripts/test-web/site-model.js';

const SLOW_MS = 300;

interface Fetched {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

async function get(
  url: string,
  opts: { method?: 'GET' | 'HEAD' | 'POST'; headers?: Record<string, string>; dispatcher?: Dispatcher } = {},
): Promise<Fetched> {
  const res = await request(url, { method: opts.method ?? 'GET', headers: opts.headers ?? {}, ...(opts.dispatcher === undefined ? {} : { dispatcher: opts.dispatcher }) });
  return { status: res.statusCode, headers: res.headers, body: Buffer.from(await res.body.arrayBuffer()) };
}

function header(res: Fetched, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
}

/** An independent, deliberately naive reading of our HTML: regexes, WHATWG URL, escape folding. */
function crudeParse(html: string, pageUrl: string): { title: string | null; metaRobots: string | null; links: { url: string; nofollow: boolean; sameDocument: boolean }[] } {
  const unescape = (text: string): string => text.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  const attr = (tag: string, name: string): string | null => {
    const match = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
    return match === null ? null : unescape(match[1] ?? '');
  };
  const baseTag = /<base\s[^>]*>/.exec(html)?.[0];
  const base = baseTag === undefined ? pageUrl : new URL(attr(baseTag, 'href') ?? '', pageUrl).href;
  const links: { url: string; nofollow: boolean; sameDocument: boolean }[] = [];
  for (const [tag] of html.matchAll(/<a\s[^>]*>/g)) {
    const href = attr(tag, 'href');
    if (href === null) continue;
    const url = new URL(href, base);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') continue;
    url.hash = '';
    const path = url.pathname.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
      const char = String.fromCharCode(parseInt(hex, 16));
      return /[A-Za-z0-9\-._~]/.test(char) ? char : escape.toUpperCase();
    });
    links.push({ url: `${url.origin}${path}${url.search}`, nofollow: (attr(tag, 'rel') ?? '').split(/\s+/).includes('nofollow'), sameDocument: href.trim().startsWith('#') });
  }
  const metaTag = /<meta\s+name="robots"[^>]*>/.exec(html)?.[0];
  const title = /<title>([^<]*)<\/title>/.exec(html)?.[1];
  return {
    title: title === undefined ? null : unescape(title),
    metaRobots: metaTag === undefined ? null : attr(metaTag, 'content'),
    links,
  };
}

function modelPage(web: TestWeb, url: string): ModelPage {
  const page = web.model.page(url);
  if (page === undefined) throw new Error(`model has no page for ${url}`);
  return page;
}

describe('test web, full profile', () => {
  let web: TestWeb;
  let main: string;
  const onHost = (origin: string) => (url: string) => url.startsWith(`${origin}/`);

  beforeAll(async () => {
    web = await startTestWeb({ slowMs: SLOW_MS });
    main = web.hostByRole.main;
  });
  afterAll(async () => {
    await web.close();
  });

  it('binds each host to its own loopback address on one shared port', () => {
    expect(web.origins).toHaveLength(3 + 4);
    web.origins.forEach((origin, i) => expect(origin).toBe(`http://127.0.0.${2 + i}:${web.port}`));
    expect(web.hostByRole).toEqual({
      main: web.origins[0],
      robots404: web.origins[3],
      robots500: web.origins[4],
      crawlDelay: web.origins[5],
      trap: web.origins[6],
    });
    expect(web.seeds).toEqual([`${main}/index.html`]);
  });

  it('answers robots.txt on every host as specified, and the model reads it the same way', async () => {
    const mainRobots = await get(`${main}/robots.txt`);
    expect(mainRobots.status).toBe(200);
    expect(header(mainRobots, 'content-type')).toMatch(/^text\/plain/);
    expect(mainRobots.body.toString()).toMatch(/User-agent: \*\nDisallow: \/private\/\nAllow: \/private\/open\.html/);
    for (const origin of web.origins.slice(1, 3)) {
      const robots = await get(`${origin}/robots.txt`);
      expect(robots.status).toBe(200);
      expect(robots.body.toString()).toMatch(/User-agent: \*\nDisallow:\n/);
    }
    expect((await get(`${web.hostByRole.robots404}/robots.txt`)).status).toBe(404);
    expect((await get(`${web.hostByRole.robots500}/robots.txt`)).status).toBe(500);
    const delay = await get(`${web.hostByRole.crawlDelay}/robots.txt`);
    expect(delay.status).toBe(200);
    expect(delay.body.toString()).toMatch(/User-agent: \*\nCrawl-delay: 1\n/);
    expect((await get(`${web.hostByRole.trap}/robots.txt`)).status).toBe(200);

    expect(web.model.robotsAllows(`${main}/private/secret.html`)).toBe(false);
    expect(web.model.robotsAllows(`${main}/private/open.html`)).toBe(true);
    expect(web.model.robotsAllows(`${main}/index.html`)).toBe(true);
    expect(web.model.robotsAllows(`${web.origins[1]}/private/secret.html`)).toBe(true);
    expect(web.model.robotsAllows(`${web.hostByRole.robots404}/page-1.html`)).toBe(true);
    expect(web.model.robotsAllows(`${web.hostByRole.robots500}/index.html`)).toBe(false);
    expect(web.model.robotsAllows(`${web.hostByRole.robots500}/robots.txt`)).toBe(false);
    expect(web.model.robotsAllows(`${web.hostByRole.crawlDelay}/page-2.html`)).toBe(true);
  });

  it('answers If-None-Match and If-Modified-Since with bodiless 304s (RFC 9110 §13.2.2), and logs the validators', async () => {
    const url = `${main}/section-1/page-3.html`;
    const first = await get(url);
    const etag = header(first, 'etag') ?? '';
    const lastModified = header(first, 'last-modified') ?? '';
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(lastModified).toBe('Mon, 01 Jan 2024 00:00:00 GMT');

    web.clearLog();
    const byEtag = await get(url, { headers: { 'if-none-match': etag } });
    expect(byEtag.status).toBe(304);
    expect(byEtag.body.length).toBe(0);
    expect(header(byEtag, 'etag')).toBe(etag);
    expect(header(byEtag, 'cache-control')).toBe('max-age=3600');
    expect((await get(url, { headers: { 'if-none-match': `"other", W/${etag}` } })).status).toBe(304);
    expect((await get(url, { headers: { 'if-none-match': '*' } })).status).toBe(304);
    expect((await get(url, { method: 'HEAD', headers: { 'if-none-match': etag } })).status).toBe(304);

    const byDate = await get(url, { headers: { 'if-modified-since': lastModified } });
    expect(byDate.status).toBe(304);
    expect(byDate.body.length).toBe(0);
    expect((await get(url, { headers: { 'if-modified-since': 'Sun, 31 Dec 2023 23:59:59 GMT' } })).status).toBe(200);
    expect((await get(url, { headers: { 'if-modified-since': 'not a date' } })).status).toBe(200);
    // If-None-Match takes precedence: a stale tag means 200 even though the date would say 304.
    const stale = await get(url, { headers: { 'if-none-match': '"stale"', 'if-modified-since': lastModified } });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(first.body)).toBe(true);

    const log = web.log;
    expect(log.map((entry) => entry.status)).toEqual([304, 304, 304, 304, 304, 200, 200, 200]);
    expect(log[0]).toMatchObject({ ifNoneMatch: etag, ifModifiedSince: null, bytes: 0, method: 'GET' });
    expect(log[3]).toMatchObject({ method: 'HEAD', ifNoneMatch: etag });
    expect(log[4]).toMatchObject({ ifNoneMatch: null, ifModifiedSince: lastModified, bytes: 0 });
    expect(log[7]).toMatchObject({ ifNoneMatch: '"stale"', ifModifiedSince: lastModified, bytes: first.body.length });
  });

  it('gives each normal host its own freshness policy', async () => {
    const [first, second, third] = web.origins;
    expect(header(await get(`${first}/index.html`), 'cache-control')).toBe('max-age=3600');
    expect(header(await get(`${second}/index.html`), 'cache-control')).toBe('max-age=0');
    const expiring = await get(`${third}/index.html`);
    expect(header(expiring, 'cache-control')).toBeUndefined();
    expect(Date.parse(header(expiring, 'expires') ?? '')).toBeLessThan(Date.now());
  });

  it('serves the redirect chain 301 -> 302 -> 307 -> 200, as the model says', async () => {
    let url = `${main}/redirect/start`;
    const statuses: number[] = [];
    for (let hop = 0; hop < 5; hop++) {
      const res = await get(url);
      statuses.push(res.status);
      const page = modelPage(web, url);
      expect(page.status).toBe(res.status);
      if (res.status === 200) break;
      const next = canonicalUrl(header(res, 'location') ?? '', url);
      expect(next).toBe(page.redirectTo);
      url = next ?? '';
    }
    expect(statuses).toEqual([301, 302, 307, 200]);
    expect(url).toBe(`${main}/redirect/end.html`);
  });

  it('serves errors, the slow page, the large page, files and HEAD as specified', async () => {
    for (const status of [404, 410, 500, 503]) {
      const res = await get(`${main}/errors/${status}.html`);
      expect(res.status).toBe(status);
      expect(header(res, 'etag')).toBeUndefined();
    }
    expect(header(await get(`${main}/errors/503.html`), 'retry-after')).toBe('1');
    const unknown = await get(`${main}/no/such/page.html`);
    expect(unknown.status).toBe(404);
    expect(header(unknown, 'content-type')).toMatch(/^text\/html/);
    expect((await get(`${main}/section-1/page-2.html?x=1`)).status).toBe(404);
    expect((await get(`${main}/index.html`, { method: 'POST' })).status).toBe(405);

    const started = performance.now();
    expect((await get(`${main}/slow.html`)).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(SLOW_MS - 5);

    const large = await get(`${main}/large.html`);
    expect(large.status).toBe(200);
    expect(large.body.length).toBeGreaterThan(3 * 1024 * 1024);
    expect(large.body.length).toBeLessThan(4 * 1024 * 1024);
    expect(header(large, 'content-length')).toBe(String(large.body.length));

    const png = await get(`${main}/files/image.png`);
    expect(header(png, 'content-type')).toBe('image/png');
    expect(png.body.subarray(0, 8).equals(Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]))).toBe(true);
    const pdf = await get(`${main}/files/doc.pdf`);
    expect(header(pdf, 'content-type')).toBe('application/pdf');
    expect(pdf.body.toString('latin1')).toMatch(/^%PDF-1\.4\n[\s\S]*%%EOF\n$/);
    const json = await get(`${main}/files/data.json`);
    expect(JSON.parse(json.body.toString()).index).toBe(`${main}/index.html`);

    // The evil title is escaped in the HTML; a parser reads it back as the literal text.
    const evil = await get(`${main}/evil.html`);
    expect(evil.status).toBe(200);
    expect(evil.body.toString()).toContain('<title>&lt;script&gt;window.__pwned=1&lt;/script&gt;&lt;img src=x onerror="window.__pwned=2"&gt;</title>');
    expect(crudeParse(evil.body.toString(), `${main}/evil.html`).title).toBe(EVIL_TITLE);
    expect(modelPage(web, `${main}/evil.html`).title).toBe(EVIL_TITLE);

    const full = await get(`${main}/index.html`);
    const head = await get(`${main}/index.html`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.length).toBe(0);
    expect(header(head, 'content-length')).toBe(String(full.body.length));
    expect(header(head, 'etag')).toBe(header(full, 'etag'));
  });

  it('serves what model.page() describes: status, type, title, meta robots, links', async () => {
    const sample = [...web.model.reachable({ seeds: web.seeds, inScope: () => true, maxDepth: 3 }).keys()];
    sample.push(`${main}/hidden/nofollow-only.html`, `${main}/private/secret.html`, `${main}/meta/behind-nofollow.html`, `${main}/nope`);
    expect(sample.length).toBeGreaterThan(80);
    for (const url of sample) {
      const page = modelPage(web, url);
      const res = await get(url);
      expect(res.status, url).toBe(page.status);
      expect(header(res, 'content-type') ?? null, url).toBe(page.contentType);
      if (page.status !== 200 || !(page.contentType ?? '').startsWith('text/html')) continue;
      const html = res.body.toString('utf8');
      expect(html).toContain('<html lang="en">');
      expect(html).toMatch(/<meta name="description" content="[^"]+">/);
      expect(html).toContain(`<link rel="canonical" href="${url}">`);
      const parsed = crudeParse(html, url);
      expect(parsed.title, url).toBe(page.title);
      expect(parsed.links, url).toEqual(page.links);
      expect((parsed.metaRobots ?? '').includes('nofollow')).toBe(page.metaNofollow);
      expect((parsed.metaRobots ?? '').includes('noindex')).toBe(page.metaNoindex);
    }
  });

  it('writes links in every style, and each one resolves to an existing page', async () => {
    const generated = [...web.model.reachable({ seeds: web.seeds, inScope: onHost(main), maxDepth: 10 }).keys()].filter((url) => url.includes('/section-'));
    expect(generated).toHaveLength(29);
    const styles = new Set<string>();
    for (const url of generated) {
      for (const link of modelPage(web, url).links) expect(modelPage(web, link.url).status, `${url} -> ${link.url}`).toBe(200);
      const html = (await get(url)).body.toString();
      for (const [, href = ''] of html.matchAll(/<a href="([^"]*)"/g)) {
        if (href.startsWith('http://')) styles.add(href.startsWith(`${main}/`) ? 'absolute-url' : 'absolute-url, other host');
        else if (href.startsWith('//')) styles.add(href.startsWith(`//127.0.0.2:`) ? 'protocol-relative' : 'protocol-relative, other host');
        else if (href.includes('%')) styles.add('encoded');
        else if (href.includes('/./') || href.includes('/../section-')) styles.add('dot-segment');
        else if (href.startsWith('#')) styles.add('fragment only');
        else if (href.includes('#')) styles.add('fragment');
        else if (href.startsWith('./')) styles.add('dot-relative');
        else if (href.startsWith('../')) styles.add('parent-relative');
        else if (href.startsWith('/')) styles.add('absolute-path');
        else if (/^(mailto|javascript):/.test(href)) styles.add('not http');
        else styles.add('relative');
      }
    }
    expect([...styles].sort()).toEqual(
      [
        'absolute-path', 'absolute-url', 'absolute-url, other host', 'dot-relative', 'dot-segment', 'encoded', 'fragment', 'fragment only',
        'not http', 'parent-relative', 'protocol-relative', 'protocol-relative, other host', 'relative',
      ].sort(),
    );
    // The <base href> page: its relative links resolve against the site root, not its own directory.
    const basePage = modelPage(web, `${main}/section-3/page-9.html`);
    expect((await get(basePage.url)).body.toString()).toContain(`<base href="${main}/">`);
    expect(basePage.links.some((link) => link.url.startsWith(`${main}/section-`))).toBe(true);
  });

  it('accepts non-canonical request targets for existing pages, and logs them raw', async () => {
    const canonical = await get(`${main}/section-1/page-2.html`);
    web.clearLog();
    const encoded = await get(`${main}/section-1/p%61ge-2.html`);
    expect(encoded.status).toBe(200);
    expect(encoded.body.equals(canonical.body)).toBe(true);
    const dotted = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.2', port: web.port, path: '/section-1/./page-2.html', headers: { 'user-agent': 'petrel-test/1.0' } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
    expect(dotted).toBe(200);
    expect(web.log.map((entry) => entry.path)).toEqual(['/section-1/p%61ge-2.html', '/section-1/./page-2.html']);
    expect(web.log[1]).toMatchObject({ host: `127.0.0.2:${web.port}`, userAgent: 'petrel-test/1.0', status: 200, bytes: canonical.body.length });
    for (const entry of web.log) expect(entry.end).toBeGreaterThanOrEqual(entry.start);
  });

  it('keeps connections alive across requests', async () => {
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    const reused: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      reused.push(
        await new Promise<boolean>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.3', port: web.port, path: '/index.html', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve(req.reusedSocket));
          });
          req.on('error', reject);
          req.end();
        }),
      );
    }
    agent.destroy();
    expect(reused).toEqual([false, true, true]);
  });

  it('reachable() with a host-only scope is finite and leaves out nofollow, robots-disallowed and foreign URLs', () => {
    const reach = web.model.reachable({ seeds: web.seeds, inScope: onHost(main), maxDepth: 50 });
    // 46, plus the two X-Robots-Tag pages and the page behind the one addressed to another bot, and the
    // search tests' four pages (/markup/text.html, /lang/zh.html, /lang/ja.html, /anchor/target.html),
    // and the two noarchive pages (/meta/noarchive.html, /meta/x-robots-noarchive.html).
    expect(reach.size).toBe(55);
    expect(reach.has(`${main}/meta/behind-x-robots.html`)).toBe(false);
    expect(reach.get(`${main}/meta/behind-other-bot.html`)).toBe(2);
    expect([...reach.keys()].every(onHost(main))).toBe(true);
    expect(reach.has(`${main}/hidden/nofollow-only.html`)).toBe(false);
    expect(reach.has(`${main}/meta/behind-nofollow.html`)).toBe(false);
    expect(reach.has(`${main}/private/secret.html`)).toBe(false);
    expect(reach.has(`${main}/robots.txt`)).toBe(false);
    expect(reach.get(`${main}/private/open.html`)).toBe(1);
    expect(reach.get(`${main}/meta/noindex-nofollow.html`)).toBe(1);
    expect(reach.get(`${main}/redirect/end.html`)).toBe(4);
    expect(reach.get(`${main}/errors/503.html`)).toBe(1);
    expect(reach.get(`${main}/files/image.png`)).toBe(1);
    expect(Math.max(...reach.values())).toBeLessThanOrEqual(4);
    const shallow = web.model.reachable({ seeds: web.seeds, inScope: onHost(main), maxDepth: 2 });
    expect(shallow.has(`${main}/redirect/step-2`)).toBe(false);
    expect(Math.max(...shallow.values())).toBe(2);
  });

  it('reachable() across all hosts stays finite through the trap by maxDepth, and never enters the robots-500 host', () => {
    const everywhere = () => true;
    const byHost = (maxDepth: number): Map<string, number> => {
      const counts = new Map<string, number>();
      for (const url of web.model.reachable({ seeds: web.seeds, inScope: everywhere, maxDepth }).keys()) {
        const origin = new URL(url).origin;
        counts.set(origin, (counts.get(origin) ?? 0) + 1);
      }
      return counts;
    };
    const at8 = byHost(8);
    expect(at8.get(web.origins[1] ?? '')).toBe(30);
    expect(at8.get(web.origins[2] ?? '')).toBe(30);
    expect(at8.get(web.hostByRole.robots404)).toBe(5);
    expect(at8.get(web.hostByRole.crawlDelay)).toBe(4);
    expect(at8.has(web.hostByRole.robots500)).toBe(false);
    // Trap: index at depth 1, first month at 2, then two new months per level.
    expect(at8.get(web.hostByRole.trap)).toBe(1 + 1 + 2 * 6);
    expect(byHost(12).get(web.hostByRole.trap)).toBe(1 + 1 + 2 * 10);
    expect(web.model.page(`${web.hostByRole.trap}/calendar/2024/13`)?.status).toBe(404);
    expect(web.model.page(`${web.hostByRole.trap}/calendar/3024/02`)?.links.map((link) => link.url)).toContain(`${web.hostByRole.trap}/calendar/3024/03`);
    expect(web.model.page('http://127.0.0.1:1/index.html')).toBeUndefined();
  });
});

describe('test web, bench profile', () => {
  it('serves pagesPerHost x hosts pages of ~14 KB, all reachable, with no special hosts', async () => {
    const web = await startTestWeb({ profile: 'bench', pagesPerHost: 40, hosts: 2 });
    try {
      expect(web.origins).toHaveLength(2);
      expect(() => web.hostByRole.trap).toThrow(/bench/);
      expect(web.hostByRole.main).toBe(web.origins[0]);
      expect(web.model.robotsAllows(`${web.hostByRole.main}/private/secret.html`)).toBe(true);
      const reach = web.model.reachable({ seeds: web.seeds, inScope: () => true, maxDepth: 100 });
      expect(reach.size).toBe(80);
      for (const url of reach.keys()) {
        const res = await get(url);
        expect(res.status, url).toBe(200);
        expect(res.body.length, url).toBeGreaterThan(12_000);
        expect(res.body.length, url).toBeLessThan(17_000);
      }
      for (const path of ['/slow.html', '/redirect/start', '/errors/500.html']) expect((await get(`${web.hostByRole.main}${path}`)).status).toBe(404);
    } finally {
      await web.close();
    }
  });
});

describe('test web, lifecycle', () => {
  it('logs a request the client abandoned with status 0, and close() does not wait for slow responses', async () => {
    const web = await startTestWeb({ slowMs: 5_000, hosts: 1 });
    try {
      const slow = `${web.hostByRole.main}/slow.html`;
      // `Expect: 100-continue`: the server answers 100 as it hands the request to its handler, so the
      // client knows the slow response is being waited for (no sleep that a loaded machine outlasts).
      const expectContinue = { headers: { Expect: '100-continue' } };
      await new Promise<void>((resolve) => {
        const req = httpRequest(slow, expectContinue, () => undefined);
        req.on('error', () => resolve());
        req.on('continue', () => {
          req.destroy();
          resolve();
        });
        req.end();
      });
      await expect.poll(() => web.log.length, { timeout: 15_000 }).toBe(1);
      expect(web.log[0]).toMatchObject({ path: '/slow.html', status: 0, bytes: 0 });
      let inHandler!: () => void;
      const waited = new Promise<void>((resolve) => (inHandler = resolve));
      const pending = new Promise<string>((resolve) => {
        const req = httpRequest(slow, expectContinue, (res) => resolve(`status ${res.statusCode}`));
        req.on('error', (error: NodeJS.ErrnoException) => resolve(`error ${error.code}`));
        req.on('continue', () => inHandler());
        req.end();
      });
      await waited;
      await web.close();
      // Closed while the response was still being delayed: it was never sent, and the client was cut off.
      expect(await pending).toBe('error ECONNRESET');
      await expect.poll(() => web.log.length, { timeout: 15_000 }).toBe(2);
      expect(web.log[1]).toMatchObject({ path: '/slow.html', status: 0, bytes: 0 });
    } finally {
      await web.close();
    }
  });

  it('rejects invalid options with a RangeError naming the option', async () => {
    await expect(startTestWeb({ pagesPerHost: 0 })).rejects.toThrow(/pagesPerHost/);
    await expect(startTestWeb({ hosts: 250 })).rejects.toThrow(/hosts/);
    await expect(startTestWeb({ port: 70_000 })).rejects.toThrow(/port/);
  });
});

describe('determinism', () => {
  it('serves the same bytes and ETags for the same URL and options across instances', async () => {
    // A client per instance: connections kept alive to the first instance die with it.
    const etags = async (web: TestWeb, urls: readonly string[]): Promise<string[]> => {
      const dispatcher = new Agent();
      try {
        const out: string[] = [];
        for (const url of urls) out.push(`${header(await get(url, { dispatcher }), 'etag')}`);
        return out;
      } finally {
        await dispatcher.close();
      }
    };
    const first = await startTestWeb({ pagesPerHost: 12 });
    const urls = [...first.model.reachable({ seeds: first.seeds, inScope: () => true, maxDepth: 2 }).keys()].filter((url) => !url.endsWith('/slow.html'));
    expect(urls.length).toBeGreaterThan(30);
    const before = await etags(first, urls);
    await first.close();
    const second = await startTestWeb({ pagesPerHost: 12, port: first.port });
    try {
      expect(await etags(second, urls)).toEqual(before);
    } finally {
      await second.close();
    }
  });

  it('builds a graph whose links all land on existing pages, for any size (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 1, max: 4 }), fc.constantFrom('full' as const, 'bench' as const), (pagesPerHost, hosts, profile) => {
        const web = buildWeb(planHosts({ normalHosts: hosts, profile }), 8080, { profile, pagesPerHost, slowMs: 0, crawlDelaySeconds: 1 });
        const model = createSiteModel(web);
        const origins = web.hosts.filter((host) => host.plan.kind.kind === 'normal').map((host) => host.origin);
        const seeds = [`${origins[0]}/index.html`];
        const reach = model.reachable({ seeds, inScope: (url) => origins.some((origin) => url.startsWith(`${origin}/`)), maxDepth: 100 });
        const generated = [...reach.keys()].filter((url) => url.endsWith('/index.html') || url.includes('/section-'));
        expect(generated).toHaveLength(pagesPerHost * hosts);
        for (const url of generated) {
          for (const link of model.page(url)?.links ?? []) {
            // The main index also links to the redirect chain and error pages on purpose.
            if (/\/(index\.html|section-\d+\/page-\d+\.html)$/.test(link.url)) expect(model.page(link.url)?.status, link.url).toBe(200);
            else expect(url).toBe(seeds[0]);
          }
        }
      }),
      { numRuns: 20 },
    );
  });

  it('canonicalizes URLs as the crawler does', () => {
    expect(canonicalUrl('HTTP://127.0.0.2:80/a/./b/../c')).toBe('http://127.0.0.2/a/c');
    expect(canonicalUrl('http://127.0.0.2:8080')).toBe('http://127.0.0.2:8080/');
    expect(canonicalUrl('http://127.0.0.2/%7euser/p%61ge%2f%3a')).toBe('http://127.0.0.2/~user/page%2F%3A');
    expect(canonicalUrl('http://127.0.0.2/q?b=%7e&a=1#frag')).toBe('http://127.0.0.2/q?b=%7e&a=1');
    expect(canonicalUrl('http://127.0.0.2/q?#frag')).toBe('http://127.0.0.2/q?');
    expect(canonicalUrl('//127.0.0.3:9/x', 'http://127.0.0.2:9/y')).toBe('http://127.0.0.3:9/x');
    expect(canonicalUrl('mailto:a@b')).toBeNull();
    expect(canonicalUrl('javascript:void(0)', 'http://127.0.0.2/')).toBeNull();
  });
});

describe('CLI', () => {
  const cli = new URL('../../dist/scripts/test-web.js', import.meta.url);
  it.skipIf(!existsSync(cli))('prints one JSON line with port, seeds and origins, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, [cli.pathname, '--pages-per-host', '5', '--hosts', '2', '--profile', 'bench'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const line = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(out.slice(0, out.indexOf('\n')));
      });
      child.once('exit', (code) => reject(new Error(`CLI exited early with ${code}`)));
    });
    const info = JSON.parse(line) as { port: number; seeds: string[]; origins: string[] };
    expect(info.origins).toEqual([`http://127.0.0.2:${info.port}`, `http://127.0.0.3:${info.port}`]);
    expect((await get(info.seeds[0] ?? '')).status).toBe(200);
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
