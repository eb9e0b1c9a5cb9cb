/**
 * Real HTTP exchanges for the WARC tests, and the independent check of WARC files: every file is parsed
 * by webrecorder's warcio (npm, not written here) and every digest recomputed from what warcio read.
 *
 * `fetchExchange` makes a real request on loopback with node:http and hands over an Exchange exactly as
 * the contract says: the request head Node wrote (its own bytes), the response head rebuilt from the raw
 * header pairs (shared/warc/http-head.ts), the body as it arrived (chunked framing undone by Node,
 * content coding kept), the peer's address.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { WARCParser, type WARCRecord } from 'warcio';
import type { Exchange } from '../../shared/warc/exchange.js';
import { responseHead } from '../../shared/warc/http-head.js';
import { base32 } from '../../shared/warc/record.js';

export async function fetchExchange(url: string, options: { headers?: Record<string, string>; maxBytes?: number } = {}): Promise<Exchange & { status: number }> {
  const startedAt = Date.UTC(2026, 5, 1, 12, 0, 0, 250) + Math.floor(Math.random() * 1000);
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { 'user-agent': 'Petrel-test/1 (+warc tests)', 'accept-encoding': 'gzip', ...options.headers }, agent: false });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let kept = 0;
      let truncated = false;
      res.on('data', (chunk: Buffer) => {
        if (options.maxBytes !== undefined && kept + chunk.length > options.maxBytes) {
          chunks.push(chunk.subarray(0, options.maxBytes - kept));
          kept = options.maxBytes;
          truncated = true;
          res.destroy();
          finish();
          return;
        }
        kept += chunk.length;
        chunks.push(chunk);
      });
      let done = false;
      const finish = (): void => {
        if (done) return;
        done = true;
        resolve({
          url,
          ipAddress: res.socket?.remoteAddress ?? req.socket?.remoteAddress ?? null,
          startedAt,
          requestHead: Buffer.from((req as unknown as { _header: string })._header, 'latin1'),
          responseHead: responseHead({ status: res.statusCode!, statusText: res.statusMessage ?? '', rawHeaders: res.rawHeaders, httpVersion: res.httpVersion }),
          responseBody: chunks,
          truncated: truncated ? 'length' : null,
          status: res.statusCode!,
        });
      };
      res.on('end', finish);
      res.on('error', (error) => (truncated ? undefined : reject(error)));
    });
    req.end();
  });
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

export interface ParsedRecord {
  readonly type: string;
  /** Offset and length of the record's gzip member in the file, as warcio found it. */
  readonly offset: number;
  readonly length: number;
  readonly headers: Map<string, string>;
  /** The record block as warcio read it, raw (parseHttp off: no HTTP parsing, no decoding). */
  readonly block: Buffer;
  /** For application/http blocks: the bytes after the HTTP head (the payload), as warcio's HTTP parser hands them over raw. */
  readonly payload: Buffer | null;
  /** HTTP status as warcio's HTTP parser read it, or null. */
  readonly httpStatus: number | null;
  /** warcio's record from the HTTP-parsing pass (status line, headers, contentText ...). */
  readonly record: WARCRecord;
}

/**
 * Every record of a .warc.gz, read twice by warcio: once with parseHttp off (the block, byte for byte),
 * once with it on (the HTTP status and the raw payload after the head, as warcio splits it). The two
 * passes must agree on the number of records and on where each payload starts.
 */
export async function readWarc(bytes: Uint8Array): Promise<ParsedRecord[]> {
  const raw: { offset: number; headers: Map<string, string>; block: Buffer; type: string }[] = [];
  const rawParser = new WARCParser([bytes], { keepHeadersCase: true, parseHttp: false });
  for await (const record of rawParser) {
    const offset = rawParser.offset;
    const block = Buffer.from(await record.readFully(false));
    const headers = new Map<string, string>();
    for (const [name, value] of record.warcHeaders.headers as unknown as Iterable<[string, string]>) headers.set(name, value);
    raw.push({ offset, headers, block, type: record.warcType });
  }
  const httpParser = new WARCParser([bytes], { keepHeadersCase: true });
  const records: ParsedRecord[] = [];
  let index = 0;
  for await (const record of httpParser) {
    const base = raw[index];
    if (base === undefined) throw new Error('warcio found more records with HTTP parsing than without');
    const payload = record.httpHeaders === null ? null : Buffer.from(await record.readFully(false));
    if (payload !== null) {
      const headEnd = base.block.indexOf(CRLFCRLF);
      if (headEnd < 0 || !base.block.subarray(headEnd + 4).equals(payload)) throw new Error(`warcio's HTTP payload of record ${index} is not the block after its head`);
    }
    const next = raw[index + 1]?.offset ?? bytes.length;
    records.push({ ...base, length: next - base.offset, payload, httpStatus: record.httpHeaders?.statusCode === undefined ? null : Number(record.httpHeaders.statusCode), record });
    index++;
  }
  if (index !== raw.length) throw new Error('warcio found fewer records with HTTP parsing than without');
  return records;
}

export function sha1Base32(bytes: Uint8Array): string {
  return `sha1:${base32(createHash('sha1').update(bytes).digest())}`;
}

/**
 * Reads a WARC file with warcio and recomputes every WARC-Block-Digest from the block and every
 * WARC-Payload-Digest of a response or request from its payload; an identical-payload revisit's
 * payload digest must be that of the record it refers to (found in `others` or the same file). Returns
 * the records; throws (via expect-like errors) on any mismatch.
 */
export async function checkWarcFile(bytes: Uint8Array, others: readonly ParsedRecord[] = []): Promise<ParsedRecord[]> {
  const records = await readWarc(bytes);
  const byId = new Map<string, ParsedRecord>();
  for (const record of [...others, ...records]) byId.set(record.headers.get('WARC-Record-ID')!, record);
  for (const record of records) {
    const where = `${record.type} record at ${record.offset} (${record.headers.get('WARC-Target-URI') ?? ''})`;
    const block = record.headers.get('WARC-Block-Digest');
    if (block === undefined) throw new Error(`${where} has no WARC-Block-Digest`);
    if (sha1Base32(record.block) !== block) throw new Error(`${where}: WARC-Block-Digest ${block} but the block hashes to ${sha1Base32(record.block)}`);
    if (Number(record.headers.get('Content-Length')) !== record.block.length) throw new Error(`${where}: Content-Length does not match the block`);
    const payload = record.headers.get('WARC-Payload-Digest');
    if (record.type === 'response' || record.type === 'request') {
      if (payload === undefined || record.payload === null) throw new Error(`${where} has no payload digest or no HTTP block`);
      if (sha1Base32(record.payload) !== payload) throw new Error(`${where}: WARC-Payload-Digest ${payload} but the payload hashes to ${sha1Base32(record.payload)}`);
    }
    if (record.type === 'revisit' && record.headers.get('WARC-Profile')?.endsWith('/identical-payload-digest')) {
      const original = byId.get(record.headers.get('WARC-Refers-To') ?? '');
      if (original === undefined) throw new Error(`${where} refers to a record that is not there`);
      if (original.headers.get('WARC-Payload-Digest') !== payload || sha1Base32(original.payload!) !== payload) throw new Error(`${where}: its payload digest is not its original's`);
    }
  }
  return records;
}

/** Reads and checks a WARC file on disk (see checkWarcFile). */
export async function checkWarcPath(path: string, others: readonly ParsedRecord[] = []): Promise<ParsedRecord[]> {
  return checkWarcFile(readFileSync(path), others);
}

/** An exchange with chosen bytes, for tests of storage where HTTP is not the point. */
export function exchangeOf(options: { url: string; status?: number; body?: string | Buffer; startedAt: number; headers?: Record<string, string> }): Exchange {
  const status = options.status ?? 200;
  const body = typeof options.body === 'string' ? Buffer.from(options.body) : (options.body ?? Buffer.alloc(0));
  const target = new URL(options.url);
  const fields = Object.entries({ 'Content-Type': 'text/html', 'Content-Length': String(body.length), ...options.headers });
  return {
    url: options.url,
    ipAddress: '127.0.0.1',
    startedAt: options.startedAt,
    requestHead: Buffer.from(`GET ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\nuser-agent: Petrel-test/1\r\n\r\n`, 'latin1'),
    responseHead: responseHead({ status, statusText: status === 304 ? 'Not Modified' : 'OK', rawHeaders: fields.flat() }),
    responseBody: body.length === 0 ? [] : [body],
    truncated: null,
  };
}
