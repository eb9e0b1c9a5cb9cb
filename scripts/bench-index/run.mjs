/**
 * The index benchmark (not a test): the same generated documents indexed by Petrel's search index,
 * SQLite FTS5 (better-sqlite3, unicode61, bm25()) and MiniSearch, each with its durable commit, then
 * 1,000 queries of each kind (one word, two-word AND, three-word AND, phrase), top 10.
 *
 *   npm ci && npm run build                 (in the Petrel checkout: the engine is dist/)
 *   cd scripts/bench-index && npm ci && node run.mjs [--docs 100000] [--queries 1000] [--engines petrel,fts5,minisearch]
 *
 * Prints the corpus's sizes, then one JSON object: per engine documents per second while building
 * (document generation excluded), index bytes on disk, peak RSS while building and overall, query
 * latency p50 and p95 per kind; and whether Petrel met issue 11's goals against FTS5 in this run.
 * Engines run one after another, each in its own process.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { corpusStats } from './lib/corpus.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : fallback;
};
const docs = Number(option('docs', '100000'));
const perKind = Number(option('queries', '1000'));
const engines = option('engines', 'petrel,fts5,minisearch').split(',');
const here = fileURLToPath(new URL('.', import.meta.url));
const out = join(here, 'out');
mkdirSync(out, { recursive: true });

const corpus = corpusStats(docs);
process.stderr.write(`corpus: ${JSON.stringify(corpus)}\n`);
const results = {};
for (const engine of engines) {
  process.stderr.write(`${engine}: building ${docs} documents, then ${perKind} queries of each kind...\n`);
  const run = spawnSync(process.execPath, ['--max-old-space-size=8192', join(here, 'engine.mjs'), engine, String(docs), out, String(perKind)], { encoding: 'utf8', maxBuffer: 1 << 24 });
  if (run.status !== 0) {
    results[engine] = { error: `exit ${run.status} ${run.signal ?? ''}`.trim(), stderr: run.stderr.slice(-2000) };
    process.stderr.write(`${engine} failed: ${run.stderr.slice(-500)}\n`);
    continue;
  }
  results[engine] = JSON.parse(run.stdout.trim().split('\n').at(-1));
  process.stderr.write(`${engine}: ${JSON.stringify(results[engine])}\n`);
}

const p = results.petrel;
const f = results.fts5;
const goals = p && f && !p.error && !f.error
  ? {
      buildsAtLeastAsFastAsFts5: p.docsPerSecond >= f.docsPerSecond,
      // The queue server's share (without buildIndexData, the fetchers' work): what bounds a crawl (README, Search).
      queueServerBuildsAtLeastAsFastAsFts5: p.queueServerDocsPerSecond >= f.docsPerSecond,
      indexNoLargerThanFts5: p.indexBytes <= f.indexBytes,
      p95NoHigherThanFts5: Object.fromEntries(Object.keys(p.latency).map((k) => [k, p.latency[k].p95Ms <= f.latency[k].p95Ms])),
      indexingMemoryUnder300MiB: p.buildPeakRssMiB < 300,
    }
  : null;
process.stdout.write(`${JSON.stringify({ date: new Date().toISOString(), node: process.version, corpus, results, goals }, null, 2)}\n`);
