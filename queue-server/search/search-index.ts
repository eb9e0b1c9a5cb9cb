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
 * the commit is searchable after any crash. A commit writes the staged entries as one new immutable
 * segment, a deletion file for each segment whose entries it replaced, and a new manifest; merges run
 * in a worker thread and are installed with a manifest of their own. Searches see the last commit.
 *
 * Memory (resident, whatever the staging bound): per segment its columns and groups (~15 bytes per
 * page doc and per entry, ~10 per anchor doc), per URL met about 55 bytes (url-groups.ts), the query
 * scratch arrays (28 bytes per URL), plus the staging buffer up to `bufferBytes` (32 MiB by default;
 * past it the buffer is written as a segment that becomes part of the next commit).
 *
 * Single-threaded: one writer per directory (the queue server's data directory lock), any number of
 * read-only handles (the CLI) that see the manifest of the moment they open.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { AnchorTerms, IndexData } from '../../shared/index-data.js';
import { stemmerFor } from '../../shared/tokenize.js';
import { urlHash64 } from '../../shared/url-hash.js';
import { hashHalves, hashHex } from './bytes.js';
import { IndexError } from './errors.js';
import { evaluate, Scratch, type IndexStats, type IndexView, type Match } from './evaluate.js';
import { LiveSegment } from './live-segment.js';
import {
  deletionFileName,
  emptyManifest,
  encodeDeletions,
  indexFiles,
  readManifest,
  segmentFileName,
  writeFileDurable,
  writeManifest,
  type Manifest,
  type ManifestSegment,
} from './manifest.js';
import type { MergeJob, MergeResult } from './merge.js';
import { planMerge } from './merge-policy.js';
import { inlineRunner, workerAvailable, workerRunner, type MergeMode, type MergeRunner } from './merge-runner.js';
import { pageMetaTerms } from './meta-terms.js';
import { parseQuery, type ParsedQuery } from './query-parser.js';
import { AUTHORITY_WINDOW, withAuthority } from './ranking.js';
import { PostingPool } from './posting-pool.js';
import { SegmentBuilder, type StagedAnchor } from './segment-builder.js';
import { writeSegment } from './segment-writer.js';
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
  /** Where merges run: `worker` (default when the compiled worker exists), `inline`, or `off`. */
  readonly merges?: MergeMode;
}

export interface SearchOptions {
  /** Results per page, 1 to 100 (default 10). */
  readonly limit?: number;
  /** Results skipped, 0 to 10,000 (default 0). */
  readonly offset?: number;
  /** The URL's link authority (OPIC cash), given its 16-hex URL hash; default: none. */
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
}

export const SEARCH_LIMITS = { limit: 100, offset: 10_000 } as const;
const DEFAULT_BUFFER_BYTES = 32 * 1024 * 1024;

interface Pending {
  readonly id: number;
  readonly file: string;
  readonly deleted: number[];
}

/** Where a URL staged since the last commit has its new entry (null: removed, no entry). */
interface Staged {
  readonly holder: SegmentBuilder | Pending | null;
  readonly entry: number;
}

export class SearchIndex {
  readonly dir: string;
  readonly #readOnly: boolean;
  readonly #bufferBytes: number;
  /** Built while the segments are opened (open), then owned here. */
  #groups: UrlGroups;
  readonly #scratch = new Scratch();
  #segments: LiveSegment[] = [];
  #manifest: Manifest;
  readonly #stats: IndexStats = { livePages: 0, titleTokens: 0, headingTokens: 0, bodyTokens: 0, anchorTokens: 0 };

  /** Posting blocks reused by each staging buffer in turn (posting-pool.ts). */
  readonly #pool = new PostingPool();
  #builder = new SegmentBuilder(this.#pool);
  #pending: Pending[] = [];
  readonly #staged = new Map<number, Staged>();
  #nextSegmentId: number;

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
    this.#manifest = manifest;
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
      if (!readOnly) index.#removeUnreferenced();
      index.#maybeMerge();
      return index;
    }
  }

  // ---- staging ----------------------------------------------------------------------------

  /** Stages one change; durable and visible at the next `commit`. Throws INDEX_BAD_DATA (nothing staged) on data the schema let through but the index cannot take. */
  stage(change: IndexChange): void {
    this.#writable();
    const [hi, lo] = hashHalves(urlHash64(change.url));
    const group = this.#groups.ensure(hi, lo);
    const earlier = this.#staged.get(group);
    let staged: Staged;
    if (change.kind === 'remove') {
      staged = { holder: null, entry: -1 };
    } else {
      const anchors = this.#anchors(change.url, change.kind === 'page' ? change.data.anchors : change.anchors);
      const alias = change.kind === 'duplicate' ? hashHalves(urlHash64(change.originalUrl)) : null;
      const page = change.kind === 'page' ? { url: change.url, fetchedAt: change.fetchedAt, data: change.data, metaTerms: pageMetaTerms(change.url, change.data.language) } : null;
      const entry = this.#builder.addEntry(hi, lo, page, anchors, alias);
      staged = { holder: this.#builder, entry };
    }
    if (earlier !== undefined && earlier.holder !== null) {
      if (earlier.holder instanceof SegmentBuilder) earlier.holder.deleteEntry(earlier.entry);
      else earlier.holder.deleted.push(earlier.entry);
    }
    this.#staged.set(group, staged);
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

  /** Writes the staging buffer as a segment file that the next commit makes part of the index. */
  #flushBuffer(): void {
    const builder = this.#builder;
    if (builder.entries === 0) return;
    const id = this.#nextSegmentId++;
    const file = segmentFileName(id);
    const pending: Pending = { id, file, deleted: [...builder.deletedEntries] };
    this.#io(() => writeSegment(join(this.dir, file), builder.content()));
    for (const [group, staged] of this.#staged) {
      if (staged.holder === builder) this.#staged.set(group, { holder: pending, entry: staged.entry });
    }
    this.#pending.push(pending);
    this.#builder = new SegmentBuilder(this.#pool);
  }

  /**
   * Makes everything staged durable and searchable. The steps, in order (a kill between any two
   * leaves the previous commit, LAYOUT.md "Crash model"):
   *  1. write the staging buffer as a segment file and fsync it (earlier flushes are on disk already);
   *  2. open the new segments;
   *  3. delete, in memory, the committed entries the staged URLs replace;
   *  4. write a deletion file for every segment whose deletions changed, fsync each;
   *  5. write the manifest naming the new segments and deletion files: MANIFEST.tmp, fsync, rename,
   *     fsync the directory. This is the commit point;
   *  6. point the URLs' groups at their new entries;
   *  7. remove the deletion files no manifest names any more;
   *  8. install a merge the worker finished meanwhile, then start one if one is due.
   */
  commit(): { generation: number; commits: number } {
    this.#writable();
    if (this.#staged.size === 0 && this.#pending.length === 0) return { generation: this.#manifest.generation, commits: this.#manifest.commits };
    try {
      // 1.
      this.#flushBuffer();
      // 2.
      const added: LiveSegment[] = [];
      for (const pending of this.#pending) {
        const segment = LiveSegment.fromFile(this.dir, pending.id, pending.file, this.#groups);
        for (const e of pending.deleted) segment.delete(e);
        added.push(segment);
      }
      // 3.
      const byId = new Map(this.#segments.map((s) => [s.id, s]));
      for (const group of this.#staged.keys()) {
        const segment = byId.get(this.#groups.entrySegment[group]!);
        if (segment === undefined) continue;
        const entry = this.#groups.entryIndex[group]!;
        this.#uninstall(segment, entry);
        segment.delete(entry);
      }
      const segments = [...this.#segments, ...added];
      // 4. and 5.
      const obsolete = this.#writeDeletions(segments);
      this.#writeManifest(segments, this.#manifest.commits + 1);
      // 6.
      this.#segments = segments;
      for (const segment of added) {
        for (let e = 0; e < segment.entries; e++) if (segment.entryDeleted[e] === 0) this.#install(segment, e);
      }
      this.#pending = [];
      this.#staged.clear();
      // 7.
      for (const file of obsolete) rmSync(join(this.dir, file), { force: true });
    } catch (error) {
      this.#broken = error instanceof Error ? error : new Error(String(error));
      throw error instanceof IndexError ? error : new IndexError('INDEX_IO', `index commit failed: ${this.#broken.message}; reopen the index`, { cause: error });
    }
    // 8. (a merge the worker finished since the last commit is installed first, even when the event
    // loop has not turned in between: merge-runner.ts)
    this.#runner?.poll();
    this.#maybeMerge();
    return { generation: this.#manifest.generation, commits: this.#manifest.commits };
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
      segment.dirty = false;
    }
    return obsolete;
  }

  #writeManifest(segments: readonly LiveSegment[], commits: number): void {
    const list: ManifestSegment[] = segments.map((s) => ({
      id: s.id,
      file: s.file,
      entries: s.entries,
      pages: s.pages,
      anchors: s.anchors,
      bytes: s.fileBytes,
      deletions: s.deletionsFile,
      deleted: s.deletedCount,
    }));
    const manifest: Manifest = { ...this.#manifest, generation: this.#manifest.generation + 1, commits, nextSegmentId: this.#nextSegmentId, segments: list };
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

  #maybeMerge(): void {
    if (this.#runner === null || this.#merging !== null || this.#closed || this.#broken !== null) return;
    const plan = planMerge(this.#segments.map((s) => ({ id: s.id, entries: s.entries, deleted: s.deletedCount })));
    if (plan === null) return;
    const inputs = plan.map((id) => this.#segments.find((s) => s.id === id)!);
    const snapshot = inputs.map((s) => s.deletedEntries());
    const outputId = this.#nextSegmentId++;
    const job: MergeJob = {
      dir: this.dir,
      inputs: inputs.map((s, i) => ({ id: s.id, file: s.file, deleted: Uint32Array.from(snapshot[i]!) })),
      outputId,
      outputFile: segmentFileName(outputId),
    };
    let settled!: () => void;
    this.#merging = new Promise<void>((resolve) => {
      settled = resolve;
    });
    this.#runner.start(job, (outcome) => {
      try {
        if (!outcome.ok) throw outcome.error;
        this.#installMerge(inputs, snapshot, outcome.result);
      } catch (error) {
        this.#lastMergeError = error instanceof Error ? `${(error as IndexError).code ?? 'error'}: ${error.message}` : String(error);
        if (!this.#closed) rmSync(join(this.dir, job.outputFile), { force: true });
      } finally {
        this.#merging = null;
        settled();
        if (this.#lastMergeError === null) this.#maybeMerge();
      }
    });
  }

  /**
   * Installs a finished merge: the output replaces its inputs. Entries deleted in the inputs while
   * the merge ran are deleted in the output too (found by the same remapping the merge used), then
   * one manifest switches over; the inputs' files are removed only after it is durable.
   */
  #installMerge(inputs: readonly LiveSegment[], snapshot: readonly number[][], result: MergeResult): void {
    if (this.#closed || this.#broken !== null) {
      rmSync(join(this.dir, result.outputFile), { force: true });
      return;
    }
    const output = LiveSegment.fromFile(this.dir, result.outputId, result.outputFile, this.#groups);
    try {
      let e2 = 0;
      const moved: Array<[number, number]> = [];
      for (let i = 0; i < inputs.length; i++) {
        const input = inputs[i]!;
        const before = new Set(snapshot[i]!);
        for (let e = 0; e < input.entries; e++) {
          if (before.has(e)) continue;
          if (input.entryDeleted[e] === 1) output.delete(e2);
          else moved.push([input.entryGroup[e]!, e2]);
          e2++;
        }
      }
      if (e2 !== output.entries) throw new IndexError('INDEX_CORRUPT', `merged segment ${result.outputFile} has ${output.entries} entries, expected ${e2}`);
      const at = this.#segments.indexOf(inputs[0]!);
      const segments = this.#segments.filter((s) => !inputs.includes(s));
      segments.splice(at, 0, output);
      const obsolete = this.#writeDeletions([output]);
      this.#writeManifest(segments, this.#manifest.commits);
      this.#segments = segments;
      for (const [group, e] of moved) {
        this.#groups.entrySegment[group] = output.id;
        this.#groups.entryIndex[group] = e;
      }
      for (const input of inputs) {
        input.close();
        rmSync(join(this.dir, input.file), { force: true });
        if (input.deletionsFile !== null) obsolete.push(input.deletionsFile);
      }
      for (const file of obsolete) rmSync(join(this.dir, file), { force: true });
      this.#mergesDone++;
    } catch (error) {
      output.close();
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

  /** The matching groups and their BM25F scores, unordered (search without ranking: the model tests). */
  matches(query: string | ParsedQuery): Match[] {
    this.#open();
    return evaluate(this.#view(), typeof query === 'string' ? parseQuery(query) : query);
  }

  /** Searches the last commit. Throws QUERY_INVALID on a query or limits it refuses. */
  search(query: string | ParsedQuery, options: SearchOptions = {}): SearchResults {
    this.#open();
    const limit = options.limit ?? 10;
    const offset = options.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_LIMITS.limit) throw new IndexError('QUERY_INVALID', `limit must be a whole number from 1 to ${SEARCH_LIMITS.limit}, got ${limit}`);
    if (!Number.isInteger(offset) || offset < 0 || offset > SEARCH_LIMITS.offset) throw new IndexError('QUERY_INVALID', `offset must be a whole number from 0 to ${SEARCH_LIMITS.offset}, got ${offset}`);
    const parsed = typeof query === 'string' ? parseQuery(query) : query;
    const matches = evaluate(this.#view(), parsed);
    const groups = this.#groups;
    // Without authority only the page asked for needs ordering; with it, the rescoring window.
    // Ties are broken by URL hash here as in the order below, so that pages of results neither repeat nor skip a tied match.
    const before = (a: Match, b: Match): boolean => a.bm25f > b.bm25f || (a.bm25f === b.bm25f && (groups.hashHi[a.group]! - groups.hashHi[b.group]! || groups.hashLo[a.group]! - groups.hashLo[b.group]!) < 0);
    const window = topByScore(matches, options.authorityOf === undefined ? offset + limit : Math.max(AUTHORITY_WINDOW, offset + limit), before);
    let scores = window.map((m) => m.bm25f);
    if (options.authorityOf !== undefined) {
      const cash = window.map((m) => Math.max(0, options.authorityOf!(hashHex(groups.hashHi[m.group]!, groups.hashLo[m.group]!)) || 0));
      const max = Math.max(0, ...cash);
      scores = window.map((m, i) => withAuthority(m.bm25f, cash[i]!, max));
    }
    const order = window.map((_, i) => i).sort((a, b) => {
      if (scores[b] !== scores[a]) return scores[b]! - scores[a]!;
      const ga = window[a]!.group;
      const gb = window[b]!.group;
      return groups.hashHi[ga]! - groups.hashHi[gb]! || groups.hashLo[ga]! - groups.hashLo[gb]!;
    });
    const byId = this.#segmentsById();
    const results: SearchResult[] = [];
    for (const i of order.slice(offset, offset + limit)) {
      const group = window[i]!.group;
      const segment = byId.get(groups.entrySegment[group]!)!;
      const page = segment.pageOf(groups.entryIndex[group]!);
      const head = segment.reader.head(page);
      const language = head.language === '' ? null : head.language;
      results.push({
        url: head.url,
        title: head.title,
        snippet: options.snippets === false ? '' : buildSnippet(segment.reader.text(page), parsed.highlight, stemmerFor(language)),
        score: Math.round(scores[i]! * 1e4) / 1e4,
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
      commits: this.#manifest.commits,
      merging: this.#merging !== null,
      mergesDone: this.#mergesDone,
      lastMergeError: this.#lastMergeError,
    };
  }

  /** Stops merging (a merge in flight is abandoned: its file is removed at the next open) and closes the files. Staged, uncommitted changes are dropped. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#runner?.close();
    for (const s of this.#segments) s.close();
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
  }
}

/** The `k` best matches by `before` (unordered beyond that), in O(n log k). */
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
