/**
 * The CDXJ index of the archive, `warc/index.cdxj`: one line per response or revisit record, in the
 * form pywb reads (and warcio's indexer writes):
 *
 *   <SURT urlkey> <14-digit UTC timestamp> {"url":...,"mime":...,"status":"200","digest":...,"length":"...","offset":"...","filename":...}
 *
 * sorted bytewise (as `LC_ALL=C sort`), so a reader can binary-search it. `mime` is the media type of
 * the response's Content-Type (`warc/revisit` for a revisit), `digest` the payload digest without its
 * `sha1:` label, `offset`/`length` the record's gzip member. Request and warcinfo records are not
 * indexed (pywb finds a request next to its response).
 *
 * The index is rebuilt from the WARC files (`buildCdxjIndex`), by `petrel warc index` and by
 * `petrel warc get` when a WARC file is newer than the index: reading only each record's WARC fields and
 * HTTP head (warc-file.ts `readRecordHead`). Memory: the lines of the whole index, about 250 bytes per
 * capture, while it is sorted.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../storage/atomic-file.js';
import { fieldValue, mediaType } from '../../shared/warc/http-head.js';
import { timestamp14 } from '../../shared/warc/record.js';
import { listWarcFiles } from './warc-writer.js';
import { readRecordHead, walkMembers, warcField, withFile } from './warc-file.js';

export const CDXJ_FILE = 'index.cdxj';

export interface CdxjEntry {
  readonly urlkey: string;
  readonly timestamp: string;
  readonly url: string;
  readonly mime: string | null;
  readonly status: string | null;
  readonly digest: string | null;
  readonly length: number;
  readonly offset: number;
  readonly filename: string;
}

/**
 * The SURT (Sort-friendly URI Reordering Transform) key pywb and warcio index by: scheme and a leading
 * `www`, `www2`, ... dropped, host labels reversed and comma-joined, the port if not the default, `)`,
 * the path, and the query with its parameters sorted; all lowercased.
 */
export function surtKey(url: string): string {
  if (!/^https?:/i.test(url)) return url;
  try {
    // Parsed first, lowercased after: a URL given with raw non-ASCII characters is percent-encoded by the
    // parser in upper case, and SURT keys are lowercase throughout, escapes included (pywb, surt).
    const parsed = new URL(url.replace(/^(https?:\/\/)www\d*\./i, '$1'));
    let key = `${parsed.hostname.split('.').reverse().join(',')}${parsed.port === '' ? '' : `:${parsed.port}`})${parsed.pathname}`.toLowerCase();
    if (parsed.search !== '') key += `?${parsed.search.slice(1).toLowerCase().split('&').sort().join('&')}`;
    return key;
  } catch {
    return url;
  }
}

export function cdxjLine(entry: CdxjEntry): string {
  const json: Record<string, string> = { url: entry.url };
  if (entry.mime !== null) json.mime = entry.mime;
  if (entry.status !== null) json.status = entry.status;
  if (entry.digest !== null) json.digest = entry.digest;
  json.length = String(entry.length);
  json.offset = String(entry.offset);
  json.filename = entry.filename;
  return `${entry.urlkey} ${entry.timestamp} ${JSON.stringify(json)}`;
}

export function parseCdxjLine(line: string): CdxjEntry | null {
  const first = line.indexOf(' ');
  const second = line.indexOf(' ', first + 1);
  if (first <= 0 || second < 0) return null;
  try {
    const json = JSON.parse(line.slice(second + 1)) as Record<string, string | undefined>;
    if (typeof json.url !== 'string' || typeof json.filename !== 'string') return null;
    return {
      urlkey: line.slice(0, first),
      timestamp: line.slice(first + 1, second),
      url: json.url,
      mime: json.mime ?? null,
      status: json.status ?? null,
      digest: json.digest ?? null,
      length: Number(json.length),
      offset: Number(json.offset),
      filename: json.filename,
    };
  } catch {
    return null;
  }
}

/** The index entries of one WARC file, in file order. */
export function indexWarcFile(path: string, filename: string): CdxjEntry[] {
  return withFile(path, (fd) => {
    const entries: CdxjEntry[] = [];
    for (const member of walkMembers(fd)) {
      const head = readRecordHead(fd, member);
      const type = warcField(head, 'WARC-Type');
      if (type !== 'response' && type !== 'revisit') continue;
      const url = warcField(head, 'WARC-Target-URI') ?? '';
      const date = Date.parse(warcField(head, 'WARC-Date') ?? '');
      const digest = warcField(head, 'WARC-Payload-Digest');
      entries.push({
        urlkey: surtKey(url),
        timestamp: Number.isFinite(date) ? timestamp14(date) : '',
        url,
        mime: type === 'revisit' ? 'warc/revisit' : head.http === null ? null : mediaType(fieldValue(head.http, 'content-type')),
        status: head.http?.status === null || head.http === null ? null : String(head.http.status),
        digest: digest === null ? null : (digest.split(':', 2)[1] ?? null),
        length: member.length,
        offset: member.offset,
        filename,
      });
    }
    return entries;
  });
}

/** Every index line of the archive in `warcDir`, sorted. */
export function buildCdxjIndex(warcDir: string): string[] {
  const lines: string[] = [];
  for (const file of listWarcFiles(warcDir)) for (const entry of indexWarcFile(join(warcDir, file.name), file.name)) lines.push(cdxjLine(entry));
  return lines.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Rebuilds `index.cdxj` (replaced atomically); returns its number of lines. */
export function writeCdxjIndex(warcDir: string): number {
  const lines = buildCdxjIndex(warcDir);
  writeFileAtomic(join(warcDir, CDXJ_FILE), lines.length === 0 ? '' : `${lines.join('\n')}\n`);
  return lines.length;
}

/** Whether `index.cdxj` exists and is at least as new as every WARC file. */
export function cdxjIndexIsCurrent(warcDir: string): boolean {
  let indexed: number;
  try {
    indexed = statSync(join(warcDir, CDXJ_FILE)).mtimeMs;
  } catch {
    return false;
  }
  return listWarcFiles(warcDir).every((file) => statSync(join(warcDir, file.name)).mtimeMs <= indexed);
}
