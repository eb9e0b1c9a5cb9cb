/**
 * A data file found damaged while the queue server serves (a page of cache.btree failing its checksum,
 * read only when a claim asks for a URL's validators): the queue server says which file and what to
 * run, and exits 1 at once. It answered 500 to every claim instead, and a crawl stalled for ever.
 */
import { openSync, readSync, statSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';

describe('a damaged data file met while crawling', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 1, pagesPerHost: 20 });
  });

  afterAll(async () => {
    await web?.close();
  });

  it('stops the queue server with the file named and what to run, and ends the crawl with a failure, not a stall', async () => {
    const data = join(tempDir('damaged'), 'data');
    const first = await runPetrel(['crawl', '--data', data, '--seed', `${web.origins[0]}/index.html`, '--scope', 'host', '--delay-ms', '0', '--no-progress']);
    expect(first.code, first.stderr).toBe(0);
    // Flip bytes inside every leaf page of cache.btree (4 KiB pages; kind 3 at byte 4 of each page):
    // opening reads only the meta and free-list pages, so the damage is met by a claim's look-up.
    const file = join(data, 'cache.btree');
    const pageSize = 4096;
    const fd = openSync(file, 'r+');
    let damaged = 0;
    for (let page = 2; page < statSync(file).size / pageSize; page++) {
      const header = Buffer.alloc(16);
      readSync(fd, header, 0, 16, page * pageSize);
      if (header[4] !== 3) continue;
      const bytes = Buffer.alloc(16);
      readSync(fd, bytes, 0, 16, page * pageSize + 100);
      for (let i = 0; i < bytes.length; i++) bytes[i] = bytes[i]! ^ 0xff;
      writeSync(fd, bytes, 0, 16, page * pageSize + 100);
      damaged++;
    }
    closeSync(fd);
    expect(damaged).toBeGreaterThan(0);

    const second = await runPetrel(['crawl', '--data', data, '--delay-ms', '0', '--no-progress'], 60_000);
    expect(second.code).not.toBe(0);
    expect(second.signal).toBeNull();
    expect(second.stderr).toMatch(/petrel queue-server: .*cache\.btree: page \d+: checksum mismatch \(torn or damaged page\).*petrel btree check FILE.*; stopping/);
    expect(second.stderr).toContain('the queue server exited with status 1 before the crawl finished');
    expect(second.stderr).not.toContain('internal error');
  }, 120_000);
});
