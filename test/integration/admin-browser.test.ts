/**
 * The admin page in a real browser: Debian's chromium driven by playwright-core against a real
 * `petrel start` child process (queue server and two fetcher processes) crawling the test web.
 * A person's session: log in, start a crawl from the form, watch the counters and the fetcher table
 * move by themselves, pause and resume, and see a page title carrying markup shown as text, with
 * nothing of it run. Screenshots of the page mid-crawl (desktop and phone width) go to a temporary
 * directory, or to docs/ (the README shows them) with PETREL_UPDATE_SCREENSHOTS=1.
 * Skipped where /usr/bin/chromium is missing (.ci/run installs it).
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { EVIL_TITLE } from '../../scripts/test-web/main-extras.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

/** The `started` event, or an error with the child's stderr if it exits first. */
function startedOrExit(child: ReturnType<typeof startPetrel>): Promise<Record<string, unknown>> {
  const exit = child.output.then((finished): never => {
    throw new Error(`petrel start exited (${finished.code ?? finished.signal}) before starting: ${finished.stderr.slice(0, 2000)}`);
  });
  return Promise.race([waitForEvent(child, 'started'), exit]);
}

const CHROMIUM = '/usr/bin/chromium';
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
/** Refreshing the README's screenshots is a choice, so that a test run leaves the work tree as it was. */
const UPDATE_SCREENSHOTS = process.env.PETREL_UPDATE_SCREENSHOTS === '1';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** The number a counter shows ("1,234" -> 1234; "–" -> NaN). */
async function counter(page: Page, id: string): Promise<number> {
  return Number((await page.locator(`#${id}`).textContent())!.replace(/,/g, ''));
}

/** How long the page may take to show a change: long enough only to stop a hung test (vitest's default is 1 s). */
const UPDATE_WAIT = { timeout: 15_000 };

async function waitForCounterAbove(page: Page, id: string, value: number, timeout = 15_000): Promise<number> {
  await page.waitForFunction(
    ([selector, min]) => {
      const text = (globalThis as unknown as { document: { querySelector(s: string): { textContent: string } | null } }).document.querySelector(selector as string)?.textContent ?? '';
      return Number(text.replace(/,/g, '')) > (min as number);
    },
    [`#${id}`, value] as const,
    { timeout },
  );
  return counter(page, id);
}

describe.skipIf(!existsSync(CHROMIUM))('the admin page in chromium, against petrel start with two fetchers', () => {
  let web: TestWeb;
  let dataDir: string;
  let profileDir: string;
  let petrel: ReturnType<typeof startPetrel>;
  let adminUrl: string;
  let adminToken: string;
  let context: BrowserContext;

  beforeAll(async () => {
    assertBuilt();
    // 120 pages on the main host: enough for a crawl of a few seconds at a 50 ms delay.
    web = await startTestWeb({ pagesPerHost: 120, hosts: 2, slowMs: 200 });
    dataDir = tempDir('admin-browser');
    // Slots of 8 URLs: a pause takes effect (leases out drain) within a second.
    petrel = startPetrel(['start', '--data', dataDir, '--fetchers', '2', '--port', '0', '--slot-urls', '8']);
    const started = await startedOrExit(petrel);
    adminUrl = String(started.adminUrl);
    adminToken = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    profileDir = await mkdtemp(join(tmpdir(), 'petrel-pw-profile-'));
    context = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, viewport: { width: 1280, height: 900 }, args: LAUNCH_ARGS });
  });

  afterAll(async () => {
    killStartedPetrels();
    await context?.close();
    if (petrel !== undefined && petrel.exitCode === null) {
      petrel.kill('SIGTERM');
      await petrel.output;
    }
    await web?.close();
    for (const dir of [profileDir, dataDir]) if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('prints where the admin page and its token are', async () => {
    expect(adminUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/admin$/);
    expect(adminToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('logs in, starts a crawl from the form, shows it live, pauses and resumes, and shows an evil title as text', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));

    // Without a session the page is the login form; a wrong token is refused.
    await page.goto(adminUrl);
    expect(new URL(page.url()).pathname).toBe('/admin/login');
    await page.fill('#token', 'wrong-token-0123456789');
    await page.click('button[type=submit]');
    await page.locator('.notice-error').waitFor();
    await page.fill('#token', adminToken);
    await Promise.all([page.waitForURL(adminUrl), page.click('button[type=submit]')]);
    // From here on, nothing may fail in the page: no script error, no refused resource (CSP), no 4xx.
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
    });
    await page.locator('#connection[data-live="true"]').waitFor();
    await expect.poll(() => page.locator('#state').textContent(), UPDATE_WAIT).toBe('idle');

    // Watch for the evil title being put into the recent-fetches table (it scrolls out again later).
    await page.evaluate((title) => {
      const g = globalThis as unknown as { __evilShown?: boolean; document: { getElementById(id: string): unknown }; MutationObserver: new (cb: () => void) => { observe(node: unknown, options: object): void } };
      const table = g.document.getElementById('recent') as { querySelectorAll(s: string): { textContent: string }[] };
      new g.MutationObserver(() => {
        for (const cell of table.querySelectorAll('.title')) if (cell.textContent === title) g.__evilShown = true;
      }).observe(table, { childList: true, subtree: true });
    }, EVIL_TITLE);

    // Start a crawl of the test web's main host from the form.
    await page.fill('#f-seeds', `${web.hostByRole.main}/index.html`);
    await page.selectOption('#f-scope', 'host');
    await page.fill('#f-maxDepth', '4');
    await page.fill('#f-delayMs', '50');
    await page.fill('#f-hostConcurrency', '2');
    await page.click('#btn-crawl');
    await expect.poll(() => page.locator('#crawl-message').textContent(), UPDATE_WAIT).toContain('Crawl started');

    // The counters move by themselves (server push), more than once.
    const first = await waitForCounterAbove(page, 'c-pagesFetched', 0);
    const second = await waitForCounterAbove(page, 'c-pagesFetched', first);
    expect(second).toBeGreaterThan(first);
    expect(await counter(page, 'c-urlsDiscovered')).toBeGreaterThan(1);

    // Both fetchers appear in the table, and its figures change while we watch.
    const rows = page.locator('#fetchers tbody tr:not(.empty)');
    await expect.poll(() => rows.count(), { timeout: 10_000 }).toBe(2);
    expect(await rows.allTextContents()).toEqual([expect.stringContaining('local-1'), expect.stringContaining('local-2')]);
    const fetchedCells = () => page.locator('#fetchers tbody tr td:nth-child(6)').allTextContents();
    const before = await fetchedCells();
    await expect.poll(fetchedCells, { timeout: 10_000 }).not.toEqual(before);

    // Screenshots mid-crawl: the whole page at desktop width, the first screen at phone width.
    const shots = UPDATE_SCREENSHOTS ? DOCS : join(dataDir, 'screenshots');
    mkdirSync(shots, { recursive: true });
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 375, height: 812 });
    await phone.goto(adminUrl);
    await phone.locator('#connection[data-live="true"]').waitFor();
    await phone.locator('#fetchers tbody tr:not(.empty)').first().waitFor();
    // Nothing wider than the phone's screen but the tables, which scroll inside their cards.
    const overflow = await phone.evaluate(() => {
      const d = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
      return d.scrollWidth - d.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
    await phone.screenshot({ path: join(shots, 'admin-phone.png') });
    await phone.close();
    // A little further into the crawl, so the chart has a curve to show.
    await waitForCounterAbove(page, 'c-pagesFetched', 30);
    // The page is cross-origin isolated (COOP + COEP) and its chart, uPlot from this origin, still draws.
    expect(await page.evaluate(() => (globalThis as unknown as { crossOriginIsolated: boolean }).crossOriginIsolated)).toBe(true);
    expect(await page.locator('#rate-chart canvas').count()).toBeGreaterThan(0);
    await page.screenshot({ path: join(shots, 'admin.png'), fullPage: true });
    expect(readFileSync(join(shots, 'admin.png')).subarray(1, 4).toString()).toBe('PNG');

    // Pause: the state says so, leases out drain, then the counters stand still.
    await page.click('#btn-pause');
    await expect.poll(() => page.locator('#state').textContent(), UPDATE_WAIT).toBe('paused');
    await expect.poll(() => counter(page, 'c-itemsLeased'), { timeout: 15_000 }).toBe(0);
    const paused = await counter(page, 'c-pagesFetched');
    await page.waitForTimeout(800);
    expect(await counter(page, 'c-pagesFetched')).toBe(paused);
    expect(await page.locator('#btn-resume').isEnabled()).toBe(true);
    expect(await page.locator('#btn-pause').isEnabled()).toBe(false);

    // Resume: fetching goes on.
    await page.click('#btn-resume');
    await expect.poll(() => page.locator('#state').textContent(), UPDATE_WAIT).not.toBe('paused');
    await waitForCounterAbove(page, 'c-pagesFetched', paused);

    // The evil title was shown, as text, and none of it ran.
    await page.waitForFunction(() => (globalThis as unknown as { __evilShown?: boolean }).__evilShown === true, undefined, { timeout: 20_000 });
    const pwned = await page.evaluate(() => (globalThis as unknown as { __pwned?: unknown }).__pwned);
    expect(pwned).toBeUndefined();
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.locator('#recent script').count()).toBe(0);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('shows the cached copy of the evil page with its banner, sandboxed: none of its script runs, no cookie or admin data reachable', async () => {
    const evilUrl = `${web.hostByRole.main}/evil.html`;
    const cacheUrl = `${adminUrl}/cache?url=${encodeURIComponent(evilUrl)}`;
    // The admin page links fetched pages to their cached copies.
    const admin = await context.newPage();
    await admin.goto(adminUrl);
    await admin.locator('#connection[data-live="true"]').waitFor();
    const link = admin.locator('#recent a.cached').first();
    await link.waitFor(UPDATE_WAIT);
    expect(await link.getAttribute('href')).toMatch(/^\/admin\/cache\?url=http%3A%2F%2F127\.0\.0\./);
    await admin.close();

    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    const response = await page.goto(cacheUrl);
    expect(response?.status()).toBe(200);
    const policy = (await response!.allHeaders())['content-security-policy'] ?? '';
    expect(policy.split(';').map((d) => d.trim())).toEqual(expect.arrayContaining(['sandbox', "default-src 'none'"]));
    expect(policy).not.toContain('allow-same-origin');
    expect(policy).not.toContain('allow-scripts');
    // Shown: the banner says what it is and when it was fetched, the page follows with its title as text.
    const banner = (await page.locator('#petrel-cached-copy').textContent())!;
    expect(banner).toContain(`cached copy of ${evilUrl}, fetched 20`);
    expect(banner).toContain('HTTP 200');
    expect(await page.title()).toBe(EVIL_TITLE);
    expect(await page.locator('main h1').count()).toBe(1);
    // Nothing ran: not the page's script, not its event handlers, not the SVG's script, not the frame's.
    await page.waitForTimeout(500);
    const traces = await page.evaluate(() => {
      const g = globalThis as unknown as Record<string, unknown> & { origin: string; document: { cookie: string } };
      let cookie: string;
      try {
        cookie = g.document.cookie;
      } catch (error) {
        cookie = `threw ${(error as Error).name}`;
      }
      return { pwned: g.__pwned ?? null, stolen: g.__stolen ?? null, leak: g.__leak ?? null, origin: g.origin, cookie };
    });
    expect(traces).toMatchObject({ pwned: null, stolen: null, leak: null, origin: 'null' });
    expect(traces.cookie).not.toContain('petrel_admin');
    // The page's opaque origin reaches nothing of the admin origin, even from script run through the debugger.
    const reach = await page.evaluate(async () => {
      try {
        const answer = await fetch('/admin/api/status', { credentials: 'include' });
        return `${answer.status} ${(await answer.text()).slice(0, 200)}`;
      } catch (error) {
        return `refused: ${(error as Error).name}`;
      }
    });
    expect(reach).toMatch(/^refused/);
    // Its form cannot be sent (sandbox without allow-forms): the crawl keeps running.
    await page.click('#evil-submit').catch(() => undefined);
    await page.waitForTimeout(300);
    const status = (await (await fetch(adminUrl.replace(/\/admin$/, '/api/status'), { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { control: { stopped?: boolean } | string };
    expect(JSON.stringify(status.control)).not.toContain('stopped');
    expect(problems).toEqual([]);
    await page.close();

    // Without a session there is no cached copy, only the login form.
    const stranger = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    try {
      const other = await stranger.newPage();
      await other.goto(cacheUrl);
      expect(new URL(other.url()).pathname).toBe('/admin/login');
    } finally {
      await stranger.close();
    }
  });

  it('stopped and started again, continues the known URLs, with the counters and the clock of the new crawl', async () => {
    const page = await context.newPage();
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(adminUrl);
    await page.locator('#connection[data-live="true"]').waitFor();
    const status = async () => (await (await fetch(adminUrl.replace(/\/admin$/, '/api/status'), { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { urlsByStatus: Record<string, number>; displayState: string; pagesFetched: number; elapsedMs: number; itemsLeased: number };

    // The crawl of the test before may still run: stop it, then start one of the second host, slowly.
    const second = `${web.origins[1]}/index.html`;
    // Asked of the API, not the page: the page may not show its first status yet, and a crawl left
    // running would deliver results for its host while the next crawl runs.
    const previous = await status();
    if (previous.displayState !== 'idle' && previous.displayState !== 'stopped') {
      await page.click('#btn-stop');
      await expect.poll(async () => (await status()).itemsLeased, { timeout: 15_000 }).toBe(0);
    }
    // URLs of the first host left unfetched: outside the second crawl's scope, they stay so.
    const otherHostUnfetched = (await status()).urlsByStatus.unfetched!;
    await page.fill('#f-seeds', second);
    await page.fill('#f-delayMs', '300');
    await page.click('#btn-crawl');
    await expect.poll(() => page.locator('#crawl-message').textContent()).toContain('Crawl started');
    // The page may still show the crawl before's counter: wait until this crawl has fetched some pages.
    await expect.poll(async () => (await status()).pagesFetched, { timeout: 30_000 }).toBeGreaterThan(3);
    await waitForCounterAbove(page, 'c-pagesFetched', 3);

    // Stop mid-crawl: queued URLs are dropped, but stay known; once the leases are in, nothing is fetched.
    await page.click('#btn-stop');
    await expect.poll(() => page.locator('#control-message').textContent()).toMatch(/^Stopped: [\d,]+ queued URLs dropped \(they stay known: starting a crawl continues them\)\.$/);
    await expect.poll(() => counter(page, 'c-itemsLeased'), { timeout: 15_000 }).toBe(0);
    await expect.poll(() => page.locator('#c-rateNow').textContent(), { timeout: 10_000 }).toBe('0.0');
    const before = await counter(page, 'c-pagesFetched');
    expect(before).toBeGreaterThan(3);
    expect((await status()).urlsByStatus.unfetched).toBeGreaterThan(otherHostUnfetched);

    // Start the same crawl again: it picks up the known, unfetched URLs and runs to its end.
    await page.evaluate(() => {
      const g = globalThis as unknown as { __lowest?: number; document: { getElementById(id: string): { textContent: string } }; MutationObserver: new (cb: () => void) => { observe(node: unknown, options: object): void } };
      const cell = g.document.getElementById('c-pagesFetched');
      new g.MutationObserver(() => {
        const value = Number(cell.textContent.replace(/,/g, ''));
        if (Number.isFinite(value)) g.__lowest = Math.min(g.__lowest ?? Infinity, value);
      }).observe(cell, { childList: true, characterData: true, subtree: true });
    });
    await page.fill('#f-seeds', second);
    await page.fill('#f-delayMs', '20');
    const startedAt = Date.now();
    await page.click('#btn-crawl');
    await expect.poll(() => page.locator('#crawl-message').textContent()).toMatch(/^Crawl started \(running\): [\d,]+ URLs queued, the seeds and the known URLs in its scope not fetched yet/);
    await expect.poll(() => page.locator('#state').textContent(), { timeout: 60_000 }).toBe('idle');
    const end = await status();
    expect(end.urlsByStatus.unfetched).toBe(otherHostUnfetched);
    // The counters and the clock are the new crawl's: they started from zero at Start, not at the daemon's start.
    const lowest = await page.evaluate(() => (globalThis as unknown as { __lowest?: number }).__lowest);
    expect(lowest).toBeLessThan(before);
    expect(end.elapsedMs).toBeLessThanOrEqual(Date.now() - startedAt);
    const header = (await page.locator('#elapsed').textContent())!;
    const match = /^(?:(\d+)m )?(\d+)s elapsed · avg ([\d.]+) pages\/s$/.exec(header);
    expect(match, header).not.toBeNull();
    const shownSeconds = Number(match![1] ?? 0) * 60 + Number(match![2]);
    expect(shownSeconds).toBeLessThanOrEqual(Math.ceil((Date.now() - startedAt) / 1000));

    // Inject: a URL outside the scope is refused with the reason, and is not listed as a seed.
    const outside = 'http://127.0.0.1:9/elsewhere.html';
    await page.fill('#f-urls', outside);
    await page.click('#btn-inject');
    await expect.poll(() => page.locator('#inject-message').textContent()).toContain(`0 admitted; refused: ${outside}: outside the crawl's scope (host of ${second})`);
    await page.waitForTimeout(500);
    expect(await page.locator('#seeds li').allTextContents()).toEqual([second]);
    await page.close();
  });

  it('puts the controls and the start form first on a phone', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 375, height: 812 });
    await phone.goto(adminUrl);
    await phone.locator('#connection[data-live="true"]').waitFor();
    const controls = (await phone.locator('#h-controls').boundingBox())!;
    const counters = (await phone.locator('#h-counters').boundingBox())!;
    const form = (await phone.locator('#crawl-form h3').boundingBox())!;
    expect(controls.y).toBeLessThan(counters.y);
    // The start form begins on the first screen.
    expect(form.y + form.height).toBeLessThan(812);
    await phone.close();
  });
});
