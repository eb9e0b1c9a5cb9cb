/**
 * `petrel warc index|get`: the data directory's web archive (warc/, see queue-server/warc/).
 *   index  rebuilds warc/index.cdxj from the WARC files
 *   get    prints the stored response of a URL (HTTP head and body), the capture nearest --at
 * Read-only on the WARC files; safe beside a running queue server (it reads whole records only).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { Command } from 'commander';
import { WarcError } from '../shared/warc/errors.js';
import { fieldValue, parseHead } from '../shared/warc/http-head.js';
import { dataPath } from '../queue-server/storage/data-dir.js';
import { cdxjIndexIsCurrent, writeCdxjIndex, CDXJ_FILE } from '../queue-server/warc/cdxj.js';
import { findCapture, readStoredResponse } from '../queue-server/warc/lookup.js';
import { warcField } from '../queue-server/warc/warc-file.js';
import { EXIT } from './exit-codes.js';
import { dataDirProblem, fail, DATA_OPTION } from './options.js';

function warcDirOf(dataDir: string): string {
  const problem = dataDirProblem(dataDir);
  if (problem !== null) fail(problem, { status: EXIT.usage, command: 'warc' });
  const dir = dataPath(dataDir, 'warc');
  if (!existsSync(dir)) fail(`no web archive at ${dir}: nothing was archived in ${dataDir} (or it is not a Petrel data directory)`, { status: EXIT.usage, command: 'warc' });
  return dir;
}

/**
 * A time for --at: 4 to 17 digits of YYYYMMDDhhmmssSSS in UTC (a prefix means its start, as in CDX
 * queries), or an ISO 8601 date-time; null when it is neither.
 */
export function parseAt(text: string): number | null {
  if (/^\d{4,17}$/.test(text)) {
    const padded = text.padEnd(17, '0');
    const part = (from: number, to: number) => Number(padded.slice(from, to));
    const month = text.length >= 6 ? part(4, 6) : 1;
    const day = text.length >= 8 ? part(6, 8) : 1;
    if (month < 1 || month > 12 || day < 1 || day > 31 || part(8, 10) > 23 || part(10, 12) > 59 || part(12, 14) > 60) return null;
    return Date.UTC(part(0, 4), month - 1, day, part(8, 10), part(10, 12), part(12, 14), part(14, 17));
  }
  if (!/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) return null;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : null;
}

function decodeBody(head: Buffer, body: Buffer): Buffer {
  const encoding = (fieldValue(parseHead(head), 'content-encoding') ?? '').trim().toLowerCase();
  const limit = { maxOutputLength: 256 * 1024 * 1024 };
  try {
    if (encoding === 'gzip' || encoding === 'x-gzip') return gunzipSync(body, limit);
    if (encoding === 'deflate') return inflateSync(body, limit);
    if (encoding === 'br') return brotliDecompressSync(body, limit);
  } catch (error) {
    fail(`the stored body does not decode as ${encoding} (it may be truncated): ${(error as Error).message}; print it without --decode`, { command: 'warc get' });
  }
  return body;
}

export function warcCommand(): Command {
  const warc = new Command('warc').description('the web archive of a data directory (warc/): rebuild its CDXJ index, print a stored response');
  warc
    .command('index')
    .description(`rebuild warc/${CDXJ_FILE} (CDXJ, the format pywb reads: SURT key, timestamp, JSON with url, mime, status, digest, length, offset, filename) from the WARC files`)
    .option(DATA_OPTION.flags, 'data directory of the crawl', DATA_OPTION.parse, DATA_OPTION.default)
    .addHelpText('after', '\nExit status: 0 when the index is written, 1 when a WARC file cannot be read, 2 when there is no web archive in the data directory.\n')
    .action((values: { data: string }) => {
      const dir = warcDirOf(values.data);
      const lines = writeCdxjIndex(dir);
      process.stdout.write(`${lines} captures indexed in ${join(dir, CDXJ_FILE)}\n`);
    });
  warc
    .command('get')
    .description('print the stored response of URL (HTTP head and body, as received) from the capture nearest --at, the latest by default; a revisit is followed to the record holding the payload')
    .argument('<url>', 'the URL, as crawled')
    .option(DATA_OPTION.flags, 'data directory of the crawl', DATA_OPTION.parse, DATA_OPTION.default)
    .option('--at <time>', 'UTC time: YYYYMMDDhhmmss (or a prefix of it) or ISO 8601; the capture nearest it is printed')
    .option('--decode', 'undo the Content-Encoding (gzip, deflate, br) of the body before printing it', false)
    .addHelpText('after', '\nExit status: 0 when the response is printed, 1 when the URL has no capture (WARC_NOT_FOUND) or its records cannot be read, 2 on a bad URL or --at, or no web archive in the data directory.\n')
    .action(async (url: string, values: { data: string; at?: string; decode: boolean }) => {
      if (!/^https?:\/\/[^\s]+$/i.test(url)) fail(`not an http(s) URL: ${JSON.stringify(url.slice(0, 200))}`, { status: EXIT.usage, command: 'warc get' });
      const at = values.at === undefined ? null : parseAt(values.at);
      if (values.at !== undefined && at === null) fail(`--at wants a UTC time as YYYYMMDDhhmmss (or a prefix, like 2026 or 20260601) or ISO 8601 (2026-06-01T12:00:00Z), got ${JSON.stringify(values.at)}`, { status: EXIT.usage, command: 'warc get' });
      const dir = warcDirOf(values.data);
      try {
        if (!cdxjIndexIsCurrent(dir)) writeCdxjIndex(dir);
        const entry = await findCapture(dir, url, at);
        const stored = await readStoredResponse(dir, entry);
        const date = warcField(stored.record, 'WARC-Date');
        const via = stored.original === null ? '' : ` (a ${warcField(stored.record, 'WARC-Profile')?.split('/').pop()} revisit of ${warcField(stored.original.record, 'WARC-Target-URI')} ${warcField(stored.original.record, 'WARC-Date')})`;
        process.stderr.write(`petrel warc get: ${warcField(stored.record, 'WARC-Target-URI')} captured ${date}, ${stored.entry.filename} at ${stored.entry.offset}${via}\n`);
        process.stdout.write(Buffer.concat([stored.head, values.decode ? decodeBody(stored.head, stored.body) : stored.body]));
      } catch (error) {
        if (error instanceof WarcError) fail(`${error.code}: ${error.message}`, { command: 'warc get' });
        throw error;
      }
    });
  return warc;
}
