/**
 * Crash safety of the WARC archive with a real process: scripts/warc-crash-writer.ts stores captures
 * and prints the numbers of each commit once it returned; we SIGKILL it at random instants, reopen (as
 * the next run does), and require that every acknowledged capture is in the files, and that every file
 * parses whole with warcio with every digest matching: no torn record survives a reopen. The same data
 * directory goes through every kill, and the files rotate at 256 KiB, so kills land in every phase.
 * Once with the commit's fsync on the event loop, once with it on the thread pool (commitAsync).
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { WarcWriter } from '../../queue-server/warc/warc-writer.js';
import { crashBody, crashUrl } from '../../scripts/warc-crash-writer.js';
import { mulberry32 } from '../../scripts/test-web/prng.js';
import { assertBuilt, tempDir } from '../support/petrel-process.js';
import { checkWarcPath, sha1Base32, type ParsedRecord } from '../support/warc-exchange.js';

const WRITER = fileURLToPath(new URL('../../dist/scripts/warc-crash-writer.js', import.meta.url));
const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`warc-crash kill-timing seed ${seed} (set FC_SEED to replay)`);

interface Run {
  readonly ready: boolean;
  readonly acknowledged: number[];
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
}

function runAndKill(dataDir: string, first: number, delayMs: number, mode: 'sync' | 'async'): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER, dataDir, String(first), String(256 * 1024), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timer: NodeJS.Timeout | null = null;
    if (delayMs < 0) timer = setTimeout(() => child.kill('SIGKILL'), -delayMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (timer === null && out.includes('ready\n')) timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (_code, signal) => {
      if (timer !== null) clearTimeout(timer);
      const complete = out.split('\n').slice(0, -1); // a line without its newline was cut by the kill
      resolve({
        ready: complete.includes('ready'),
        acknowledged: complete.filter((line) => /^\d+( \d+)*$/.test(line)).flatMap((line) => line.split(' ').map(Number)),
        signal,
        stderr: err,
      });
    });
  });
}

describe('WARC archive crash safety (real process, SIGKILL)', () => {
  // `async`: the records' fsync on the thread pool before the commit, as the queue server's group commit does it.
  it.each(['sync', 'async'] as const)('keeps every acknowledged record and leaves only whole records after kills at random instants (%s fsync)', async (mode) => {
    assertBuilt();
    const dataDir = tempDir('warc-crash');
    const warcDir = join(dataDir, 'warc');
    const rand = mulberry32(seed);
    const acknowledged = new Set<number>();
    let next = 0;
    let landedUnacknowledged = 0;
    let tornTails = 0;
    const checked = new Map<string, { size: number; records: ParsedRecord[] }>();
    const kills = 10;
    for (let cycle = 0; cycle < kills; cycle++) {
      // Mostly mid-stream kills (0.1-0.6 s after ready); every fourth lands during start-up and repair.
      const delay = cycle % 4 === 3 ? -Math.floor(rand() * 150) : 100 + Math.floor(rand() * 500);
      const run = await runAndKill(dataDir, next, delay, mode);
      expect(run.stderr).toBe('');
      expect(run.signal).toBe('SIGKILL');
      for (const n of run.acknowledged) acknowledged.add(n);
      if (run.acknowledged.length > 0) next = run.acknowledged.at(-1)! + 1;

      // Reopen as the next run would (cuts a torn tail), then read everything with warcio.
      const before = readdirSync(warcDir).filter((name) => name.endsWith('.warc.gz')).sort();
      const newest = before.at(-1);
      const sizeBefore = newest === undefined ? 0 : statSync(join(warcDir, newest)).size;
      WarcWriter.open({ dir: warcDir, maxFileBytes: 256 * 1024, warcinfo: { software: 'check', operator: null, userAgent: null, settings: {} } }).close();
      // Files are only ever changed while newest: re-read those whose size changed since the last check.
      const files = readdirSync(warcDir).filter((name) => name.endsWith('.warc.gz')).sort();
      if (newest !== undefined && (!files.includes(newest) || statSync(join(warcDir, newest)).size < sizeBefore)) tornTails++;
      const seen: ParsedRecord[] = [];
      for (const name of files) {
        const size = statSync(join(warcDir, name)).size;
        let known = checked.get(name);
        if (known === undefined || known.size !== size) {
          known = { size, records: await checkWarcPath(join(warcDir, name), seen) };
          checked.set(name, known);
        }
        expect(known.records[0]!.type, name).toBe('warcinfo');
        seen.push(...known.records);
      }
      for (const name of checked.keys()) if (!files.includes(name)) checked.delete(name);
      const stored = new Set<number>();
      for (const record of seen) {
        if (record.type !== 'response' && record.type !== 'revisit') continue;
        const n = Number(record.headers.get('WARC-Target-URI')!.split('/').pop());
        expect(record.headers.get('WARC-Target-URI')).toBe(crashUrl(n));
        const body = crashBody(n);
        expect(record.headers.get('WARC-Payload-Digest')).toBe(sha1Base32(body));
        if (record.type === 'response') expect(record.payload!.equals(body)).toBe(true);
        stored.add(n);
      }
      for (const n of acknowledged) expect(stored.has(n), `acknowledged capture ${n}`).toBe(true);
      for (const n of stored) if (!acknowledged.has(n) && n >= next) landedUnacknowledged++;
    }
    console.log(`warc-crash (${mode} fsync): ${kills} kills, ${acknowledged.size} acknowledged captures, ${landedUnacknowledged} unacknowledged ones found whole, ${tornTails} torn tails cut on reopen`);
    // Work was acknowledged between kills (so the kills landed among commits, not only at start-up).
    expect(acknowledged.size).toBeGreaterThanOrEqual(kills);
  }, 120_000);
});
