/**
 * The admin page while storage fails: `petrel start` under a file size limit (RLIMIT_FSIZE with
 * `prlimit`, as disk-full.test.ts does) starts, crawls until a file reaches the limit, and pauses with
 * EFBIG. The page's header says so ("storage error: EFBIG", the reason on hover) instead of "running".
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, tempDir } from '../support/petrel-process.js';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const PRLIMIT = spawnSync('prlimit', ['--version']).status === 0;

describe.skipIf(!existsSync(CHROMIUM) || !PRLIMIT)('the admin page while storage fails', () => {
  let web: TestWeb | undefined;
  let child: ReturnType<typeof spawn> | undefined;
  afterAll(async () => {
    child?.kill('SIGKILL');
    killStartedPetrels();
    await web?.close();
  });

  it('shows the storage error in its header, not the crawl state', async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 200 });
    const dataDir = join(tempDir('admin-storage'), 'data');
    // 96 KiB per file: enough to start, not to crawl 200 pages of 14 KB (their WARC file outgrows it).
    child = spawn('prlimit', ['--fsize=98304:unlimited', process.execPath, PETREL_BIN, 'start', '--data', dataDir, '--fetchers', '1', '--port', '0', '--seed', `${web.origins[0]}/index.html`, '--delay-ms', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const started = await new Promise<Record<string, unknown>>((resolve, reject) => {
      createInterface({ input: child!.stdout! }).on('line', (line) => {
        try {
          const event = JSON.parse(line) as Record<string, unknown>;
          if (event.event === 'started') resolve(event);
        } catch {
          // not an event
        }
      });
      child!.on('exit', (code, signal) => reject(new Error(`petrel start exited (${code ?? signal}) before starting`)));
    });
    const adminToken = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const context = await chromium.launchPersistentContext(await mkdtemp(join(tmpdir(), 'petrel-pw-profile-')), { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
    try {
      const page = await context.newPage();
      await page.goto(String(started.adminUrl));
      await page.fill('#token', adminToken);
      await Promise.all([page.waitForURL(String(started.adminUrl)), page.click('button[type=submit]')]);
      await expect.poll(() => page.locator('#state').textContent(), { timeout: 60_000 }).toBe('storage error: EFBIG');
      expect(await page.locator('#state').getAttribute('data-state')).toBe('storage-error');
      expect(await page.locator('#state').getAttribute('title')).toMatch(/^EFBIG: .* the crawl is paused \(results refused, no new work\) until a commit succeeds; attempt \d+$/);
    } finally {
      await context.close();
    }
    // Stopped in order, so that it stops its fetcher too (SIGKILL would leave the fetcher to notice alone).
    const exited = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    child = undefined;
  }, 120_000);
});
