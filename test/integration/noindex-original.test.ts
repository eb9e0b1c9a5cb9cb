/**
 * A page marked noindex is nobody's original: a print version marked noindex (meta robots), or a page
 * sent with `X-Robots-Tag: noindex`, fetched before the indexable page with the same text, left that
 * page a "duplicate" of it, and so neither could be found. Real processes, a real server on loopback.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

const ARTICLE = '<p>The serval is a wild cat native to Africa, with the longest legs of any cat relative to its body. It hunts rodents in tall grass.</p>';
const NOTE = '<p>Takahe are flightless birds of New Zealand, once thought extinct and found again in the Murchison Mountains in 1948.</p>';

const pages: Record<string, { headers?: Record<string, string>; body: string }> = {
  '/': { body: '<title>home</title><a href="/print.html">print</a> <a href="/note-raw.html">raw</a> <a href="/more.html">more</a>' },
  // The same text as /article.html, with a meta robots noindex: a near duplicate.
  '/print.html': { body: `<html><head><title>Serval</title><meta name="robots" content="noindex"></head><body>${ARTICLE}</body></html>` },
  // The same bytes as /note.html, sent with X-Robots-Tag: noindex: an exact duplicate.
  '/note-raw.html': { headers: { 'x-robots-tag': 'noindex' }, body: `<html><head><title>Takahe</title></head><body>${NOTE}</body></html>` },
  '/more.html': { body: '<title>more</title><a href="/article.html">article</a> <a href="/note.html">note</a>' },
  '/article.html': { body: `<html><head><title>Serval</title></head><body>${ARTICLE}</body></html>` },
  '/note.html': { body: `<html><head><title>Takahe</title></head><body>${NOTE}</body></html>` },
};

describe('a noindex page with the same text as an indexable one', () => {
  let server: Server;
  let data: string;

  beforeAll(async () => {
    assertBuilt();
    server = createServer((request, response) => {
      const page = pages[request.url ?? ''];
      if (page === undefined) response.writeHead(404).end();
      else response.writeHead(200, { 'content-type': 'text/html', ...page.headers }).end(page.body);
    });
    await new Promise<void>((done) => server.listen(0, '127.0.62.1', done));
    data = join(tempDir('noindex-original'), 'data');
    const origin = `http://127.0.62.1:${(server.address() as AddressInfo).port}`;
    const run = await runPetrel(['crawl', '--data', data, '--seed', `${origin}/`, '--delay-ms', '0', '--fetchers', '1', '--no-progress'], 60_000);
    expect(run.code, run.stderr).toBe(0);
  }, 70_000);

  afterAll(async () => {
    await new Promise((done) => server?.close(done));
  });

  it('leaves the indexable page an original, found by search, whichever was fetched first', async () => {
    const dump = await runPetrel(['db', 'dump', '--data', data]);
    const records = dump.stdout.trim().split('\n').map((line) => JSON.parse(line) as { url: string; status: string });
    const status = (path: string) => records.find((record) => record.url.endsWith(path))?.status;
    // The noindex pages were fetched first (they are a level nearer the seed).
    expect(status('/print.html')).toBe('fetched');
    expect(status('/note-raw.html')).toBe('fetched');
    expect(status('/article.html')).toBe('fetched');
    expect(status('/note.html')).toBe('fetched');
    for (const [word, path] of [['serval', '/article.html'], ['takahe', '/note.html']] as const) {
      const found = await runPetrel(['search', '--data', data, '--json', word]);
      expect(found.code, found.stderr).toBe(0);
      const urls = (JSON.parse(found.stdout) as { results: { url: string }[] }).results.map((r) => new URL(r.url).pathname);
      expect(urls, word).toEqual([path]);
    }
  });
});
