/**
 * The three crawlers compared: how to start each on a corpus, what to call each of its processes,
 * and how to read the page count it reports itself (cross-checked later against the server's log).
 *
 * Concurrency, made equal: Petrel's requests in flight are bounded by petrelTotalConcurrency(); Crawlee's
 * maxConcurrency is set to the same number (run.mjs); wget always uses one connection.
 *
 * Each peer gets a fresh temporary directory `dir` for whatever it writes (data dir, downloads, storage),
 * removed by run.mjs after the run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * ownCount returns { pagesFetched, elapsedS, report }: the crawler's own page count, its own idea of how
 * long the crawl took (excluding what it does not count, e.g. start-up), and its full report.
 *
 * @typedef {{ corpus: string, multiHost: boolean, origins: string[], seeds: string[],
 *             hostConcurrency: number, concurrency: number, fetchers: number, crawleeConcurrency: number,
 *             maxPages: number | null, petrelBin: string, baselineBin: string | null, here: string, dir: string, logDir: string,
 *             logName: string, dataDir?: string, summaryFile?: string,
 *             extraEnv?: Record<string, string> }} PeerContext
 * petrelBin: the `petrel` binary (in a snapshot of the build); baselineBin: the --baseline-root build's; here: this folder; logDir: out/;
 * logName: prefix of this run's log files; dataDir/summaryFile: Petrel's, when a second pass reuses them.
 */

/**
 * Petrel's requests in flight at most, all hosts together: each origin has at most --host-concurrency
 * slots out across all fetchers, each fetcher runs at most --concurrency slots, and a slot makes one
 * request at a time. On one host that is min(host concurrency, fetchers x concurrency).
 */
export function petrelTotalConcurrency({ hosts, hostConcurrency, concurrency, fetchers }) {
  return Math.min(hosts * hostConcurrency, fetchers * concurrency);
}

const helpOf = new Map();
/** Whether that build's `petrel crawl` has the option (its --help, read once per build, before any timing). */
function takesOption(bin, option) {
  if (!helpOf.has(bin)) helpOf.set(bin, execFileSync(process.execPath, [bin, 'crawl', '--help'], { encoding: 'utf8' }));
  return helpOf.get(bin).includes(`${option} `);
}

export const petrel = {
  name: 'petrel',
  label: 'Petrel',
  command(ctx) {
    const argv = [process.execPath, ctx.petrelBin, 'crawl'];
    for (const seed of ctx.seeds) argv.push('--seed', seed);
    argv.push('--data', ctx.dataDir ?? join(ctx.dir, 'data'), '--fetchers', String(ctx.fetchers), '--concurrency', String(ctx.concurrency));
    argv.push('--delay-ms', '0', '--host-concurrency', String(ctx.hostConcurrency), '--scope', 'host', '--no-progress');
    // As loose as the peers, which have no bounds per page (run.mjs --help says why); a baseline build
    // from before --max-links-per-page keeps its fixed 5,000.
    argv.push('--max-body-bytes', '16777216');
    if (takesOption(ctx.petrelBin, '--max-links-per-page')) argv.push('--max-links-per-page', '100000');
    if (ctx.maxPages !== null) argv.push('--max-pages', String(ctx.maxPages));
    argv.push('--summary-json', ctx.summaryFile ?? join(ctx.dir, 'summary.json'));
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
    const file = ctx.summaryFile ?? join(ctx.dir, 'summary.json');
    if (!existsSync(file)) return { pagesFetched: null, elapsedS: null, report: null };
    const summary = JSON.parse(readFileSync(file, 'utf8'));
    return { pagesFetched: summary.pagesFetched, notModified: summary.notModified, elapsedS: summary.elapsedMs / 1000, report: summary };
  },
};

export const crawlee = {
  name: 'crawlee',
  label: 'Crawlee Cheerio',
  command(ctx) {
    const argv = [process.execPath, join(ctx.here, 'crawlee-crawl.mjs'), join(ctx.dir, 'result.json'), String(ctx.crawleeConcurrency), String(ctx.maxPages ?? 0)];
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
  /** wget has no page limit: run.mjs stops it once the server has answered --max pages. */
  needsExternalCap: true,
  /** 8: "server issued an error response", i.e. it met a broken link (a 404), which every corpus has. */
  okExitCodes: [0, 8],
  command(ctx) {
    const argv = ['wget', '-r', '-l', 'inf', '-np', '-e', 'robots=on', '--follow-tags=a,area'];
    // The test web spans several hosts: -H lets wget leave the first, -D keeps it on the test web.
    if (ctx.multiHost) argv.push('-H', '-D', ctx.origins.map((origin) => new URL(origin).hostname).join(','));
    // -nv: one line per download, which is what ownCount reads; the files go to a temp dir and are
    // deleted right after wget has parsed them for links.
    // One start URL: wget keeps its "already downloaded" set per start URL, so with every index as a
    // seed it crawls the whole web once per seed. The first index links to every other host's index.
    argv.push('--delete-after', '-nv', '-o', join(ctx.logDir, `${ctx.logName}.wget.log`), '-P', join(ctx.dir, 'files'), ctx.seeds[0]);
    return { argv, env: process.env };
  },
  role(argv) {
    return argv[0] === 'wget' ? 'wget' : argv.join(' ').slice(0, 40);
  },
  ownCount(ctx) {
    const file = join(ctx.logDir, `${ctx.logName}.wget.log`);
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

/** Petrel with more flags on its command line: a variant measured beside the plain run. */
const petrelWith = (name, label, flags, more = {}) => ({
  ...petrel,
  name,
  label,
  ...more,
  command(ctx) {
    const command = petrel.command(ctx);
    return { ...command, argv: [...command.argv, ...flags] };
  },
});

/** Petrel with archiving off: what the web archive (WARC records built by the fetchers, stored by the queue server) costs. */
export const petrelNoWarc = petrelWith('petrel-nowarc', 'Petrel --no-warc', ['--no-warc']);

/**
 * Petrel without the search index (`--no-index`: fetchers send no index data, the queue server keeps
 * no index), and without both the index and the archive: with `petrel` and `petrel-nowarc` in the same
 * run, what each feature costs each process (run.mjs prints it). Not in the default set: name them in
 * --only.
 */
export const petrelNoIndex = petrelWith('petrel-noindex', 'Petrel --no-index', ['--no-index'], { optional: true });
export const petrelBare = petrelWith('petrel-bare', 'Petrel --no-index --no-warc', ['--no-index', '--no-warc'], { optional: true });

/** wget -r writing a WARC of its own (`--warc-file`, gzip per record as Petrel's): its archive's bytes per page. */
export const wgetWarc = {
  ...wget,
  name: 'wget-warc',
  label: 'wget -r --warc-file',
  command(ctx) {
    const command = wget.command(ctx);
    const argv = [...command.argv];
    argv.splice(argv.length - 1, 0, '--warc-file', join(ctx.dir, 'wget-archive'), '--no-warc-keep-log', '--no-warc-cdx');
    return { ...command, argv };
  },
  ownCount(ctx) {
    const own = wget.ownCount(ctx);
    const file = join(ctx.dir, 'wget-archive.warc.gz');
    return { ...own, report: { ...own.report, warcBytes: existsSync(file) ? statSync(file).size : null } };
  },
};

/**
 * Petrel from a second build (`--baseline-root`, e.g. main while `petrel` is a branch), with and without
 * archiving, so a change is measured before and after in one run, interleaved, on the same machine load.
 */
const onBaseline = (peer, name, label) => ({
  ...peer,
  name,
  label,
  command(ctx) {
    if (ctx.baselineBin === null) throw new Error(`${name} needs --baseline-root`);
    return peer.command({ ...ctx, petrelBin: ctx.baselineBin });
  },
});
export const petrelBase = onBaseline(petrel, 'petrel-base', 'Petrel baseline');
export const petrelBaseNoWarc = onBaseline(petrelNoWarc, 'petrel-base-nowarc', 'Petrel baseline --no-warc');

export const PEERS = [petrel, petrelNoWarc, petrelNoIndex, petrelBare, petrelBase, petrelBaseNoWarc, crawlee, wget, wgetWarc];

/** wget's "Total wall clock time": "0.4s", "12s", "1m 3s", "1h 2m 3s". */
function wgetDuration(text) {
  let seconds = 0;
  for (const [, value, unit] of text.matchAll(/([\d.]+)([hms])/g)) seconds += Number(value) * { h: 3600, m: 60, s: 1 }[unit];
  return seconds;
}
