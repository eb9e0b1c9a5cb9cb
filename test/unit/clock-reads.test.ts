/**
 * Time is a parameter: decisions take `now`, and the queue server reads the wall clock in one place,
 * crawl-service.ts (`systemClock`), which hands it to the crawl and to the HTTP edges. This test reads
 * every source file and lists those that read a clock (Date.now, new Date(), performance.now);
 * the list must be exactly the files allowed below, each an edge where the clock is the point.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE_FOLDERS = ['cli', 'fetcher', 'queue-server', 'shared'];

/** Files that may read the clock, and why the clock is their business. */
const ALLOWED: Record<string, string> = {
  'queue-server/crawl/crawl-service.ts': 'the queue server\'s clock (systemClock): the crawl, timers, leases and HTTP edges get their time from it',
  'queue-server/admin/static/admin.js': 'runs in the browser: ages and rates on the admin page, against the server time it is sent',
  'shared/freshness.ts': 'parseHttpDate\'s default `now` for callers without a clock; the queue server always passes its own',
  'fetcher/fetcher.ts': 'the fetcher paces the requests of a slot (the politeness delay) by its own monotonic clock',
  'fetcher/download.ts': 'the fetcher times its own downloads (durationMs)',
  'fetcher/fetch-item.ts': 'a result\'s fetchedAt is the fetcher\'s clock (the protocol says so); Retry-After dates are read against it',
  'fetcher/dns-cache.ts': 'a DNS answer is kept for its time-to-live, on the fetcher\'s clock',
  'fetcher/queue-client.ts': 'request signatures carry the fetcher\'s timestamp (the queue server checks it against its own)',
  'cli/progress.ts': 'the progress display prints a line at most every 5 s',
  'queue-server/api/search-api.ts': 'GET /api/search and the /search page report how long the query took (tookMs); the index itself never reads a clock',
  'cli/index-command.ts': 'petrel search reports how long its query took (tookMs); the index itself never reads a clock',
  'cli/fetcher-children.ts': 'the fetcher-children supervisor spaces restarts by how long a child ran',
  'queue-server/ops/access-log.ts': 'the access log states how long each request took (monotonic clock), for people reading the log',
  'cli/export-command.ts': 'the warcinfo record opening an exported WARC is dated when the export runs',
};

const CLOCK_READ = /\bDate\.now\b|\bnew Date\(\s*\)|\bperformance\.now\b/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|js|mjs)$/.test(entry.name) ? [path] : [];
  });
}

/** The file's lines that read a clock, comments left out. */
function clockReads(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  return code.split('\n').filter((line) => CLOCK_READ.test(line));
}

describe('reading the clock', () => {
  it('happens only in the files allowed to, each for its stated reason', () => {
    const readers: Record<string, string[]> = {};
    for (const folder of SOURCE_FOLDERS) {
      for (const file of sourceFiles(join(ROOT, folder))) {
        const lines = clockReads(readFileSync(file, 'utf8'));
        if (lines.length > 0) readers[relative(ROOT, file).split('\\').join('/')] = lines.map((line) => line.trim());
      }
    }
    const notAllowed = Object.fromEntries(Object.entries(readers).filter(([file]) => ALLOWED[file] === undefined));
    expect(notAllowed).toEqual({});
    // An allowed file that no longer reads the clock leaves the list, so the list stays the truth.
    expect(Object.keys(ALLOWED).filter((file) => readers[file] === undefined)).toEqual([]);
  });

  it('finds a clock read where there is one, and not in a comment', () => {
    expect(clockReads('const now = Date.now();')).toHaveLength(1);
    expect(clockReads('const at = new Date();')).toHaveLength(1);
    expect(clockReads('const t = performance.now() - start;')).toHaveLength(1);
    expect(clockReads('clock = Date.now,')).toHaveLength(1);
    expect(clockReads('/** ms since epoch (Date.now) */\nconst x = 1; // not Date.now()')).toHaveLength(0);
    expect(clockReads('const d = new Date(ms);')).toHaveLength(0);
  });
});
