/**
 * `petrel status --server URL`, as built, against a real queue server with a fetcher crawling the test
 * web: it prints the admin page's figures (state, counters, the fetcher), takes the admin token from
 * --token-file or PETREL_ADMIN_TOKEN and never prints it, refuses a wrong one (exit 1), has no way to
 * take a token on the command line, and with --watch prints reading after reading.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { readStatus } from '../support/admin-api.js';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('petrel status', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 20, hosts: 1 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('shows the crawl and its fetchers, with the admin token from a file or the environment', async () => {
    const dir = tempDir('status');
    const main = web.hostByRole.main;
    const server = startPetrel(['queue-server', '--data', join(dir, 'data'), '--port', '0', '--seed', `${main}/index.html`, '--scope', 'prefix', '--delay-ms', '0']);
    const listening = await waitForEvent(server, 'listening');
    const url = String(listening.url);
    const adminTokenFile = String(listening.adminTokenFile);
    const adminToken = readFileSync(adminTokenFile, 'utf8').trim();
    // No fetcher yet: no time left is promised for the queued URLs, and the status says what they wait for.
    const unfetched = await runPetrel(['status', '--server', url, '--token-file', adminTokenFile]);
    expect(unfetched.stdout).toMatch(/^ {2}no fetcher alive: the queued URLs wait for one/m);
    expect(unfetched.stdout).not.toContain('left for the queued URLs');
    expect(((await readStatus(url, adminToken)) as { timeLeft?: unknown }).timeLeft).toBeNull();
    const fetcher = startPetrel(['fetcher', '--server', url, '--token-file', String(listening.tokenFile), '--name', 'status-fetcher', '--concurrency', '2']);
    for (let i = 0; i < 300; i++) {
      const status = await readStatus(url, adminToken);
      if (status.displayState === 'idle' && status.pagesFetched > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const { pagesFetched } = await readStatus(url, adminToken);

    const once = await runPetrel(['status', '--server', url, '--token-file', adminTokenFile]);
    expect(once.code).toBe(0);
    // Idle is not "running": the time shown is the crawl's.
    expect(once.stdout).toMatch(new RegExp(`^petrel status of ${url.replace(/[.]/g, '\\.')}: idle, crawl time \\S+$`, 'm'));
    expect(once.stdout).toMatch(new RegExp(`^  fetched ${pagesFetched} \\(`, 'm'));
    expect(once.stdout).toMatch(/^ {4}status-fetcher +127\.0\.0\.1 +alive heard \S+ ago/m);
    // Every URL the crawl database holds, those still in its insert log included.
    const counted = (await readStatus(url, adminToken)) as { urlsByStatus?: Record<string, number> };
    expect(once.stdout).toContain(`  crawl db: ${Object.values(counted.urlsByStatus ?? {}).reduce((sum, count) => sum + count, 0)} URLs,`);
    // Idle, it has nothing in flight: its parked claim carried the slots it had running when it was made.
    expect(once.stdout).toMatch(/^ {4}status-fetcher .* leased 0, in flight 0, /m);
    expect(once.stdout + once.stderr).not.toContain(adminToken);

    const fromEnv = startPetrel(['status', '--server', url, '--json'], { PETREL_ADMIN_TOKEN: adminToken });
    const env = await fromEnv.output;
    expect(env.code).toBe(0);
    expect((JSON.parse(env.stdout) as { pagesFetched: number }).pagesFetched).toBe(pagesFetched);

    const wrongFile = join(dir, 'wrong.token');
    writeFileSync(wrongFile, `${'w'.repeat(43)}\n`);
    const wrong = await runPetrel(['status', '--server', url, '--token-file', wrongFile]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('refused the admin token');
    const noToken = startPetrel(['status', '--server', url], { PETREL_ADMIN_TOKEN: '' });
    expect((await noToken.output).code).toBe(2);
    const onCommandLine = await runPetrel(['status', '--server', url, '--token', adminToken]);
    expect(onCommandLine.code).toBe(2);
    expect(onCommandLine.stderr).toContain("unknown option '--token'");

    // --watch: reading after reading until stopped.
    const watch = startPetrel(['status', '--server', url, '--token-file', adminTokenFile, '--watch', '--interval', '500ms']);
    let text = '';
    watch.stdout!.on('data', (chunk: Buffer) => (text += chunk.toString()));
    for (let i = 0; i < 100 && (text.match(/^petrel status of /gm) ?? []).length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    watch.kill('SIGTERM');
    await watch.output;
    expect((text.match(/^petrel status of /gm) ?? []).length).toBeGreaterThanOrEqual(3);

    fetcher.kill('SIGTERM');
    server.kill('SIGTERM');
    expect((await server.output).code).toBe(0);
  }, 60_000);
});
