/**
 * The first hour of a new user, scripted (the install is what `npm test` already did): the demo, a
 * crawl interrupted with Ctrl-C, the same crawl resumed, the export, and the admin API's start, stop
 * and start again. Each step must end with its documented exit status, and no step may print a stack
 * trace, an uncaught "Error:", or a fetcher finding its own queue server missing.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { crashLines, queueServerNoise } from '../support/clean-output.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, runPetrel, startPetrel, tempDir, waitForEvent, type Finished } from '../support/petrel-process.js';

/** The exit statuses README and --help document. */
const OK = 0;
const INTERRUPTED = 130;

const DEMO = fileURLToPath(new URL('../../dist/scripts/demo.js', import.meta.url));

function expectClean(step: string, run: Finished, status: number): void {
  expect({ step, status: run.code }, run.stderr.slice(-3000)).toEqual({ step, status });
  expect({ step, crashes: crashLines(run.stdout + run.stderr) }).toEqual({ step, crashes: [] });
  expect({ step, noise: queueServerNoise(run.stderr) }).toEqual({ step, noise: [] });
}

/** Runs a command in a process group of its own, as a shell runs a foreground job, so Ctrl-C can reach all of it. */
function startJob(args: string[]): { pid: number; output: Promise<Finished> } {
  const child = spawn(process.execPath, [PETREL_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const output = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { pid: child.pid!, output };
}

function lineCount(file: string): number {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((line) => line !== '').length : 0;
}

describe('the first hour of a new user', () => {
  let web: TestWeb;
  let dir: string;
  const jobs: number[] = [];

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 80, hosts: 2, slowMs: 200 });
    dir = tempDir('first-hour');
  });

  afterAll(async () => {
    for (const pid of jobs) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // the job's group is gone already
      }
    }
    killStartedPetrels();
    await web?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the demo', async () => {
    // As `npm run demo` starts it: npm says which script runs.
    const child = spawn(process.execPath, [DEMO, join(dir, 'demo')], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_lifecycle_event: 'demo' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expectClean('demo', { code, signal: null, stdout, stderr }, OK);
    expect(stderr).toMatch(/^petrel crawl: done: \d+ pages fetched/m);
    // Under npm run, `petrel` is not on the PATH of a fresh clone: the next steps say what runs as typed.
    expect(stderr).toContain(`page records:    npm run -s petrel -- export --data ${join(dir, 'demo')}`);
    expect(stderr).toContain(`run again:       npm run -s petrel -- crawl --data ${join(dir, 'demo')}`);
  }, 120_000);

  const data = () => join(dir, 'crawl');
  const crawlArgs = () => [
    'crawl', '--data', data(), '--seed', `${web.hostByRole.main}/index.html`, '--seed', `${web.origins[1]}/index.html`, '--scope', 'host', '--max-depth', '6',
    '--robots-retry-ms', '1000', '--robots-attempts', '2', '--max-retries', '1', '--retry-base-ms', '500', '--fetchers', '2',
  ];

  it('interrupts a crawl with Ctrl-C: the fetchers deliver, the queue server stops, the exit status is 130', async () => {
    const job = startJob([...crawlArgs(), '--delay-ms', '150']);
    jobs.push(job.pid);
    await expect.poll(() => lineCount(join(data(), 'pages.jsonl')), { timeout: 60_000, interval: 100 }).toBeGreaterThanOrEqual(10);
    // Ctrl-C in a terminal: SIGINT to the whole foreground process group, supervisor and children alike.
    process.kill(-job.pid, 'SIGINT');
    const run = await job.output;
    expectClean('Ctrl-C', run, INTERRUPTED);
    expect(run.stderr).toContain('petrel crawl: interrupted: stopping the fetchers');
    expect(run.stderr).toMatch(/petrel crawl: interrupted: \d+ pages fetched.*Run the same command again to resume the pass\./);
    expect(JSON.parse(run.stdout)).toHaveProperty('pagesFetched');
  }, 90_000);

  it('resumes the pass when run again, without repeating the seeds, and says so', async () => {
    const run = await runPetrel(['crawl', '--data', data(), '--delay-ms', '0', '--no-progress'], 120_000);
    expectClean('resume', run, OK);
    const resumed = /^petrel crawl: resuming pass 1: (\d+) fetched, (\d+) queued$/m.exec(run.stderr);
    expect(resumed, run.stderr).not.toBeNull();
    expect(Number(resumed![1])).toBeGreaterThanOrEqual(10);
    expect(Number(resumed![2])).toBeGreaterThan(0);
    expect(run.stderr).toMatch(/^petrel crawl: done: \d+ pages fetched/m);
    expect(run.stderr).toContain(`every URL known: petrel db dump --data ${data()}`);
    expect(run.stderr).toContain(`search:          petrel search --data ${data()} 'some words'`);
    expect(run.stderr).toContain(`web archive:     petrel export --data ${data()} --format warc > crawl.warc.gz`);
  }, 150_000);

  it('exports the pages with their outlink URLs', async () => {
    const run = await runPetrel(['export', '--data', data()]);
    expectClean('export', run, OK);
    const records = run.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; outlinkCount: number; outlinks: string[] });
    expect(records.length).toBeGreaterThan(50);
    for (const record of records) {
      expect(record.outlinks.length).toBe(Math.min(record.outlinkCount, 1000));
      for (const link of record.outlinks) expect(link).toMatch(/^https?:\/\//);
    }
    const index = records.find((record) => record.url === `${web.hostByRole.main}/index.html`)!;
    expect(index.outlinkCount).toBeGreaterThan(0);
    expect(index.outlinks.some((link) => link.startsWith(web.hostByRole.main))).toBe(true);
  });

  it('starts, stops and starts a crawl through the admin API, and the second start finishes the work', async () => {
    const child = startPetrel(['start', '--data', join(dir, 'admin'), '--fetchers', '1', '--port', '0']);
    const started = await waitForEvent(child, 'started');
    const token = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const api = async (path: string, body?: unknown) => {
      const response = await fetch(`${started.url}${path}`, body === undefined ? { headers: { authorization: `Bearer ${token}` } } : { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status, path).toBe(200);
      return (await response.json()) as Record<string, unknown> & { urlsByStatus: Record<string, number>; displayState: string; pagesFetched: number; itemsLeased: number };
    };
    const seed = `${web.origins[1]}/index.html`;
    expect(await api('/api/control/crawl', { seeds: [seed], delayMs: 200, maxDepth: 6 })).toMatchObject({ state: 'running' });
    await expect.poll(async () => (await api('/api/status')).pagesFetched, { timeout: 30_000 }).toBeGreaterThanOrEqual(3);
    const stopped = await api('/api/control/stop', {});
    expect(stopped).toMatchObject({ state: 'stopped', dropped: expect.any(Number) });
    await expect.poll(async () => (await api('/api/status')).itemsLeased, { timeout: 30_000 }).toBe(0);
    expect((await api('/api/status')).urlsByStatus.unfetched).toBeGreaterThan(0);
    const again = await api('/api/control/crawl', { seeds: [seed], delayMs: 0 });
    expect(again).toMatchObject({ state: 'running' });
    expect(again.queued).toBeGreaterThan(1);
    await expect.poll(async () => {
      const status = await api('/api/status');
      return { state: status.displayState, unfetched: status.urlsByStatus.unfetched };
    }, { timeout: 60_000 }).toEqual({ state: 'idle', unfetched: 0 });
    child.kill('SIGTERM');
    expectClean('admin', await child.output, OK);
  }, 120_000);
});
