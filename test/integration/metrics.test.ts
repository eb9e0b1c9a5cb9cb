/**
 * GET /metrics on a real crawl: a queue server and two fetchers (real processes) crawl the test web,
 * then the scrape is checked by Prometheus's own linter (`promtool check metrics`, Debian's
 * prometheus package; .ci/run installs it) and against the crawl's status: the counters are the
 * summary's, every live fetcher has its figures, the histograms saw the commits, claims and posts.
 * Access: metrics.token or admin.token as bearer token; nothing else, fetcher.token included.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { adminTokenOf, readStatus } from '../support/admin-api.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const PROMTOOL = spawnSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).stdout.trim();

/** The value of the sample `name{labels}` (labels as written in the exposition, sorted as prom-client writes them), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe.skipIf(PROMTOOL === '')('GET /metrics of a crawl (needs promtool: apt-get install prometheus)', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 30, hosts: 1 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('serves counters, gauges, histograms and per-fetcher figures that promtool accepts and that match the status', async () => {
    const dataDir = join(tempDir('metrics'), 'data');
    const main = web.hostByRole.main;
    const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0', '--seed', `${main}/index.html`, '--scope', 'prefix', '--delay-ms', '0', '--max-retries', '0']);
    const listening = await waitForEvent(server, 'listening');
    const url = String(listening.url);
    const adminToken = adminTokenOf(listening);
    const metricsTokenFile = String(listening.metricsTokenFile);
    expect(statSync(metricsTokenFile).mode & 0o777).toBe(0o600);
    const metricsToken = readFileSync(metricsTokenFile, 'utf8').trim();
    const fetcherToken = readFileSync(String(listening.tokenFile), 'utf8').trim();
    const fetchers = ['alpha', 'beta'].map((name) => startPetrel(['fetcher', '--server', url, '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', '2']));

    // The crawl is done when nothing is queued or leased and both fetchers have been heard from.
    let status = await readStatus(url, adminToken);
    for (let i = 0; i < 600 && !(status.displayState === 'idle' && status.pagesFetched > 0 && status.itemsLeased === 0 && status.fetchers.length === 2); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = await readStatus(url, adminToken);
    }
    expect(status.displayState).toBe('idle');

    const scrape = (token?: string) => fetch(new URL('/metrics', url), token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
    expect((await scrape()).status).toBe(401);
    expect((await scrape(fetcherToken)).status).toBe(401);
    expect((await scrape('x'.repeat(43))).status).toBe(401);
    expect((await scrape(adminToken)).status).toBe(200);
    const response = await scrape(metricsToken);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();

    const lint = spawnSync(PROMTOOL, ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect({ status: lint.status, output: `${lint.stdout}${lint.stderr}` }).toEqual({ status: 0, output: '' });

    const summary = (await (await fetch(new URL('/api/status', url), { headers: { authorization: `Bearer ${adminToken}` } })).json()) as {
      pagesFetched: number;
      requests: number;
      byStatus: Record<string, number>;
      errorsByCode: Record<string, number>;
      urlsDiscovered: number;
    };
    expect(summary.pagesFetched).toBeGreaterThan(10);
    expect(sample(text, 'petrel_pages_fetched_total')).toBe(summary.pagesFetched);
    expect(sample(text, 'petrel_requests_total')).toBe(summary.requests);
    expect(sample(text, 'petrel_urls_discovered_total')).toBe(summary.urlsDiscovered);
    for (const [code, count] of Object.entries(summary.byStatus)) expect(sample(text, `petrel_responses_total{status="${code}"}`)).toBe(count);
    expect(Object.keys(summary.errorsByCode).length).toBeGreaterThan(0);
    for (const [code, count] of Object.entries(summary.errorsByCode)) expect(sample(text, `petrel_errors_total{code="${code}"}`)).toBe(count);
    expect(sample(text, 'petrel_frontier_urls')).toBe(0);
    expect(sample(text, 'petrel_leases_out')).toBe(0);
    expect(sample(text, 'petrel_fetchers_alive')).toBe(2);
    expect(sample(text, 'petrel_ready')).toBe(1);
    expect(sample(text, 'petrel_crawl_state{state="idle"}')).toBe(1);
    const hitRatio = sample(text, 'petrel_btree_cache_hit_ratio{tree="crawldb"}')!;
    expect(hitRatio).toBeGreaterThan(0);
    expect(hitRatio).toBeLessThanOrEqual(1);
    // Histograms: every post was counted, and its results add up to the results applied.
    const posts = sample(text, 'petrel_results_per_post_count')!;
    expect(posts).toBeGreaterThan(0);
    expect(sample(text, 'petrel_results_per_post_sum')).toBeGreaterThanOrEqual(summary.requests);
    expect(sample(text, 'petrel_commit_duration_seconds_count{outcome="ok"}')).toBeGreaterThan(0);
    expect(sample(text, 'petrel_claim_duration_seconds_count{answer="schedule"}')).toBeGreaterThan(0);
    // Per fetcher, from their claims and heartbeats: what the queue server applied adds up.
    const ids = new Map(status.fetchers.map((f) => [f.name, f.id]));
    let applied = 0;
    for (const name of ['alpha', 'beta']) {
      const labels = `{fetcher="${name}",id="${ids.get(name)}"}`;
      expect(sample(text, `petrel_fetcher_rss_bytes${labels}`)).toBeGreaterThan(0);
      // As last reported (a claim may have been sent with a download still finishing), so only present.
      expect(sample(text, `petrel_fetcher_in_flight${labels}`)).toBeTypeOf("number");
      applied += sample(text, `petrel_fetcher_results_applied_total${labels}`)!;
    }
    // Page results only: robots.txt and sitemap results are the queue server's own, applied to no fetcher's count.
    expect(applied).toBe(summary.requests - sample(text, 'petrel_robots_requests_total')! - sample(text, 'petrel_sitemap_requests_total')!);
    expect(sample(text, 'petrel_sitemap_requests_total')).toBeGreaterThan(0);
    expect(sample(text, 'petrel_robots_requests_total')).toBeGreaterThan(0);
    // Node's default process metrics.
    expect(sample(text, 'process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);

    for (const fetcher of fetchers) fetcher.kill('SIGTERM');
    server.kill('SIGTERM');
    expect((await server.output).code).toBe(0);
  }, 90_000);
});
