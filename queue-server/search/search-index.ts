/**
 * SearchIndex: Petrel's on-disk inverted index (LAYOUT.md has the bytes and the crash model).
 *
 *   const index = SearchIndex.open(join(dataDir, 'index'));
 *   index.stage({ kind: 'page', url, fetchedAt, data });    // from a result's index data
 *   index.stage({ kind: 'remove', url });                    // a gone page
 *   index.commit();                                          // durable and searchable from here on
 *   index.search('crawler "politeness delay" -robots site:example.org', { limit: 10, authorityOf });
 *
 * Writes are staged in memory (segment-builder.ts) and become durable and visible together at
 * `commit`, which the queue server calls from its group commit, so a results post acknowledged after
 * the commit is searchable after any crash. A commit appends the staged entries to the commit log as
 * one segment image and a COMMIT record, and fdatasyncs it once (commit-log.ts); the segment is
 * searched where it lies in the log. Past `logBytes` a checkpoint merges the log's segments into a
 * segment file in the worker thread and a manifest moves on to the next log; merges of segment files
 * run there too and are installed with a manifest of their own. Searches see the last commit.
 *
 * Memory (resident, whatever the staging bound): per segment, in a file or in the log, its columns
 * and groups (~15 bytes per page doc and per entry, ~10 per anchor doc), per URL met about 55 bytes
 * (url-groups.ts), the query scratch arrays (28 bytes per URL), plus the staging buffer up to
 * `bufferBytes` (32 MiB by default; past it the buffer is appended to the log as a segment that
 * becomes part of the next commit). The log itself is on disk, bounded by `logBytes` (64 MiB).
 *
 * Single-threaded: one writer per directory (the queue server's data directory lock), any number of
 * read-only handles (the CLI) that see the manifest and the log's commits of the moment they open.
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AnchorTerms, IndexData } from '../../shared/index-data.js';
import { stemmerFor } from '../../shared/tokenize.js';
import { urlHash64 } from '../../shared/url-hash.js';
import { hashHalves, hashHex } from './bytes.js';
import { CommitLog, logFileName, logNumberOf, scanLog, type LogSegment } from './commit-log.js';
import { IndexError } from './errors.js';
import { evaluate, Scratch, type IndexStats, type IndexView, type Match } from './evaluate.js';
import { LiveSegment } from './live-segment.js';
import {
  deletionFileName,
  emptyManifest,
  encodeDeletions,
  fsyncDirectory,
  indexFiles,
  readManifest,
  segmentFileName,
  writeFileDurable,
  writeManifest,
  type Manifest,
  type ManifestSegment,
} from './manifest.js';
import { mergeSegments, type MergeJob, type MergeResult } from './merge.js';
import { planMerge } from './merge-policy.js';
import { inlineRunner, workerAvailable, workerRunner, type MergeMode, type MergeRunner } from './merge-runner.js';
import { pageMetaTerms } from './meta-terms.js';
import { parseQuery, type ParsedQuery } from './query-parser.js';
import { PROXIMITY_WINDOW, tieKey } from './ranking.js';
import { proximityScores, type ProximityWord } from './proximity.js';
import { PostingPool } from './posting-pool.js';
import { SegmentBuilder, type StagedAnchor } from './segment-builder.js';
import { buildSnippet } from './snippet.js';
import { UrlGroups } from './url-groups.js';

/** What the crawl tells the index about one URL. Each replaces whatever the URL contributed before. */
export type IndexChange =
  /** A fetched, indexable page (2xx, not noindex): searchable, its outlinks' anchor text counts. */
  | { readonly kind: 'page'; readonly url: string; readonly fetchedAt: number; readonly data: IndexData }
  /** A page that asked not to be indexed: not a result, but its outlinks' anchor text counts. */
  | { readonly kind: 'noindex'; readonly url: string; readonly anchors: readonly AnchorTerms[] }
  /** A duplicate: not a result; anchor text pointing at it counts for its original; its own outlinks count. */
  | { readonly kind: 'duplicate'; readonly url: string; readonly originalUrl: string; readonly anchors: readonly AnchorTerms[] }
  /** Gone (404, 410), or otherwise out of the index: neither it nor its outlinks count any more. */
  | { readonly kind: 'remove'; readonly url: string };

export interface SearchIndexOptions {
  /** Open without writing: no staging, commits, merges or clean-up (the CLI). Default false. */
  readonly readOnly?: boolean;
  /** Staging buffer bound, bytes (default 32 MiB). */
  readonly bufferBytes?: number;
  /** Commit log bound, bytes (default 64 MiB): past it the log's segments are merged into a segment file and the log starts anew. */
  readonly logBytes?: number;
  /** Where merges run: `worker` (default when the compiled worker exists), `inline`, or `off`. */
  readonly merges?: MergeMode;
}

export interface SearchOptions {
  /** Results per page, 1 to 100 (default 10). */
  readonly limit?: number;
  /** Results skipped, 0 to 10,000 (default 0). */
  readonly offset?: number;
  /** The URL's link authority (OPIC cash), given its 16-hex URL hash, read only for results whose scores tie; default: none. */
  readonly authorityOf?: (urlHashHex: string) => number;
  /** Build snippets (default true); the benchmark ranks without them. */
  readonly snippets?: boolean;
}

export interface SearchResult {
  readonly url: string;
  /** Plain text: escape it where it is displayed. Empty when the page had none. */
  readonly title: string;
  /** HTML: the stored text around the query words, escaped, the words in <mark>. */
  readonly snippet: string;
  readonly score: number;
  /** ms since epoch. */
  readonly fetchedAt: number;
  readonly language: string | null;
  readonly urlHash: string;
}

export interface SearchResults {
  /** Matching pages (all of them, not only this page of results). */
  readonly total: number;
  readonly results: SearchResult[];
}

export interface IndexStatsReport {
  readonly segments: number;
  readonly livePages: number;
  readonly entries: number;
  readonly deletedEntries: number;
  readonly anchorDocs: number;
  readonly bytesOnDisk: number;
  readonly urls: number;
  readonly stagedEntries: number;
  readonly bufferBytes: number;
  readonly generation: number;
  readonly commits: number;
  readonly merging: boolean;
  readonly mergesDone: number;
  readonly lastMergeError: string | null;
  /** Bytes of the current commit log and segments held in logs (not yet flushed into segment files). */
  readonly logBytes: number;
  readonly logSegments: number;
  readonly checkpoints: number;
}

export const SEARCH_LIMITS = { limit: 100, offset: 10_000 } as const;
const DEFAULT_BUFFER_BYTES = 32 * 1024 * 1024;
const DEFAULT_LOG_BYTES = 64 * 1024 * 1024;
/**
 * Segments in a commit log get ids from here up, in memory only (the segment files' ids stay dense:
 * the manifest's nextSegmentId). They must fit the Int32Array of url-groups.ts; a process would need 2^30 commits to run out.
 */
const LOG_SEGMENT_IDS = 2 ** 30;

export class SearchIndex {
  readonly dir: string;
  readonly #readOnly: boolean;
  readonly #bufferBytes: number;
  readonly #logBound: number;
  /** Built while the segments are opened (open), then owned here. */
  #groups: UrlGroups;
  readonly #scratch = new Scratch();
  #segments: LiveSegment[] = [];
  #manifest: Manifest;
  readonly #stats: IndexStats = { livePages: 0, titleTokens: 0, headingTokens: 0, bodyTokens: 0, anchorTokens: 0 };

  /** Posting blocks reused by each staging buffer in turn (posting-pool.ts). */
  readonly #pool = new PostingPool();
  #builder = new SegmentBuilder(this.#pool);
  /** Segments of the commit in flight already in the log (the buffer outgrew its bound), not yet committed. */
  #pending: LogSegment[] = [];
  /** Groups staged since the last commit: true when the last change was a removal (no entry). */
  readonly #staged = new Map<number, boolean>();
  #nextSegmentId: number;
  #nextLogSegmentId = LOG_SEGMENT_IDS;

  /** The writer's current commit log (null: read-only). */
  #log: CommitLog | null = null;
  /** The first log a reopen replays (the manifest's `log`; moved on when a checkpoint is installed). */
  #logFrom: number;
  /** Commits acknowledged: the manifest's count plus the logs'. */
  #commits: number;
  #checkpoints = 0;

  readonly #runner: MergeRunner | null;
  #merging: Promise<void> | null = null;
  #mergesDone = 0;
  #lastMergeError: string | null = null;
  #closed = false;
  #broken: Error | null = null;

  private constructor(dir: string, manifest: Manifest, segments: LiveSegment[], groups: UrlGroups, options: SearchIndexOptions) {
    this.dir = dir;
    this.#groups = groups;
    this.#readOnly = options.readOnly ?? false;
    this.#bufferBytes = options.bufferBytes ?? DEFAULT_BUFFER_BYTES;
    this.#logBound = options.logBytes ?? DEFAULT_LOG_BYTES;
    this.#manifest = manifest;
    this.#logFrom = manifest.log ?? 1;
    this.#commits = manifest.commits;
    this.#segments = segments;
    this.#nextSegmentId = manifest.nextSegmentId;
    const mode = options.merges ?? (workerAvailable() ? 'worker' : 'inline');
    this.#runner = this.#readOnly || mode === 'off' ? null : mode === 'worker' ? workerRunner() : inlineRunner();
  }

  static open(dir: string, options: SearchIndexOptions = {}): SearchIndex {
    const readOnly = options.readOnly ?? false;
    if (!readOnly) mkdirSync(dir, { recursive: true, mode: 0o700 });
    // A read-only handle may race a writer that removes merged segments: read the manifest again.
    for (let attempt = 0; ; attempt++) {
      const manifest = readManifest(dir) ?? emptyManifest();
      const groups = new UrlGroups();
      const segments: LiveSegment[] = [];
      try {
        for (const segment of manifest.segments) segments.push(LiveSegment.open(dir, segment, groups));
      } catch (error) {
        for (const s of segments) s.close();
        if (readOnly && (error as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 5) continue;
        throw error;
      }
      const index = new SearchIndex(dir, manifest, segments, groups, options);
      for (const segment of segments) {
        for (let e = 0; e < segment.entries; e++) if (segment.entryDeleted[e] === 0) index.#install(segment, e);
      }
      try {
        index.#replayLogs();
      } catch (error) {
        for (const s of index.#segments) s.close();
        if (readOnly && (error as NodeJS.ErrnoException).code === 'ENOENT' && attempt < 5) continue;
        throw error;
      }
      if (!readOnly) index.#removeUnreferenced();
      index.#maybeMerge();
      return index;
    }
  }

  /**
   * Replays the commit logs over the manifest's segments: every committed group in order, as its commit
   * applied it (#applyGroup). The last group's segments are verified whole first (all checksums): a
   * power loss during its fdatasync can leave its COMMIT record on disk without all of its pages, and such
   * a commit was never acknowledged, so it is dropped. A writer then cuts the log after the last group
   * it kept and appends there.
   */
  #replayLogs(): void {
    let last = this.#logFrom;
    let validEnd = 0;
    for (let n = this.#logFrom; existsSync(join(this.dir, logFileName(n))); n++) {
      const file = logFileName(n);
      const scan = scanLog(join(this.dir, file));
      if (scan.damage !== null) throw new IndexError('INDEX_CORRUPT', scan.damage);
      last = n;
      validEnd = scan.validEnd;
      const isLastLog = !existsSync(join(this.dir, logFileName(n + 1)));
      for (let g = 0; g < scan.groups.length; g++) {
        const group = scan.groups[g]!;
        const lastGroup = isLastLog && g === scan.groups.length - 1;
        const segments: LiveSegment[] = [];
        let whole = true;
        try {
          for (const record of group.segments) segments.push(LiveSegment.inLogFile(this.dir, this.#nextLogSegmentId++, file, record, this.#groups));
          if (lastGroup) whole = segments.every(wholeSegment);
        } catch (error) {
          if (!lastGroup || (error as IndexError).code !== 'INDEX_CORRUPT') throw error;
          whole = false;
        }
        if (!whole) {
          for (const s of segments) s.close();
          validEnd = group.start;
          break;
        }
        this.#applyGroup(segments, group.removed);
        this.#commits = Math.max(this.#commits, group.commits);
      }
    }
    if (!this.#readOnly) {
      this.#log = CommitLog.openForAppend(join(this.dir, logFileName(last)), last, validEnd);
      if (validEnd === 0) fsyncDirectory(this.dir);
    }
  }

  /**
   * A committed group of log segments becomes live: each entry, in order, supersedes its URL's live
   * entry (wherever that is: a segment file, an earlier log segment, earlier in this one), then the
   * URLs the commit removed lose theirs. The same code applies a commit as it happens and replays it
   * after a restart, so both end in the same state.
   */
  #applyGroup(segments: readonly LiveSegment[], removed: ArrayLike<number>): void {
    const byId = new Map(this.#segmentsById());
    const groups = this.#groups;
    const drop = (group: number): void => {
      const id = groups.entrySegment[group]!;
      if (id < 0) return;
      const holder = byId.get(id)!;
      const entry = groups.entryIndex[group]!;
      this.#uninstall(holder, entry);
      holder.delete(entry);
    };
    const all = [...this.#segments];
    for (const segment of segments) {
      all.push(segment);
      byId.set(segment.id, segment);
      for (let e = 0; e < segment.entries; e++) {
        drop(segment.entryGroup[e]!);
        this.#install(segment, e);
      }
    }
    for (let i = 0; i < removed.length; i += 2) {
      const group = groups.find(removed[i]!, removed[i + 1]!);
      if (group >= 0) drop(group);
    }
    this.#segments = all;
  }

  // ---- staging ----------------------------------------------------------------------------

  /** Stages one change; durable and visible at the next `commit`. Throws INDEX_BAD_DATA (nothing staged) on data the schema let through but the index cannot take. */
  stage(change: IndexChange): void {
    this.#writable();
    const [hi, lo] = hashHalves(urlHash64(change.url));
    if (change.kind === 'remove') {
      // A URL the index has never met (no group: no entry in any segment or in this buffer) has nothing
      // to remove. A crawl removes every fetched URL without index data (images, PDFs, a queue server
      // fed by fetchers that do not index) and every 404 and redirect: each used to get a group, about
      // 55 bytes of memory for as long as the index is open, and 8 bytes in the commit log.
      const group = this.#groups.find(hi, lo);
      if (group >= 0) this.#staged.set(group, true);
      return;
    }
    const group = this.#groups.ensure(hi, lo);
    const anchors = this.#anchors(change.url, change.kind === 'page' ? change.data.anchors : change.anchors);
    const alias = change.kind === 'duplicate' ? hashHalves(urlHash64(change.originalUrl)) : null;
    const page = change.kind === 'page' ? { url: change.url, fetchedAt: change.fetchedAt, data: change.data, metaTerms: pageMetaTerms(change.url, change.data.language) } : null;
    // An earlier entry of the URL in this buffer is superseded when the commit applies it (#applyGroup).
    this.#builder.addEntry(hi, lo, page, anchors, alias);
    this.#staged.set(group, false);
    if (this.#builder.bytes >= this.#bufferBytes) this.#flushBuffer();
  }

  #anchors(sourceUrl: string, anchors: readonly AnchorTerms[]): StagedAnchor[] {
    const out: StagedAnchor[] = [];
    const seen = new Set<string>();
    for (const anchor of anchors) {
      if (anchor.url === sourceUrl || seen.has(anchor.url) || anchor.terms.length === 0) continue;
      seen.add(anchor.url);
      const [targetHi, targetLo] = hashHalves(urlHash64(anchor.url));
      out.push({ targetHi, targetLo, terms: anchor.terms });
    }
    return out;
  }

  /** Appends the staging buffer to the commit log as a segment record (not synced) that the next COMMIT record makes part of the index. */
  #flushBuffer(): void {
    const builder = this.#builder;
    if (builder.entries === 0) return;
    const id = this.#nextLogSegmentId++;
    this.#pending.push(this.#io(() => this.#log!.appendSegment(id, builder.content())));
    this.#builder = new SegmentBuilder(this.#pool);
  }

  /**
   * Makes everything staged durable and searchable. The steps, in order (a kill between any two
   * leaves the previous commit, LAYOUT.md "Crash model"):
   *  1. append the staging buffer to the commit log as a segment record (earlier overflows of the
   *     buffer are in the log already);
   *  2. append the COMMIT record (the URLs removed) and fdatasync the log. This is the commit point:
   *     one sequential append and one sync, no new file, no manifest;
   *  3. open the new segments where they are in the log and apply them (#applyGroup): each entry
   *     supersedes its URL's earlier live entry, deleted in memory only (the log replays it);
   *  4. install a merge the worker finished meanwhile, then, when the log has passed its bound, start
   *     a checkpoint (its segments merged into a segment file in the worker, #maybeCheckpoint), else a
   *     merge if one is due.
   */
  commit(): { generation: number; commits: number } {
    this.#writable();
    if (this.#staged.size === 0 && this.#pending.length === 0) return { generation: this.#manifest.generation, commits: this.#commits };
    try {
      // 1.
      this.#flushBuffer();
      // 2.
      const removed: Array<[number, number]> = [];
      for (const [group, isRemoval] of this.#staged) if (isRemoval) removed.push([this.#groups.hashHi[group]!, this.#groups.hashLo[group]!]);
      this.#log!.commit(this.#commits + 1, removed);
      this.#commits++;
      // 3.
      const file = logFileName(this.#log!.number);
      const added = this.#pending.map((record) => LiveSegment.inLogFile(this.dir, record.id, file, record, this.#groups));
      this.#applyGroup(added, removed.flat());
      this.#pending = [];
      this.#staged.clear();
    } catch (error) {
      this.#broken = error instanceof Error ? error : new Error(String(error));
      throw error instanceof IndexError ? error : new IndexError('INDEX_IO', `index commit failed: ${this.#broken.message}; reopen the index`, { cause: error });
    }
    // 4. (a merge the worker finished since the last commit is installed first, even when the event
    // loop has not turned in between: merge-runner.ts)
    this.#runner?.poll();
    this.#maybeMerge();
    return { generation: this.#manifest.generation, commits: this.#commits };
  }

  /** Writes the changed deletion files (fsynced); returns the ones they replace (removed after the manifest). */
  #writeDeletions(segments: readonly LiveSegment[]): string[] {
    const obsolete: string[] = [];
    const generation = this.#manifest.generation + 1;
    for (const segment of segments) {
      if (!segment.dirty) continue;
      const file = segment.deletedCount === 0 ? null : deletionFileName(segment.id, generation);
      if (file !== null) writeFileDurable(join(this.dir, file), encodeDeletions(segment.id, segment.entries, segment.deletedEntries()), 'wx');
      if (segment.deletionsFile !== null) obsolete.push(segment.deletionsFile);
      segment.deletionsFile = file;
      segment.deletedInFile = segment.deletedCount;
      segment.dirty = false;
    }
    return obsolete;
  }

  /** Writes the manifest of the segment files among `segments` (log segments are the log's), replaying from log `logFrom`. */
  #writeManifest(segments: readonly LiveSegment[], commits: number, logFrom = this.#logFrom): void {
    const list: ManifestSegment[] = segments.filter((s) => s.inLog === null).map((s) => ({
      id: s.id,
      file: s.file,
      entries: s.entries,
      pages: s.pages,
      anchors: s.anchors,
      bytes: s.fileBytes,
      deletions: s.deletionsFile,
      deleted: s.deletedInFile,
    }));
    const manifest: Manifest = { ...this.#manifest, generation: this.#manifest.generation + 1, commits, nextSegmentId: this.#nextSegmentId, segments: list, log: logFrom };
    writeManifest(this.dir, manifest);
    this.#manifest = manifest;
  }

  /** Entry e of a segment becomes its URL's live entry. */
  #install(segment: LiveSegment, e: number): void {
    const groups = this.#groups;
    const group = segment.entryGroup[e]!;
    groups.entrySegment[group] = segment.id;
    groups.entryIndex[group] = e;
    const alias = segment.entryAlias[e]!;
    if (alias >= 0) groups.setAlias(group, alias);
    this.#countEntry(segment, e, 1);
  }

  /** The live entry e of a segment stops counting (it is about to be deleted). */
  #uninstall(segment: LiveSegment, e: number): void {
    const groups = this.#groups;
    const group = segment.entryGroup[e]!;
    this.#countEntry(segment, e, -1);
    if (segment.entryAlias[e]! >= 0) groups.setAlias(group, group);
    groups.entrySegment[group] = -1;
    groups.entryIndex[group] = -1;
  }

  #countEntry(segment: LiveSegment, e: number, sign: 1 | -1): void {
    const c = segment.reader.columns;
    const page = segment.pageOf(e);
    if (page >= 0) {
      this.#stats.livePages += sign;
      this.#stats.titleTokens += sign * c.pageTitleLength[page]!;
      this.#stats.headingTokens += sign * c.pageHeadingLength[page]!;
      this.#stats.bodyTokens += sign * c.pageBodyLength[page]!;
    }
    const first = c.entryAnchorFirst[e]!;
    const end = first + c.entryAnchorCount[e]!;
    for (let a = first; a < end; a++) {
      const length = c.anchorLength[a]!;
      this.#stats.anchorTokens += sign * length;
      this.#groups.addAnchorLength(segment.anchorTarget[a]!, sign * length);
    }
  }

  // ---- merging ----------------------------------------------------------------------------

  /**
   * Starts a checkpoint when the log has passed its bound, else a merge of segment files when the policy
   * says one is due (one at a time, in the worker). Right after a checkpoint a due merge goes first
   * (`preferMerge`), so that neither starves the other when every commit passes the bound: the log then
   * grows past its bound by what commits add while one merge runs.
   */
  #maybeMerge(preferMerge = false): void {
    if (this.#merging !== null || this.#closed || this.#broken !== null || this.#readOnly) return;
    const files = this.#segments.filter((s) => s.inLog === null);
    const plan = this.#runner === null ? null : planMerge(files.map((s) => ({ id: s.id, entries: s.entries, deleted: s.deletedCount })));
    // Not while the commit in flight has segment records in the current log (the buffer overflowed):
    // they must stay in the log its COMMIT record goes to. The commit itself checks again.
    if (!(preferMerge && plan !== null) && this.#pending.length === 0 && this.#log !== null && this.#log.bytes >= this.#logBound) {
      if (this.#runner === null) this.#io(() => this.#checkpointNow());
      else this.#startCheckpoint();
      return;
    }
    if (plan === null) return;
    this.#runMerge(plan.map((id) => files.find((s) => s.id === id)!), null);
  }

  /**
   * A checkpoint: the segments of the logs so far are merged (in the worker) into one segment file, and
   * the log starts anew, so the log stays bounded and a restart replays at most about `logBytes`. The
   * commits from here on go to the next log file (created now, its directory entry synced before any
   * commit relies on it); the old one is removed only once a manifest naming the merged segment and the
   * next log is durable (#installMerge).
   */
  #startCheckpoint(): void {
    const inputs = this.#segments.filter((s) => s.inLog !== null);
    const old = this.#log!;
    const next = this.#io(() => {
      const log = CommitLog.openForAppend(join(this.dir, logFileName(old.number + 1)), old.number + 1, 0);
      fsyncDirectory(this.dir);
      return log;
    });
    this.#log = next;
    old.close();
    this.#runMerge(inputs, { logFrom: next.number, commits: this.#commits, oldLog: old.number });
  }

  /** A checkpoint in flight: the log its segments come from and the manifest it will write. */
  #runMerge(inputs: readonly LiveSegment[], checkpoint: Checkpoint | null): void {
    const snapshot = inputs.map((s) => s.deletedEntries());
    if (inputs.length === 0) {
      // Only removals were logged since the last checkpoint: no segment to write, the manifest alone moves on.
      this.#io(() => this.#installMerge(inputs, snapshot, null, checkpoint));
      return;
    }
    const outputId = this.#nextSegmentId++;
    const job: MergeJob = {
      dir: this.dir,
      inputs: inputs.map((s, i) => ({ id: s.id, file: s.file, ...(s.inLog === null ? {} : { range: { offset: s.inLog.offset, length: s.inLog.length } }), deleted: Uint32Array.from(snapshot[i]!) })),
      outputId,
      outputFile: segmentFileName(outputId),
    };
    let settled!: () => void;
    this.#merging = new Promise<void>((resolve) => {
      settled = resolve;
    });
    this.#runner!.start(job, (outcome) => {
      try {
        if (!outcome.ok) throw outcome.error;
        this.#installMerge(inputs, snapshot, outcome.result, checkpoint);
      } catch (error) {
        this.#lastMergeError = error instanceof Error ? `${(error as IndexError).code ?? 'error'}: ${error.message}` : String(error);
        if (!this.#closed) rmSync(join(this.dir, job.outputFile), { force: true });
      } finally {
        this.#merging = null;
        settled();
        if (this.#lastMergeError === null) this.#maybeMerge(checkpoint !== null);
      }
    });
  }

  /**
   * Installs a finished merge: the output replaces its inputs. Entries deleted in the inputs while
   * the merge ran are deleted in the output too (found by the same remapping the merge used), then
   * one manifest switches over; the inputs' files are removed only after it is durable.
   *
   * For a checkpoint the manifest also writes the deletions that commits logged since the last one made
   * in segment files (their deletion files, fsynced), and names the next log as the first to replay;
   * then the old log is removed. A kill before the manifest's rename replays both logs over the old
   * manifest; after it, the next log only, over the merged segment.
   */
  #installMerge(inputs: readonly LiveSegment[], snapshot: readonly number[][], result: MergeResult | null, checkpoint: Checkpoint | null): void {
    if (this.#closed || this.#broken !== null) {
      if (result !== null) rmSync(join(this.dir, result.outputFile), { force: true });
      return;
    }
    const output = result === null ? null : LiveSegment.fromFile(this.dir, result.outputId, result.outputFile, this.#groups);
    try {
      let e2 = 0;
      const moved: Array<[number, number]> = [];
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i]!;
        const before = new Set(snapshot[i]!);
        for (let e = 0; e < input.entries; e++) {
          if (before.has(e)) continue;
          if (input.entryDeleted[e] === 1) output!.delete(e2);
          else moved.push([input.entryGroup[e]!, e2]);
          e2++;
        }
      }
      if (output !== null && e2 !== output.entries) throw new IndexError('INDEX_CORRUPT', `merged segment ${result!.outputFile} has ${output.entries} entries, expected ${e2}`);
      let segments = this.#segments.filter((s) => !inputs.includes(s));
      if (output !== null) {
        const at = this.#segments.indexOf(inputs[0]!);
        segments.splice(at, 0, output);
      }
      const obsolete = this.#writeDeletions(checkpoint === null ? [output!] : segments.filter((s) => s.inLog === null));
      this.#writeManifest(segments, checkpoint?.commits ?? this.#manifest.commits, checkpoint?.logFrom ?? this.#logFrom);
      this.#segments = segments;
      for (const [group, e] of moved) {
        this.#groups.entrySegment[group] = output!.id;
        this.#groups.entryIndex[group] = e;
      }
      for (const input of inputs) {
        input.close();
        if (input.inLog === null) rmSync(join(this.dir, input.file), { force: true });
        if (input.deletionsFile !== null) obsolete.push(input.deletionsFile);
      }
      if (checkpoint !== null) {
        // Every log before the next: after a restart the checkpoint's segments can come from two.
        for (let n = this.#logFrom; n < checkpoint.logFrom; n++) rmSync(join(this.dir, logFileName(n)), { force: true });
        this.#logFrom = checkpoint.logFrom;
        this.#checkpoints++;
      } else {
        this.#mergesDone++;
      }
      for (const file of obsolete) rmSync(join(this.dir, file), { force: true });
    } catch (error) {
      output?.close();
      this.#broken = error instanceof Error ? error : new Error(String(error));
      throw error;
    }
  }

  /** Resolves when no merge runs and none is due (tests, the benchmark, shutdown). */
  async idle(): Promise<void> {
    while (this.#merging !== null) {
      await this.#merging;
      this.#maybeMerge();
    }
  }

  // ---- searching --------------------------------------------------------------------------

  /** What queries see; rebuilt only when the list of segments changes. */
  #viewCache: { segments: readonly LiveSegment[]; view: IndexView; byId: Map<number, LiveSegment> } | null = null;

  #view(): IndexView {
    if (this.#viewCache?.segments !== this.#segments) {
      const stemmers = new Set<string>();
      for (const s of this.#segments) for (const st of s.reader.meta.stemmers) stemmers.add(st);
      const view = { segments: this.#segments, groups: this.#groups, stats: this.#stats, stemmers: [...stemmers].sort(), scratch: this.#scratch };
      this.#viewCache = { segments: this.#segments, view, byId: new Map(this.#segments.map((s) => [s.id, s])) };
    }
    return this.#viewCache.view;
  }

  #segmentsById(): Map<number, LiveSegment> {
    this.#view();
    return this.#viewCache!.byId;
  }

  /**
   * The matching groups and their BM25F scores, unordered (search without ranking: the model tests);
   * `words`, when given, receives what proximity reads of each word (the proximity test).
   */
  matches(query: string | ParsedQuery, words?: ProximityWord[]): Match[] {
    this.#open();
    return evaluate(this.#view(), typeof query === 'string' ? parseQuery(query) : query, words);
  }

  /** Searches the last commit. Throws QUERY_INVALID on a query or limits it refuses. */
  search(query: string | ParsedQuery, options: SearchOptions = {}): SearchResults {
    this.#open();
    const limit = options.limit ?? 10;
    const offset = options.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_LIMITS.limit) throw new IndexError('QUERY_INVALID', `limit must be a whole number from 1 to ${SEARCH_LIMITS.limit}, got ${limit}`);
    if (!Number.isInteger(offset) || offset < 0 || offset > SEARCH_LIMITS.offset) throw new IndexError('QUERY_INVALID', `offset must be a whole number from 0 to ${SEARCH_LIMITS.offset}, got ${offset}`);
    const parsed = typeof query === 'string' ? parseQuery(query) : query;
    const view = this.#view();
    const words: ProximityWord[] = [];
    const matches = evaluate(view, parsed, words);
    const groups = this.#groups;
    // Ties are broken by URL hash here as in the order below, so that pages of results neither repeat nor skip a tied match.
    const byHash = (a: Match, b: Match): number => groups.hashHi[a.group]! - groups.hashHi[b.group]! || groups.hashLo[a.group]! - groups.hashLo[b.group]!;
    const before = (a: Match, b: Match): boolean => a.bm25f > b.bm25f || (a.bm25f === b.bm25f && byHash(a, b) < 0);
    const k = offset + limit;
    // The best PROXIMITY_WINDOW by BM25F get their proximity score added; the rest keep BM25F, which
    // is no more than any of theirs, so the first k by BM25F hold the first k by final score.
    const proximity = words.length >= 2;
    const ranked: Ranked[] = topByScore(matches, proximity ? Math.max(k, PROXIMITY_WINDOW) : k, before)
      .sort((a, b) => b.bm25f - a.bm25f || byHash(a, b))
      .map((m) => ({ group: m.group, bm25f: m.bm25f, score: m.bm25f }));
    if (proximity) {
      const scored = ranked.slice(0, PROXIMITY_WINDOW);
      const bonus = proximityScores({ segments: view.segments, groups, avgBodyLength: view.stats.livePages > 0 ? view.stats.bodyTokens / view.stats.livePages : 1 }, words, scored.map((r) => r.group));
      scored.forEach((r, i) => (r.score = r.bm25f + bonus[i]!));
    }
    let order: Ranked[];
    if (options.authorityOf === undefined || ranked.length === 0) {
      order = ranked.sort((a, b) => b.score - a.score || byHash(a, b));
    } else {
      // Authority orders only pages whose scores tie (ranking.ts says why), so the page asked for
      // needs every match tied with its last one, some of which topByScore may have left out.
      ranked.sort((a, b) => tieKey(b.score) - tieKey(a.score) || b.score - a.score || byHash(a, b));
      const edge = tieKey(ranked[Math.min(k, ranked.length) - 1]!.score);
      if (matches.length > ranked.length) {
        const inWindow = new Set(ranked.map((m) => m.group));
        for (const m of matches) if (tieKey(m.bm25f) === edge && !inWindow.has(m.group)) ranked.push({ group: m.group, bm25f: m.bm25f, score: m.bm25f });
        ranked.sort((a, b) => tieKey(b.score) - tieKey(a.score) || b.score - a.score || byHash(a, b));
      }
      // A crawl database read per page, and only for pages in a tie.
      const cash = new Map<number, number>();
      for (let i = 0; i < ranked.length; i++) {
        const key = tieKey(ranked[i]!.score);
        if ((i > 0 && tieKey(ranked[i - 1]!.score) === key) || (i + 1 < ranked.length && tieKey(ranked[i + 1]!.score) === key)) {
          const g = ranked[i]!.group;
          cash.set(g, Math.max(0, options.authorityOf(hashHex(groups.hashHi[g]!, groups.hashLo[g]!)) || 0));
        }
      }
      order = ranked.sort((a, b) => tieKey(b.score) - tieKey(a.score) || (cash.get(b.group) ?? 0) - (cash.get(a.group) ?? 0) || b.score - a.score || byHash(a, b));
    }
    const byId = this.#segmentsById();
    const results: SearchResult[] = [];
    for (const match of order.slice(offset, offset + limit)) {
      const group = match.group;
      const segment = byId.get(groups.entrySegment[group]!)!;
      const page = segment.pageOf(groups.entryIndex[group]!);
      const head = segment.reader.head(page);
      const language = head.language === '' ? null : head.language;
      results.push({
        url: head.url,
        title: head.title,
        snippet: options.snippets === false ? '' : buildSnippet(segment.reader.text(page), parsed.highlight, stemmerFor(language)),
        score: Math.round(match.score * 1e4) / 1e4,
        fetchedAt: head.fetchedAt,
        language,
        urlHash: hashHex(groups.hashHi[group]!, groups.hashLo[group]!),
      });
    }
    return { total: matches.length, results };
  }

  /** The live page of a URL, or null (tests and the CLI). */
  hasPage(url: string): boolean {
    this.#open();
    const [hi, lo] = hashHalves(urlHash64(url));
    const group = this.#groups.find(hi, lo);
    if (group < 0) return false;
    const segment = this.#segments.find((s) => s.id === this.#groups.entrySegment[group]);
    return segment !== undefined && segment.pageOf(this.#groups.entryIndex[group]!) >= 0;
  }

  get segments(): readonly LiveSegment[] {
    return this.#segments;
  }

  get manifest(): Manifest {
    return this.#manifest;
  }

  /** Commits made since the index was created: the manifest's and the replayed log's (the count only grows). */
  get commits(): number {
    return this.#commits;
  }

  stats(): IndexStatsReport {
    let entries = 0;
    let deleted = 0;
    let anchors = 0;
    let bytes = 0;
    for (const s of this.#segments) {
      entries += s.entries;
      deleted += s.deletedCount;
      anchors += s.anchors;
      bytes += s.fileBytes;
    }
    return {
      segments: this.#segments.length,
      livePages: this.#stats.livePages,
      entries,
      deletedEntries: deleted,
      anchorDocs: anchors,
      bytesOnDisk: bytes,
      urls: this.#groups.size,
      stagedEntries: this.#staged.size,
      bufferBytes: this.#builder.bytes,
      generation: this.#manifest.generation,
      commits: this.#commits,
      merging: this.#merging !== null,
      mergesDone: this.#mergesDone,
      lastMergeError: this.#lastMergeError,
      logBytes: this.#log?.bytes ?? 0,
      logSegments: this.#segments.filter((s) => s.inLog !== null).length,
      checkpoints: this.#checkpoints,
    };
  }

  /**
   * Stops merging (a merge in flight is abandoned: its file is removed at the next open) and closes
   * the files. Staged, uncommitted changes are dropped. The log stays as it is: the next open finds
   * its commits where they lie, as after a crash (reading a log of 19 MB took 54 ms against 50 ms for
   * its checkpointed segment), and the next writer's worker checkpoints it once it passes `logBytes`.
   * With `checkpoint: true` the log's segments are first merged into a segment file on this thread,
   * so that the next open replays nothing; that merge is what a shutdown would wait for (0.8 s for a
   * 1,200-page crawl's log), which is why the queue server does not ask for it.
   */
  async close(options: { readonly checkpoint?: boolean } = {}): Promise<void> {
    if (this.#closed) return;
    await this.#runner?.close();
    this.#merging = null;
    if (options.checkpoint === true && !this.#readOnly && this.#broken === null && this.#log !== null && this.#log.bytes > 0) {
      try {
        this.#checkpointNow();
      } catch {
        // The log stays and is replayed at the next open: nothing acknowledged is lost.
      }
    }
    this.#closed = true;
    this.#log?.close();
    for (const s of this.#segments) s.close();
  }

  /** A checkpoint on this thread (close, and writers without a merge worker). */
  #checkpointNow(): void {
    const inputs = this.#segments.filter((s) => s.inLog !== null);
    const old = this.#log!;
    this.#log = CommitLog.openForAppend(join(this.dir, logFileName(old.number + 1)), old.number + 1, 0);
    fsyncDirectory(this.dir);
    old.close();
    const checkpoint: Checkpoint = { logFrom: old.number + 1, commits: this.#commits, oldLog: old.number };
    const snapshot = inputs.map((s) => s.deletedEntries());
    if (inputs.length === 0) {
      this.#installMerge(inputs, snapshot, null, checkpoint);
      return;
    }
    const outputId = this.#nextSegmentId++;
    const result = mergeSegments({
      dir: this.dir,
      inputs: inputs.map((s, i) => ({ id: s.id, file: s.file, range: { offset: s.inLog!.offset, length: s.inLog!.length }, deleted: Uint32Array.from(snapshot[i]!) })),
      outputId,
      outputFile: segmentFileName(outputId),
    });
    this.#installMerge(inputs, snapshot, result, checkpoint);
  }

  // ---- guards -----------------------------------------------------------------------------

  #open(): void {
    if (this.#closed) throw new IndexError('INDEX_CLOSED', `index ${this.dir} is closed`);
  }

  #writable(): void {
    this.#open();
    if (this.#readOnly) throw new IndexError('INDEX_READ_ONLY', `index ${this.dir} was opened read-only`);
    if (this.#broken !== null) throw new IndexError('INDEX_IO', `index ${this.dir} failed earlier (${this.#broken.message}); reopen it`);
  }

  #io<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      this.#broken = error instanceof Error ? error : new Error(String(error));
      throw error instanceof IndexError ? error : new IndexError('INDEX_IO', `index write failed: ${this.#broken.message}`, { cause: error });
    }
  }

  /** Removes files of the directory no manifest names: segments and deletion files of commits or merges that died. */
  #removeUnreferenced(): void {
    const named = new Set<string>();
    for (const s of this.#manifest.segments) {
      named.add(s.file);
      if (s.deletions !== null) named.add(s.deletions);
    }
    for (const file of indexFiles(this.dir)) if (!named.has(file)) rmSync(join(this.dir, file), { force: true });
    // Logs a checkpoint retired whose removal a kill interrupted.
    for (const file of readdirSync(this.dir)) {
      const n = logNumberOf(file);
      if (n !== null && n < this.#logFrom) rmSync(join(this.dir, file), { force: true });
    }
  }
}

/** What a checkpoint's install writes: the first log to replay from then on, the commits it covers, and the log it retires. */
interface Checkpoint {
  readonly logFrom: number;
  readonly commits: number;
  readonly oldLog: number;
}

/** Whether every section of a segment passes its checksum (the small ones were checked at open). */
function wholeSegment(segment: LiveSegment): boolean {
  return (['postings', 'dictionary', 'storeBlocks'] as const).every((name) => segment.reader.verifySection(name));
}

/** The `k` best matches by `before` (unordered beyond that), in O(n log k). */
/** A result being ranked: its BM25F score and its final score (BM25F plus proximity). */
interface Ranked {
  readonly group: number;
  readonly bm25f: number;
  score: number;
}

function topByScore(matches: readonly Match[], k: number, before: (a: Match, b: Match) => boolean): Match[] {
  if (matches.length <= k) return [...matches];
  // Min-heap of the best k seen.
  const heap: Match[] = [];
  const less = (a: Match, b: Match) => before(b, a);
  for (const m of matches) {
    if (heap.length < k) {
      heap.push(m);
      let i = heap.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!less(heap[i]!, heap[p]!)) break;
        [heap[i], heap[p]] = [heap[p]!, heap[i]!];
        i = p;
      }
    } else if (less(heap[0]!, m)) {
      heap[0] = m;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let s = i;
        if (l < k && less(heap[l]!, heap[s]!)) s = l;
        if (r < k && less(heap[r]!, heap[s]!)) s = r;
        if (s === i) break;
        [heap[i], heap[s]] = [heap[s]!, heap[i]!];
        i = s;
      }
    }
  }
  return heap;
}
