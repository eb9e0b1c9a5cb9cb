/**
 * The search page and API of a real `petrel queue-server` over a crawled data directory: /search in
 * Debian's chromium (driven by playwright-core) with JavaScript off and on: the GET form works, results
 * are shown, and a page whose title and text carry markup and script shows them as text and runs
 * nothing. Then the same data directory without --public-search: /search sends browsers to the admin
 * session, /api/search wants the admin token, and bad queries get their 400s. Results the web archive
 * holds link their cached copies: /cache beside the public search (sandboxed), /admin/cache otherwise.
 * The browser part is skipped where /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { EVIL_TEXT, EVIL_TITLE } from '../../scripts/test-web/main-extras.js';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe('the search page and API of a queue server', () => {
  let web: TestWeb;
  let dataDir: string;

  const serve = async (extra: string[]) => {
    const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0', ...extra]);
    const listening = await waitForEvent(server, 'listening');
    return { server, url: String(listening.url), adminToken: readFileSync(join(dataDir, 'admin.token'), 'utf8').trim() };
  };
  const stop = async (server: ReturnType<typeof startPetrel>) => {
    server.kill('SIGTERM');
    await server.output;
  };

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 20, hosts: 1 });
    dataDir = join(tempDir('search-page'), 'data');
    const crawl = await runPetrel(['crawl', '--seed', `${web.hostByRole.main}/index.html`, '--data', dataDir, '--scope', 'host', '--max-depth', '2', '--delay-ms', '0', '--max-retries', '0', '--no-progress']);
    expect(crawl.code, crawl.stderr).toBe(0);
  }, 120_000);

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it.skipIf(!existsSync(CHROMIUM))('with --public-search: the form works with JavaScript off, results show, markup in titles and text is shown as text and nothing runs', async () => {
    const { server, url } = await serve(['--public-search']);
    const profileDir = await mkdtemp(join(tmpdir(), 'petrel-pw-search-'));
    let context: BrowserContext | undefined;
    try {
      for (const javaScriptEnabled of [false, true]) {
        context = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, javaScriptEnabled, args: LAUNCH_ARGS });
        const page = await context.newPage();
        const problems: string[] = [];
        page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
        page.on('console', (message) => problems.push(`console ${message.type()}: ${message.text()}`));
        await page.goto(`${url}/search`);
        await page.fill('input[name=q]', 'onerror');
        await Promise.all([page.waitForURL(/\/search\?q=onerror$/), page.click('button[type=submit]')]);
        // Both pages carry "onerror": /evil.html in its title, /markup/text.html in its text.
        const titles = await page.locator('ol.results h2').allTextContents();
        expect(titles, `javaScriptEnabled ${javaScriptEnabled}`).toContain(EVIL_TITLE);
        const snippets = (await page.locator('ol.results .snippet').allTextContents()).join('\n');
        expect(snippets).toContain('<script>window.__pwned=3</script>');
        expect(snippets).toContain('<img src=x onerror="window.__pwned=4">');
        expect(await page.locator('ol.results mark').count()).toBeGreaterThan(0);
        // Nothing of it became an element, nothing ran.
        expect(await page.locator('main script, main img, main b').count()).toBe(0);
        if (javaScriptEnabled) expect(await page.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
        expect(await page.locator('.summary').textContent()).toMatch(/^Results 1-2 of 2 \(/);
        // Each result the archive holds links its cached copy, public beside the public search, sandboxed.
        const evilUrl = `${web.hostByRole.main}/evil.html`;
        const cachedLinks = await page.locator('ol.results a.cached').evaluateAll((links) => links.map((link) => link.getAttribute('href')));
        expect(cachedLinks).toContain(`/cache?url=${encodeURIComponent(evilUrl)}`);
        const copy = await context.newPage();
        copy.on('pageerror', (error) => problems.push(`cached copy page error: ${error.message}`));
        const response = await copy.goto(`${url}/cache?url=${encodeURIComponent(evilUrl)}`);
        expect(response!.status()).toBe(200);
        expect(response!.headers()['content-security-policy']).toMatch(/sandbox/);
        expect(await copy.locator('#petrel-cached-copy').textContent()).toContain(`cached copy of ${evilUrl}, fetched 20`);
        if (javaScriptEnabled) expect(await copy.evaluate(() => (globalThis as { __pwned?: unknown }).__pwned)).toBeUndefined();
        await copy.close();
        // A second search from the results page, words found in the text of the test web's pages.
        await page.fill('input[name=q]', 'zygomorphic orchid');
        await Promise.all([page.waitForURL(/q=zygomorphic\+orchid$/), page.click('button[type=submit]')]);
        expect(await page.locator('ol.results li .url').allTextContents()).toEqual([`${web.hostByRole.main}/markup/text.html`]);
        expect(EVIL_TEXT.startsWith('Zygomorphic')).toBe(true);
        expect(problems).toEqual([]);
        await context.close();
        context = undefined;
      }
    } finally {
      await context?.close();
      rmSync(profileDir, { recursive: true, force: true });
      await stop(server);
    }
  }, 120_000);

  it('with --public-search: /cache shows only the copies of pages the search finds, none of a page that asks not to be archived; the operator sees them all', async () => {
    const { server, url, adminToken } = await serve(['--public-search']);
    try {
      const main = web.hostByRole.main;
      const publicCopy = async (page: string) => {
        const res = await fetch(`${url}/cache?url=${encodeURIComponent(`${main}${page}`)}`);
        return { status: res.status, text: await res.text() };
      };
      // A page the search finds: its copy, sandboxed.
      const shown = await publicCopy('/markup/text.html');
      expect(shown.status).toBe(200);
      // The admin page's security headers, the copy's sandbox as its policy.
      const headers = (await fetch(`${url}/cache?url=${encodeURIComponent(`${main}/markup/text.html`)}`)).headers;
      expect(headers.get('content-security-policy')).toMatch(/^sandbox/);
      expect(headers.get('referrer-policy')).toBe('no-referrer');
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('cross-origin-opener-policy')).toBe('same-origin');
      expect(shown.text).toContain(`Petrel's cached copy</strong> of <a href="${main}/markup/text.html"`);
      // Fetched and archived, but not a page the search finds (noindex by meta or header, an error page),
      // or asking not to be archived (meta or X-Robots-Tag for petrel), or never fetched: all the same 404.
      for (const page of ['/meta/noindex-nofollow.html', '/meta/x-robots-none.html', '/errors/404.html', '/meta/noarchive.html', '/meta/x-robots-noarchive.html', '/never-linked.html']) {
        const refused = await publicCopy(page);
        expect(refused.status, page).toBe(404);
        expect(refused.text, page).toContain('No public cached copy of');
        expect(refused.text, page).not.toContain("Petrel's cached copy");
      }
      // The noarchive pages are indexed all the same: the search finds them, by their titles.
      const found = (await (await fetch(`${url}/api/search?q=${encodeURIComponent('robots noarchive')}`)).json()) as { results: Array<{ url: string; cached: boolean }> };
      expect(found.results.map((r) => r.url).sort()).toEqual([`${main}/meta/noarchive.html`, `${main}/meta/x-robots-noarchive.html`]);
      // ... and the public search links no cached copy for them: the link would answer 404.
      expect(found.results.map((r) => r.cached)).toEqual([false, false]);
      const page = await (await fetch(`${url}/search?q=${encodeURIComponent('robots noarchive')}`)).text();
      expect(page).toContain('/meta/noarchive.html');
      expect(page).not.toContain('class="cached"');
      const withCopy = (await (await fetch(`${url}/api/search?q=onerror`)).json()) as { results: Array<{ cached: boolean }> };
      expect(withCopy.results.length).toBeGreaterThan(0);
      expect(withCopy.results.every((r) => r.cached)).toBe(true);
      // The crawl's operator sees every capture, the banner saying what the page asked.
      const login = await fetch(`${url}/admin/login`, { method: 'POST', redirect: 'manual', headers: { origin: url, 'content-type': 'application/x-www-form-urlencoded' }, body: `token=${encodeURIComponent(adminToken)}` });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';', 1)[0]!;
      for (const page of ['/meta/noarchive.html', '/meta/x-robots-noarchive.html', '/meta/noindex-nofollow.html']) {
        const res = await fetch(`${url}/admin/cache?url=${encodeURIComponent(`${main}${page}`)}`, { headers: { cookie } });
        expect(res.status, page).toBe(200);
        const text = await res.text();
        expect(text, page).toContain(`Petrel's cached copy</strong> of <a href="${main}${page}"`);
        expect(text.includes('The page asks not to be archived (noarchive)'), page).toBe(page.includes('noarchive'));
      }
    } finally {
      await stop(server);
    }
  }, 60_000);

  it('the HTML page honours limit, says a bad parameter on the page (not in JSON), and says when an offset is past the last result', async () => {
    const { server, url } = await serve(['--public-search']);
    try {
      const page = async (query: string) => {
        const res = await fetch(`${url}/search?${query}`);
        return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
      };
      const all = (await (await fetch(`${url}/api/search?q=${encodeURIComponent(`site:${new URL(web.hostByRole.main).hostname}`)}&limit=100`)).json()) as { total: number };
      expect(all.total).toBeGreaterThan(6);
      const q = encodeURIComponent(`site:${new URL(web.hostByRole.main).hostname}`);
      const limited = await page(`q=${q}&limit=3&offset=3`);
      expect(limited.status).toBe(200);
      expect(limited.text).toContain(`Results 4-6 of ${all.total}`);
      expect(limited.text.match(/<li>/g)?.length).toBe(3);
      // The next and previous pages keep the limit.
      expect(limited.text).toContain(`?q=${q}&amp;limit=3&amp;offset=6">Next</a>`);
      expect(limited.text).toContain(`?q=${q}&amp;limit=3&amp;offset=0">Previous</a>`);
      // ... and so does a new search from its form.
      expect(limited.text).toContain('<input type="hidden" name="limit" value="3">');
      expect((await page(`q=${q}`)).text).not.toContain('name="limit"');
      // Text from the web is isolated for bidi (a U+202E in a title reorders nothing around it).
      expect(limited.text).toMatch(/<h2><bdi><a href="http[^"]+" rel="noreferrer">[^<]*<\/a><\/bdi><\/h2><div class="url"><bdi>http/);
      for (const bad of ['limit=0', 'limit=101', 'offset=99999', 'limit=x']) {
        const refused = await page(`q=kelp&${bad}`);
        expect(refused.status, bad).toBe(400);
        expect(refused.type, bad).toMatch(/^text\/html/);
        expect(refused.text, bad).toMatch(/<p class="problem" role="alert">(limit|offset) must be a whole number/);
      }
      const past = await page(`q=${q}&offset=${all.total + 5}`);
      expect(past.status).toBe(200);
      expect(past.text).toContain(`No results this far: ${all.total} in all`);
      expect(past.text).toContain('>First results</a>');
    } finally {
      await stop(server);
    }
  }, 60_000);

  it('petrel search takes a query that starts with an exclusion, refuses a misspelled option, and says when --offset is past the last result', async () => {
    const hosts = new URL(web.hostByRole.main).hostname;
    const excluded = await runPetrel(['search', '--data', dataDir, '--json', `-zygomorphic site:${hosts}`]);
    expect(excluded.code, excluded.stderr).toBe(0);
    const both = await runPetrel(['search', '--data', dataDir, '--json', `site:${hosts}`]);
    const withWord = await runPetrel(['search', '--data', dataDir, '--json', `zygomorphic site:${hosts}`]);
    const total = (run: { stdout: string }) => (JSON.parse(run.stdout) as { total: number }).total;
    expect(total(withWord)).toBe(1);
    expect(total(excluded)).toBe(total(both) - 1);
    const typo = await runPetrel(['search', '--data', dataDir, '--lmit', '3', 'kelp']);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/^petrel search: unknown option --lmit/);
    const past = await runPetrel(['search', '--data', dataDir, '--offset', '5000', `site:${hosts}`]);
    expect(past.code, past.stderr).toBe(0);
    expect(past.stdout).toMatch(new RegExp(`^no results past 5000 \\(${total(both)} in all\\) for`));
  }, 60_000);

  it('with --public-search: /api/search answers without a token, at most 60 searches a minute per address', async () => {
    const { server, url } = await serve(['--public-search']);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 61; i++) statuses.push((await fetch(`${url}/api/search?q=kelp`)).status);
      expect(statuses.slice(0, 60).every((status) => status === 200)).toBe(true);
      const limited = await fetch(`${url}/search?q=kelp`);
      expect(statuses[60]).toBe(429);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      // A person gets a page saying so, with the query kept in the form; a program gets JSON.
      expect(limited.headers.get('content-type')).toMatch(/^text\/html/);
      const text = await limited.text();
      expect(text).toMatch(/too many searches from this address: try again in \d+ s/);
      expect(text).toContain('value="kelp"');
      const api = await fetch(`${url}/api/search?q=kelp`);
      expect(api.status).toBe(429);
      expect(((await api.json()) as { error: { code: string } }).error.code).toBe('too-many-searches');
    } finally {
      await stop(server);
    }
  }, 60_000);

  it('without --public-search: /search sends browsers to the admin session, /api/search takes the admin token; bad queries get 400s', async () => {
    const { server, url, adminToken } = await serve([]);
    try {
      const redirect = await fetch(`${url}/search?q=kelp`, { redirect: 'manual' });
      expect(redirect.status).toBe(303);
      expect(redirect.headers.get('location')).toBe('/admin/search?q=kelp');
      const adminPage = await fetch(`${url}/admin/search?q=kelp`, { redirect: 'manual' });
      expect(adminPage.status).toBe(303);
      expect(adminPage.headers.get('location')).toBe('/admin/login');
      expect((await fetch(`${url}/api/search?q=kelp`)).status).toBe(401);
      const auth = { headers: { authorization: `Bearer ${adminToken}` } };
      const ok = await fetch(`${url}/api/search?q=zygomorphic`, auth);
      expect(ok.status).toBe(200);
      const body = (await ok.json()) as { query: string; total: number; results: Array<{ url: string; snippet: string }>; tookMs: number };
      expect(body.total).toBe(1);
      expect(body.results[0]!.url).toBe(`${web.hostByRole.main}/markup/text.html`);
      expect(body.results[0]!.snippet).toContain('&lt;script&gt;');
      // The crawl archived it (WARC is on by default): the result says it has a cached copy.
      expect(body.results[0]).toMatchObject({ cached: true });
      const cacheRedirect = await fetch(`${url}/cache?url=${encodeURIComponent(body.results[0]!.url)}`, { redirect: 'manual' });
      expect(cacheRedirect.status).toBe(303);
      expect(cacheRedirect.headers.get('location')).toBe(`/admin/cache?url=${encodeURIComponent(body.results[0]!.url)}`);
      expect(body.tookMs).toBeGreaterThanOrEqual(0);
      const refused = async (query: string) => {
        const res = await fetch(`${url}/api/search?${query}`, auth);
        const error = ((await res.json()) as { error: { code: string; message: string } }).error;
        return { status: res.status, code: error.code, message: error.message };
      };
      expect(await refused('q=')).toMatchObject({ status: 400, code: 'query-invalid', message: 'the query is empty' });
      expect(await refused(`q=${'a'.repeat(513)}`)).toMatchObject({ status: 400, code: 'query-invalid' });
      expect(await refused(`q=${Array.from({ length: 33 }, (_, i) => `w${i}`).join('+')}`)).toMatchObject({ status: 400, code: 'query-invalid' });
      expect(await refused('q=kelp&limit=101')).toMatchObject({ status: 400, code: 'query-invalid', message: 'limit must be a whole number from 1 to 100' });
      expect(await refused('q=kelp&q=gannet')).toMatchObject({ status: 400, code: 'query-invalid' });
    } finally {
      await stop(server);
    }
  }, 60_000);
});
