/**
 * `petrel export`: the stored page records, one JSON object per line, to stdout: by default the
 * latest record of each URL (a 304 writes no record, so the last full fetch stands), with --all the
 * whole history. Memory: one map entry per URL for the default.
 *
 * `--format warc`: one WARC file (gzip members) of each URL's latest capture as the crawl database
 * points to it, request and response records copied byte for byte, after a warcinfo record of its own;
 * an identical-payload revisit comes after the capture holding its payload (copied once). With --all,
 * every WARC file of the archive, whole, in order. Memory: one set entry per capture copied.
 */
import { existsSync, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { buildWarcinfoRecord } from '../shared/warc/exchange.js';
import { decodeCrawlDbRecord } from '../queue-server/crawldb/record.js';
import { CrawlDbReader } from '../queue-server/crawldb/crawl-db-reader.js';
import { DATA_FILES, dataPath } from '../queue-server/storage/data-dir.js';
import { readPageArchive } from '../queue-server/crawl/page-archive.js';
import type { PageRecord } from '../queue-server/crawl/outcome.js';
import { DigestIndex } from '../queue-server/warc/digest-index.js';
import { responseRecordOf, type CaptureLocation } from '../queue-server/warc/location.js';
import { listWarcFiles } from '../queue-server/warc/warc-writer.js';
import { readAt, readRecordHead, warcField, withFile } from '../queue-server/warc/warc-file.js';
import { EXIT, exitCodesHelp } from './exit-codes.js';
import { checkExistingDataDir, DATA_OPTION, fail, packageVersion } from './options.js';

async function write(bytes: Uint8Array | string): Promise<void> {
  if (!process.stdout.write(bytes)) await once(process.stdout, 'drain');
}

export function exportCommand(): Command {
  return new Command('export')
    .description('write the stored page records (URL, status, content type, title, description, language, excerpt, outlink count and URLs, signature, fetch time) to stdout, or with --format warc the latest captures as one WARC')
    .option(DATA_OPTION.flags, 'data directory of the crawl', DATA_OPTION.parse, DATA_OPTION.default)
    .addOption(new Option('--format <format>', 'output format: jsonl, one JSON object per line; warc, a .warc.gz of the latest capture of each URL').choices(['jsonl', 'warc']).default('jsonl'))
    .option('--all', 'every record of every pass, oldest first (without it: the latest record of each URL); with --format warc, every WARC file whole')
    .addHelpText(
      'after',
      '\nEach record has outlinkCount (links found on the page) and outlinks (the first 1,000 of them, absolute and\n' +
        'normalized; records written before outlinks were kept have outlinks: [] and their count in outlinkCount).\n' +
        exitCodesHelp(['ok', 'failed', 'usage']),
    )
    .action(async (values: { data: string; format: 'jsonl' | 'warc'; all?: boolean }) => {
      if (values.format === 'warc') {
        checkExistingDataDir(values.data, 'export', DATA_FILES.crawlDb);
        await exportWarc(values.data, values.all === true);
        return;
      }
      checkExistingDataDir(values.data, 'export', DATA_FILES.pages);
      const path = dataPath(values.data, 'pages');
      // Latest record per URL: a first pass finds each URL's last record, a second writes those.
      let latest: Map<string, number> | null = null;
      if (values.all !== true) {
        latest = new Map();
        let index = 0;
        for await (const record of readPageArchive(path)) latest.set(record.url, index++);
      }
      let index = 0;
      for await (const record of readPageArchive(path)) {
        if (latest !== null && latest.get(record.url) !== index++) continue;
        await write(`${JSON.stringify(exported(record))}\n`);
      }
    });
}

/**
 * A record as exported: the current shape, also for records an older Petrel wrote, whose `outlinks`
 * was the count (now `outlinkCount`, with `outlinks` the URLs).
 */
function exported(record: PageRecord | (Omit<PageRecord, 'outlinks' | 'outlinkCount'> & { outlinks: number })): PageRecord {
  if (typeof record.outlinks !== 'number') return record as PageRecord;
  const { outlinks, ...rest } = record;
  return { ...rest, outlinkCount: outlinks, outlinks: [] } as PageRecord;
}

async function exportWarc(dataDir: string, all: boolean): Promise<void> {
  const warcDir = dataPath(dataDir, 'warc');
  if (!existsSync(warcDir)) fail(`no web archive at ${warcDir}: nothing was archived in ${dataDir} (or it is not a Petrel data directory)`, { status: EXIT.usage, command: 'export' });
  if (process.stdout.isTTY) fail('--format warc writes gzip data: redirect it to a file (> crawl.warc.gz)', { status: EXIT.usage, command: 'export' });
  if (all) {
    for (const file of listWarcFiles(warcDir)) await write(readFileSync(join(warcDir, file.name)));
    return;
  }
  const crawlDbPath = dataPath(dataDir, 'crawlDb');
  if (!existsSync(crawlDbPath)) fail(`no crawl database at ${crawlDbPath}: is ${dataDir} a Petrel data directory?`, { status: EXIT.usage, command: 'export' });
  const now = Date.now();
  const filename = `petrel-export-${new Date(now).toISOString().replace(/[-:T.Z]/g, '')}.warc.gz`;
  const { record } = buildWarcinfoRecord({ software: `Petrel/${packageVersion()}`, operator: null, userAgent: null, settings: { export: 'latest capture of each URL', data: dataDir } }, { filename, date: now });
  await write(record);
  const digestsPath = dataPath(dataDir, 'warcDigests');
  const digests = existsSync(digestsPath) ? DigestIndex.open(digestsPath, { readOnly: true }) : null;
  const tree = CrawlDbReader.open(crawlDbPath);
  const copied = new Set<string>();
  const copy = async (capture: CaptureLocation): Promise<void> => {
    const key = `${capture.file}:${capture.offset}`;
    if (copied.has(key)) return;
    copied.add(key);
    await write(withFile(join(warcDir, capture.file), (fd) => readAt(fd, capture.offset, capture.length)));
  };
  try {
    for (const [, bytes] of tree.entries()) {
      const capture = decodeCrawlDbRecord(bytes).warc;
      if (capture === null) continue;
      if (capture.kind === 'revisit') {
        // Its payload is another capture's: put that one first, so the export replays on its own.
        const head = withFile(join(warcDir, capture.file), (fd) => readRecordHead(fd, responseRecordOf(capture)));
        const original = digests?.find(warcField(head, 'WARC-Payload-Digest') ?? '') ?? null;
        if (original !== null && original.digest === warcField(head, 'WARC-Payload-Digest')) await copy(original.location);
      }
      await copy(capture);
    }
  } finally {
    tree.close();
    digests?.close();
  }
}
