/**
 * A full disk under the search index, for real: scripts/index-disk-full.ts runs in its own mount
 * namespace (`unshare -m`, root) on a 640 KiB tmpfs and commits pages to the index as the crawl's store
 * (queue-server/crawl/index-store.ts) until the disk is full. The failing commit must throw with errno
 * ENOSPC, fail again while the disk is full (with more pages staged meanwhile), and succeed once space
 * is back with every page staged since the last good commit restaged from what the store kept of
 * them (IndexStore reopens the index and stages its queue again); then each page's own word finds it,
 * and only it. Skipped where mount
 * namespaces are not available (not root, not Linux).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertBuilt, tempDir } from '../support/petrel-process.js';
import { canMountTmpfs, runOnTmpfs } from '../support/tmpfs-scenario.js';

const SCENARIO = fileURLToPath(new URL('../../dist/scripts/index-disk-full.js', import.meta.url));

describe.skipIf(!canMountTmpfs())('search index on a full disk', () => {
  it('fails the commit with ENOSPC, keeps what it staged, and commits all of it once space is back', async () => {
    assertBuilt();
    const mountPoint = tempDir('index-full');
    const { stdout, stderr, code } = await runOnTmpfs(SCENARIO, '640k', mountPoint);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const events = stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const failed = events.find((e) => e.event === 'failed')!;
    expect(failed.errno).toBe('ENOSPC');
    // Some pages were committed before the disk filled, and the one that filled it was not.
    expect(failed.committed as number).toBeGreaterThan(0);
    expect(failed.pages as number).toBeGreaterThan(failed.committed as number);
    expect(events.find((e) => e.event === 'retry-while-full')).toMatchObject({ ok: false, errno: 'ENOSPC' });
    const after = events.find((e) => e.event === 'retry-after')!;
    expect(after.ok).toBe(true);
    // Every page: those committed before the failure, the one whose commit failed, and the three staged while full.
    expect(events.at(-1)).toEqual({ event: 'searched', pages: (failed.pages as number) + 3, found: (failed.pages as number) + 3, missing: [] });
  }, 60_000);
});
