/**
 * Seeds given to a crawl again replace the saved ones: URLs only the old seeds reached are outside the
 * new scope, and the next pass leaves them as they are. The pass says how many, instead of announcing
 * that it recrawls every URL known and then requesting none of them.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestWeb, type TestWeb } from '../../scripts/test-web.js';
import { assertBuilt, runPetrel, tempDir } from '../support/petrel-process.js';
import { pageRequests } from '../support/request-log.js';

describe('a pass whose seeds changed', () => {
  let web: TestWeb;

  beforeAll(async () => {
    assertBuilt();
    web = await startTestWeb({ profile: 'bench', hosts: 2, pagesPerHost: 10 });
  });

  afterAll(async () => {
    await web?.close();
  });

  it('says how many known URLs the new seeds leave out, and leaves them unrequested', async () => {
    const data = join(tempDir('seeds-changed'), 'data');
    const [a, b] = web.origins as [string, string];
    const first = await runPetrel(['crawl', '--data', data, '--seed', `${a}/index.html`, '--scope', 'host', '--delay-ms', '0', '--no-progress']);
    expect(first.code, first.stderr).toBe(0);
    const hostA = new URL(a).host;
    const knownOfA = new Set(pageRequests(web.log).filter((entry) => entry.host === hostA).map((entry) => entry.path)).size;
    web.clearLog();
    const second = await runPetrel(['crawl', '--data', data, '--seed', `${b}/index.html`, '--delay-ms', '0', '--no-progress']);
    expect(second.code, second.stderr).toBe(0);
    const line = /pass 2: recrawling the (\d+) URLs known \(fresh ones are skipped, stale ones revalidated\); (\d+) of them, due now, are outside the scope of the seeds or deeper than --max-depth: left as they are/.exec(second.stderr);
    expect(line, second.stderr).not.toBeNull();
    // Every URL of host A known from the first pass (pages, and links to pages that failed) is left out.
    expect(Number(line![2])).toBeGreaterThanOrEqual(knownOfA);
    expect(Number(line![2])).toBeLessThanOrEqual(Number(line![1]));
    expect(pageRequests(web.log).filter((entry) => entry.host === hostA)).toEqual([]);
  }, 120_000);
});
