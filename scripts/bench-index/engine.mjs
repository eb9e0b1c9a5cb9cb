/**
 * One engine, in a process of its own (so its peak RSS is its own): builds the index over the
 * generated documents with a durable commit every COMMIT_EVERY documents, then runs the queries and
 * prints one JSON line with its figures. run.mjs starts it once per engine.
 *
 *   node engine.mjs ENGINE DOCS OUT_DIR [QUERIES]
 */
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { documents, queries } from './lib/corpus.mjs';
import { fts5Engine, miniSearchEngine, petrelEngine } from './lib/engines.mjs';

const COMMIT_EVERY = 1000;
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const [name, docsArg, outDir, queriesArg] = process.argv.slice(2);
const docs = Number(docsArg);
const perKind = Number(queriesArg ?? 1000);
const dir = join(outDir, name);
rmSync(dir, { recursive: true, force: true });

// `petrel-before`: another Petrel checkout's build (PETREL_BEFORE_ROOT, a directory holding dist/), to
// compare two versions of the index in one run beside FTS5.
const petrelRoot = name === 'petrel' ? root : name === 'petrel-before' ? process.env.PETREL_BEFORE_ROOT : null;
// Petrel's index runs in the queue server, which limits its JavaScript heap's growth at start
// (cli/heap-growth.ts, `--heap-growth`, 100 % by default): the engine does what that build's queue
// server does, before it builds anything. A build without the option runs with V8's heuristics.
const heapGrowthPercent = petrelRoot === null ? null : await limitHeapGrowthAsQueueServer(petrelRoot);
const engine = petrelRoot !== null ? await petrelEngine(petrelRoot) : name === 'fts5' ? fts5Engine() : await miniSearchEngine();
async function limitHeapGrowthAsQueueServer(petrelRoot) {
  const module = join(petrelRoot, 'dist/cli/heap-growth.js');
  if (!existsSync(module)) return null;
  const { limitHeapGrowth, DEFAULT_HEAP_GROWTH_PERCENT } = await import(pathToFileURL(module).href);
  limitHeapGrowth(DEFAULT_HEAP_GROWTH_PERCENT);
  return DEFAULT_HEAP_GROWTH_PERCENT;
}
const peakMiB = () => Math.round(process.resourceUsage().maxRSS / 1024);
const bytesOf = (path) => {
  const s = statSync(path);
  return s.isDirectory() ? readdirSync(path).reduce((n, f) => n + bytesOf(join(path, f)), 0) : s.size;
};

// Generating the documents is not the engines' work: timed apart and subtracted.
let generateMs = 0;
engine.open(dir);
const t0 = performance.now();
let n = 0;
const source = documents(docs);
for (;;) {
  const g0 = performance.now();
  const next = source.next();
  generateMs += performance.now() - g0;
  if (next.done) break;
  engine.add(next.value);
  if (++n % COMMIT_EVERY === 0) engine.commit();
}
engine.commit();
await engine.finish();
const buildMs = performance.now() - t0 - generateMs;
const buildPeakRssMiB = peakMiB();
const indexBytes = bytesOf(dir);
const engineStats = engine.stats();

const all = queries(perKind, docs);
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
// Warm-up: a tenth of each kind, not measured.
for (const kind of Object.keys(all)) for (const words of all[kind].slice(0, Math.ceil(perKind / 10))) engine.search(words, kind);
const latency = {};
for (const kind of Object.keys(all)) {
  const times = [];
  let hits = 0;
  for (const words of all[kind]) {
    const q0 = performance.now();
    hits += engine.search(words, kind).length;
    times.push(performance.now() - q0);
  }
  times.sort((a, b) => a - b);
  latency[kind] = { p50Ms: round(percentile(times, 50)), p95Ms: round(percentile(times, 95)), meanTop10Hits: round(hits / times.length) };
}
let withSnippets = null;
if (name.startsWith('petrel')) {
  const times = [];
  for (const words of all.and2) {
    const q0 = performance.now();
    engine.search(words, 'and2', { snippets: true });
    times.push(performance.now() - q0);
  }
  times.sort((a, b) => a - b);
  withSnippets = { and2P50Ms: round(percentile(times, 50)), and2P95Ms: round(percentile(times, 95)) };
}
await engine.close();

process.stdout.write(`${JSON.stringify({
  engine: name,
  documents: docs,
  buildMs: Math.round(buildMs),
  docsPerSecond: Math.round((docs / buildMs) * 1000),
  // Petrel's fetchers make the index data (buildIndexData); what is left is the queue server's share.
  ...(name.startsWith('petrel') ? { tokenizeMsPerDoc: round(engine.tokenizeMs / docs, 4), queueServerDocsPerSecond: Math.round((docs / (buildMs - engine.tokenizeMs)) * 1000), segments: engineStats.segments, mergesDone: engineStats.mergesDone, heapGrowthPercent } : {}),
  indexBytes,
  buildPeakRssMiB,
  peakRssMiB: peakMiB(),
  latency,
  ...(withSnippets === null ? {} : { withSnippets }),
  ...(name === 'minisearch' ? { note: 'no phrase search: phrase queries run as the AND of their words; one durable commit (serialized index) at the end' } : {}),
})}\n`);

function round(x, digits = 3) {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
