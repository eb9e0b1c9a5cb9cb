/**
 * Logs (shared/logger.ts) of a whole crawl, real processes: a queue server started from a config file
 * that asks for JSON at debug level, fetchers with --log-format json. Every line of every process is
 * one JSON record with level, time, role and a stable event name (fetchers: their name too); the
 * lifecycle events are there (listening, crawl-started, fetcher-joined, commit, the access log,
 * fetcher-lost for a fetcher killed with SIGKILL, draining, stopped); and no line holds a secret: not
 * fetcher.token, admin.token, metrics.token, an admin session cookie or CSRF token, nor any request
 * signature header. Without options the human form is what it always was.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { readStatus } from '../support/admin-api.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

interface LogRecord {
  level: number;
  levelName: string;
  time: number;
  role: string;
  event: string;
  msg: string;
  fetcher?: string;
  [field: string]: unknown;
}

function records(stderr: string): LogRecord[] {
  return stderr
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      expect(() => JSON.parse(line), `not a JSON record: ${line}`).not.toThrow();
      return JSON.parse(line) as LogRecord;
    });
}

describe('logs of a crawl', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 30, hosts: 1 });
  });

  afterAll(async () => {
    killStartedPetrels();
    await web?.close();
  });

  it('are JSON records with stable events, and hold no secret', async () => {
    const dir = tempDir('logs');
    const data = join(dir, 'data');
    const config = join(dir, 'petrel.yaml');
    const main = web.hostByRole.main;
    writeFileSync(config, `data: ${data}\nport: 0\nlog-format: json\nlog-level: debug\nseed: [${main}/index.html]\nscope: prefix\ndelay-ms: 20ms\nlease-ms: 1s\nmax-retries: 0\n`);
    const server = startPetrel(['queue-server', '--config', config]);
    let serverStderr = '';
    server.stderr!.on('data', (chunk: Buffer) => (serverStderr += chunk.toString()));
    const listening = await waitForEvent(server, 'listening');
    const url = String(listening.url);
    const tokens = {
      fetcher: readFileSync(String(listening.tokenFile), 'utf8').trim(),
      admin: readFileSync(String(listening.adminTokenFile), 'utf8').trim(),
      metrics: readFileSync(String(listening.metricsTokenFile), 'utf8').trim(),
    };
    const fetcherArgs = (name: string) => ['fetcher', '--server', url, '--token-file', String(listening.tokenFile), '--name', name, '--concurrency', '2', '--log-format', 'json', '--log-level', 'debug'];
    // One fetcher claims and is killed at once: the queue server must report it lost.
    const doomed = startPetrel(fetcherArgs('doomed'));
    await until(async () => (await readStatus(url, tokens.admin)).fetchers.some((f) => f.name === 'doomed'));
    doomed.kill('SIGKILL');
    const fetchers = ['alpha', 'beta'].map((name) => startPetrel(fetcherArgs(name)));

    // An operator's requests with every kind of secret: bearer tokens, an admin session and its CSRF token.
    expect((await fetch(new URL('/metrics', url), { headers: { authorization: `Bearer ${tokens.metrics}` } })).status).toBe(200);
    const login = await fetch(new URL('/admin/login', url), { method: 'POST', headers: { 'content-type': 'application/json', origin: url }, body: JSON.stringify({ token: tokens.admin }) });
    expect(login.status).toBe(200);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    const csrf = ((await login.json()) as { csrfToken: string }).csrfToken;
    expect((await fetch(new URL('/admin/api/session', url), { headers: { cookie } })).status).toBe(200);

    await until(async () => {
      const status = await readStatus(url, tokens.admin);
      return status.displayState === 'idle' && status.pagesFetched > 0 && status.itemsLeased === 0;
    });
    await until(() => Promise.resolve(serverStderr.includes('"event":"fetcher-lost"')));
    for (const fetcher of fetchers) fetcher.kill('SIGTERM');
    server.kill('SIGTERM');
    const outputs = await Promise.all([server.output, doomed.output, ...fetchers.map((fetcher) => fetcher.output)]);
    expect(outputs[0]!.code).toBe(0);

    const queueServer = records(outputs[0]!.stderr);
    for (const record of queueServer) {
      expect(record).toMatchObject({ role: 'queue-server' });
      expect(typeof record.level).toBe('number');
      expect(typeof record.time).toBe('number');
      expect(record.event).toMatch(/^[a-z]+(-[a-z]+)*$/);
    }
    const events = new Set(queueServer.map((record) => record.event));
    for (const event of ['listening', 'crawl-started', 'fetcher-joined', 'commit', 'http', 'fetcher-lost', 'draining', 'stopped']) expect(events, event).toContain(event);
    expect(queueServer.find((r) => r.event === 'fetcher-lost')).toMatchObject({ fetcherName: 'doomed', levelName: 'warn' });
    expect(queueServer.filter((r) => r.event === 'fetcher-joined').map((r) => r.fetcherName).sort()).toEqual(['alpha', 'beta', 'doomed']);
    // The access log: fetcher routes with the signing fetcher's id, the operator's routes, never a query.
    const http = queueServer.filter((r) => r.event === 'http');
    expect(http.some((r) => r.path === '/api/v1/claim' && typeof r.fetcherId === 'string')).toBe(true);
    expect(http.some((r) => r.path === '/metrics' && r.status === 200)).toBe(true);
    expect(http.some((r) => r.path === '/admin/login' && r.status === 200)).toBe(true);
    for (const fetcher of outputs.slice(2)) {
      const lines = records(fetcher.stderr);
      expect(lines.length).toBeGreaterThan(0);
      for (const record of lines) expect(record).toMatchObject({ role: 'fetcher' });
      expect(lines.map((r) => r.event)).toContain('fetcher-started');
      expect(new Set(lines.map((r) => r.fetcher)).size).toBe(1);
    }

    // No secret anywhere: every byte every process wrote.
    const everything = outputs.map((o) => `${o.stdout}\n${o.stderr}`).join('\n');
    expect(everything.length).toBeGreaterThan(1000);
    const cookieValue = cookie.split('=')[1]!;
    for (const [what, secret] of Object.entries({ ...tokens, cookie: cookieValue, csrf })) {
      expect(secret.length, what).toBeGreaterThanOrEqual(16);
      expect(everything.includes(secret), `${what} in a log line`).toBe(false);
    }
    expect(everything).not.toMatch(/x-petrel-signature|authorization|bearer |cookie/i);
  }, 90_000);

  it('under petrel crawl in JSON, pass each child\'s records on as they are: its own role, level and event, not wrapped in one of the crawl\'s', async () => {
    const dir = tempDir('logs-crawl');
    const crawl = startPetrel(['crawl', '--data', join(dir, 'data'), '--seed', `${web.hostByRole.main}/index.html`, '--scope', 'host', '--max-depth', '1', '--delay-ms', '0', '--max-retries', '0', '--no-progress', '--fetchers', '1'], { PETREL_LOG_FORMAT: 'json' });
    const run = await crawl.output;
    expect(run.code, run.stderr).toBe(0);
    const json = run.stderr.split('\n').filter((line) => line.startsWith('{'));
    const parsed = json.map((line) => JSON.parse(line) as LogRecord);
    expect(parsed.find((record) => record.role === 'fetcher' && record.event === 'fetcher-started'), run.stderr).toBeDefined();
    expect(parsed.find((record) => record.role === 'queue-server' && record.event === 'listening'), run.stderr).toBeDefined();
    // No record carries another one inside its message.
    expect(parsed.filter((record) => record.msg.startsWith('{"level":')), run.stderr).toEqual([]);
  }, 60_000);

  it('keep the human form by default: a queue server says the line it always said, and when it stopped', async () => {
    const dataDir = join(tempDir('logs-human'), 'data');
    const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0']);
    await waitForEvent(server, 'listening');
    server.kill('SIGTERM');
    const { code, stderr } = await server.output;
    expect(code).toBe(0);
    expect(stderr.trim().split('\n')).toEqual([
      expect.stringMatching(/^petrel queue-server listening on http:\/\/127\.0\.0\.1:\d+ \(fetcher token in .*fetcher\.token\)$/),
      `petrel queue-server: stopped: 0 pages fetched this run, 0 errors; the crawl is saved in ${dataDir}`,
    ]);
  });
});

async function until(condition: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
