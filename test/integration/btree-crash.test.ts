/**
 * Crash safety with a real process: scripts/btree-crash-writer.ts commits deterministic batches and
 * prints each acknowledged txid; we SIGKILL it at random instants, reopen the file, and require exactly
 * the state of the last acknowledged commit or of the one that was in flight, never a mix, and a clean
 * check. The same file goes through every kill, so each reopen also recovers from the previous one.
 *
 * The writer is compiled on the fly from the current sources into a temp dir (so the test never runs a
 * stale dist/), with the project's own TypeScript.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import { crashBatch } from '../../scripts/btree-crash-writer.js';
import { dump, expectClean, hex, prng, tempFile } from '../support/btree-helpers.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`btree-crash kill-timing seed ${seed} (set FC_SEED to replay)`);

let buildDir = '';
let writerJs = '';

beforeAll(() => {
  buildDir = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-btree-writer-'));
  const tsc = path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
  // tsconfig's module settings, spelled out because tsc ignores tsconfig.json when given a file.
  execFileSync(
    process.execPath,
    [
      tsc,
      '--ignoreConfig',
      '--outDir', buildDir,
      '--rootDir', repo,
      '--module', 'nodenext',
      '--moduleResolution', 'nodenext',
      '--target', 'es2023',
      '--types', 'node',
      '--skipLibCheck',
      '--strict',
      path.join(repo, 'scripts', 'btree-crash-writer.ts'),
    ],
    { cwd: repo, stdio: 'pipe' },
  );
  fs.writeFileSync(path.join(buildDir, 'package.json'), '{"type":"module"}\n');
  writerJs = path.join(buildDir, 'scripts', 'btree-crash-writer.js');
  expect(fs.existsSync(writerJs)).toBe(true);
});

afterAll(() => {
  if (buildDir !== '') fs.rmSync(buildDir, { recursive: true, force: true });
});

interface Run {
  /** Txid the writer found on open, or null if it was killed before reporting it. */
  readonly ready: number | null;
  /** Txids whose commit returned before the kill. */
  readonly acknowledged: number[];
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

/** Starts the writer, kills it with SIGKILL `delayMs` after it reports ready (or after spawn, if negative). */
function runAndKill(file: string, delayMs: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writerJs, file, '1024'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | null = null;
    const kill = (): void => {
      child.kill('SIGKILL');
    };
    if (delayMs < 0) timer = setTimeout(kill, -delayMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (timer === null && out.includes('ready')) timer = setTimeout(kill, delayMs);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (timer !== null) clearTimeout(timer);
      const lines = out.split('\n');
      const complete = lines.slice(0, -1); // a line without its newline was cut by the kill
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

describe('BTree crash safety (real process, SIGKILL)', () => {
  it('reopens to exactly the last acknowledged commit or the in-flight one after kills at random instants', async () => {
    const file = tempFile('crash.btree');
    const rand = prng(seed);
    const model = new Map<string, string>();
    let modelTxid = 0;
    const advanceModel = (to: number): void => {
      for (; modelTxid < to; ) {
        modelTxid++;
        for (const op of crashBatch(modelTxid)) {
          if (op.kind === 'put') model.set(hex(op.key), hex(op.value));
          else model.delete(hex(op.key));
        }
      }
    };

    let durable = 0;
    let inFlightLanded = 0;
    const kills = 12;
    for (let cycle = 0; cycle < kills; cycle++) {
      // Mostly mid-stream kills; every fourth one lands during start-up or the first commits.
      const delay = cycle % 4 === 3 ? -Math.floor(rand() * 120) : Math.floor(rand() * 250);
      const run = await runAndKill(file, delay);
      expect(run.stderr).toBe('');
      expect(run.signal).toBe('SIGKILL');
      if (run.ready !== null) expect(run.ready).toBe(durable);
      const lastAck = run.acknowledged.at(-1) ?? durable;

      if (!fs.existsSync(file)) {
        // Killed before the file was created (creation is atomic: no file or a whole one).
        expect(lastAck).toBe(0);
        continue;
      }
      const tree = BTree.open(file, { create: false });
      const txid = tree.stats().txid;
      expect([lastAck, lastAck + 1]).toContain(txid);
      if (txid === lastAck + 1) inFlightLanded++;
      advanceModel(txid);
      const sorted = new Map([...model.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(dump(tree)).toEqual(sorted);
      expect(tree.stats().keys).toBe(model.size);
      expectClean(tree);
      tree.close();
      durable = txid;
    }
    console.log(
      `btree-crash: ${kills} kills, final txid ${durable}, ${model.size} keys, in-flight commit landed ${inFlightLanded} times`,
    );
    expect(durable).toBeGreaterThan(kills);
  });
});
