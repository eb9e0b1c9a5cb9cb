/**
 * The queue server's web archive: takes the captures fetchers post with their results, decides which
 * record each becomes (revisit.ts), appends them (warc-writer.ts) and remembers first payloads
 * (digest-index.ts). What it returns for a capture is the location the crawl database record keeps.
 *
 * Wiring (queue-server/crawl/): the result applier calls `store(capture, record.warc, now)` for a
 * result that carries a capture and sets the record's `warc` to the returned `location`; the group
 * commit calls `commit()` first, before the cache and crawl database trees (crawl.ts `commit`), so a
 * location in a committed crawl database record always names records on disk.
 */
import { join } from 'node:path';
import { WarcError } from '../../shared/warc/errors.js';
import { buildRevisitRecord, type Capture, type WarcinfoContent } from '../../shared/warc/exchange.js';
import { memberLength } from '../../shared/warc/gzip-member.js';
import { isRecordId } from '../../shared/warc/record.js';
import { DigestIndex } from './digest-index.js';
import type { CaptureLocation, RecordLocation } from './location.js';
import { decideRecord, locationAfter, type RecordDecision } from './revisit.js';
import { WarcWriter, type WarcWriterStats } from './warc-writer.js';
import type { FileOps } from '../storage/file-ops.js';
import { readCachedCopy, type CachedCopy } from './cached-copy.js';

export const WARC_DIR = 'warc';
/**
 * The digest index is committed with every this many commits of the WARC files (and at close), not
 * with each: its random SHA-1 keys dirty a 16 KiB page per entry, and its fsync beside the WARC
 * files' doubled the time the queue server's group commit holds its thread (a crawl of the test web,
 * 10,000 pages: fsync was a third of the queue server's time). Staged entries are found as committed
 * ones; a kill loses at most this many commits' worth of entries, so a later duplicate of one of
 * those payloads is stored in full (digest-index.ts says the same of a kill between the two).
 */
export const DIGEST_COMMIT_EVERY = 20;
export const WARC_DIGESTS_FILE = 'warc-digests.btree';

export interface WarcArchiveOptions {
  readonly dataDir: string;
  readonly maxFileBytes: number;
  readonly warcinfo: WarcinfoContent;
  /** The file operations of the WARC files and the digest index (node:fs by default). */
  readonly io?: FileOps;
}

export interface StoredCapture {
  readonly decision: RecordDecision;
  /** Where this capture's request and response (or revisit) records are. */
  readonly written: CaptureLocation;
  /** The URL's location for the crawl database: `written`, or the previous one after a server-not-modified revisit. */
  readonly location: CaptureLocation;
}

export class WarcArchive {
  readonly #writer: WarcWriter;
  readonly #digests: DigestIndex;
  #warcinfo: WarcinfoContent;
  /** WARC commits since the digest index was last committed. */
  #sinceDigestCommit = 0;

  private constructor(writer: WarcWriter, digests: DigestIndex, warcinfo: WarcinfoContent) {
    this.#writer = writer;
    this.#digests = digests;
    this.#warcinfo = warcinfo;
  }

  static open(options: WarcArchiveOptions): WarcArchive {
    const writer = WarcWriter.open({ dir: join(options.dataDir, WARC_DIR), maxFileBytes: options.maxFileBytes, warcinfo: options.warcinfo, io: options.io });
    try {
      return new WarcArchive(writer, DigestIndex.open(join(options.dataDir, WARC_DIGESTS_FILE), { io: options.io }), options.warcinfo);
    } catch (error) {
      writer.close();
      throw error;
    }
  }

  /**
   * Stages a capture. `previous` is the URL's location from its crawl database record (null: none);
   * `now` (ms since epoch) names a new file if one is begun. Throws WARC_CAPTURE_INVALID, changing
   * nothing, for a capture whose records are not what it says.
   */
  store(capture: Capture, previous: CaptureLocation | null, now: number): StoredCapture {
    checkCapture(capture);
    const sameDigest = this.#digests.find(capture.payloadDigest);
    const decision = decideRecord(capture, { previous, sameDigest });
    const second = decision.kind === 'response' ? capture.responseRecord : buildRevisitRecord(capture, decision.target);
    const [request, response] = this.#writer.append([capture.requestRecord, second], now) as [RecordLocation, RecordLocation];
    const written: CaptureLocation = {
      file: request.file,
      offset: request.offset,
      length: request.length + response.length,
      requestLength: request.length,
      kind: decision.kind,
      date: capture.date,
      recordId: capture.responseId,
    };
    if (decision.kind === 'response' && decision.indexDigest) this.#digests.remember({ digest: capture.payloadDigest, url: capture.url, location: written });
    return { decision, written, location: locationAfter(decision, written, previous) };
  }

  /**
   * The WARC files' part of the next commit, with their fsync off the event loop (warc-writer.ts
   * `commitAsync`); `commit` then finds them durable. Same failure as `commit`.
   */
  syncRecords(): Promise<void> {
    return this.#writer.commitAsync();
  }

  /** WARC files first (WARC_WRITE_FAILED on failure, retryable), then, every DIGEST_COMMIT_EVERY commits, the digest index. */
  commit(): void {
    this.#writer.commit();
    if (++this.#sinceDigestCommit < DIGEST_COMMIT_EVERY) return;
    this.#digests.commit();
    this.#sinceDigestCommit = 0;
  }

  /** New crawl settings: the next capture begins a new file, whose warcinfo says them. */
  setSettings(settings: Readonly<Record<string, unknown>>): void {
    this.#warcinfo = { ...this.#warcinfo, settings };
    this.#writer.setWarcinfo(this.#warcinfo);
  }

  /** The cached copy of the capture at `location` (cached-copy.ts); WarcError when its records are not (yet) on disk. */
  cachedCopy(location: CaptureLocation): CachedCopy {
    return readCachedCopy(this.#writer.dir, location, (digest) => this.#digests.find(digest));
  }

  stats(): WarcWriterStats {
    return this.#writer.stats();
  }

  close(): void {
    try {
      this.#writer.close();
    } finally {
      this.#digests.close();
    }
  }
}

function checkCapture(capture: Capture): void {
  const bad = (message: string): never => {
    throw new WarcError('WARC_CAPTURE_INVALID', `capture of ${JSON.stringify(capture.url.slice(0, 200))}: ${message}`);
  };
  for (const [name, bytes] of [
    ['request record', capture.requestRecord],
    ['response record', capture.responseRecord],
  ] as const) {
    if (memberLength(bytes) !== bytes.length) bad(`the ${name} is not one Petrel gzip member of its ${bytes.length} bytes`);
  }
  if (!isRecordId(capture.requestId) || !isRecordId(capture.responseId) || capture.requestId === capture.responseId) bad('record ids are not two distinct <urn:uuid:...>');
  if (!/^https?:\/\/[\x21-\x7e]+$/i.test(capture.url)) bad('the URL is not a printable absolute http(s) URL');
  if (!Number.isFinite(capture.date)) bad('the date is not a time');
}
