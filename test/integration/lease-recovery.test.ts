/**
 * Leases under failure, with real processes: a fetcher killed with SIGKILL in the middle of its lease
 * loses nothing, because the lease runs out and another fetcher gets the URLs.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';

describe('a fetcher killed mid-lease', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 25, hosts: 1 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('does not lose its URLs: another fetcher gets them after the lease expires', async () => {
    const dataDir = tempDir('lease');
    const main = web.hostByRole.main;
    const mainHost = new URL(main).host;
    const server = startPetrel([
      'queue-server', '--data', join(dataDir, 'data'), '--port', '0', '--once', '--seed', `${main}/index.html`,
      '--scope', 'prefix', '--max-depth', '3', '--delay-ms', '150', '--lease-ms', '1500', '--slot-urls', '8', '--max-retries', '0',
    ]);
    const listening = await waitForEvent(server, 'listening');
    const fetcherArgs = (name: string) => ['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', '2'];

    const doomed = startPetrel(fetcherArgs('doomed'));
    // Let the doomed fetcher get well into its lease: a handful of page requests at the main host.
    const atMain = () => pageRequests(web.log).filter((entry) => entry.host === mainHost).length;
    await until(() => atMain() >= 4, 20_000, () =>
      [
        `the doomed fetcher made ${atMain()} page requests at the main host (${web.log.length} requests in all: ${web.log.slice(0, 10).map((entry) => `${entry.status} ${urlOf(entry)}`).join(', ')})`,
        `doomed fetcher: ${doomed.exitCode === null && doomed.signalCode === null ? 'running' : `exited ${doomed.exitCode ?? doomed.signalCode}`}; its stderr: ${doomed.said().stderr.slice(-2000)}`,
        `queue server stderr: ${server.said().stderr.slice(-2000)}`,
      ].join('\n'),
    );
    doomed.kill('SIGKILL');
    const requestsBeforeKill = pageRequests(web.log).length;

    const survivor = startPetrel(fetcherArgs('survivor'));
    const finished = await waitForEvent(server, 'finished', 60_000);
    await Promise.all([server.output, survivor.output]);

    const summary = finished.summary as { leasesExpired: number; pagesFetched: number };
    expect(summary.leasesExpired).toBeGreaterThanOrEqual(1);

    const expected = web.model.reachable({ seeds: [`${main}/index.html`], inScope: (url) => url.startsWith(`${main}/`), maxDepth: 3 });
    const requested = countBy(pageRequests(web.log), urlOf);
    expect([...requested.keys()].sort()).toEqual([...expected.keys()].sort());
    // Only what the dead fetcher held can have been requested twice: at most one slot per unit of
    // its concurrency, 8 URLs each, and never more than it had requested before it died.
    const retriedAfter = new Set(pageRequests(web.log).filter((entry) => entry.status === 503).map(urlOf));
    const repeats = [...requested].filter(([url, count]) => count > 1 && !retriedAfter.has(url)).length;
    expect(repeats).toBeLessThanOrEqual(Math.min(2 * 8, requestsBeforeKill));
    expect((await survivor.output).code).toBe(0);
  }, 90_000);
});

/** Waits for `condition`; past `timeoutMs`, fails with what `describe` says of the state of things. */
async function until(condition: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met in ${timeoutMs} ms:\n${describe()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
