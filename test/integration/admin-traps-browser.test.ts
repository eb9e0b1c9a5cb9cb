/**
 * What the admin page says about a site owner's defences, in a real browser (Debian's chromium driven
 * by playwright-core) against a real `petrel queue-server` and `petrel fetcher` crawling the test web's
 * hostile host and its hanging host: the infinite space found, with the rule that found it (the tarpit
 * by fan-out), and the host backed off, with why. Skipped where /usr/bin/chromium is missing (.ci/run
 * installs it).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HANGING_PAGES } from '../../scripts/test-web/hostile/hanging.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

describe.skipIf(!existsSync(CHROMIUM))('the admin page shows trap shapes and backed-off hosts, and why', () => {
  let web: TestWeb;
  let context: BrowserContext;
  let profileDir: string;
  let adminUrl: string;
  let adminToken: string;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 5 });
    const seeds = [`${web.hostile.origin}/stories/1.html`, ...HANGING_PAGES.map((path) => `${web.hanging.origin}${path}`)].flatMap((seed) => ['--seed', seed]);
    // Continuous mode: the crawl (and what the page shows of it) stays up while the browser looks.
    // Scope prefix keeps the crawl in /stories/ of the hostile host (and the hanging host's root): with
    // scope host it also walked the hostile host's slow pages first, and the tarpit's shape took 19 s to show.
    const server = startPetrel(['queue-server', '--data', join(tempDir('admin-traps'), 'data'), '--port', '0', ...seeds, '--scope', 'prefix', '--delay-ms', '0', '--retry-base-ms', '30s']);
    const listening = await waitForEvent(server, 'listening');
    startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--concurrency', '4', '--timeout-ms', '1000']);
    adminUrl = `${String(listening.url)}/admin`;
    adminToken = readFileSync(String(listening.adminTokenFile), 'utf8').trim();
    profileDir = mkdtempSync(join(tmpdir(), 'petrel-pw-traps-'));
    context = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
  });

  afterAll(async () => {
    killStartedPetrels();
    await context?.close();
    await web?.close();
    if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true });
  });

  it('names the tarpit shape, the fan-out rule and its figures, and the hanging host backed off for timeouts', async () => {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(adminUrl);
    await page.fill('#token', adminToken);
    await Promise.all([page.waitForURL(adminUrl), page.click('button[type=submit]')]);
    // What the page shows, with its connection state and any script error after it: when the poll
    // times out, its message says whether the page stopped hearing the stream or stopped rendering it.
    const connection = page.locator('#connection');
    const shown = async (section: string) => `${(await page.locator(section).textContent()) ?? ''} [connection: ${await connection.textContent()}${problems.length > 0 ? `; page errors: ${problems.join(' | ')}` : ''}]`;
    const traps = page.locator('#trap-shapes');
    await expect.poll(() => shown('#trap-shapes'), { timeout: 60_000, interval: 250 }).toContain('/stories/{n}.html');
    const text = (await traps.textContent()) ?? '';
    expect(text).toMatch(/links lead only to new URLs of it: \d+ of 40 pages, [\d,]+ new URLs of it, \d+ elsewhere, [\d,]+ URLs refused/);
    const hanging = new URL(web.hanging.origin).host;
    const backedOff = page.locator('#backed-off');
    await expect.poll(() => shown('#backed-off'), { timeout: 60_000, interval: 250 }).toContain(hanging);
    expect(await backedOff.textContent()).toMatch(/timeout \d+ times in a row: backed off until/);
    expect(problems).toEqual([]);
  }, 120_000);
});
