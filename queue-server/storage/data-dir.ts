/**
 * The data directory: everything a queue server keeps on disk lives here.
 *
 *   fetcher.token   the fetcher API secret (mode 0600), created on first start unless one is given
 *   admin.token     the admin page and control API secret (mode 0600), a different secret
 *   metrics.token   the read-only secret of GET /metrics, for Prometheus (mode 0600)
 *   pages.jsonl     the page archive (page-archive.ts), append-only
 *   cache.btree     cache validators per URL hash (cache-store.ts, B-Tree layout in btree/LAYOUT.md)
 *   crawldb.btree   the crawl database, one record per known URL (crawldb/), 16 KiB pages
 *   crawldb.inserts-N  new URLs' records not swept into crawldb.btree yet (insert-log.ts)
 *   duplicates.btree  the duplicate indexes: body signatures and simhash bands (crawldb/duplicate-store.ts)
 *   duplicates.bands-N  near-duplicate band entries not swept into duplicates.btree yet (crawldb/band-log.ts)
 *   frontier.btree  the frontier's queued and waiting URLs and its origin directory (frontier/frontier-store.ts)
 *   robots.btree    the last robots.txt fetch per origin (robots/robots-store.ts); earlier versions' robots/
 *                   directory (one file per origin) is moved into it on open
 *   pass.json       the current crawl pass of one-shot crawls (crawl-pass.ts)
 *   crawl.json      the crawl's settings (seeds, scope, ...), so a restart keeps them (crawl/saved-settings.ts)
 *   warc/           the web archive: petrel-<timestamp>-<serial>.warc.gz files, index.cdxj (warc/)
 *   warc-digests.btree  payload digest -> first stored response, for identical-payload revisits (warc/digest-index.ts)
 *   index/          the search index: segments, deletion files, MANIFEST, commit log (search/LAYOUT.md)
 *   cluster.json    a cluster member's id and the partition it owns (cluster/membership.ts), so a restart takes it again
 *   LOCK            the pid of the queue server using the directory; a second one refuses to start
 *
 * Directory and files are private to the user (0700 / 0600).
 */
import { accessSync, closeSync, constants, existsSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { ensureDirDurably } from './atomic-file.js';
import type { FileOps } from './file-ops.js';

/** Where `petrel crawl`, `start`, `queue-server`, `export` and `db` keep and look for their data unless told. */
export const DEFAULT_DATA_DIR = './petrel-data';

export const DATA_FILES = {
  token: 'fetcher.token',
  adminToken: 'admin.token',
  metricsToken: 'metrics.token',
  pages: 'pages.jsonl',
  cache: 'cache.btree',
  crawlDb: 'crawldb.btree',
  robots: 'robots.btree',
  /** One JSON file per origin, before robots.btree: moved into it by RobotsStore.open. */
  robotsLegacy: 'robots',
  pass: 'pass.json',
  settings: 'crawl.json',
  warc: 'warc',
  warcDigests: 'warc-digests.btree',
  frontier: 'frontier.btree',
  index: 'index',
  lock: 'LOCK',
  cluster: 'cluster.json',
} as const;

export function dataPath(dataDir: string, file: keyof typeof DATA_FILES): string {
  return join(dataDir, DATA_FILES[file]);
}

/**
 * Creates the directory (0700, and its parents) if missing, its entry made durable in its parent.
 * Throws a message naming the real cause.
 */
export function ensureDataDir(dataDir: string, io?: FileOps): void {
  try {
    if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'EEXIST' });
    ensureDirDurably(dataDir, { io, mode: 0o700 });
  } catch (error) {
    // mkdir -p on a read-only file system reports ENOENT for the missing parent; name the real cause.
    let parent = dirname(resolve(dataDir));
    while (!existsSync(parent)) parent = dirname(parent);
    let cause = (error as NodeJS.ErrnoException).code ?? 'error';
    if (cause !== 'EEXIST') {
      try {
        accessSync(parent, constants.W_OK);
      } catch (denied) {
        cause = (denied as NodeJS.ErrnoException).code ?? cause;
      }
    }
    const words: Record<string, string> = { EROFS: 'read-only file system', EACCES: 'permission denied', EEXIST: 'a file of that name exists', ENOTDIR: 'a part of the path is a file' };
    throw new Error(`cannot create the data directory ${dataDir} in ${parent}: ${words[cause] ?? cause}; choose another --data`);
  }
}

/**
 * Takes the directory's lock, or throws naming the live process that holds it. Returns the release.
 * The lock is not made durable on purpose: after a crash a stale LOCK is recognised by its dead pid.
 */
export function lockDataDir(dataDir: string): () => void {
  const path = dataPath(dataDir, 'lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSync(path, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && processAlive(holder)) {
        const command = commandOf(holder);
        throw new Error(`data directory ${dataDir} is in use by process ${holder}${command === null ? '' : ` (${command})`}: stop it (kill ${holder}) or wait for it to end; remove ${path} if that is wrong`);
      }
      rmSync(path, { force: true }); // left by a process that died
    }
  }
  throw new Error(`could not lock data directory ${dataDir}`);
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: another user's process, alive unless a zombie (its /proc/PID/stat is readable all the same).
    return (error as NodeJS.ErrnoException).code === 'EPERM' && !isZombie(pid);
  }
  return !isZombie(pid);
}

/**
 * The command line of a process, for a message (Linux: /proc/PID/cmdline), at most 120 characters, or
 * null. Names what holds a lock: a queue server whose `petrel crawl` was killed goes on until its pass
 * ends, and a pid reused by another program says the LOCK is stale.
 */
function commandOf(pid: number): string | null {
  let words: string[];
  try {
    words = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((word) => word !== '');
  } catch {
    return null;
  }
  // `node /path/to/petrel.js queue-server ...` is shown as `petrel queue-server ...`.
  const script = words.findIndex((word) => /(^|\/)petrel(\.js)?$/.test(word));
  const shown = (script === -1 ? words : ['petrel', ...words.slice(script + 1)]).join(' ').replace(/[\u0000-\u001f\u007f]/g, ' ');
  if (shown === '') return null;
  return shown.length > 120 ? `${shown.slice(0, 119)}…` : shown;
}

/**
 * Whether the process has exited and waits to be reaped (Linux: state Z or X in /proc/PID/stat). Signal
 * 0 reaches a zombie, so a queue server killed under a parent that does not reap (a container's init
 * without --init, a killed `petrel crawl`'s orphans) kept its data directory locked until then. A zombie
 * holds no file open. Elsewhere (no /proc) a process answering signal 0 counts as alive.
 */
function isZombie(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // "PID (COMMAND) STATE ...": the command may hold spaces and parentheses, the state follows the last ')'.
  const state = stat.charAt(stat.lastIndexOf(')') + 2);
  return state === 'Z' || state === 'X';
}
