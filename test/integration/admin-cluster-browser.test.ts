/**
 * The admin page's Cluster card in a real browser (Debian's chromium driven by playwright-core)
 * against real `petrel queue-server --cluster` members over a real redis-server, crawling the test web:
 * a cluster of K = 3 with only two members, so one partition has no owner and the links forwarded to
 * its hosts wait in its Redis stream. The card shows every partition with its server (or none), its
 * state, its counters and its backlog, and the sums GET /api/cluster gives; a queue server on its own
 * shows no card. Skipped where /usr/bin/chromium or /usr/bin/redis-server is missing (.ci/run installs
 * both).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { partitionOfUrl } from '../../queue-server/cluster/partition.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { adminTokenOf } from '../support/admin-api.js';
import { closeStartedRedis, haveRedis, startRedis } from '../support/redis-server.js';
import { pageRequests } from '../support/request-log.js';
import { eventually, readCluster, untilCrawled, type ClusterView, fleetTokenFile } from '../support/cluster.js';

const CHROMIUM = '/usr/bin/chromium';
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const PARTITIONS = 3;
/** The partition no member takes: its hosts are not crawled, the links to them wait in Redis. */
const ORPHAN = 2;
const MAX_DEPTH = 5;

describe.skipIf(!existsSync(CHROMIUM) || !haveRedis())('the admin page\'s Cluster card', () => {
  let web: TestWeb;
  let context: BrowserContext;
  let profileDir: string;
  let members: { url: string; adminToken: string }[];
  let pagesFetched: number;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 6, pagesPerHost: 12 });
    const seed = `${web.origins[0]}/index.html`;
    expect(partitionOfUrl(seed, PARTITIONS)).not.toBe(ORPHAN);
    expect(web.origins.some((origin) => partitionOfUrl(origin, PARTITIONS) === ORPHAN)).toBe(true);
    // What two members can crawl: every page reachable without passing through the orphan's hosts.
    const expected = web.model.reachable({ seeds: [seed], inScope: (url) => partitionOfUrl(url, PARTITIONS) !== ORPHAN, maxDepth: MAX_DEPTH });
    const redis = await startRedis(tempDir('redis'));
    const tokenFile = fleetTokenFile('cluster-card');
    members = [];
    for (const partition of [0, 1]) {
      const server = startPetrel([
        'queue-server', '--data', join(tempDir('member'), 'data'), '--port', String(await freePort()), '--token-file', tokenFile,
        '--cluster', redis.url, '--partitions', String(PARTITIONS), '--partition', String(partition),
        '--seed', seed, '--scope', 'any', '--max-depth', String(MAX_DEPTH), '--delay-ms', '0',
      ]);
      const listening = await waitForEvent(server, 'listening');
      members.push({ url: String(listening.url), adminToken: adminTokenOf(listening) });
    }
    startPetrel(['fetcher', '--cluster', redis.url, '--token-file', tokenFile, '--name', 'card', '--concurrency', '4', '--claim-wait-ms', '1000', '--allow-private-addresses']);
    await untilCrawled(web, expected, 90_000);
    // The members' cards carry their counters at each lease renewal: wait until they say what the web saw.
    pagesFetched = pageRequests(web.log).length;
    await eventually(() => readCluster(members[1]!.url, members[1]!.adminToken), (v) => v.sum.pagesFetched === pagesFetched && (v.sum.backlog ?? 0) > 0 && v.sum.itemsLeased === 0 && v.sum.frontierSize === 0, 'the crawl to settle with a backlog for the orphan');
    profileDir = mkdtempSync(join(tmpdir(), 'petrel-pw-cluster-'));
    context = await chromium.launchPersistentContext(profileDir, { executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
  }, 150_000);

  afterAll(async () => {
    killStartedPetrels();
    await context?.close();
    await closeStartedRedis();
    await web?.close();
    if (profileDir !== undefined) rmSync(profileDir, { recursive: true, force: true });
  });

  async function openAdmin(serverUrl: string, adminToken: string, problems: string[]): Promise<{ page: Page; firstClusterAnswer: Promise<unknown> }> {
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    const adminUrl = `${serverUrl}/admin`;
    await page.goto(adminUrl);
    await page.fill('#token', adminToken);
    const firstClusterAnswer = page.waitForResponse((response) => new URL(response.url()).pathname === '/admin/api/cluster', { timeout: 20_000 });
    await Promise.all([page.waitForURL(adminUrl), page.click('button[type=submit]')]);
    return { page, firstClusterAnswer };
  }

  const cellsOf = (page: Page) => page.locator('#cluster tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')));
  const footOf = (page: Page) => page.locator('#cluster tfoot td').evaluateAll((cells) => cells.map((cell) => cell.textContent ?? ''));
  const number = (text: string) => Number(text.replace(/[^\d]/g, ''));

  it('shows every partition with its server, state, counters and backlog, the orphan as having no owner, and the sums of GET /api/cluster', async () => {
    const problems: string[] = [];
    const { url, adminToken } = members[1]!;
    const { page } = await openAdmin(url, adminToken, problems);
    await expect.poll(() => page.locator('#cluster-card').isVisible(), { timeout: 20_000, interval: 200 }).toBe(true);
    await expect.poll(() => page.locator('#cluster-summary').textContent(), { timeout: 20_000, interval: 200 }).toBe(`(${PARTITIONS} partitions, this server: 1)`);
    const view: ClusterView = await readCluster(url, adminToken);
    await expect.poll(async () => (await cellsOf(page)).length, { timeout: 10_000, interval: 200 }).toBe(PARTITIONS);
    const rows = await cellsOf(page);
    // partition, server, state, fetched, queued, leased, links out, links in, backlog
    expect(rows.map((row) => row[0])).toEqual(['0', '1', '2']);
    expect(rows[0]![1]).toBe(members[0]!.url);
    expect(rows[1]![1]).toBe(members[1]!.url);
    expect(rows[ORPHAN]![1]).toBe('no owner: its links wait in Redis');
    for (const member of view.members) {
      const row = rows[member.partition]!;
      expect(row[2]).toBe(member.state);
      expect(number(row[8]!)).toBe(member.backlog);
      if (member.counters !== null) expect(number(row[3]!)).toBe(member.counters.pagesFetched);
    }
    expect(number(rows[ORPHAN]![8]!)).toBeGreaterThan(0);
    expect(number(rows[0]![3]!) + number(rows[1]![3]!)).toBe(pagesFetched);
    const foot = await footOf(page);
    expect(foot[0]).toBe('all');
    expect(foot[2]).toBe(view.control);
    expect([3, 4, 5, 6, 7, 8].map((i) => number(foot[i]!))).toEqual(
      [view.sum.pagesFetched, view.sum.frontierSize, view.sum.itemsLeased, view.sum.linksForwarded, view.sum.linksReceived, view.sum.backlog],
    );
    expect(number(foot[3]!)).toBe(pagesFetched);
    expect(view.sum.linksForwarded).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  }, 60_000);

  it('shows no Cluster card on a queue server that is not a cluster member', async () => {
    const server = startPetrel(['queue-server', '--data', join(tempDir('alone'), 'data'), '--port', '0']);
    const listening = await waitForEvent(server, 'listening');
    const problems: string[] = [];
    const { page, firstClusterAnswer } = await openAdmin(String(listening.url), adminTokenOf(listening), problems);
    // The page asked whether this server is a cluster member and was told no (null): the card stays hidden.
    const answer = (await firstClusterAnswer) as { status(): number; json(): Promise<unknown> };
    expect(answer.status()).toBe(200);
    expect(await answer.json()).toBeNull();
    await page.waitForTimeout(300);
    expect(await page.locator('#cluster-card').count()).toBe(1);
    expect(await page.locator('#cluster-card').isVisible()).toBe(false);
    expect(problems).toEqual([]);
  }, 60_000);
});
