/**
 * A full disk under the WARC archive, for real: scripts/warc-disk-full.ts runs in its own mount
 * namespace (`unshare -m`, root) on a 640 KiB tmpfs, stores captures and runs the crawl's group commit
 * until the disk is full. The failing commit must throw (a CommitFailure of `warc/`, the kind that
 * pauses a running crawl, caused by WARC_WRITE_FAILED with errno ENOSPC) before the
 * crawl database commits anything (so nothing is acknowledged), leave the file at its durable length,
 * fail again while the disk is full, and succeed once space is back, with every record staged before;
 * the files then reopen and parse whole with warcio. Skipped where mount namespaces are not available
 * (not root, not Linux).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertBuilt, tempDir } from '../support/petrel-process.js';
import { canMountTmpfs, runOnTmpfs } from '../support/tmpfs-scenario.js';
import { checkWarcPath, type ParsedRecord } from '../support/warc-exchange.js';

const SCENARIO = fileURLToPath(new URL('../../dist/scripts/warc-disk-full.js', import.meta.url));

describe.skipIf(!canMountTmpfs())('WARC archive on a full disk', () => {
  it('fails the commit with ENOSPC before the crawl database moves, keeps the records staged, and commits them once space is back', async () => {
    assertBuilt();
    const mountPoint = tempDir('warc-full');
    const copyTo = tempDir('warc-full-copy');
    const { stdout, stderr, code } = await runOnTmpfs(SCENARIO, '640k', mountPoint, [copyTo]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const events = stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const committed = events.filter((e) => e.event === 'committed');
    const failed = events.find((e) => e.event === 'failed')!;
    expect(committed.length).toBeGreaterThan(3);
    expect(failed).toMatchObject({ store: 'warc/', commitCode: 'ENOSPC', code: 'WARC_WRITE_FAILED', errno: 'ENOSPC', disposition: 'retry', crawlDbMoved: false });
    expect(failed.message).toMatch(/ENOSPC.*nothing was acknowledged/);
    // The partial write was cut back: on disk exactly what the commits before made durable.
    expect(failed.bytesOnDisk).toBe(failed.durableBytes);
    expect(events.find((e) => e.event === 'retry-succeeded-while-full')).toBeUndefined();
    expect(events.find((e) => e.event === 'retry-failed')).toMatchObject({ store: 'warc/', code: 'WARC_WRITE_FAILED', errno: 'ENOSPC', bytesOnDisk: failed.durableBytes });
    const retried = events.find((e) => e.event === 'retry-committed')!;
    expect(retried.crawlDbMoved).toBe(true);
    expect(retried.bytesOnDisk).toBe(retried.warcBytes);
    expect(events.at(-1)).toMatchObject({ event: 'reopened', crawlDbRecordsWithCapture: failed.captures });

    const seen: ParsedRecord[] = [];
    for (const name of readdirSync(copyTo).sort()) seen.push(...(await checkWarcPath(join(copyTo, name), seen)));
    const responses = seen.filter((r) => r.type === 'response').map((r) => r.headers.get('WARC-Target-URI'));
    expect(responses).toEqual(Array.from({ length: failed.captures as number }, (_, n) => `http://127.0.0.1:9/full/${n}`));
  });
});
