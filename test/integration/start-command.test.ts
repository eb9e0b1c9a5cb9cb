/**
 * `petrel start` as a person runs it: a real child process (queue server and one local fetcher)
 * that says where the admin page and its token are, serves the page, gets its fetcher connected,
 * and stops cleanly on SIGTERM.
 */
import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { readStatus } from '../support/admin-api.js';
import { pageRequests } from '../support/request-log.js';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { crashLines } from '../support/clean-output.js';
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

/**
 * The crawl's settings live in the data directory: `petrel start` run again on it goes on with the same
 * seeds and scope and continues the URLs known and not fetched yet; a crawl stopped from the admin API
 * stays stopped across a restart, and starting it again continues where it was.
 */
describe('petrel start, stopped and started again on the same data directory', () => {
  const dir = tempDir('start-again');
  const data = join(dir, 'data');
  let web: TestWeb;
  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  type Status = { displayState: string; pagesFetched: number; itemsLeased: number; frontierSize: number; urlsByStatus: Record<string, number>; config: { seeds: string[]; scope: string; maxDepth: number | null; delayMs: number } };
  const session = async (args: string[]) => {
    const child = startPetrel(['start', '--data', data, '--fetchers', '1', '--port', '0', ...args]);
    const started = await startedOrExit(child);
    const token = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const status = async (): Promise<Status> => (await (await fetch(`${started.url}/api/status`, { headers: { authorization: `Bearer ${token}` } })).json()) as Status;
    const control = async (action: string, body: unknown = {}) => {
      const response = await fetch(`${started.url}/api/control/${action}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status).toBe(200);
      return (await response.json()) as Record<string, unknown>;
    };
    const stop = async () => {
      child.kill('SIGTERM');
      const finished = await child.output;
      expect(finished.code, finished.stderr).toBe(0);
      expect(crashLines(finished.stdout + finished.stderr)).toEqual([]);
      return finished;
    };
    return { status, control, stop };
  };
  const unfetched = (status: Status) => status.urlsByStatus.unfetched ?? 0;

  it('keeps seeds and scope, continues the unfetched URLs, and keeps a stopped crawl stopped', async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 60, hosts: 1, profile: 'bench' });
    const seed = web.seeds[0]!;
    // 1. A crawl with settings of its own, ended mid-way by a restart of the daemon.
    const first = await session(['--seed', seed, '--scope', 'prefix', '--max-depth', '6', '--delay-ms', '150', '--slot-urls', '2']);
    await expect.poll(async () => (await first.status()).pagesFetched, { timeout: 30_000 }).toBeGreaterThanOrEqual(4);
    expect(unfetched(await first.status())).toBeGreaterThan(10);
    await first.stop();

    // 2. Started again without a seed: the same crawl goes on, to its end.
    const second = await session(['--delay-ms', '0']);
    const resumed = await second.status();
    expect(resumed.config).toMatchObject({ seeds: [seed], scope: 'prefix', maxDepth: 6, delayMs: 0 });
    await expect.poll(async () => {
      const now = await second.status();
      return { state: now.displayState, unfetched: unfetched(now) };
    }, { timeout: 60_000 }).toEqual({ state: 'idle', unfetched: 0 });
    expect((await second.status()).urlsByStatus.fetched).toBeGreaterThanOrEqual(50);
    // 3. Stopped from the API: queued URLs are dropped, and a restart does not take the crawl up again.
    await second.control('crawl', { seeds: [seed], delayMs: 300, maxDepth: 6 });
    await second.control('stop');
    await expect.poll(async () => (await second.status()).itemsLeased, { timeout: 30_000 }).toBe(0);
    await second.stop();
    const third = await session([]);
    const stopped = await third.status();
    expect(stopped.displayState).toBe('stopped');
    expect(stopped.frontierSize).toBe(0);
    expect(stopped.config).toMatchObject({ seeds: [seed], scope: 'prefix', delayMs: 300 });
    // 4. Started again from the API: what is known and due goes on.
    const restarted = await third.control('crawl', { seeds: [seed], delayMs: 0 });
    expect(restarted).toMatchObject({ state: 'running', queued: expect.any(Number) });
    await expect.poll(async () => (await third.status()).displayState, { timeout: 60_000 }).toBe('idle');
    const end = await third.stop();
    expect(end.stderr).toContain('was stopped: start a crawl from the admin page');
  });
});

describe('petrel start, one of its fetchers killed', () => {
  let web: TestWeb;
  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('hands the dead fetcher\'s schedules back at once, not after --lease-ms, and lists it no more', async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 40 });
    // A slow crawl (a page every 1.5 s) and a long lease: what the killed fetcher held could only come back by its lease.
    const child = startPetrel(['start', '--data', join(tempDir('start-kill'), 'data'), '--fetchers', '1', '--port', '0', '--seed', `${web.origins[0]}/index.html`, '--delay-ms', '1500', '--lease-ms', '10min']);
    const started = await startedOrExit(child);
    const url = String(started.url);
    const adminToken = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const status = () => readStatus(url, adminToken);
    const leasedTo = async (name: string) => (await status()).fetchers.filter((info) => info.name === name).reduce((sum, info) => sum + (info as unknown as { itemsLeased: number }).itemsLeased, 0);
    // A slot of pages (two URLs or more, 1.5 s apart), not the robots.txt slot that ends at its one answer:
    // still out, with seconds to go, when the kill lands.
    await vi.waitFor(async () => expect(await leasedTo('local-1')).toBeGreaterThanOrEqual(2), { timeout: 30_000, interval: 50 });
    const fetcherPid = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0]);
    expect(fetcherPid).toBeGreaterThan(0);
    const before = (await status()).fetchers.map((info) => info.id);
    process.kill(fetcherPid, 'SIGKILL');
    // Handed back within seconds, and the restarted fetcher (a new id, the same name) fetches them.
    await vi.waitFor(async () => {
      const now = await status();
      expect(now.fetchers.filter((info) => before.includes(info.id))).toEqual([]);
    }, { timeout: 10_000, interval: 100 });
    const requestsBefore = pageRequests(web.log).length;
    await vi.waitFor(() => expect(pageRequests(web.log).length).toBeGreaterThan(requestsBefore), { timeout: 20_000, interval: 100 });
    child.kill('SIGTERM');
    const finished = await child.output;
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stderr).toMatch(/petrel start: fetcher local-1 exited \(SIGKILL\); starting it again in 1 s/);
    expect(finished.stderr).toMatch(/petrel start: fetcher local-1's \d+ schedules? handed back to the queue/);
  }, 90_000);
});

describe('petrel start, stopped twice', () => {
  let web: TestWeb;
  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('abandons the requests in flight at the second signal instead of waiting out the grace', async () => {
    assertBuilt();
    // A page that answers after 20 s: the fetcher is inside that request when the signals come.
    web = await startTestWeb({ hosts: 1, pagesPerHost: 5, slowMs: 20_000 });
    const slow = `${web.hostByRole.main}/slow.html`;
    const child = startPetrel(['start', '--data', join(tempDir('start-twice'), 'data'), '--fetchers', '1', '--port', '0', '--seed', slow, '--scope', 'prefix', '--delay-ms', '0']);
    await startedOrExit(child);
    await vi.waitFor(() => expect(web.log.some((entry) => entry.path === '/robots.txt')).toBe(true), { timeout: 20_000, interval: 50 });
    // The slow request goes out right after robots.txt.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 200));
    child.kill('SIGTERM');
    const finished = await child.output;
    expect(finished.code, finished.stderr).toBe(0);
    expect(finished.stderr).toContain('petrel start: stopping now');
    // Not killed after the 5 s grace: killed at the second signal.
    expect(finished.stderr).not.toContain('still busy');
  }, 90_000);
});
