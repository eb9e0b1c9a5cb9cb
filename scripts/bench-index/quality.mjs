/**
 * Ranking quality (issue 11): known-item queries over crawled pages, MRR@10 for Petrel's ranking
 * (BM25F with anchor text, link authority) and FTS5's bm25() (title weighted) over the same pages.
 * The crawl that provides the pages is the integration step's; this is the harness it plugs into.
 *
 *   node quality.mjs --pages PAGES.jsonl --queries QUERIES.json [--authority AUTHORITY.json] [--ranks]
 *
 * PAGES.jsonl: one page per line, {url, title, headings: [...], body, anchors: [{url, text}]} (the
 * anchors are the page's OUTLINKS; each engine indexes them as its model allows: Petrel on the target,
 * FTS5 as a column of the source page, which is all a plain full-text engine can do).
 * QUERIES.json: [{query, url}] or {about, queries: [{query, url}]} (at least 30; a url may be a path on the crawled site; a query names a page's topic in other words than its
 * title; url is the answer). AUTHORITY.json (optional): {url: OPIC cash} from the crawl database.
 */
import { readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fts5Engine, petrelEngine } from './lib/engines.mjs';
import { mrrAt10 } from './lib/mrr.mjs';

const args = process.argv.slice(2);
const option = (name) => {
  const at = args.indexOf(`--${name}`);
  return at >= 0 ? args[at + 1] : undefined;
};
const pagesFile = option('pages');
const queriesFile = option('queries');
if (pagesFile === undefined || queriesFile === undefined) {
  process.stderr.write('usage: node quality.mjs --pages PAGES.jsonl --queries QUERIES.json [--authority AUTHORITY.json]\n');
  process.exit(2);
}
const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const out = join(fileURLToPath(new URL('.', import.meta.url)), 'out', 'quality');
rmSync(out, { recursive: true, force: true });
const pages = readFileSync(pagesFile, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
// A query file is [{query, url}] or {about, queries: [...]}; a url starting with / is on the crawled
// site, whose origin (its port changes from run to run) is the first page's.
const queryFile = JSON.parse(readFileSync(queriesFile, 'utf8'));
const origin = pages.length > 0 ? new URL(pages[0].url).origin : '';
const known = (Array.isArray(queryFile) ? queryFile : queryFile.queries).map(({ query, url }) => ({ query, url: url.startsWith('/') ? `${origin}${url}` : url }));
const missing = known.filter(({ url }) => !pages.some((page) => page.url === url));
if (missing.length > 0) process.stderr.write(`quality: ${missing.length} answers are not among the pages: ${missing.map((m) => m.url).join(' ')}\n`);
const authorityFile = option('authority');
const authority = authorityFile === undefined ? null : JSON.parse(readFileSync(authorityFile, 'utf8'));

const results = {};
for (const engine of [await petrelEngine(root), fts5Engine()]) {
  engine.open(join(out, engine.name));
  for (const page of pages) engine.add(page);
  engine.commit();
  await engine.finish();
  let authorityOf;
  if (engine.name === 'petrel' && authority !== null) {
    const byHash = new Map(Object.entries(authority).map(([url, cash]) => [engine.urlHashHex(url), cash]));
    authorityOf = (hex) => byHash.get(hex) ?? 0;
  }
  const ranked = known.map(({ query }) => {
    const words = query.split(/\s+/).filter((w) => w !== '');
    try {
      return engine.search(words, 'words', { authorityOf });
    } catch {
      return [];
    }
  });
  results[engine.name] = { mrrAt10: Math.round(mrrAt10(ranked, known.map((k) => k.url)) * 1000) / 1000 };
  // --ranks: where each query's answer came (1-10, or 0: not in the top 10), to see what a ranking misses.
  if (args.includes('--ranks')) results[engine.name].ranks = known.map(({ query, url }, q) => `${ranked[q].slice(0, 10).indexOf(url) + 1} ${query}`);
  await engine.close();
}
process.stdout.write(`${JSON.stringify({ pages: pages.length, queries: known.length, results, goal: { petrelAtLeast0_1AboveFts5: results.petrel.mrrAt10 >= results.fts5.mrrAt10 + 0.1 } }, null, 2)}\n`);
