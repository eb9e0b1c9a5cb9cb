/**
 * Cached copies, as Yioop shows them: a URL's latest capture read back from the web archive and
 * served as one HTML document, a banner saying what it is and when it was fetched, then the page as
 * the crawler stored it. The admin page links every fetched page to it (admin/routes.ts
 * `/admin/cache`).
 *
 * Crawled HTML is hostile. The document goes out under `CACHED_COPY_POLICY`: CSP `sandbox` without
 * `allow-same-origin` (an opaque origin: no cookies, no storage, no same-origin requests to the admin
 * pages) and without `allow-scripts`, plus `default-src 'none'`, so nothing is loaded from anywhere
 * (no script, frame, image, font or connection: a cached copy cannot call home or the admin API);
 * inline styles only, so the page still looks like itself. Every value the banner shows is escaped.
 *
 * A page may ask not to be archived (`noarchive` in its X-Robots-Tag header or its meta robots, for
 * every agent or for `petrel`, as the fetcher reads noindex): `asksNotToBeArchived` reads it from the
 * capture itself, so the archive stays the one authority on what a page said; the public /cache route
 * refuses such a copy (api/cached-copy-route.ts), and the operator's view shows it with that said in
 * the banner.
 *
 * Bounds: the stored body is at most the fetcher's body limit; a compressed one is inflated to at most
 * MAX_SHOWN_BYTES, and what is shown is cut there.
 */
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { join } from 'node:path';
import { decodeHtml } from '../../fetcher/decode.js';
import { xRobotsTag } from '../../fetcher/x-robots-tag.js';
import { WarcError } from '../../shared/warc/errors.js';
import { fieldValue, headEnd, mediaType, parseHead } from '../../shared/warc/http-head.js';
import { responseRecordOf, type CaptureLocation } from './location.js';
import { readRecord, warcField, withFile, type WarcRecord } from './warc-file.js';
import type { DigestEntry } from './revisit.js';

/** Bytes of a body shown at most, after undoing its content coding. */
export const MAX_SHOWN_BYTES = 8 * 1024 * 1024;

/** The response headers of a cached copy, beside the admin pages' own (which it replaces for CSP). */
export const CACHED_COPY_POLICY = [
  'sandbox',
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  'img-src data:',
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface CachedCopy {
  readonly url: string;
  /** ms since epoch: WARC-Date of the capture. */
  readonly fetchedAt: number;
  readonly status: number | null;
  readonly contentType: string | null;
  /** The payload as stored (content coding kept). */
  readonly storedBytes: number;
  readonly truncated: boolean;
  /** The body, its content coding undone (at most MAX_SHOWN_BYTES), or null when it does not decode. */
  readonly body: Buffer | null;
  /** For an identical-payload revisit: the capture whose payload this is. */
  readonly payloadOf: { readonly url: string; readonly fetchedAt: number } | null;
  readonly file: string;
  readonly offset: number;
  /** The values of the response's X-Robots-Tag fields, as stored. */
  readonly xRobotsTag: readonly string[];
}

/**
 * Reads a URL's capture at `location` (its crawl database record's `warc`) from `warcDir`; an
 * identical-payload revisit is followed to its original through `original` (the digest index).
 * Throws WarcError (WARC_NOT_FOUND, WARC_RECORD_CORRUPT) when the records are not there or not whole.
 */
export function readCachedCopy(warcDir: string, location: CaptureLocation, original: (digest: string) => DigestEntry | null): CachedCopy {
  const at = responseRecordOf(location);
  const record = readAt(warcDir, at);
  const [head, ownBody] = split(record, at.offset);
  let body = ownBody;
  let payloadOf: CachedCopy['payloadOf'] = null;
  if (warcField(record, 'WARC-Type') === 'revisit') {
    const digest = warcField(record, 'WARC-Payload-Digest') ?? '';
    const entry = /^sha1:[A-Z2-7]{32}$/.test(digest) ? original(digest) : null;
    if (entry === null || entry.digest !== digest) throw new WarcError('WARC_NOT_FOUND', `the payload of the revisit at ${at.offset} of ${at.file} (${digest}) is not in the digest index`);
    const first = readAt(warcDir, responseRecordOf(entry.location));
    body = split(first, entry.location.offset)[1];
    payloadOf = { url: entry.url, fetchedAt: entry.location.date };
  }
  const parsed = parseHead(head);
  const contentType = fieldValue(parsed, 'content-type');
  const decoded = decodeContent(fieldValue(parsed, 'content-encoding'), body);
  return {
    url: warcField(record, 'WARC-Target-URI') ?? '',
    fetchedAt: location.date,
    status: parsed.status,
    contentType,
    storedBytes: body.length,
    truncated: payloadOf === null && warcField(record, 'WARC-Truncated') !== null,
    body: decoded,
    payloadOf,
    file: location.file,
    offset: location.offset,
    xRobotsTag: parsed.fields.filter(([name]) => name.toLowerCase() === 'x-robots-tag').map(([, value]) => value),
  };
}

/**
 * `noarchive` in the response's X-Robots-Tag fields, or in an HTML body's meta robots. The HTML scanner
 * (fetcher/html-extract.ts and htmlparser2, 116 KB of the bundle) is loaded on the first HTML copy
 * asked for, not when the queue server starts.
 */
export async function asksNotToBeArchived(copy: CachedCopy): Promise<boolean> {
  if (xRobotsTag(copy.xRobotsTag, 'petrel').noarchive) return true;
  if (copy.body === null || !isHtml(mediaType(copy.contentType))) return false;
  const { scanPage } = await import('../../fetcher/html-extract.js');
  return scanPage(decodeHtml(copy.body, copy.contentType), 0).noarchive;
}

function isHtml(type: string | null): type is 'text/html' | 'application/xhtml+xml' | null {
  return type === null || type === 'text/html' || type === 'application/xhtml+xml';
}

/**
 * The cached copy as one HTML document: the banner, then the page (HTML as stored, text escaped, other
 * types described). `noarchive`: the page asked not to be archived (`asksNotToBeArchived`), said in the banner.
 */
export function renderCachedCopy(copy: CachedCopy, options: { readonly noarchive?: boolean } = {}): string {
  const type = mediaType(copy.contentType);
  const when = new Date(copy.fetchedAt).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  const facts = [`HTTP ${copy.status ?? '?'}`, type ?? 'no content type', `${copy.storedBytes.toLocaleString('en')} bytes stored`];
  if (copy.truncated) facts.push('cut at the body limit');
  const noarchive = options.noarchive === true ? " The page asks not to be archived (noarchive): this copy is shown to the crawl's operator only, never on the public search." : '';
  const payload = copy.payloadOf === null ? '' : ` Its content is identical to that of ${escapeHtml(copy.payloadOf.url)}, fetched ${escapeHtml(new Date(copy.payloadOf.fetchedAt).toISOString())}.`;
  const banner =
    '<!DOCTYPE html>\n<div id="petrel-cached-copy" style="all:initial;display:block;box-sizing:border-box;margin:0 0 1em;padding:.75em 1em;background:#fffbe6;border-bottom:2px solid #b08800;color:#222;font:14px/1.4 system-ui,sans-serif">' +
    `<strong style="font-weight:600">Petrel's cached copy</strong> of <a href="${escapeHtml(copy.url)}" style="color:#0645ad">${escapeHtml(copy.url)}</a>, ` +
    `fetched <time datetime="${escapeHtml(new Date(copy.fetchedAt).toISOString())}">${escapeHtml(when)}</time> (${escapeHtml(facts.join(', '))}).${payload} ` +
    `This is the page as the crawler stored it in its web archive (${escapeHtml(copy.file)} at ${copy.offset}); it may have changed since. ` +
    `Its scripts do not run and nothing is loaded from the web.${noarchive}</div>\n`;
  if (copy.body === null) return `${banner}<p>The stored body does not decode as its Content-Encoding says (it may be cut): <code>petrel warc get</code> prints it as stored.</p>\n`;
  if (isHtml(type)) return banner + decodeHtml(copy.body, copy.contentType);
  if (type.startsWith('text/') || type === 'application/json' || type.endsWith('+json') || type.endsWith('+xml') || type === 'application/xml') {
    return `${banner}<pre style="white-space:pre-wrap">${escapeHtml(decodeHtml(copy.body, copy.contentType))}</pre>\n`;
  }
  return `${banner}<p>${escapeHtml(type)} content is not shown here: <code>petrel warc get ${escapeHtml(copy.url)}</code> prints it.</p>\n`;
}

export function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

function readAt(warcDir: string, at: { file: string; offset: number; length: number }): WarcRecord {
  try {
    return withFile(join(warcDir, at.file), (fd) => readRecord(fd, at));
  } catch (error) {
    if (error instanceof WarcError) throw error;
    // The code alone: the message names the file by its whole path, which a public page must not show.
    throw new WarcError('WARC_NOT_FOUND', `cannot read the record at ${at.offset} of ${at.file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).name}`);
  }
}

function split(record: WarcRecord, offset: number): [Buffer, Buffer] {
  const end = headEnd(record.block);
  if (end < 0) throw new WarcError('WARC_RECORD_CORRUPT', `the record at ${offset} has no complete HTTP head`);
  return [record.block.subarray(0, end), record.block.subarray(end)];
}

/** The body with its content coding undone, at most MAX_SHOWN_BYTES; null when it does not decode. */
function decodeContent(encoding: string | null, body: Buffer): Buffer | null {
  const coding = (encoding ?? '').trim().toLowerCase();
  const limit = { maxOutputLength: MAX_SHOWN_BYTES, finishFlush: 2 /* Z_SYNC_FLUSH: a cut body shows what it holds */ };
  try {
    if (coding === 'gzip' || coding === 'x-gzip') return gunzipSync(body, limit);
    if (coding === 'deflate') return inflateSync(body, limit);
    if (coding === 'br') return brotliDecompressSync(body, { maxOutputLength: MAX_SHOWN_BYTES });
  } catch {
    // Not that coding, or more than MAX_SHOWN_BYTES of it (a bomb stops there).
    return null;
  }
  return body.subarray(0, MAX_SHOWN_BYTES);
}
