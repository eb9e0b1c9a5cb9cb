/**
 * `petrel start` as a person runs it: a real child process (queue server and one local fetcher)
 * that says where the admin page and its token are, serves the page, gets its fetcher connected,
 * and stops cleanly on SIGTERM.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

/** The `started` event, or an error with the child's stderr if it exits first. */
function startedOrExit(child: ReturnType<typeof startPetrel>): Promise<Record<string, unknown>> {
  const exit = child.output.then((finished): never => {
    throw new Error(`petrel start exited (${finished.code ?? finished.signal}) before starting: ${finished.stderr.slice(0, 2000)}`);
  });
  return Promise.race([waitForEvent(child, 'started'), exit]);
}

describe('petrel start', () => {
  const dir = tempDir('start');
  afterAll(() => {
    killStartedPetrels();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the admin URL and token file, serves /admin, connects its fetcher, and stops on SIGTERM', async () => {
    assertBuilt();
    const child = startPetrel(['start', '--data', join(dir, 'data'), '--fetchers', '1', '--port', '0']);
    try {
      const started = await startedOrExit(child);
      expect(started).toMatchObject({ adminUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/admin$/), fetchers: 1 });
      const adminTokenFile = String(started.adminTokenFile);
      expect(adminTokenFile).toBe(join(dir, 'data', 'admin.token'));
      expect(statSync(adminTokenFile).mode & 0o777).toBe(0o600);
      const adminToken = readFileSync(adminTokenFile, 'utf8').trim();

      const page = await fetch(String(started.adminUrl), { redirect: 'manual' });
      expect(page.status).toBe(303);
      expect(page.headers.get('location')).toBe('/admin/login');
      expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");

      // The local fetcher connects by itself.
      await expect
        .poll(
          async () => {
            const status = (await (await fetch(`${started.url}/api/status`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { fetchers: { name: string }[]; displayState: string };
            return { names: status.fetchers.map((f) => f.name), state: status.displayState };
          },
          { timeout: 15_000 },
        )
        .toEqual({ names: ['local-1'], state: 'idle' });
    } finally {
      child.kill('SIGTERM');
    }
    const finished = await child.output;
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stderr).toContain(`admin page:     `);
    expect(finished.stderr).toContain('admin token:    ');
    expect(finished.stdout.trim().split('\n').map((line) => JSON.parse(line).event)).toEqual(['started', 'stopped']);
  });
});
