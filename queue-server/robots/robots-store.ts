/**
 * robots.txt fetches kept on disk, so a restarted queue server keeps its robots cache: one file per
 * origin in `robots/` (named by the origin's hash), written atomically, holding the raw outcome of
 * the fetch; rules are parsed again from it (robots.ts), and its age decides whether it still holds.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { urlHashHex, urlHash } from '../../shared/url-hash.js';
import { readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import type { RobotsFetchOutcome } from './robots.js';

export interface StoredRobots extends RobotsFetchOutcome {
  /** ms since epoch */
  readonly fetchedAt: number;
}

export class RobotsStore {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  save(robots: StoredRobots): void {
    writeFileAtomic(this.#path(robots.origin), JSON.stringify(robots));
  }

  load(origin: string): StoredRobots | null {
    const stored = readJsonFile<StoredRobots>(this.#path(origin));
    return stored !== null && stored.origin === origin ? stored : null;
  }

  get count(): number {
    return readdirSync(this.#dir).filter((name) => name.endsWith('.json')).length;
  }

  #path(origin: string): string {
    return join(this.#dir, `${urlHashHex(urlHash(origin))}.json`);
  }
}
