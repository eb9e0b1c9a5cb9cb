/**
 * Fetchers are no proxy into their own network. A crawled page (on a seed's host, 127.0.0.40) links to
 * a fake internal key-value store on 127.0.0.1 another port, whose answer is "INTERNAL SECRET", in every
 * spelling a URL can give a loopback address, through a name pinned to it (--resolve), through a
 * redirect, and to the queue server's own admin login. With the default guard none of them is
 * connected to (the store counts its connections) and each is recorded as `blocked-address`; with
 * --allow-private-addresses, passed through `petrel crawl`, the same links are fetched. Non-loopback
 * targets (169.254.169.254, 10.0.0.1, ...) are only ever linked when the test runs in a network
 * namespace with nothing but loopback (`.ci/run` runs the suite in `unshare -n`), so even a broken
 * guard could not send a packet anywhere; a refusal then still shows as `blocked-address`, where an
 * attempt would have been `host-unreachable`.
 */
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const SITE_HOST = '127.0.0.40';
const SECRET = 'INTERNAL SECRET';
/** Nothing but loopback can be reached from here (a network namespace of its own). */
const ONLY_LOOPBACK = Object.keys(networkInterfaces()).every((name) => name === 'lo');

interface Exported {
  url: string;
  status: number | null;
  errorCode: string | null;
  title: string | null;
  redirectTo: string | null;
}

/** Temporary directories of this file, removed at the end. */
const dirs: string[] = [];
function dataDirOf(prefix: string): string {
  const dir = tempDir(prefix);
  dirs.push(dir);
  return join(dir, 'data');
}

let kv: { port: number; connections: number; v6: boolean; close(): Promise<void> };
let site: { origin: string; links: string[]; close(): Promise<void> };

/** A fake internal service: answers every request with the secret, counts every TCP connection. */
async function startKeyValueStore(): Promise<typeof kv> {
  const handler = (_req: unknown, res: import('node:http').ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>${SECRET}</title></head><body>${SECRET}: hunter2</body></html>`);
  };
  const v4 = createServer(handler);
  await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
  const port = (v4.address() as AddressInfo).port;
  const servers: Server[] = [v4];
  // The same port on ::1, so that [::1] and localhost-as-::1 reach it too when allowed.
  const v6 = createServer(handler);
  const v6ok = await new Promise<boolean>((resolve) => {
    v6.once('error', () => resolve(false));
    v6.listen(port, '::1', () => resolve(true));
  });
  if (v6ok) servers.push(v6);
  const state = {
    port,
    connections: 0,
    v6: v6ok,
    close: async () => {
      for (const server of servers) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
  for (const server of servers) server.on('connection', () => state.connections++);
  return state;
}

/** The crawled site: robots.txt 404, an index with `links`, and a redirect to the store. */
async function startSite(): Promise<typeof site> {
  const state = { origin: '', links: [] as string[], close: async () => undefined as void };
  const server = createServer((req, res) => {
    if (req.url === '/index.html') {
      const body = state.links.map((link) => `<a href="${link}">${link}</a>`).join('\n');
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<html><head><title>links</title></head><body>${body}</body></html>`);
    } else if (req.url === '/to-internal') {
      res.writeHead(302, { location: `http://127.0.0.1:${kv.port}/kv/redirected` }).end();
    } else res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  });
  await new Promise<void>((resolve) => server.listen(0, SITE_HOST, resolve));
  state.origin = `http://${SITE_HOST}:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

/** Every spelling of the store's loopback address, each under its own path (they normalize alike). */
function loopbackLinks(): Record<string, string> {
  const p = kv.port;
  return {
    localhost: `http://localhost:${p}/kv/localhost`,
    ipv6Loopback: `http://[::1]:${p}/kv/ipv6`,
    shortForm: `http://127.1:${p}/kv/short`,
    decimal: `http://2130706433:${p}/kv/decimal`,
    hex: `http://0x7f000001:${p}/kv/hex`,
    mapped: `http://[::ffff:127.0.0.1]:${p}/kv/mapped`,
    pinnedName: `http://internal.example:${p}/kv/pinned-name`,
  };
}

async function exported(dataDir: string): Promise<Map<string, Exported>> {
  const result = await runPetrel(['export', '--data', dataDir]);
  expect(result.code, result.stderr).toBe(0);
  const records = result.stdout.trim().split('\n').map((line) => JSON.parse(line) as Exported);
  return new Map(records.map((record) => [record.url, record]));
}

/** Crawls the site with a queue server and one fetcher (`fetcherArgs` added); returns the data directory. */
async function crawlWithFetcher(fetcherArgs: string[]): Promise<string> {
  const dataDir = dataDirOf('ssrf');
  const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0', '--once', '--seed', `${site.origin}/index.html`, '--scope', 'any', '--max-depth', '2', '--delay-ms', '0']);
  const listening = await waitForEvent(server, 'listening');
  const finished = waitForEvent(server, 'finished', 60_000);
  // The queue server's own admin login is one more internal target.
  site.links.push(`${String(listening.url)}/admin/login`);
  const fetcher = startPetrel(['fetcher', '--server', String(listening.url), '--token-file', String(listening.tokenFile), '--resolve', 'internal.example:127.0.0.1', ...fetcherArgs]);
  await finished;
  expect((await server.output).code).toBe(0);
  const output = await fetcher.output;
  expect(output.code, output.stderr).toBe(0);
  return dataDir;
}

beforeAll(async () => {
  assertBuilt();
  kv = await startKeyValueStore();
  site = await startSite();
});

afterEach(() => {
  killStartedPetrels();
  kv.connections = 0;
});

afterAll(async () => {
  await site?.close();
  await kv?.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('the fetcher refuses private addresses by default', () => {
  it('connects to none of the internal targets a crawled page links to, in any spelling or by redirect, and records each as blocked-address', async () => {
    const targets = loopbackLinks();
    site.links = [...Object.values(targets), `${site.origin}/to-internal`];
    const dataDir = await crawlWithFetcher([]);
    const records = await exported(dataDir);

    expect(kv.connections).toBe(0);
    // The seed's host was fetched as usual: the crawl ran.
    expect(records.get(`${site.origin}/index.html`)?.status).toBe(200);
    // The redirect is recorded as such; its target is a new URL, refused like the others.
    expect(records.get(`${site.origin}/to-internal`)).toMatchObject({ status: 302, redirectTo: `http://127.0.0.1:${kv.port}/kv/redirected` });
    const internal = [...records.values()].filter((record) => !record.url.startsWith(site.origin));
    for (const record of internal) expect({ url: record.url, status: record.status, errorCode: record.errorCode }).toEqual({ url: record.url, status: null, errorCode: 'blocked-address' });
    const urls = internal.map((record) => record.url).sort();
    expect(urls).toEqual(
      [
        `http://localhost:${kv.port}/kv/localhost`,
        `http://[::1]:${kv.port}/kv/ipv6`,
        `http://127.0.0.1:${kv.port}/kv/short`,
        `http://127.0.0.1:${kv.port}/kv/decimal`,
        `http://127.0.0.1:${kv.port}/kv/hex`,
        `http://[::ffff:7f00:1]:${kv.port}/kv/mapped`,
        `http://internal.example:${kv.port}/kv/pinned-name`,
        `http://127.0.0.1:${kv.port}/kv/redirected`,
        site.links.at(-1)!, // the queue server's /admin/login
      ].sort(),
    );
    expect([...records.values()].some((record) => record.title === SECRET)).toBe(false);

    // The crawl database has them as gone with that code: never retried.
    const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
    const stored = dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: string; errorCode: string | null });
    for (const url of urls) expect(stored.find((record) => record.url === url)).toMatchObject({ status: 'gone', errorCode: 'blocked-address' });
  }, 90_000);

  it.runIf(ONLY_LOOPBACK)('refuses link-local, private, CGNAT and unique-local addresses, and names pinned to them, before connecting', async () => {
    site.links = [
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://metadata.example/computeMetadata/v1/',
    ];
    const dataDir = await crawlWithFetcher(['--resolve', 'metadata.example:169.254.169.254']);
    const records = await exported(dataDir);
    const normalized = ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://192.168.1.1/', 'http://100.64.0.1/', 'http://[fd00::1]/', 'http://[fe80::1]/', 'http://metadata.example/computeMetadata/v1/'];
    for (const url of normalized) expect({ url, errorCode: records.get(url)?.errorCode }).toEqual({ url, errorCode: 'blocked-address' });
  }, 90_000);
});

describe('--allow-private-addresses', () => {
  it('fetches the same internal links, passed through petrel crawl to its fetchers', async () => {
    const targets = loopbackLinks();
    // [::1] only where the store could listen on it.
    site.links = [...Object.entries(targets).filter(([name]) => kv.v6 || name !== 'ipv6Loopback').map(([, link]) => link), `${site.origin}/to-internal`];
    const dataDir = dataDirOf('ssrf-allowed');
    const run = await runPetrel([
      'crawl', '--seed', `${site.origin}/index.html`, '--data', dataDir, '--scope', 'any', '--max-depth', '2', '--delay-ms', '0',
      '--fetchers', '1', '--allow-private-addresses', '--resolve', 'internal.example:127.0.0.1', '--no-progress',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const records = await exported(dataDir);
    expect(kv.connections).toBeGreaterThan(0);
    // Every store link, and the redirect's target in place of the redirect page.
    const internal = [...records.values()].filter((record) => record.url.includes(`:${kv.port}/`));
    expect(internal.map((record) => record.url).sort()).toEqual([
      ...site.links.filter((link) => !link.startsWith(site.origin)).map((link) => new URL(link).href),
      `http://127.0.0.1:${kv.port}/kv/redirected`,
    ].sort());
    for (const record of internal) expect({ url: record.url, status: record.status, title: record.title }).toEqual({ url: record.url, status: 200, title: SECRET });
  }, 90_000);
});
