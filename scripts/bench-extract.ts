/**
 * bench-extract: what the fetcher's per-page work costs on real HTML, stage by stage, in one process.
 * A benchmark, not a test. For every page of the given directories (default: the PostgreSQL manual of
 * Debian's postgresql-doc-15, the `small` corpus of scripts/bench-crawl) it times, in ms of CPU per page:
 *
 *   decode       bytes to text (fetcher/decode.ts)
 *   signature    the body's content signature (xxHash64 of the bytes, shared/url-hash.ts)
 *   extract      the streaming extractor, everything (fetcher/html-extract.ts), of which
 *     scan       the one parse: htmlparser2's callbacks collecting links, title, meta and text
 *     simhash    the 64-bit simhash of the visible text (shared/simhash.ts)
 *     the rest   links resolved and normalized, the excerpt (white space collapsed), strings bounded
 *   index data   the search index's data of the page from what the extraction gathered (buildIndexData,
 *                shared/index-data.ts: tokenizing, stemming, positions), and its JSON bytes (plain, gzipped)
 *   dom extract  the DOM extractor it replaced (scripts/bench-extract/cheerio-extract.ts), for comparison
 *   in pieces    decode and extract as the fetcher does them: the page decoded 32 KiB at a time and each
 *                piece written to the parser (decodeHtmlChunks), beside decode + extract of the whole text
 *
 * Each stage runs over all pages `--rounds` times after one warm-up round; the fastest round counts (on
 * a shared machine the least disturbed one). CPU is process.cpuUsage (user + system), so garbage
 * collection a stage causes is charged to it.
 *
 *   npm run build && node dist/scripts/bench-extract.js [--dir DIR ...] [--max-files N] [--rounds N] [--json]
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { decodeHtml, decodeHtmlChunks } from '../fetcher/decode.js';
import { collapseWhitespace, extractPage, scanPage } from '../fetcher/html-extract.js';
import { gzipSync } from 'node:zlib';
import { buildIndexData } from '../shared/index-data.js';
import { DEFAULT_MAX_LINKS_PER_PAGE } from '../shared/protocol.js';
import { simhash } from '../shared/simhash.js';
import { contentSignature } from '../shared/url-hash.js';
import { extractPageWithCheerio } from './bench-extract/cheerio-extract.js';

const DEFAULT_DIR = '/usr/share/doc/postgresql-doc-15/html';

const USAGE = `Usage: node dist/scripts/bench-extract.js [--dir DIR ...] [--max-files N] [--rounds N] [--json]

Times the fetcher's per-page stages (decode, signature, streaming extraction with its parse and simhash,
and the DOM extraction it replaced) over the .html files of DIR, in ms of CPU per page.
  --dir DIR        a directory of HTML pages, searched recursively; repeatable (default ${DEFAULT_DIR},
                   from Debian's postgresql-doc-15)
  --max-files N    pages at most, the first in sorted path order (default 2000)
  --rounds N       timed rounds per stage after one warm-up; the fastest counts (default 5)
  --json           print the figures as JSON
`;

interface Page {
  readonly url: string;
  readonly bytes: Buffer;
  html: string;
}

function htmlFiles(dir: string, out: string[], max: number): void {
  for (const name of readdirSync(dir).sort()) {
    if (out.length >= max) return;
    const path = join(dir, name);
    const stat = statSync(path);
    if (stat.isDirectory()) htmlFiles(path, out, max);
    else if (name.endsWith('.html')) out.push(path);
  }
}

/** CPU ms of the fastest of `rounds` rounds of `work` over every page (after one warm-up round). */
function time(pages: readonly Page[], rounds: number, work: (page: Page) => unknown): number {
  let best = Infinity;
  let sink = 0;
  for (let round = 0; round <= rounds; round++) {
    const start = process.cpuUsage();
    for (const page of pages) if (work(page) !== undefined) sink++;
    const used = process.cpuUsage(start);
    if (round > 0) best = Math.min(best, (used.user + used.system) / 1000);
  }
  if (sink < 0) throw new Error('unreachable');
  return best;
}

function main(): number {
  const { values } = parseArgs({
    options: { dir: { type: 'string', multiple: true }, 'max-files': { type: 'string', default: '2000' }, rounds: { type: 'string', default: '5' }, json: { type: 'boolean', default: false }, help: { type: 'boolean', default: false } },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const dirs = values.dir ?? [DEFAULT_DIR];
  const maxFiles = Number(values['max-files']);
  const rounds = Number(values.rounds);
  if (!Number.isInteger(maxFiles) || maxFiles < 1 || !Number.isInteger(rounds) || rounds < 1) {
    process.stderr.write(`bench-extract: --max-files and --rounds take positive integers\n\n${USAGE}`);
    return 2;
  }
  const files: string[] = [];
  for (const dir of dirs) {
    try {
      htmlFiles(dir, files, maxFiles);
    } catch (error) {
      process.stderr.write(`bench-extract: cannot read ${dir}: ${(error as Error).message} (apt-get install postgresql-doc-15, or pass --dir)\n`);
      return 2;
    }
  }
  if (files.length === 0) {
    process.stderr.write(`bench-extract: no .html files under ${dirs.join(', ')}\n`);
    return 2;
  }
  const pages: Page[] = files.map((path) => ({ url: `http://docs.example${path}`, bytes: readFileSync(path), html: '' }));
  for (const page of pages) page.html = decodeHtml(page.bytes, 'text/html');
  const totalBytes = pages.reduce((sum, page) => sum + page.bytes.length, 0);
  const perPage = (ms: number) => ms / pages.length;

  const decode = perPage(time(pages, rounds, (page) => decodeHtml(page.bytes, 'text/html')));
  const signature = perPage(time(pages, rounds, (page) => contentSignature(page.bytes)));
  const extract = perPage(time(pages, rounds, (page) => extractPage(page.html, page.url)));
  const scan = perPage(time(pages, rounds, (page) => scanPage(page.html, DEFAULT_MAX_LINKS_PER_PAGE * 2)));
  const texts = pages.map((page) => scanPage(page.html, 0).text);
  let next = 0;
  const simhashMs = perPage(time(pages, rounds, () => {
    const text = texts[next++ % texts.length]!;
    return collapseWhitespace(text.slice(0, 16)) === '' ? null : simhash(text);
  }));
  const dom = perPage(time(pages, rounds, (page) => extractPageWithCheerio(page.html, page.url)));
  const whole = perPage(time(pages, rounds, (page) => extractPage(decodeHtml(page.bytes, 'text/html'), page.url)));
  const inPieces = perPage(time(pages, rounds, (page) => extractPage(decodeHtmlChunks(page.bytes, 'text/html'), page.url)));
  const extracted = pages.map((page) => extractPage(page.html, page.url));
  const indexInput = (i: number) => {
    const { page, indexSource } = extracted[i]!;
    return { title: page.title, language: page.language, headings: indexSource.headings, bodyText: indexSource.bodyText, storedText: indexSource.storedText, anchors: indexSource.anchors };
  };
  let nextIndex = 0;
  const indexData = perPage(time(pages, rounds, () => buildIndexData(indexInput(nextIndex++ % pages.length))));
  let indexJsonBytes = 0;
  let indexGzipBytes = 0;
  for (let i = 0; i < pages.length; i++) {
    const json = Buffer.from(JSON.stringify(buildIndexData(indexInput(i))));
    indexJsonBytes += json.length;
    indexGzipBytes += gzipSync(json).length;
  }

  const figures = {
    pages: pages.length,
    meanKb: totalBytes / pages.length / 1024,
    dirs,
    rounds,
    msPerPage: {
      decode,
      signature,
      extract,
      extractScan: scan,
      extractSimhash: simhashMs,
      extractRest: Math.max(0, extract - scan - simhashMs),
      indexData,
      domExtract: dom,
      decodeExtractWhole: whole,
      decodeExtractInPieces: inPieces,
    },
    indexDataBytesPerPage: { json: indexJsonBytes / pages.length, gzip: indexGzipBytes / pages.length },
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
    return 0;
  }
  const f = figures.msPerPage;
  const all = decode + signature + extract;
  const line = (name: string, ms: number, share: number | null) => `  ${name.padEnd(34)} ${ms.toFixed(3).padStart(7)} ms${share === null ? '' : `  ${((100 * ms) / share).toFixed(0).padStart(3)} %`}`;
  process.stdout.write(
    [
      `${pages.length} pages, ${figures.meanKb.toFixed(1)} KB mean, from ${dirs.join(', ')}; CPU per page, fastest of ${rounds} rounds (% of decode + signature + extract):`,
      line('decode (bytes to text)', decode, all),
      line('signature (xxHash64 of the body)', signature, all),
      line('extract, streaming (all of it)', extract, all),
      line('  parse: links, title, meta, text', f.extractScan, all),
      line('  simhash of the visible text', f.extractSimhash, all),
      line('  links normalized, excerpt, bounds', f.extractRest, all),
      line('index data (buildIndexData)', indexData, all),
      `  its JSON: ${(figures.indexDataBytesPerPage.json / 1024).toFixed(1)} KB a page, ${(figures.indexDataBytesPerPage.gzip / 1024).toFixed(1)} KB gzipped`,
      line('extract, DOM (before, for comparison)', dom, null),
      `  streaming extraction is ${(dom / extract).toFixed(1)}x faster than the DOM one`,
      line('decode + extract, the whole text', whole, null),
      line('decode + extract in 32 KiB pieces', inPieces, null),
      `  as the fetcher does it, in pieces: ${(inPieces / whole).toFixed(3)}x the whole text's cost`,
      '',
    ].join('\n'),
  );
  return 0;
}

process.exitCode = main();
