/**
 * What `petrel crawl` and `petrel fetcher` say about a world that is not there: a seed whose host does
 * not answer is reported while it waits ("robots.txt of HOST unreachable, retry 2 of 3 in ..."), then
 * recorded as robots-unreachable, counted as an error, and the crawl exits with the "nothing could be
 * fetched" status; a fetcher whose queue server does not answer says so now and then, and with --once
 * gives up after the time it was given; and a normal crawl starts and ends without any fetcher ever
 * finding its own queue server missing. Real processes; 127.0.0.1:1 and free ports are loopback.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { crashLines, queueServerNoise } from '../support/clean-output.js';
import { assertBuilt, freePort, killStartedPetrels, runPetrel, tempDir } from '../support/petrel-process.js';

/** The exit statuses the README and --help document. */
const NOTHING_FETCHED = 3;
const FAILED = 1;

describe('a crawl whose seed host does not answer', () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir('dead-host');
  });
  afterAll(() => {
    killStartedPetrels();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says it is waiting for robots.txt, records robots-unreachable as an error, and exits 3', async () => {
    const data = join(dir, 'data');
    const run = await runPetrel(['crawl', '--data', data, '--seed', 'http://127.0.0.1:1/', '--robots-retry-ms', '300', '--robots-attempts', '3', '--delay-ms', '100', '--fetchers', '1'], 60_000);
    expect(run.code, run.stderr).toBe(NOTHING_FETCHED);
    expect(crashLines(run.stdout + run.stderr)).toEqual([]);
    // While it waits, each attempt is told, with what comes next.
    expect(run.stderr).toMatch(/robots\.txt of http:\/\/127\.0\.0\.1:1 unreachable \(connection-refused\), retry 2 of 3 in \d+(ms|s)/);
    expect(run.stderr).toMatch(/robots\.txt of http:\/\/127\.0\.0\.1:1 unreachable \(connection-refused\), retry 3 of 3 in \d+(ms|s)/);
    expect(run.stderr).toMatch(/robots\.txt of http:\/\/127\.0\.0\.1:1 unreachable \(connection-refused\) 3 times in a row: its URLs are given up as robots-unreachable/);
    expect(run.stderr).toContain('petrel crawl: finished, but nothing could be fetched');
    const summary = JSON.parse(run.stdout) as { errors: number; robotsDenied: number; errorsByCode: Record<string, number>; robotsRequests: number };
    expect(summary).toMatchObject({ errors: 1, robotsDenied: 0, errorsByCode: { 'robots-unreachable': 1 }, robotsRequests: 3 });
    const dump = await runPetrel(['db', 'dump', '--data', data]);
    expect(JSON.parse(dump.stdout)).toMatchObject({ url: 'http://127.0.0.1:1/', errorCode: 'robots-unreachable' });
  });
});

describe('a fetcher whose queue server does not answer', () => {
  let dir: string;
  beforeAll(() => {
    assertBuilt();
    dir = tempDir('fetcher-patience');
  });
  afterAll(() => {
    killStartedPetrels();
    rmSync(dir, { recursive: true, force: true });
  });

  it('says it is waiting, says it again while it waits, and with --once gives up after --give-up-after (status 1)', async () => {
    const tokenFile = join(dir, 'fetcher.token');
    writeFileSync(tokenFile, 'x'.repeat(43), { mode: 0o600 });
    const server = `http://127.0.0.1:${await freePort()}`;
    const run = await runPetrel(['fetcher', '--server', server, '--token-file', tokenFile, '--name', 'lonely', '--once', '--give-up-after', '3s'], 60_000);
    expect(run.code, run.stderr).toBe(FAILED);
    expect(crashLines(run.stdout + run.stderr)).toEqual([]);
    const lines = run.stderr.trim().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^petrel fetcher lonely: cannot reach the queue server at ${server} \\(.*ECONNREFUSED.*\\); waiting for it, for at most 3s$`));
    expect(lines.filter((line) => line.includes(`still waiting for the queue server at ${server}: no answer for `)).length).toBeGreaterThanOrEqual(1);
    expect(lines.at(-1)).toMatch(new RegExp(`^petrel fetcher lonely: giving up: the queue server at ${server} has not answered for \\d+s \\(--give-up-after 3s; last: `));
  });
});

describe('petrel crawl, started and finished in the usual way', () => {
  let web: TestWeb;
  let dir: string;
  beforeAll(async () => {
    assertBuilt();
    // The bench profile: normal pages only, so each crawl takes a second or two and every start and stop is seen.
    web = await startTestWeb({ pagesPerHost: 15, hosts: 1, profile: 'bench' });
    dir = tempDir('no-noise');
  });
  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never has a fetcher find its queue server missing, in three crawls in a row', async () => {
    for (let i = 0; i < 3; i++) {
      const run = await runPetrel(['crawl', '--data', join(dir, `data-${i}`), '--seed', web.seeds[0]!, '--max-depth', '1', '--delay-ms', '0', '--max-retries', '0', '--fetchers', '3', '--no-progress'], 60_000);
      expect(run.code, run.stderr).toBe(0);
      expect(queueServerNoise(run.stderr)).toEqual([]);
      expect(crashLines(run.stdout + run.stderr)).toEqual([]);
      expect(run.stderr).toMatch(/^petrel crawl: done: \d+ pages fetched/m);
      expect(JSON.parse(readFileSync(join(dir, `data-${i}`, 'crawl.json'), 'utf8'))).toMatchObject({ settings: { seeds: [web.seeds[0]], maxDepth: 1 } });
    }
  });
});
