/**
 * Running the real `petrel` executable (dist/, built by `npm test` before vitest starts) as child
 * processes, for tests that need real processes and real HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const PETREL_BIN = fileURLToPath(new URL('../../dist/cli/petrel.js', import.meta.url));

export function assertBuilt(): void {
  if (!existsSync(PETREL_BIN)) throw new Error(`${PETREL_BIN} is missing: run \`npm run build\` (npm test does it first)`);
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `petrel-${prefix}-`));
}

export interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Children still running; a test file's afterAll ends them (killStartedPetrels) so a failure leaves none behind. */
const started = new Set<ChildProcess>();

export function killStartedPetrels(): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  started.clear();
}

/** `output`: everything once it has exited; `said()`: what it has written so far, for a test that gives up waiting on a running child. */
export function startPetrel(args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess & { output: Promise<Finished>; said: () => { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [PETREL_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  started.add(child);
  child.once('exit', () => started.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const output = new Promise<Finished>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return Object.assign(child, { output, said: () => ({ stdout, stderr }) });
}

/**
 * Stops children group by group (fetchers before their queue servers, as `petrel start` does: a fetcher
 * stopped after its queue server keeps retrying the delivery of what it holds). Each group gets SIGTERM
 * and `timeoutMs` to exit; a child still running then is killed with everything else still running,
 * and the error names it with the end of what it said, so that a hang is a failure one can read.
 */
export async function stopInOrder(groups: readonly (readonly (ChildProcess & { output: Promise<Finished> })[])[], timeoutMs = 30_000): Promise<Finished[]> {
  const finished: Finished[] = [];
  for (const group of groups) {
    for (const child of group) child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    const outputs = await Promise.race([Promise.all(group.map((child) => child.output)), late]);
    clearTimeout(timer);
    if (outputs === 'late') {
      const stuck = group.filter((child) => child.exitCode === null && child.signalCode === null);
      const stuckArgs = stuck.map((child) => child.spawnargs.slice(2).join(' '));
      for (const rest of groups.flat()) if (rest.exitCode === null && rest.signalCode === null) rest.kill('SIGKILL');
      const said = await Promise.all(stuck.map((child) => child.output));
      throw new Error(`still running ${timeoutMs} ms after SIGTERM:\n${said.map((out, i) => `--- petrel ${stuckArgs[i]}\n${out.stderr.slice(-3000)}`).join('\n')}`);
    }
    finished.push(...outputs);
  }
  return finished;
}

export async function runPetrel(args: string[], timeoutMs = 120_000): Promise<Finished> {
  const child = startPetrel(args);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const result = await child.output;
  clearTimeout(timer);
  return result;
}

/**
 * Resolves with the first stdout JSON line of the child whose `event` matches. Rejects after
 * `timeoutMs`, or as soon as the child exits without having printed it (saying its exit code or
 * signal: a child that died is not one that is slow).
 */
export function waitForEvent(child: ChildProcess, event: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const settle = (outcome: () => void) => {
      clearTimeout(timer);
      // Not lines.close(): that pauses the child's stdout, which startPetrel still reads.
      lines.off('line', onLine);
      child.off('close', onClose);
      outcome();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`no ${event} event within ${timeoutMs} ms`))), timeoutMs);
    // 'close' comes after stdout has ended, so every line it printed was seen first.
    const onClose = (code: number | null, signal: NodeJS.Signals | null) => settle(() => reject(new Error(`exited (code ${code}, signal ${signal}) before its ${event} event`)));
    child.once('close', onClose);
    const onLine = (line: string) => {
      let parsed: Record<string, unknown>;
      try {
        parsed = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return; // not an event line
      }
      if (parsed.event === event) settle(() => resolve(parsed));
    };
    lines.on('line', onLine);
  });
}

/** A port nobody listens on now, on 127.0.0.1 (for a queue server that must come back on the same URL). */
export { freePort } from '../../scripts/free-port.js';
