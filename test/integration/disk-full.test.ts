/**
 * A full disk during a crawl, with real fetcher processes and the test web: a commit that fails pauses
 * the crawl with the error in the log and in /api/status (`storageError`), results posts get a 503 with
 * Retry-After and change nothing (the fetchers keep their results and post them again), and when the
 * disk works again the crawl resumes by itself and completes with every page fetched once and stored
 * once. Two ways to fill the disk:
 *  - in-process, through the file-operations seam: every write to the data directory goes to /dev/full
 *    for a while, so the error is the kernel's own ENOSPC;
 *  - a real `petrel queue-server` process under a file size limit (RLIMIT_FSIZE, set with `prlimit`):
 *    the kernel cuts a write short and then refuses with EFBIG, until the limit is raised from outside
 *    (`prlimit --pid`), as an operator would free space. No root needed.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { readPageArchive } from '../../queue-server/crawl/page-archive.js';
import { startQueueServer } from '../../queue-server/daemon.js';
import { PROTOCOL_VERSION, ROUTES } from '../../shared/protocol.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { FaultyFileOps } from '../support/faulty-file-ops.js';
import { countBy, pageRequests, urlOf } from '../support/request-log.js';
import { instanceOf, signedPost } from '../support/signed-request.js';
import { checkWarcPath, type ParsedRecord } from '../support/warc-exchange.js';

const PAGES = 60;

interface StorageError {
  code: string;
  message: string;
  since: number;
  attempts: number;
}

let web: TestWeb;
const cleanups: (() => void | Promise<void>)[] = [];

beforeAll(async () => {
  assertBuilt();
  web = await startTestWeb({ pagesPerHost: PAGES, hosts: 1, profile: 'bench' });
});

afterEach(async () => {
  killStartedPetrels();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(async () => {
  await web?.close();
});

async function until<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 60_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The test web's pages: every one requested exactly once, and every one in the archive exactly once. */
async function expectEachPageFetchedAndStoredOnce(dataDir: string): Promise<void> {
  const expected = [...web.model.reachable({ seeds: [`${web.hostByRole.main}/index.html`], inScope: () => true, maxDepth: 100 }).keys()].sort();
  expect(expected).toHaveLength(PAGES);
  const requested = countBy(pageRequests(web.log), urlOf);
  expect([...requested.keys()].sort()).toEqual(expected);
  expect([...requested].filter(([, count]) => count !== 1)).toEqual([]);
  const archived: string[] = [];
  for await (const record of readPageArchive(join(dataDir, 'pages.jsonl'))) archived.push(record.url);
  expect(archived.sort()).toEqual(expected);
  const check = await runPetrel(['db', 'check', '--data', dataDir]);
  expect(check.code, check.stdout + check.stderr).toBe(0);
}

function fetcher(url: string, tokenFile: string, name: string): ChildProcess & { output: Promise<{ code: number | null; stderr: string }> } {
  return startPetrel(['fetcher', '--server', url, '--token-file', tokenFile, '--name', name, '--concurrency', '2', '--claim-wait-ms', '2000']);
}

describe('a full disk during a crawl', () => {
  it('pauses with ENOSPC in the log and the status, refuses results with 503, and completes once writes succeed again', async () => {
    web.log.length = 0;
    const dataDir = join(tempDir('disk-full'), 'data');
    cleanups.push(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));
    const io = new FaultyFileOps();
    let full = false;
    io.rule = (op) => (full && op.kind === 'write' && op.path.startsWith(dataDir) ? 'enospc' : null);
    const log: string[] = [];
    const server = await startQueueServer({
      dataDir,
      port: 0,
      fileOps: io,
      log: (line) => log.push(line),
      // Archiving off: the WARC files are committed first and would fail first; this test is about the
      // page archive and the trees (test/integration/warc-disk-full.test.ts fills the disk under warc/).
      crawl: { seeds: [`${web.hostByRole.main}/index.html`], scope: 'host', delayMs: 0, once: true, slotUrls: 4, bloomCapacity: 1000, warc: false },
    });
    cleanups.push(() => server.close());
    const fetchers = ['one', 'two'].map((name) => fetcher(server.url, server.tokenFile, name));

    await until('ten pages fetched', () => server.service.status().pagesFetched >= 10);
    full = true;
    const failing = await until('the storage error', () => server.service.status().storageError as StorageError | null);
    expect(failing.code).toBe('ENOSPC');
    expect(failing.message).toContain('no space left on device');
    expect(failing.message).toContain('pages.jsonl');
    expect(log.join('\n')).toMatch(/storage error ENOSPC: .*no space left on device.*the crawl is paused/);

    // While it fails: a results post is refused with 503 and Retry-After, and changes nothing.
    const frozen = server.service.status().pagesFetched;
    const refused = await signedPost(server.url, ROUTES.results, { protocolVersion: PROTOCOL_VERSION, fetcherId: 'probe', scheduleId: 'none', results: [] }, { secret: server.token, instance: await instanceOf(server.url) });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('storage-unavailable');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The retries fail too; nothing is applied and no work is handed out meanwhile.
    await until('two failed retries', () => ((server.service.status().storageError as StorageError | null)?.attempts ?? 0) >= 3);
    expect(server.service.status().pagesFetched).toBe(frozen);
    expect(server.service.status().storageError).not.toBeNull();
    // People and programs reading the state see it paused for storage, not running.
    expect(server.service.status().displayState).toBe('storage-error');

    full = false;
    await server.finished;
    expect(server.service.status().storageError).toBeNull();
    expect(log.join('\n')).toMatch(/storage works again after \d+ ms and \d+ failed commits?; the crawl goes on/);
    const outputs = await Promise.all(fetchers.map((child) => child.output));
    for (const output of outputs) expect(output.code, output.stderr).toBe(0);
    // A fetcher whose post was refused kept its results and posted them again (its log says so from the second attempt).
    expect(outputs.map((output) => output.stderr).join('\n')).toContain('storage-unavailable');
    await server.close();
    await expectEachPageFetchedAndStoredOnce(dataDir);
  }, 120_000);

  const prlimit = spawnSync('prlimit', ['--version']).status === 0;

  it.skipIf(!prlimit)('a queue server that cannot write its data directory at start says which directory and why, and leaves none behind', async () => {
    const dataDir = join(tempDir('disk-full-start'), 'data');
    cleanups.push(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));
    // 2 KiB per file: not even the first page of a store fits. The write that fails knows no file name.
    const run = spawnSync('prlimit', ['--fsize=2048:unlimited', process.execPath, PETREL_BIN, 'queue-server', '--data', dataDir, '--port', '0'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(`petrel queue-server: cannot write: file too large (the file system's limit, or the process's file size limit: ulimit -f) (in the data directory ${dataDir})`);
    expect(existsSync(dataDir)).toBe(false);
  });

  it.skipIf(!prlimit)('a queue server process under a file size limit pauses with EFBIG and completes once the limit is raised', async () => {
    web.log.length = 0;
    const dataDir = join(tempDir('disk-full-fsize'), 'data');
    cleanups.push(() => rmSync(join(dataDir, '..'), { recursive: true, force: true }));
    // 96 KiB per file: enough to start (the crawl database begins with three 16 KiB pages), not to finish.
    const args = [`--fsize=${96 * 1024}:unlimited`, process.execPath, PETREL_BIN, 'queue-server', '--data', dataDir, '--port', '0', '--once',
      '--seed', `${web.hostByRole.main}/index.html`, '--scope', 'host', '--delay-ms', '0', '--slot-urls', '4'];
    const server = spawn('prlimit', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => server.on('close', resolve));
    cleanups.push(() => {
      if (server.exitCode === null) server.kill('SIGKILL');
    });
    const listening = await waitForEvent(server, 'listening');
    const finished = waitForEvent(server, 'finished', 120_000);
    const adminToken = readFileSync(String(listening.adminTokenFile), 'utf8').trim();
    const status = async () => (await (await fetch(`${String(listening.url)}${ROUTES.status}`, { headers: { authorization: `Bearer ${adminToken}` } })).json()) as { storageError: StorageError | null; pagesFetched: number };
    const fetchers = ['one', 'two'].map((name) => fetcher(String(listening.url), String(listening.tokenFile), name));

    const failing = await until('the storage error', async () => (await status()).storageError);
    expect(failing.code).toBe('EFBIG');
    expect(failing.message).toMatch(/file too large/);
    expect((await status()).pagesFetched).toBeLessThan(PAGES);
    await until('a failed retry', async () => ((await status()).storageError?.attempts ?? 0) >= 2);
    // Not ready while storage fails: a load balancer or an orchestrator sees it.
    const readyz = await fetch(`${String(listening.url)}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.json()).toEqual({ ready: false, reason: 'storage', code: 'EFBIG' });

    // Space is back: the limit is raised from outside the process.
    execFileSync('prlimit', ['--pid', String(listening.pid), '--fsize=unlimited:unlimited']);
    await finished;
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/storage error EFBIG: .*file too large.*the crawl is paused/);
    expect(stderr).toMatch(/storage works again after \d+ ms/);
    for (const child of fetchers) expect((await child.output).code).toBe(0);
    await expectEachPageFetchedAndStoredOnce(dataDir);
    // With archiving on (the default) the WARC files hit the limit too: they parse whole, and every page
    // has exactly one response in them, each fetch archived once.
    const records: ParsedRecord[] = [];
    for (const file of readdirSync(join(dataDir, 'warc')).filter((name) => name.endsWith('.warc.gz')).sort()) records.push(...(await checkWarcPath(join(dataDir, 'warc', file), records)));
    // Pages only: robots.txt and each host's /sitemap.xml (discovery) are archived too.
    const discovery = (uri: string) => uri.endsWith('/robots.txt') || uri.endsWith('/sitemap.xml');
    const responses = records.filter((r) => r.type === 'response' && !discovery(r.headers.get('WARC-Target-URI')!)).map((r) => r.headers.get('WARC-Target-URI')!);
    expect(responses.sort()).toEqual([...countBy(pageRequests(web.log), urlOf).keys()].sort());
  }, 150_000);
});
