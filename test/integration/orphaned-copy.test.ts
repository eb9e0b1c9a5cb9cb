/**
 * A copy outlives its original: two pages with one body, so one is crawled as the other's duplicate
 * (not searchable); then the original answers 404. A pass that revalidates the copy (304) after the
 * original's 404 is applied finds its body nobody's copy, so its validators are dropped; the pass after
 * fetches it in full, and it becomes an original the search finds. Before, the copy stayed a duplicate of a gone page, unsearchable, for
 * as long as it kept answering 304.
 *
 * The site is a small server of this test on 127.0.0.1: ETags, If-None-Match, max-age=0 (every pass
 * revalidates), and a switch that makes one page answer 404.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

const TWIN_BODY = '<!doctype html><html lang="en"><head><title>Monotremes</title></head><body><p>The platypus is a semiaquatic egg-laying mammal.</p></body></html>';

interface Request {
  readonly path: string;
  readonly conditional: boolean;
  readonly status: number;
}

describe('a duplicate whose original is gone', () => {
  let server: Server;
  let origin: string;
  const gone = new Set<string>();
  let requests: Request[] = [];
  let dataDir: string;

  const crawl = async () => {
    requests = [];
    const run = await runPetrel(['crawl', '--seed', `${origin}/index.html`, '--data', dataDir, '--scope', 'host', '--delay-ms', '0', '--max-retries', '0', '--fetchers', '1', '--no-progress', '--no-sitemaps']);
    expect(run.code, run.stderr).toBe(0);
  };
  const records = async () => {
    const dump = await runPetrel(['db', 'dump', '--data', dataDir]);
    expect(dump.code, dump.stderr).toBe(0);
    return new Map(dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: string; duplicateOf: string | null }).map((r) => [r.url, r]));
  };
  const search = async (query: string) => {
    const run = await runPetrel(['search', '--data', dataDir, '--json', query]);
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as { results: Array<{ url: string }> }).results.map((r) => r.url);
  };

  beforeAll(async () => {
    assertBuilt();
    server = createServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0]!;
      const body = path === '/index.html' ? '<!doctype html><title>Index</title><a href="/a.html">a</a> <a href="/b.html">b</a>' : path === '/a.html' || path === '/b.html' ? TWIN_BODY : null;
      const conditional = req.headers['if-none-match'] !== undefined;
      const answer = (status: number, headers: Record<string, string> = {}, text = '') => {
        requests.push({ path, conditional, status });
        res.writeHead(status, headers).end(text);
      };
      if (body === null || gone.has(path)) return answer(404, { 'content-type': 'text/plain' }, 'not found');
      const etag = `"${Buffer.from(body).length}-${path === '/index.html' ? 'i' : 't'}"`;
      if (req.headers['if-none-match'] === etag) return answer(304, { etag, 'cache-control': 'max-age=0' });
      answer(200, { 'content-type': 'text/html; charset=utf-8', etag, 'cache-control': 'max-age=0' }, body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dataDir = join(tempDir('orphaned-copy'), 'data');
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('is revalidated, then fetched in full, and found by search as an original', async () => {
    await crawl();
    const first = await records();
    const twins = [`${origin}/a.html`, `${origin}/b.html`];
    const copy = twins.find((url) => first.get(url)?.status === 'duplicate');
    expect(copy, JSON.stringify([...first.values()])).toBeDefined();
    const original = twins.find((url) => url !== copy)!;
    expect(first.get(copy!)?.duplicateOf).toBe(urlHashHex(urlHash(original)));
    expect(await search('platypus')).toEqual([original]);

    // The original goes. This pass revalidates the copy: a 304, the same body, nobody's copy now.
    gone.add(new URL(original).pathname);
    await crawl();
    const copyPath = new URL(copy!).pathname;
    expect(requests.filter((r) => r.path === copyPath)).toEqual([{ path: copyPath, conditional: true, status: 304 }]);
    expect((await records()).get(original)?.status).toBe('gone');
    expect(await search('platypus')).toEqual([]);

    // A later pass asks for the copy in full, and it is an original again, searchable: the next one when
    // the pass above applied the original's 404 before the copy's 304, else the one after (the copy's
    // 304 in the next pass then finds its original gone).
    const asked: Request[][] = [];
    for (let pass = 0; pass < 2 && !asked.flat().some((r) => r.status === 200); pass++) {
      await crawl();
      asked.push(requests.filter((r) => r.path === copyPath));
    }
    const last = asked.at(-1)!;
    expect(last, JSON.stringify(asked)).toEqual([{ path: copyPath, conditional: false, status: 200 }]);
    if (asked.length === 2) expect(asked[0]).toEqual([{ path: copyPath, conditional: true, status: 304 }]);
    const third = await records();
    expect(third.get(copy!)).toMatchObject({ status: 'fetched', duplicateOf: null });
    expect(await search('platypus')).toEqual([copy]);
  }, 120_000);
});
