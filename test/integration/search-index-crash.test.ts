/**
 * Crash safety of the search index with a real process: scripts/index-crash-writer.ts stages and
 * commits deterministic changes (merging in its worker thread) and prints each acknowledged commit; we
 * SIGKILL it at random instants, reopen the directory, and require exactly the state of the last
 * acknowledged commit or of the one in flight: every live page found by its own words, its latest
 * version's marker and the anchor text of its inlink, every removed or replaced version not found, and a clean `checkIndex`. The same
 * directory goes through every kill, so each reopen also recovers from the previous one (orphaned
 * segment files of a commit or merge that died are removed at open).
 *
 * The writer and the merge worker are compiled on the fly from the current sources (never a stale
 * dist/), into a folder under node_modules/.cache so their imports resolve.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkIndex } from '../../queue-server/search/check.js';
import { indexFiles } from '../../queue-server/search/manifest.js';
import { SearchIndex } from '../../queue-server/search/search-index.js';
import { CRASH_URLS, crashChanges, crashUrl } from '../../scripts/index-crash-writer.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';
import { tempDir } from '../support/search-model.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`search-index-crash kill-timing seed ${seed} (set FC_SEED to replay)`);

let buildDir = '';
let writerJs = '';

beforeAll(() => {
  const cache = path.join(repo, 'node_modules', '.cache');
  fs.mkdirSync(cache, { recursive: true });
  buildDir = fs.mkdtempSync(path.join(cache, 'petrel-index-writer-'));
  const tsc = path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
  execFileSync(
    process.execPath,
    [
      tsc, '--ignoreConfig', '--outDir', buildDir, '--rootDir', repo, '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--target', 'es2023', '--types', 'node', '--skipLibCheck', '--strict',
      path.join(repo, 'scripts', 'index-crash-writer.ts'),
      path.join(repo, 'queue-server', 'search', 'merge-worker.ts'),
    ],
    { cwd: repo, stdio: 'pipe' },
  );
  fs.writeFileSync(path.join(buildDir, 'package.json'), '{"type":"module"}\n');
  writerJs = path.join(buildDir, 'scripts', 'index-crash-writer.js');
  expect(fs.existsSync(path.join(buildDir, 'queue-server', 'search', 'merge-worker.js'))).toBe(true);
}, 120_000);

afterAll(() => {
  if (buildDir !== '') fs.rmSync(buildDir, { recursive: true, force: true });
});

interface Run {
  readonly ready: number | null;
  readonly acknowledged: number[];
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/** Runs the writer on `dir` and SIGKILLs it `delayMs` after `ready` (negative: after spawn), or once it acknowledged `afterAcks` commits. */
function runAndKill(dir: string, delayMs: number, options: { logBytes?: number; afterAcks?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const args = [writerJs, dir, ...(options.logBytes === undefined ? [] : [String(options.logBytes)])];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | null = null;
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    if (delayMs < 0) timer = setTimeout(kill, -delayMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (options.afterAcks !== undefined) {
        if (out.split('\n').filter((l) => /^\d+$/.test(l)).length >= options.afterAcks + 1) kill();
        return;
      }
      if (timer === null && out.includes('ready')) timer = setTimeout(kill, delayMs);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (timer !== null) clearTimeout(timer);
      const complete = out.split('\n').slice(0, -1);
      const readyLine = complete.find((l) => l.startsWith('ready '));
      resolve({
        ready: readyLine === undefined ? null : Number(readyLine.slice(6)),
        acknowledged: complete.filter((l) => /^\d+$/.test(l)).map(Number),
        signal,
        stderr: err,
      });
    });
  });
}

/** The writer's pages as of a commit: URL number -> commit of its live version (absent: removed or never staged). */
class CrashModel {
  readonly pages = new Map<number, number>();
  commits = 0;

  advance(to: number): void {
    for (; this.commits < to; ) {
      this.commits++;
      for (const change of crashChanges(this.commits)) {
        const i = Number(change.url.slice(change.url.lastIndexOf('/') + 1));
        if (change.kind === 'remove') this.pages.delete(i);
        else this.pages.set(i, this.commits);
      }
    }
  }

  /** Every URL found by its own word iff live, and then by its latest version's marker only; anchor text on its target. */
  expectSearchable(index: SearchIndex): void {
    const model = this.pages;
    expect(index.stats().livePages).toBe(model.size);
    for (let i = 0; i < CRASH_URLS; i++) {
      const found = index.search(`u${i}`, { limit: 100, snippets: false }).results.map((r) => r.url);
      const version = model.get(i);
      expect({ i, found }).toEqual({ i, found: version === undefined ? [] : [crashUrl(i)] });
      if (version !== undefined) expect(index.search(`u${i}x${version}`, { snippets: false }).total).toBe(1);
      // Anchor text a<i> lives on page i and counts for page i + 1.
      const target = (i + 1) % CRASH_URLS;
      const viaAnchor = index.search(`a${i}`, { limit: 100, snippets: false }).results.map((r) => r.url);
      expect({ i, viaAnchor }).toEqual({ i, viaAnchor: version !== undefined && model.has(target) ? [crashUrl(target)] : [] });
    }
  }
}

describe('search index crash safety (real process, SIGKILL)', () => {
  it('reopens to exactly the last acknowledged commit or the in-flight one after kills at random instants', async () => {
    const dir = tempDir('petrel-index-crash-');
    const rand = mulberry32(seed);
    const crash = new CrashModel();
    const model = crash.pages;

    let durable = 0;
    let inFlightLanded = 0;
    let mergedSegmentsSeen = 0;
    const kills = 10;
    for (let cycle = 0; cycle < kills; cycle++) {
      const delay = cycle % 4 === 3 ? -Math.floor(rand() * 150) : 100 + Math.floor(rand() * 700);
      const run = await runAndKill(dir, delay);
      expect(run.stderr).toBe('');
      expect(run.signal).toBe('SIGKILL');
      if (run.ready !== null) expect(run.ready).toBe(durable);
      const lastAck = run.acknowledged.at(-1) ?? durable;

      const index = SearchIndex.open(dir, { merges: 'off' });
      const commits = index.stats().commits;
      expect([lastAck, lastAck + 1]).toContain(commits);
      if (commits === lastAck + 1) inFlightLanded++;
      crash.advance(commits);
      mergedSegmentsSeen = Math.max(mergedSegmentsSeen, ...index.manifest.segments.map((s) => s.id));
      crash.expectSearchable(index);
      await index.close();
      expect(checkIndex(dir).faults).toEqual([]);
      // Only what the manifest names is left on disk after an open by a writer.
      const writer = SearchIndex.open(dir, { merges: 'off' });
      const named = new Set(writer.manifest.segments.flatMap((s) => [s.file, ...(s.deletions === null ? [] : [s.deletions])]));
      await writer.close();
      expect(indexFiles(dir).filter((f) => !named.has(f))).toEqual([]);
      durable = commits;
    }
    console.log(`search-index-crash: ${kills} kills, final commit ${durable}, ${model.size} live pages, in-flight commit landed ${inFlightLanded} times, highest segment id ${mergedSegmentsSeen}`);
    expect(durable).toBeGreaterThan(kills);
  }, 240_000);

  it('keeps every acknowledged commit that only the commit log holds: kill -9 between the log append and any segment file', async () => {
    const dir = tempDir('petrel-index-logkill-');
    const crash = new CrashModel();
    let durable = 0;
    for (let cycle = 0; cycle < 3; cycle++) {
      // A log bound the writer never reaches: every commit of the run is in the log only.
      const run = await runAndKill(dir, 0, { logBytes: 2 ** 40, afterAcks: 25 + 10 * cycle });
      expect(run.stderr).toBe('');
      expect(run.signal).toBe('SIGKILL');
      expect(run.ready).toBe(durable);
      const lastAck = run.acknowledged.at(-1)!;
      expect(lastAck).toBeGreaterThanOrEqual(durable + 25);
      const logs = fs.readdirSync(dir).filter((f) => f.endsWith('.plg'));
      expect(logs).toHaveLength(1);
      // What `petrel search` sees while no writer has replayed the log yet.
      const reader = SearchIndex.open(dir, { readOnly: true });
      const commits = reader.stats().commits;
      expect([lastAck, lastAck + 1]).toContain(commits);
      expect(reader.stats().logSegments).toBeGreaterThan(0);
      crash.advance(commits);
      crash.expectSearchable(reader);
      await reader.close();
      const report = checkIndex(dir);
      expect(report.faults).toEqual([]);
      expect(report.livePages).toBe(crash.pages.size);
      // A writer replays the log, cuts any torn tail, and a close that checkpoints merges it into a segment file.
      const writer = SearchIndex.open(dir, { merges: 'off' });
      expect(writer.stats().commits).toBe(commits);
      crash.expectSearchable(writer);
      await writer.close({ checkpoint: true });
      expect(checkIndex(dir)).toMatchObject({ faults: [], logSegments: 0, logTailBytes: 0, livePages: crash.pages.size });
      durable = commits;
    }
  }, 240_000);
});
