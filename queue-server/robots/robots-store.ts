/**
 * robots.txt fetches kept on disk, so a restarted queue server keeps its robots cache: one file per
 * origin in `robots/` (named by the origin's hash), holding the raw outcome of the fetch; rules are
 * parsed again from it (robots.ts), and its age decides whether it still holds.
 *
 * Write path: `save` queues the file in memory; `commit` (part of the crawl's group commit) replaces
 * each queued file atomically (storage/atomic-file.ts) and then fsyncs the directory once. A commit
 * that fails keeps what it could not write queued for the next one, so a full disk never makes a
 * results post fail half-applied. Memory: one queued outcome per origin (the latest), at most 512 KiB
 * of robots.txt each, for one commit window.
 *
 * Parsed files: the store also holds the bounded cache of parsed rules (parsed-robots-cache.ts), so an
 * origin's rules that fell out of it are parsed again from its file here (`parsedRules`), the one
 * place robots.txt files are read back.
 */
import { readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { urlHashHex, urlHash } from '../../shared/url-hash.js';
import { ensureDirDurably, readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import { fsyncDir, nodeFileOps, type FileOps } from '../storage/file-ops.js';
import { ParsedRobotsCache, type ParsedRobotsCacheOptions } from './parsed-robots-cache.js';
import { rulesFromFetch, type RobotsFetchOutcome, type RobotsPolicy, type RobotsRules } from './robots.js';

type ParsedRules = Extract<RobotsRules, { kind: 'rules' }>;

export interface StoredRobots extends RobotsFetchOutcome {
  /** ms since epoch */
  readonly fetchedAt: number;
}

export class RobotsStore {
  readonly #dir: string;
  readonly #io: FileOps;
  /** File path -> outcome saved and not yet committed; the latest per origin. */
  readonly #pending = new Map<string, StoredRobots>();

  readonly #parsed: ParsedRobotsCache<ParsedRules>;
  /**
   * Names of the files on disk, listed once when the store opens and kept up to date by commits, so
   * that meeting an origin without a robots.txt costs no failed open (one per origin met otherwise).
   * One short string per origin with a file.
   */
  readonly #files: Set<string>;

  constructor(dir: string, options: { io?: FileOps; parsedCache?: ParsedRobotsCacheOptions } = {}) {
    this.#dir = dir;
    this.#io = options.io ?? nodeFileOps;
    this.#parsed = new ParsedRobotsCache(options.parsedCache);
    ensureDirDurably(dir, { io: this.#io, mode: 0o700 });
    this.#files = new Set(readdirSync(dir).filter((name) => name.endsWith('.json')));
  }

  /** Queues the outcome for the next commit; `load` sees it at once. */
  save(robots: StoredRobots): void {
    this.#pending.set(this.#path(robots.origin), robots);
  }

  /** Writes every queued file, then fsyncs the directory; on failure all stay queued for the next commit. */
  commit(): void {
    if (this.#pending.size === 0) return;
    const written = [...this.#pending];
    for (const [path, robots] of written) writeFileAtomic(path, JSON.stringify(robots), { io: this.#io, syncDir: false });
    // One directory fsync makes every rename above durable; until it succeeded none of them counts.
    fsyncDir(this.#io, this.#dir);
    for (const [path, robots] of written) {
      this.#files.add(basename(path));
      if (this.#pending.get(path) === robots) this.#pending.delete(path);
    }
  }

  load(origin: string): StoredRobots | null {
    const path = this.#path(origin);
    const stored = this.#pending.get(path) ?? (this.#files.has(basename(path)) ? readJsonFile<StoredRobots>(path) : null);
    return stored !== null && stored.origin === origin ? stored : null;
  }

  /** Puts the rules just parsed from the fetch of `origin` made at `fetchedAt` into the cache of parsed files. */
  rememberParsed(origin: string, fetchedAt: number, rules: ParsedRules, chars: number): void {
    this.#parsed.set(origin, fetchedAt, rules, chars);
  }

  /**
   * The rules parsed from the fetch of `origin` made at `fetchedAt`: from the cache, or parsed again
   * from the stored file (queued or on disk) and cached. The store keeps every fetch it was handed, the
   * latest per origin, so a miss that finds another fetch, or none, is a bug.
   */
  parsedRules(origin: string, fetchedAt: number, policy: RobotsPolicy): ParsedRules {
    const cached = this.#parsed.get(origin, fetchedAt);
    if (cached !== undefined) return cached;
    const stored = this.load(origin);
    const rules = stored === null || stored.fetchedAt !== fetchedAt ? null : rulesFromFetch(stored, policy, stored.fetchedAt);
    if (rules?.kind !== 'rules') throw new Error(`robots.txt of ${origin} fetched at ${fetchedAt} is not the one stored`);
    this.#parsed.set(origin, fetchedAt, rules, stored!.body?.length ?? 0);
    return rules;
  }

  parsedStats(): ReturnType<ParsedRobotsCache<ParsedRules>['stats']> {
    return this.#parsed.stats();
  }

  /** Origins with a robots.txt on disk (files only: what a restart would find). */
  get count(): number {
    return readdirSync(this.#dir).filter((name) => name.endsWith('.json')).length;
  }

  #path(origin: string): string {
    return join(this.#dir, `${urlHashHex(urlHash(origin))}.json`);
  }
}
