/**
 * Starting `petrel` subcommands as child processes (real processes, real HTTP), for `petrel crawl`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const PETREL = fileURLToPath(new URL('./petrel.js', import.meta.url));

/** `inherit`: file descriptors of this process the child gets as its fds 3, 4, ... */
export function spawnPetrel(args: string[], inherit: readonly number[] = []): ChildProcess {
  return spawn(process.execPath, [PETREL, ...args], { stdio: ['ignore', 'pipe', 'pipe', ...inherit] });
}

/** Calls `onLine` for each line the stream prints. */
export function eachLine(stream: NodeJS.ReadableStream | null, onLine: (line: string) => void): void {
  if (stream === null) return;
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', onLine);
}

export function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}
