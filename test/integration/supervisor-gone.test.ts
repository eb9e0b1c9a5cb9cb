/**
 * A supervised one-shot queue server (as `petrel crawl` starts it: PETREL_SUPERVISED=1, stdin a pipe from
 * its supervisor) whose supervisor is gone. A supervisor killed with SIGKILL sends no SIGTERM; its end
 * of the child's stdin closes, which the test does here by closing that pipe. Real processes: a queue
 * server, a `petrel fetcher --once`, the test web on loopback.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, killStartedPetrels, PETREL_BIN, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('a supervised one-shot queue server whose supervisor is gone', () => {
  let web: TestWeb;
  const servers: ChildProcess[] = [];

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ pagesPerHost: 12, hosts: 1, profile: 'bench' });
  });

  afterAll(async () => {
    for (const server of servers) server.kill('SIGKILL');
    killStartedPetrels();
    await web?.close();
  });

  /** The queue server as `petrel crawl` starts it (cli/children.ts spawnPetrel). */
  function supervisedQueueServer(name: string): { server: ChildProcess; exited: Promise<number | null>; stdout: () => string } {
    const args = ['queue-server', '--data', join(tempDir(name), 'data'), '--port', '0', '--once', '--seed', `${web.hostByRole.main}/index.html`, '--scope', 'host', '--delay-ms', '0', '--no-sitemaps'];
    const server = spawn(process.execPath, [PETREL_BIN, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PETREL_SUPERVISED: '1' } });
    servers.push(server);
    let out = '';
    server.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    server.stderr!.resume();
    const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
    return { server, exited, stdout: () => out };
  }

  const events = (stdout: string): string[] =>
    stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => String((JSON.parse(line) as { event: string }).event));

  it('after crawl-over, exits with the summary as soon as the supervisor is gone, not after the 60 s guard', async () => {
    const { server, exited, stdout } = supervisedQueueServer('supervisor-gone-over');
    const listening = await waitForEvent(server, 'listening');
    const over = waitForEvent(server, 'crawl-over', 60_000);
    const fetcher = startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', 'f', '--once']);
    await over;
    await fetcher.output;
    const goneAt = Date.now();
    server.stdin!.destroy();
    const code = await exited;
    expect(code).toBe(0);
    expect(Date.now() - goneAt).toBeLessThan(10_000);
    expect(events(stdout())).toEqual(['listening', 'crawl-over', 'finished']);
    const finished = JSON.parse(stdout().split('\n').find((line) => line.includes('"finished"'))!) as { summary: { pagesFetched: number } };
    expect(finished.summary.pagesFetched).toBe(12);
  }, 90_000);

  it('gone before the crawl is over: the crawl goes on to its end and the queue server exits by itself', async () => {
    const { server, exited, stdout } = supervisedQueueServer('supervisor-gone-early');
    const listening = await waitForEvent(server, 'listening');
    server.stdin!.destroy();
    const fetcher = startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--name', 'f', '--once']);
    const code = await exited;
    expect(code).toBe(0);
    expect((await fetcher.output).code).toBe(0);
    expect(events(stdout())).toEqual(['listening', 'finished']);
    const finished = JSON.parse(stdout().split('\n').find((line) => line.includes('"finished"'))!) as { summary: { pagesFetched: number } };
    expect(finished.summary.pagesFetched).toBe(12);
  }, 90_000);
});
