/**
 * The three crawlers compared: how to start each on the test web, what to call each of its processes,
 * and how to read the page count it reports itself (cross-checked later against the server's log).
 *
 * Each peer gets a fresh temporary directory `dir` for whatever it writes (data dir, downloads, storage),
 * removed by run.mjs after the run.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * ownCount returns { pagesFetched, elapsedS, report }: the crawler's own page count, its own idea of how
 * long the crawl took (excluding what it does not count, e.g. start-up), and its full report.
 *
 * @typedef {{ origins: string[], seeds: string[], hostConcurrency: number, fetchers: number,
 *             root: string, here: string, dir: string, logDir: string,
 *             extraEnv?: Record<string, string> }} PeerContext
 * root: the Petrel checkout (a snapshot of its dist/); here: this folder; logDir: out/.
 */

/** The `petrel` executable in a checkout's build: dist/cli/petrel.js (dist/queue-server/cli/petrel.js in checkouts before the re-layout, so older commits can still be compared). */
export function petrelCli(root) {
  const current = join(root, 'dist', 'cli', 'petrel.js');
  const before = join(root, 'dist', 'queue-server', 'cli', 'petrel.js');
  return existsSync(current) || !existsSync(before) ? current : before;
}

export const petrel = {
  name: 'petrel',
  label: 'Petrel',
  command(ctx) {
    const argv = [process.execPath, petrelCli(ctx.root), 'crawl'];
    for (const seed of ctx.seeds) argv.push('--seed', seed);
    argv.push('--data', join(ctx.dir, 'data'), '--fetchers', String(ctx.fetchers), '--delay-ms', '0');
    argv.push('--host-concurrency', String(ctx.hostConcurrency), '--scope', 'host', '--no-progress');
    argv.push('--summary-json', join(ctx.dir, 'summary.json'));
    return { argv, env: { ...process.env, ...(ctx.extraEnv ?? {}) } };
  },
  /** queue server, fetchers and the `petrel crawl` parent, told apart by their argv. */
  role(argv) {
    const sub = argv.indexOf('queue-server') !== -1 ? 'queue-server' : argv.indexOf('fetcher') !== -1 ? 'fetcher' : argv.indexOf('crawl') !== -1 ? 'crawl (parent)' : null;
    if (sub === 'fetcher') {
      const name = argv[argv.indexOf('--name') + 1];
      return name ?? 'fetcher';
    }
    return sub ?? argv.join(' ').slice(0, 40);
  },
  ownCount(ctx) {
    const file = join(ctx.dir, 'summary.json');
    if (!existsSync(file)) return { pagesFetched: null, elapsedS: null, report: null };
    const summary = JSON.parse(readFileSync(file, 'utf8'));
    return { pagesFetched: summary.pagesFetched, elapsedS: summary.elapsedMs / 1000, report: summary };
  },
};

export const crawlee = {
  name: 'crawlee',
  label: 'Crawlee Cheerio',
  command(ctx) {
    const argv = [process.execPath, join(ctx.here, 'crawlee-crawl.mjs'), join(ctx.dir, 'result.json'), String(ctx.hostConcurrency)];
    argv.push(...ctx.origins, '--', ...ctx.seeds);
    // In-memory storage, nothing persisted; the directory only catches anything written regardless.
    const env = { ...process.env, CRAWLEE_STORAGE_DIR: join(ctx.dir, 'storage'), CRAWLEE_PERSIST_STORAGE: 'false' };
    return { argv, env, cwd: ctx.dir };
  },
  role(argv) {
    return argv.some((arg) => arg.endsWith('crawlee-crawl.mjs')) ? 'node (crawler)' : argv.join(' ').slice(0, 40);
  },
  ownCount(ctx) {
    const file = join(ctx.dir, 'result.json');
    if (!existsSync(file)) return { pagesFetched: null, elapsedS: null, report: null };
    const result = JSON.parse(readFileSync(file, 'utf8'));
    return { pagesFetched: result.pagesFetched, elapsedS: result.elapsedMs / 1000, report: result };
  },
};

export const wget = {
  name: 'wget',
  label: 'wget -r',
  command(ctx) {
    const hosts = ctx.origins.map((origin) => new URL(origin).hostname);
    const argv = ['wget', '-r', '-l', 'inf', '-np', '-H', '-D', hosts.join(','), '-e', 'robots=on'];
    // -nv: one line per download, which is what ownCount reads; the files go to a temp dir and are
    // deleted right after wget has parsed them for links.
    // One start URL: wget keeps its "already downloaded" set per start URL, so with every index as a
    // seed it crawls the whole web once per seed. The first index links to every other host's index.
    argv.push('--delete-after', '-nv', '-o', join(ctx.logDir, 'wget.log'), '-P', join(ctx.dir, 'files'), ctx.seeds[0]);
    return { argv, env: process.env };
  },
  role(argv) {
    return argv[0] === 'wget' ? 'wget' : argv.join(' ').slice(0, 40);
  },
  ownCount(ctx) {
    const file = join(ctx.logDir, 'wget.log');
    if (!existsSync(file)) return { pagesFetched: null, elapsedS: null, report: null };
    const log = readFileSync(file, 'utf8');
    // -nv prints `... URL:http://h:p/path [len/len] -> "file" [1]` for every file it saved.
    let pages = 0;
    let robots = 0;
    for (const match of log.matchAll(/ URL: ?(\S+) \[[^\]]*\] -> /g)) {
      if (new URL(match[1]).pathname === '/robots.txt') robots++;
      else pages++;
    }
    const total = /Downloaded: (\d+) files, (\S+) in (\S+)/.exec(log);
    const clock = /Total wall clock time: (.+)$/m.exec(log);
    return {
      pagesFetched: pages,
      elapsedS: clock === null ? null : wgetDuration(clock[1]),
      report: { savedPages: pages, savedRobots: robots, downloadedFiles: total === null ? null : Number(total[1]), downloadedSize: total?.[2] ?? null, wgetSeconds: total?.[3] ?? null },
    };
  },
};

export const PEERS = [petrel, crawlee, wget];

/** wget's "Total wall clock time": "0.4s", "12s", "1m 3s", "1h 2m 3s". */
function wgetDuration(text) {
  let seconds = 0;
  for (const [, value, unit] of text.matchAll(/([\d.]+)([hms])/g)) seconds += Number(value) * { h: 3600, m: 60, s: 1 }[unit];
  return seconds;
}
