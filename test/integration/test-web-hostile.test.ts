/**
 * The test web's hostile host: where it lives, that nothing links to it, that its index links every
 * case, and that what it serves agrees with its ground truth (scripts/test-web/hostile/cases.ts).
 * How the fetcher copes with it is test/integration/hostile-fetch.test.ts.
 */
import { createInflate } from 'node:zlib';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { BOMB_INFLATED_BYTES, DISALLOWED_PREFIX, ROBOTS_BYTES, hostileRobotsAllows } from '../../scripts/test-web/hostile/cases.js';

describe('the hostile host', () => {
  let web: TestWeb;
  // Lenient on purpose: this test looks at what is served, not at what a crawler should accept.
  const agent = new Agent({ maxHeaderSize: 1024 * 1024 });
  const get = async (path: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> => {
    const response = await request(`${web.hostile.origin}${path}`, { dispatcher: agent });
    const chunks: Buffer[] = [];
    for await (const chunk of response.body) chunks.push(chunk as Buffer);
    return { status: response.statusCode, headers: response.headers, body: Buffer.concat(chunks) };
  };

  beforeAll(async () => {
    web = await startTestWeb({ pagesPerHost: 5 });
  });
  afterAll(async () => {
    await agent.close();
    await web.close();
  });

  it('listens on the address after the special hosts, in no origins list, reachable from no seed', () => {
    expect(web.hostile.origin).toBe(`http://127.0.0.${2 + web.origins.length}:${web.port}`);
    expect(web.origins).not.toContain(web.hostile.origin);
    const reachable = web.model.reachable({ seeds: web.origins.map((origin) => `${origin}/index.html`), inScope: () => true, maxDepth: 20 });
    for (const url of reachable.keys()) expect(url.startsWith(web.hostile.origin)).toBe(false);
  });

  it('links every linked case from its index, and nothing else', async () => {
    const index = await get('/index.html');
    expect(index.status).toBe(200);
    const hrefs = [...index.body.toString('utf8').matchAll(/<a href="([^"]*)">/g)].map((match) => match[1]!.replace(/&amp;/g, '&'));
    expect(hrefs).toEqual(web.hostile.cases.filter((entry) => entry.linked).map((entry) => entry.path));
    expect(hrefs).toContain(`${DISALLOWED_PREFIX}never.html`);
  });

  it('serves the status its ground truth gives for every well-formed case', async () => {
    web.hostile.state.reset();
    const wellFormed = web.hostile.cases.filter((entry) => entry.expect.kind === 'response' && !['bomb', 'body', 'headers'].includes(entry.group) && !entry.path.startsWith('/fault/'));
    expect(wellFormed.length).toBeGreaterThan(40);
    const statuses = await Promise.all(wellFormed.map(async (entry) => [entry.path, (await get(entry.path)).status]));
    expect(Object.fromEntries(statuses)).toEqual(Object.fromEntries(wellFormed.map((entry) => [entry.path, entry.expect.kind === 'response' ? entry.expect.status : 0])));
  });

  it('recovers its flaky statuses after failuresBeforeRecovery requests, until reset', async () => {
    web.hostile.state.reset();
    for (const entry of web.hostile.cases.filter((c) => c.failuresBeforeRecovery > 0)) {
      const seen: number[] = [];
      for (let i = 0; i <= entry.failuresBeforeRecovery; i++) seen.push((await get(entry.path)).status);
      expect(seen.slice(-1), entry.path).toEqual([200]);
      expect(new Set(seen.slice(0, -1)).size, entry.path).toBe(1);
    }
    web.hostile.state.reset();
    expect((await get('/status/500-recovers.html')).status).toBe(500);
  });

  it('serves a 600 KiB robots.txt whose first rule disallows the prefix the model disallows', async () => {
    const robots = await get('/robots.txt');
    expect(robots.body.length).toBe(ROBOTS_BYTES);
    expect(robots.body.toString('latin1')).toMatch(/^#[^\n]*\nUser-agent: \*\nDisallow: \/private\/\n/);
    expect(hostileRobotsAllows(`${DISALLOWED_PREFIX}never.html`)).toBe(false);
    expect(hostileRobotsAllows('/index.html')).toBe(true);
    expect(hostileRobotsAllows('/robots.txt')).toBe(true);
  });

  it('serves a deflate bomb of about 1 MB that inflates to exactly 1 GiB with a valid checksum', async () => {
    const response = await get('/bomb/deflate.html');
    expect(response.headers['content-encoding']).toBe('deflate');
    const wire = response.body.length;
    expect(wire).toBeGreaterThan(500_000);
    expect(wire).toBeLessThan(2_000_000);
    // Inflated as a stream, counted and dropped: never 1 GiB in memory.
    let inflated = 0;
    const inflate = createInflate();
    inflate.on('data', (chunk: Buffer) => (inflated += chunk.length));
    const done = new Promise<void>((resolve, reject) => inflate.once('end', resolve).once('error', reject));
    inflate.end(response.body);
    await done;
    expect(inflated).toBe(BOMB_INFLATED_BYTES);
  }, 20_000);

  it('logs its requests, with the status of raw responses', async () => {
    web.clearLog();
    await get('/fault/http10.html');
    // The entry is added when the server sees the socket close, a moment after the client does.
    await expect.poll(() => web.log.find((e) => e.path === '/fault/http10.html'), { timeout: 15_000 }).toMatchObject({ host: web.hostile.authority, method: 'GET', status: 200 });
  });

  it('does not exist in the bench profile', async () => {
    const bench = await startTestWeb({ profile: 'bench', pagesPerHost: 3, hosts: 1 });
    try {
      expect(() => bench.hostile).toThrow(/bench/);
    } finally {
      await bench.close();
    }
  });
});
