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
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { urlHashHex, urlHash } from '../../shared/url-hash.js';
import { ensureDirDurably, readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import { fsyncDir, nodeFileOps, type FileOps } from '../storage/file-ops.js';
import type { RobotsFetchOutcome } from './robots.js';

export interface StoredRobots extends RobotsFetchOutcome {
  /** ms since epoch */
  readonly fetchedAt: number;
}

export class RobotsStore {
  readonly #dir: string;
  readonly #io: FileOps;
  /** File path -> outcome saved and not yet committed; the latest per origin. */
  readonly #pending = new Map<string, StoredRobots>();

  constructor(dir: string, options: { io?: FileOps } = {}) {
    this.#dir = dir;
    this.#io = options.io ?? nodeFileOps;
    ensureDirDurably(dir, { io: this.#io, mode: 0o700 });
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
    for (const [path, robots] of written) if (this.#pending.get(path) === robots) this.#pending.delete(path);
  }

  load(origin: string): StoredRobots | null {
    const path = this.#path(origin);
    const stored = this.#pending.get(path) ?? readJsonFile<StoredRobots>(path);
    return stored !== null && stored.origin === origin ? stored : null;
  }

  /** Origins with a robots.txt on disk (files only: what a restart would find). */
  get count(): number {
    return readdirSync(this.#dir).filter((name) => name.endsWith('.json')).length;
  }

  #path(origin: string): string {
    return join(this.#dir, `${urlHashHex(urlHash(origin))}.json`);
  }
}
