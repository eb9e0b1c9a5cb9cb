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
import { parseArgs } from 'node:util';
import { corpusStats } from './lib/corpus.mjs';

const USAGE = `Usage: node run.mjs [--docs N] [--queries N] [--engines LIST]

Builds the same generated documents into each engine (its own process, a durable commit every 1,000
documents), then runs N queries of each kind (one word, two-word AND, three-word AND, phrase), top 10.
Prints the corpus's sizes on stderr and one JSON object on stdout (per engine: documents/s, index bytes,
peak RSS, p50/p95 per kind; issue 11's goals against FTS5). See README.md beside this file.
  --docs N        documents (default 100000)
  --queries N     queries of each kind (default 1000)
  --engines LIST  comma-separated: petrel, petrel-before (the build under PETREL_BEFORE_ROOT), fts5,
                  minisearch (default petrel,fts5,minisearch)
  --help          show this help
`;
const ENGINES = ['petrel', 'petrel-before', 'fts5', 'minisearch'];
let parsed;
try {
  parsed = parseArgs({ options: { docs: { type: 'string', default: '100000' }, queries: { type: 'string', default: '1000' }, engines: { type: 'string', default: 'petrel,fts5,minisearch' }, help: { type: 'boolean', default: false } } }).values;
} catch (error) {
  process.stderr.write(`${error.message}\n\n${USAGE}`);
  process.exit(2);
}
if (parsed.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
const count = (name, text) => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    process.stderr.write(`--${name} must be a whole number of at least 1, not ${JSON.stringify(text)}\n`);
    process.exit(2);
  }
  return n;
};
const docs = count('docs', parsed.docs);
const perKind = count('queries', parsed.queries);
const engines = parsed.engines.split(',');
for (const engine of engines) {
  if (!ENGINES.includes(engine)) {
    process.stderr.write(`unknown engine ${JSON.stringify(engine)}: one of ${ENGINES.join(', ')}\n`);
    process.exit(2);
  }
}
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
