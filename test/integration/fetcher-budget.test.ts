/**
 * One fetcher serving two queue servers has ONE --concurrency (fetcher/slot-budget.ts): the test web,
 * whose pages answer late so that requests overlap, never sees more requests of it in flight at once
 * than --concurrency, and while both queue servers have work each gets its share.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb, type RequestLogEntry } from '../../scripts/test-web.js';
import { fleetTokenFile } from '../support/cluster.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';

/**
 * The most requests in flight at one instant across all hosts, each counted from its arrival to when
 * the server handed over its last bytes: inside the fetcher's own request time, so never more than
 * what the fetcher had in flight.
 */
function peakInFlight(log: readonly RequestLogEntry[]): number {
  const events: [number, number][] = [];
  for (const entry of log) events.push([entry.start, 1], [entry.handedOver, -1]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let current = 0;
  let peak = 0;
  for (const [, delta] of events) peak = Math.max(peak, (current += delta));
  return peak;
}

const CONCURRENCY = 4;

describe('a fetcher serving two queue servers', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 8, pagesPerHost: 16, pageDelayMs: 60 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it(`never has more than --concurrency requests in flight across both, and shares them between the two while both have work`, async () => {
    const dir = tempDir('budget');
    const tokenFile = fleetTokenFile('budget');
    const halves = [web.origins.slice(0, 4), web.origins.slice(4, 8)];
    const servers = halves.map((origins, i) =>
      startPetrel(['queue-server', '--data', join(dir, `q${i}`), '--port', '0', '--once', '--token-file', tokenFile, ...origins.flatMap((origin) => ['--seed', `${origin}/index.html`]), '--scope', 'host', '--delay-ms', '0', '--slot-urls', '4']),
    );
    const urls = await Promise.all(servers.map(async (server) => String((await waitForEvent(server, 'listening')).url)));
    const fetcher = startPetrel(['fetcher', ...urls.flatMap((url) => ['--server', url]), '--token-file', tokenFile, '--name', 'shared', '--concurrency', String(CONCURRENCY), '--allow-private-addresses']);
    const done = await fetcher.output;
    expect(done.code, done.stderr).toBe(0);
    for (const server of servers) expect((await server.output).code).toBe(0);

    const peak = peakInFlight(web.log);
    console.log(`fetcher budget test: ${web.log.length} requests, at most ${peak} in flight at once (--concurrency ${CONCURRENCY}, two queue servers)`);
    expect(peak).toBeLessThanOrEqual(CONCURRENCY);
    // Requests did overlap: the bound above is the budget's doing, not a serial crawl's.
    expect(peak).toBeGreaterThan(1);

    // Every page of both halves fetched once.
    const requested = countBy(pageRequests(web.log), urlOf);
    expect(requested.size).toBe(8 * 16);
    expect([...requested.values()].every((count) => count === 1)).toBe(true);

    // While both had work (until the first one's last request), each got at least a third of the requests.
    const serverOf = (entry: RequestLogEntry) => (halves[0]!.some((origin) => origin.endsWith(entry.host)) ? 0 : 1);
    const pages = pageRequests(web.log);
    const lastStart = [0, 1].map((server) => Math.max(...pages.filter((entry) => serverOf(entry) === server).map((entry) => entry.start)));
    const window = pages.filter((entry) => entry.start <= Math.min(...lastStart));
    const shares = [0, 1].map((server) => window.filter((entry) => serverOf(entry) === server).length);
    console.log(`fetcher budget test: requests while both had work ${JSON.stringify(shares)}`);
    for (const share of shares) expect(share).toBeGreaterThanOrEqual(window.length / 3);
  }, 90_000);
});
