/**
 * Reading a data directory's crawl database offline, as `petrel db dump` does (read-only B-Tree and
 * insert log, the record decoder), with the code of the build that wrote it (`dist`), so a benchmark of another
 * build reads that build's format. Only while no queue server writes the directory.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

type BTreeModule = typeof import('../../queue-server/btree/index.js');
type RecordModule = typeof import('../../queue-server/crawldb/record.js');
type ReaderModule = typeof import('../../queue-server/crawldb/crawl-db-reader.js');

async function modulesOf(dist: string): Promise<{ BTree: BTreeModule['BTree']; decode: RecordModule['decodeCrawlDbRecord'] }> {
  const { BTree } = (await import(pathToFileURL(join(dist, 'queue-server/btree/index.js')).href)) as BTreeModule;
  const { decodeCrawlDbRecord } = (await import(pathToFileURL(join(dist, 'queue-server/crawldb/record.js')).href)) as RecordModule;
  return { BTree, decode: decodeCrawlDbRecord };
}

/** Hands every record's URL and status to `visit`; returns the number of records. */
export async function eachCrawlDbUrl(dist: string, dataDir: string, visit: (url: string, status: string) => void): Promise<number> {
  const { BTree, decode } = await modulesOf(dist);
  const path = join(dataDir, 'crawldb.btree');
  // The tree and its insert log, where the build has one (builds before it wrote only the tree).
  const reader = existsSync(join(dist, 'queue-server/crawldb/crawl-db-reader.js'))
    ? ((await import(pathToFileURL(join(dist, 'queue-server/crawldb/crawl-db-reader.js')).href)) as ReaderModule).CrawlDbReader.open(path, { cachePages: 64 })
    : null;
  const tree = reader ?? BTree.open(path, { create: false, readOnly: true, cachePages: 64 });
  let records = 0;
  try {
    for (const [, bytes] of tree.entries()) {
      const record = decode(bytes);
      visit(record.url, record.status);
      records++;
    }
  } finally {
    tree.close();
  }
  return records;
}

/** Commits of a B-Tree file (its txid), or null when it cannot be read. */
export async function txidOf(dist: string, file: string): Promise<number | null> {
  try {
    const { BTree } = await modulesOf(dist);
    const tree = BTree.open(file, { create: false, readOnly: true, cachePages: 16 });
    const txid = tree.stats().txid;
    tree.close();
    return txid;
  } catch {
    return null;
  }
}
