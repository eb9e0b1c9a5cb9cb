/**
 * The three engines behind one small interface, each set up for durable commits (a commit returns only
 * once it survives a power loss) with the same page size (4 KiB) and, where the engine has one, the same
 * page-cache budget in memory:
 *
 *   btree   Petrel's B-Tree (queue-server/btree/, from the build in dist/): every `write` is a commit of
 *           two fsyncs (pages, then meta). Cache: --cache-kib of decoded pages.
 *   sqlite  better-sqlite3, a `WITHOUT ROWID` table (the key is the primary key, the table is the B-Tree),
 *           `INSERT OR REPLACE` (put semantics). Journal `wal` with `synchronous=FULL` by default: WAL is
 *           SQLite's fastest durable mode (one fsync of the log per commit; checkpoints copy pages back to
 *           the database file now and then), and FULL is what makes a WAL commit durable (NORMAL may lose
 *           the last commits on power loss, https://sqlite.org/pragma.html#pragma_synchronous). The
 *           rollback journal (`--sqlite-journal delete`) is durable with FULL too, but costs more fsyncs
 *           per commit, so it would flatter the others. Cache: cache_size = -(--cache-kib).
 *   lmdb    lmdb-js: `transactionSync` with `overlappingSync: false`, i.e. classic LMDB commits (write the
 *           pages, fsync, write the meta, fsync), the same protocol as Petrel's B-Tree. Binary keys and
 *           values, no compression. It has no cache setting: it reads the memory-mapped file, so the
 *           operating system's page cache is its cache.
 *
 * The file size reported is every file the engine keeps in its directory.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

export const ENGINE_NAMES = ['btree', 'sqlite', 'lmdb'];

export function dirBytes(dir) {
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name)).size;
  return total;
}

/** @returns {Promise<{ open(), putBatch(keys, values, from, to), get(key), scan(visit), close(), describe }>} */
export async function makeEngine(name, dir, options) {
  switch (name) {
    case 'btree':
      return btreeEngine(dir, options);
    case 'sqlite':
      return sqliteEngine(dir, options);
    case 'lmdb':
      return lmdbEngine(dir, options);
    default:
      throw new Error(`unknown engine ${name}`);
  }
}

async function btreeEngine(dir, { cacheKib, petrelRoot }) {
  const { BTree } = await import(pathToFileURL(join(petrelRoot, 'dist/queue-server/btree/index.js')).href);
  const path = join(dir, 'bench.btree');
  const pageSize = 4096;
  const cachePages = Math.max(1, Math.floor((cacheKib * 1024) / pageSize));
  let tree = null;
  return {
    describe: `Petrel B-Tree, ${pageSize}-byte pages, ${cachePages} cached pages`,
    open() {
      tree = BTree.open(path, { pageSize, cachePages });
    },
    putBatch(keys, values, from, to) {
      tree.write((batch) => {
        for (let i = from; i < to; i++) batch.put(keys[i], values[i]);
      });
    },
    get(key) {
      return tree.get(key);
    },
    scan(visit) {
      for (const [key, value] of tree.entries()) visit(key, value);
    },
    close() {
      tree.close();
      tree = null;
    },
  };
}

function sqliteEngine(dir, { cacheKib, sqliteJournal }) {
  const Database = require('better-sqlite3');
  const path = join(dir, 'bench.sqlite');
  let db = null;
  let insert;
  let select;
  let scan;
  let commit;
  return {
    describe: `SQLite ${new Database(':memory:').prepare('select sqlite_version() as v').get().v}, WITHOUT ROWID, journal_mode=${sqliteJournal}, synchronous=FULL, cache_size=-${cacheKib}`,
    open() {
      db = new Database(path);
      db.pragma(`journal_mode = ${sqliteJournal}`);
      db.pragma('synchronous = FULL');
      db.pragma(`cache_size = -${cacheKib}`);
      db.exec('CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID');
      insert = db.prepare('INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)');
      select = db.prepare('SELECT v FROM kv WHERE k = ?').pluck();
      scan = db.prepare('SELECT k, v FROM kv ORDER BY k').raw();
      commit = db.transaction((keys, values, from, to) => {
        for (let i = from; i < to; i++) insert.run(keys[i], values[i]);
      });
    },
    putBatch(keys, values, from, to) {
      commit(keys, values, from, to);
    },
    get(key) {
      return select.get(key) ?? null;
    },
    scan(visit) {
      for (const [key, value] of scan.iterate()) visit(key, value);
    },
    close() {
      db.close();
      db = null;
    },
  };
}

function lmdbEngine(dir) {
  const { open } = require('lmdb');
  let db = null;
  return {
    describe: 'LMDB (lmdb-js), transactionSync, overlappingSync off, binary keys and values, no compression',
    open() {
      db = open({ path: join(dir, 'bench.mdb'), noSubdir: true, encoding: 'binary', keyEncoding: 'binary', compression: false, overlappingSync: false, pageSize: 4096 });
    },
    putBatch(keys, values, from, to) {
      db.transactionSync(() => {
        for (let i = from; i < to; i++) db.putSync(keys[i], values[i]);
      });
    },
    get(key) {
      return db.getBinary(key) ?? null;
    },
    scan(visit) {
      for (const { key, value } of db.getRange()) visit(key, value);
    },
    close() {
      db.close();
      db = null;
    },
  };
}
