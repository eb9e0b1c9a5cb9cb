/**
 * Finding a stored response: the captures of a URL in the CDXJ index, the one nearest a time, and the
 * response it stands for, following a revisit to the record that holds the payload (WARC 1.1 6.7:
 * identical-payload-digest by its digest, server-not-modified by its refers-to URI and date; both
 * confirmed by WARC-Refers-To). Reads the index a line at a time; reads records by offset.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { WarcError } from '../../shared/warc/errors.js';
import { headEnd } from '../../shared/warc/http-head.js';
import { timestamp14 } from '../../shared/warc/record.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { CDXJ_FILE, parseCdxjLine, surtKey, type CdxjEntry } from './cdxj.js';
import { readRecord, readRecordHead, warcField, withFile, type WarcRecord } from './warc-file.js';

/** Index entries for which `keep` holds, in index order. */
export async function scanIndex(warcDir: string, keep: (entry: CdxjEntry) => boolean): Promise<CdxjEntry[]> {
  const found: CdxjEntry[] = [];
  const lines = createInterface({ input: createReadStream(join(warcDir, CDXJ_FILE), { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of lines) {
    const entry = parseCdxjLine(line);
    if (entry !== null && keep(entry)) found.push(entry);
  }
  return found;
}

function dateOf(warcDir: string, entry: CdxjEntry): { date: number; id: string | null } {
  const head = withFile(join(warcDir, entry.filename), (fd) => readRecordHead(fd, entry));
  return { date: Date.parse(warcField(head, 'WARC-Date') ?? ''), id: warcField(head, 'WARC-Record-ID') };
}

/**
 * The capture of `url` nearest `at` (ms since epoch; a tie goes to the later one), or the latest when
 * `at` is null; WARC_NOT_FOUND when the index has none.
 */
export async function findCapture(warcDir: string, url: string, at: number | null): Promise<CdxjEntry> {
  const key = surtKey(url);
  const sameKey = await scanIndex(warcDir, (entry) => entry.urlkey === key);
  // A SURT key folds case: /Case.html and /case.html share one. The URL itself, as given or as the
  // crawl normalizes it, picks among them; the key alone only when no capture has the URL exactly.
  const normalized = normalizeUrl(url);
  const forms = new Set([url, ...(normalized.ok ? [normalized.url as string] : [])]);
  const exact = sameKey.filter((entry) => forms.has(entry.url));
  const captures = exact.length > 0 ? exact : sameKey;
  if (captures.length === 0) throw new WarcError('WARC_NOT_FOUND', `no capture of ${url} in the archive`);
  // Seconds from the index, then the exact WARC-Date of the candidates in the best second.
  const seconds = (entry: CdxjEntry) => Date.UTC(+entry.timestamp.slice(0, 4), +entry.timestamp.slice(4, 6) - 1, +entry.timestamp.slice(6, 8), +entry.timestamp.slice(8, 10), +entry.timestamp.slice(10, 12), +entry.timestamp.slice(12, 14));
  let best: { entry: CdxjEntry; date: number } | null = null;
  const target = at ?? Number.POSITIVE_INFINITY;
  const rank = (date: number): number => (at === null ? -date : Math.abs(date - target));
  for (const entry of captures) {
    // Only a record whose second could win needs its exact date read.
    if (best !== null && rank(seconds(entry)) > rank(best.date) + 1000) continue;
    const { date } = dateOf(warcDir, entry);
    if (best === null || rank(date) < rank(best.date) || (rank(date) === rank(best.date) && date > best.date)) best = { entry, date };
  }
  return best!.entry;
}

export interface StoredResponse {
  /** The record found for the URL (a response or a revisit). */
  readonly record: WarcRecord;
  readonly entry: CdxjEntry;
  /** The response record holding the payload, when `record` is a revisit. */
  readonly original: { readonly record: WarcRecord; readonly entry: CdxjEntry } | null;
  /** The HTTP head to show: the record's own (for a server-not-modified revisit, the original's). */
  readonly head: Buffer;
  /** The payload as stored (content coding kept). */
  readonly body: Buffer;
}

/** Revisits followed at most from a capture to the record with its payload (a 304 of an identical-payload revisit is two). */
const MAX_REVISIT_HOPS = 4;

/**
 * Reads the capture `entry` and, for a revisit, the record with its payload, following revisits of
 * revisits (a 304 of a page whose last 200 was an identical-payload revisit refers to that revisit).
 * The head shown is the capture's own, or for a server-not-modified revisit the one it revalidated.
 */
export async function readStoredResponse(warcDir: string, entry: CdxjEntry): Promise<StoredResponse> {
  const record = withFile(join(warcDir, entry.filename), (fd) => readRecord(fd, entry));
  let current = { record, entry };
  let head: Buffer | null = null;
  for (let hop = 0; ; hop++) {
    const type = warcField(current.record, 'WARC-Type');
    if (type === 'response') {
      const [ownHead, body] = split(current.record, current.entry);
      return { record, entry, original: current.record === record ? null : current, head: head ?? ownHead, body };
    }
    if (type !== 'revisit') throw new WarcError('WARC_RECORD_CORRUPT', `the ${type ?? 'untyped'} record at ${current.entry.offset} of ${current.entry.filename} is not a response or a revisit Petrel knows`);
    if (hop === MAX_REVISIT_HOPS) throw new WarcError('WARC_RECORD_CORRUPT', `the revisit at ${entry.offset} of ${entry.filename} leads through more than ${MAX_REVISIT_HOPS} revisits`);
    const referred = await referredBy(warcDir, current.record, current.entry);
    // An identical-payload revisit's head is its own response's; a server-not-modified one's is what it revalidated.
    if ((warcField(current.record, 'WARC-Profile') ?? '').endsWith('/identical-payload-digest')) head ??= split(current.record, current.entry)[0];
    current = referred;
  }
}

/** The record a revisit refers to (WARC 1.1 6.7), found in the index and confirmed by WARC-Refers-To. */
async function referredBy(warcDir: string, record: WarcRecord, entry: CdxjEntry): Promise<{ record: WarcRecord; entry: CdxjEntry }> {
  const profile = warcField(record, 'WARC-Profile') ?? '';
  const refersTo = warcField(record, 'WARC-Refers-To');
  let candidates: CdxjEntry[];
  if (profile.endsWith('/identical-payload-digest')) {
    const digest = warcField(record, 'WARC-Payload-Digest')?.split(':', 2)[1] ?? '';
    candidates = await scanIndex(warcDir, (other) => other.digest === digest && other.mime !== 'warc/revisit');
  } else if (profile.endsWith('/server-not-modified')) {
    const uri = warcField(record, 'WARC-Refers-To-Target-URI') ?? warcField(record, 'WARC-Target-URI') ?? '';
    const date = Date.parse(warcField(record, 'WARC-Refers-To-Date') ?? '');
    const key = surtKey(uri);
    const stamp = Number.isFinite(date) ? timestamp14(date) : '';
    candidates = await scanIndex(warcDir, (other) => other.urlkey === key && other.timestamp === stamp);
  } else {
    throw new WarcError('WARC_RECORD_CORRUPT', `the revisit at ${entry.offset} of ${entry.filename} has a profile Petrel does not know (${profile.slice(0, 120)})`);
  }
  const chosen = candidates.find((candidate) => refersTo === null || dateOf(warcDir, candidate).id === refersTo);
  if (chosen === undefined) throw new WarcError('WARC_NOT_FOUND', `the revisit at ${entry.offset} of ${entry.filename} refers to ${refersTo ?? 'a record'} that is not in the archive`);
  return { record: withFile(join(warcDir, chosen.filename), (fd) => readRecord(fd, chosen)), entry: chosen };
}

function split(record: WarcRecord, entry: CdxjEntry): [Buffer, Buffer] {
  const end = headEnd(record.block);
  if (end < 0) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${entry.offset} of ${entry.filename} has no complete HTTP head`);
  return [record.block.subarray(0, end), record.block.subarray(end)];
}
