/**
 * `petrel index check --data DIR` and `petrel search --data DIR QUERY`: the search index of a data
 * directory (DIR/index/), opened read-only. Both are safe while a queue server writes the index (they
 * read the manifest of the moment), though a check can then report a segment a merge just removed.
 */
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { decodeCrawlDbRecord } from '../queue-server/crawldb/record.js';
import { CrawlDbReader } from '../queue-server/crawldb/crawl-db-reader.js';
import { checkIndex } from '../queue-server/search/check.js';
import { IndexError } from '../queue-server/search/errors.js';
import { SearchIndex, SEARCH_LIMITS } from '../queue-server/search/search-index.js';
import { dataPath } from '../queue-server/storage/data-dir.js';
import { DATA_OPTION, dataDirProblem, fail, failuresInJson, integerOption } from './options.js';

function indexDir(dataDir: string, command: string): string {
  const dir = dataPath(dataDir, 'index');
  const problem = dataDirProblem(dataDir);
  if (problem !== null) fail(problem, { status: 2, command });
  if (!existsSync(dir)) fail(`no search index at ${dir}: is ${dataDir} a Petrel data directory with an index?`, { status: 2, command });
  return dir;
}

export function indexCommand(): Command {
  const index = failuresInJson(new Command('index').description('inspect the search index of a data directory (DIR/index/, read-only)'));
  index
    .command('check')
    .description('verify every segment, in segment files and in the commit log: checksums of every section, sorted terms, postings that decode and point at documents the segment holds, stored documents, deletion files, log records, one live entry per URL, and no fewer commits than the crawl database recorded; exit status 1 on any fault')
    .option(DATA_OPTION.flags, 'data directory', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--json', 'print the report as one JSON object {ok, segments, entries, livePages, terms, postings, logs, logSegments, logTailBytes, commits, recordedCommits, faults: [{code, segment, message}]}', false)
    .addHelpText('after', '\nExit status: 0 when clean, 1 when the index has faults, 2 when there is no index.\n')
    .action((values: { data: string; json: boolean }) => {
      const dir = indexDir(values.data, 'index check');
      // What the crawl database recorded of the index's commits, when the data directory has one.
      const crawlDbPath = dataPath(values.data, 'crawlDb');
      let recordedCommits: number | undefined;
      if (existsSync(crawlDbPath)) {
        const crawlDb = CrawlDbReader.open(crawlDbPath);
        try {
          recordedCommits = crawlDb.tree.stats().stamp;
        } finally {
          crawlDb.close();
        }
      }
      const report = checkIndex(dir, { recordedCommits });
      if (values.json) process.stdout.write(`${JSON.stringify(report)}\n`);
      else {
        process.stdout.write(`${report.segments} segments, ${report.entries} entries, ${report.livePages} live pages, ${report.terms} terms, ${report.postings} postings\n`);
        if (report.logSegments > 0 || report.logTailBytes > 0) {
          process.stdout.write(`commit log: ${report.logSegments} segments not yet in segment files${report.logTailBytes > 0 ? `, ${report.logTailBytes} bytes of an unacknowledged commit after the last (cut at the next open)` : ''}\n`);
        }
        for (const fault of report.faults) process.stdout.write(`FAULT ${fault.code}${fault.segment === undefined ? '' : ` ${fault.segment}`}: ${fault.message}\n`);
        process.stdout.write(report.ok ? 'ok\n' : `${report.faults.length} fault(s)\n`);
      }
      process.exitCode = report.ok ? 0 : 1;
    });
  return index;
}

export function searchCommand(): Command {
  const search = new Command('search')
    .description('search the crawl\'s index: words (all must match), "exact phrases", -excluded, site:host, lang:xx; ranked by BM25F over title, anchor text, headings and body and by the proximity of the words, ties broken by the OPIC score of the crawl database (link authority)')
    .option(DATA_OPTION.flags, 'data directory', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--limit <n>', `results to print, 1 to ${SEARCH_LIMITS.limit}`, integerOption('--limit', 1, SEARCH_LIMITS.limit), 10)
    .option('--offset <n>', `results to skip, 0 to ${SEARCH_LIMITS.offset}`, integerOption('--offset', 0, SEARCH_LIMITS.offset), 0)
    .option('--json', 'print {query, total, tookMs, results: [{url, title, snippet (HTML), score, fetchedAt, language, urlHash}]}', false)
    .argument('<query...>', 'the query (quote phrases for the shell: \'"exact phrase"\'); a word may start with -, an exclusion')
    // `-word` is an exclusion, not an option: it reaches the query. A `--word` that is no option is a typo.
    .allowUnknownOption()
    .addHelpText('after', '\nExit status: 0 (also with no results), 1 on a failure, 2 on a bad query or no index.\n')
    .action(async (words: string[], values: { data: string; limit: number; offset: number; json: boolean }) => {
      const typo = words.find((word) => word.startsWith('--'));
      if (typo !== undefined) fail(`unknown option ${typo.slice(0, 80)} (petrel search --help lists them; a query word starting with one - excludes it)`, { status: 2, command: 'search' });
      const query = words.join(' ');
      const dir = indexDir(values.data, 'search');
      const index = SearchIndex.open(dir, { readOnly: true });
      const crawlDbPath = dataPath(values.data, 'crawlDb');
      const crawlDb = existsSync(crawlDbPath) ? CrawlDbReader.open(crawlDbPath) : null;
      try {
        const authorityOf = crawlDb === null ? undefined : (hex: string): number => {
          const bytes = crawlDb.get(Buffer.from(hex, 'hex'));
          return bytes === null ? 0 : decodeCrawlDbRecord(bytes).score;
        };
        const started = performance.now();
        let found;
        try {
          found = index.search(query, { limit: values.limit, offset: values.offset, authorityOf });
        } catch (error) {
          if (error instanceof IndexError && error.code === 'QUERY_INVALID') fail(error.message, { status: 2, command: 'search', code: 'query-invalid' });
          throw error;
        }
        const tookMs = Math.round((performance.now() - started) * 10) / 10;
        if (values.json) {
          process.stdout.write(`${JSON.stringify({ query, total: found.total, tookMs, results: found.results })}\n`);
          return;
        }
        const shown =
          found.total === 0 ? 'no results' : found.results.length === 0 ? `no results past ${values.offset} (${found.total} in all)` : `results ${values.offset + 1}-${values.offset + found.results.length} of ${found.total}`;
        process.stdout.write(`${shown} for ${JSON.stringify(query)} (${tookMs} ms)\n`);
        found.results.forEach((r, i) => {
          process.stdout.write(`\n${values.offset + i + 1}. ${oneLine(r.title === '' ? r.url : r.title)}\n   ${r.url}\n   ${oneLine(snippetText(r.snippet))}\n`);
        });
      } finally {
        crawlDb?.close();
        await index.close();
      }
    });
  return failuresInJson(search);
}

/** The snippet's HTML as terminal text: marked words in [brackets], entities decoded. */
export function snippetText(html: string): string {
  return html
    .replace(/<mark>/g, '[')
    .replace(/<\/mark>/g, ']')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&');
}

/**
 * Text from the web on one line, without control characters (they could move a terminal's cursor) or
 * bidirectional controls (an override could make a URL read as another).
 */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, ' ').trim();
}
