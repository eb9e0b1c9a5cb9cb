/**
 * The three engines behind one interface, so the same documents and queries go through each:
 *
 *   open(dir)  add(doc)  commit()  finish()  search(words, kind) -> ids  close()
 *
 * `commit` is each engine's durable commit (every COMMIT_EVERY documents, as a crawl's group commit
 * would); `finish` is what the engine needs before it is queried (Petrel: background merges done;
 * FTS5: WAL folded into the database; MiniSearch: its only persistence, the serialized index written
 * and fsynced). A document may carry `anchors` ([{url, text}]) and `headings`: the ranking-quality
 * run (quality.mjs) feeds crawled pages that have them.
 */
import { closeSync, fsyncSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);

export async function petrelEngine(root) {
  const { SearchIndex } = await import(pathToFileURL(join(root, 'dist/queue-server/search/search-index.js')).href);
  const { buildIndexData } = await import(pathToFileURL(join(root, 'dist/shared/index-data.js')).href);
  const { urlHash64 } = await import(pathToFileURL(join(root, 'dist/shared/url-hash.js')).href);
  let index = null;
  const idOf = new Map();
  return {
    name: 'petrel',
    /** ms spent in buildIndexData (the fetcher's share of the work), reported apart. */
    tokenizeMs: 0,
    open(dir) {
      index = SearchIndex.open(dir, { merges: 'worker' });
    },
    add(doc) {
      const t0 = performance.now();
      const data = buildIndexData({ title: doc.title, headings: doc.headings ?? [], bodyText: doc.body, language: 'en', anchors: doc.anchors ?? [] });
      this.tokenizeMs += performance.now() - t0;
      index.stage({ kind: 'page', url: doc.url, fetchedAt: 0, data });
    },
    commit() {
      index.commit();
    },
    async finish() {
      await index.idle();
    },
    search(words, kind, options = {}) {
      const q = kind === 'phrase' ? `"${words.join(' ')}"` : words.join(' ');
      return index.search(q, { limit: 10, snippets: options.snippets ?? false, authorityOf: options.authorityOf }).results.map((r) => r.url);
    },
    stats: () => index.stats(),
    urlHashHex: (url) => urlHash64(url).toString(16).padStart(16, '0'),
    async close() {
      await index.close();
    },
    idOf,
  };
}

export function fts5Engine() {
  const Database = require('better-sqlite3');
  let db = null;
  let insert = null;
  let query = null;
  let inTransaction = false;
  return {
    name: 'fts5',
    open(dir) {
      mkdirSync(dir, { recursive: true });
      db = new Database(join(dir, 'fts5.db'));
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.exec("CREATE VIRTUAL TABLE docs USING fts5(url UNINDEXED, title, headings, anchors, body, tokenize = 'unicode61')");
      insert = db.prepare('INSERT INTO docs (url, title, headings, anchors, body) VALUES (?, ?, ?, ?, ?)');
      // Title weighted as Petrel weights it (4, headings 2, anchors 3, body 1).
      query = db.prepare('SELECT url FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 0, 4.0, 2.0, 3.0, 1.0) LIMIT 10');
    },
    add(doc) {
      if (!inTransaction) {
        db.exec('BEGIN');
        inTransaction = true;
      }
      insert.run(doc.url, doc.title, (doc.headings ?? []).join('\n'), (doc.anchors ?? []).map((a) => a.text).join('\n'), doc.body);
    },
    commit() {
      if (inTransaction) db.exec('COMMIT');
      inTransaction = false;
    },
    async finish() {
      db.pragma('wal_checkpoint(TRUNCATE)');
    },
    search(words, kind) {
      const q = kind === 'phrase' ? `"${words.join(' ')}"` : words.map((w) => `"${w}"`).join(' ');
      return query.all(q).map((r) => r.url);
    },
    stats: () => ({}),
    async close() {
      db.close();
    },
  };
}

export async function miniSearchEngine() {
  const { default: MiniSearch } = await import('minisearch');
  let mini = null;
  let file = null;
  return {
    name: 'minisearch',
    open(dir) {
      mkdirSync(dir, { recursive: true });
      file = join(dir, 'minisearch.json');
      mini = new MiniSearch({ idField: 'url', fields: ['title', 'body'], storeFields: [], searchOptions: { boost: { title: 4 }, combineWith: 'AND' } });
    },
    add(doc) {
      mini.add({ url: doc.url, title: doc.title, body: doc.body });
    },
    // MiniSearch lives in memory; serializing the whole index at every commit would be quadratic, so
    // its one durable commit is in finish().
    commit() {},
    async finish() {
      const fd = openSync(file, 'w');
      writeSync(fd, JSON.stringify(mini));
      fsyncSync(fd);
      closeSync(fd);
    },
    /** MiniSearch has no phrase search: a phrase query is the AND of its words. */
    search(words) {
      return mini.search(words.join(' '), { combineWith: 'AND' }).slice(0, 10).map((r) => r.id);
    },
    stats: () => ({}),
    async close() {},
  };
}
