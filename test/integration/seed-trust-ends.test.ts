/**
 * A seed's host on a private address is trusted only while the crawl whose seed it is runs: a fetcher
 * of `petrel start` kept trusting it after the operator started a new crawl with other seeds, so a
 * page of the new crawl linking there (or a robots.txt redirecting there) reached the old seed's
 * private address and stored what it answered. Real processes; two servers on loopback addresses.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('trust in a seed host on a private address', () => {
  let secret: Server;
  let other: Server;
  const secretRequests: string[] = [];
  let secretOrigin: string;
  let otherOrigin: string;

  beforeAll(async () => {
    assertBuilt();
    secret = createServer((request, response) => {
      secretRequests.push(request.url ?? '');
      if (request.url === '/robots.txt') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>SECRET ${request.url}</title>`);
    });
    await new Promise<void>((done) => secret.listen(0, '127.0.64.1', done));
    secretOrigin = `http://127.0.64.1:${(secret.address() as AddressInfo).port}`;
    other = createServer((request, response) => {
      if (request.url === '/robots.txt') return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<title>other</title><a href="${secretOrigin}/from-other">a link to the first seed's host</a>`);
    });
    await new Promise<void>((done) => other.listen(0, '127.0.64.2', done));
    otherOrigin = `http://127.0.64.2:${(other.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    killStartedPetrels();
    await Promise.all([secret, other].map((server) => new Promise((done) => server?.close(done))));
  });

  it('ends with the crawl that gave it: a new crawl with other seeds does not reach it', async () => {
    const data = join(tempDir('seed-trust'), 'data');
    const child = startPetrel(['start', '--data', data, '--fetchers', '1', '--port', '0', '--seed', `${secretOrigin}/`, '--max-depth', '0', '--delay-ms', '0']);
    const started = await waitForEvent(child, 'started');
    const token = readFileSync(String(started.adminTokenFile), 'utf8').trim();
    const api = async (path: string, body?: unknown) => {
      const response = await fetch(`${started.url}${path}`, body === undefined ? { headers: { authorization: `Bearer ${token}` } } : { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(response.status, path).toBe(200);
      return (await response.json()) as { displayState: string; pagesFetched: number; errorsByCode: Record<string, number> };
    };
    // The first crawl: its seed's host answers (trusted while the crawl's slots of it run).
    await expect.poll(async () => (await api('/api/status')).displayState, { timeout: 30_000 }).toBe('idle');
    expect(secretRequests).toContain('/');
    expect(await api('/api/control/stop', {})).toMatchObject({ state: 'stopped' });
    // A new crawl, the same fetcher process, another seed whose page links to the first seed's host.
    await api('/api/control/crawl', { seeds: [`${otherOrigin}/`], scope: 'any', maxDepth: 1, delayMs: 0 });
    await expect.poll(async () => (await api('/api/status')).displayState, { timeout: 30_000 }).toBe('idle');
    expect(secretRequests).not.toContain('/from-other');
    expect((await api('/api/status')).errorsByCode['blocked-address']).toBe(1);
    child.kill('SIGTERM');
    await child.output;
    const dump = await runPetrel(['db', 'dump', '--data', data]);
    const record = dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: string; errorCode: string | null }).find((r) => r.url.endsWith('/from-other'));
    expect(record).toMatchObject({ status: 'gone', errorCode: 'blocked-address' });
  }, 90_000);
});
