/**
 * The data directory: everything a queue server keeps on disk lives here.
 *
 *   fetcher.token   the fetcher API secret (mode 0600), created on first start unless one is given
 *   admin.token     the admin page and control API secret (mode 0600), a different secret
 *   pages.jsonl     the page archive (page-archive.ts), append-only
 *   cache.btree     cache validators per URL hash (cache-store.ts, B-Tree layout in btree/LAYOUT.md)
 *   crawldb.btree   the crawl database, one record per known URL (crawldb/), 16 KiB pages
 *   robots/         robots.txt fetches per origin (robots-store.ts)
 *   pass.json       the current crawl pass of one-shot crawls (crawl-pass.ts)
 *   index/          the search index: segments, deletion files, MANIFEST (search/LAYOUT.md)
 *   LOCK            the pid of the queue server using the directory; a second one refuses to start
 *
 * Directory and files are private to the user (0700 / 0600).
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const DATA_FILES = {
  token: 'fetcher.token',
  adminToken: 'admin.token',
  pages: 'pages.jsonl',
  cache: 'cache.btree',
  crawlDb: 'crawldb.btree',
  robots: 'robots',
  pass: 'pass.json',
  index: 'index',
  lock: 'LOCK',
} as const;

export function dataPath(dataDir: string, file: keyof typeof DATA_FILES): string {
  return join(dataDir, DATA_FILES[file]);
}

export function ensureDataDir(dataDir: string): void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
}

/** Takes the directory's lock, or throws naming the live process that holds it. Returns the release. */
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
        throw new Error(`data directory ${dataDir} is in use by process ${holder} (remove ${path} if that is wrong)`);
      }
      rmSync(path, { force: true }); // left by a process that died
    }
  }
  throw new Error(`could not lock data directory ${dataDir}`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
