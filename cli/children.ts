/**
 * Starting `petrel` subcommands as child processes (real processes, real HTTP), for `petrel crawl`
 * and `petrel start`, and how a child hears signals.
 *
 * Ctrl-C in a terminal sends SIGINT to the whole foreground process group: the supervisor and every
 * child at once. Left alone, the queue server would close while fetchers still deliver the results
 * they hold (each then says "queue server unreachable"), and results would be lost. So a supervised
 * child (PETREL_SUPERVISED=1 in its environment) leaves SIGINT to its supervisor, which stops the
 * fetchers first (SIGTERM: they finish and deliver their slots) and the queue server last.
 *
 * The same order holds when a one-shot crawl ends by itself: a supervised `queue-server --once` says
 * `crawl-over` on stdout and keeps answering (every claim is told `done`) until its supervisor, once
 * the fetchers are gone, sends SIGTERM. A fetcher that started late, after the crawl was over, then
 * hears `done` instead of finding the port closed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fstatSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const PETREL = fileURLToPath(new URL('./petrel.js', import.meta.url));

const SUPERVISED = 'PETREL_SUPERVISED';

/**
 * `inherit`: file descriptors of this process the child gets as its fds 3, 4, ... The child's stdin is
 * a pipe this process never writes: it closes when this process is gone, however it went (a SIGKILL
 * too), which is how the child learns it (`whenSupervisorGone`).
 */
export function spawnPetrel(args: string[], inherit: readonly number[] = []): ChildProcess {
  const child = spawn(process.execPath, [PETREL, ...args], { stdio: ['pipe', 'pipe', 'pipe', ...inherit], env: { ...process.env, [SUPERVISED]: '1' } });
  // The pipe must not keep this process running once everything else is done.
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return child;
}

/** Whether `petrel crawl` or `petrel start` started this process (spawnPetrel). */
export function isSupervised(): boolean {
  return process.env[SUPERVISED] === '1';
}

/**
 * Calls `onGone` once if the supervisor that started this process goes away: the other end of its
 * stdin pipe (spawnPetrel) closes. From then on, writes to stdout and stderr, pipes to the supervisor
 * too, fail with EPIPE; they are dropped instead of ending the process with an unhandled error.
 * Nothing happens in a process not started by spawnPetrel (stdin not a pipe, or not supervised).
 */
export function whenSupervisorGone(onGone: () => void): void {
  if (!isSupervised()) return;
  // libuv's pipes are socket pairs; a shell's are FIFOs. /dev/null (stdin ignored) is neither.
  let pipe = false;
  try {
    const stdin = fstatSync(0);
    pipe = stdin.isFIFO() || stdin.isSocket();
  } catch {
    return;
  }
  if (!pipe) return;
  const stdin = process.stdin;
  let gone = false;
  const goneNow = () => {
    if (gone) return;
    gone = true;
    for (const stream of [process.stdout, process.stderr]) stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
    onGone();
  };
  stdin.on('data', () => undefined);
  stdin.once('end', goneNow);
  stdin.once('error', goneNow);
  (stdin as unknown as { unref?: () => void }).unref?.();
}

/**
 * Signal handling of a command that a supervisor may have started: SIGTERM always calls
 * `onTerminate`; SIGINT calls `onInterrupt`, unless a supervisor started this process (it sends
 * SIGTERM when it is this process's turn to stop). SIGHUP (the terminal went away: an SSH session
 * closed) is a SIGTERM: an orderly stop, not Node's default of dying on the spot with the last
 * commit not made and the lock left behind; a supervised process leaves it to its supervisor, which
 * gets it too and stops its children in order.
 */
export function supervisedSignals(handlers: { onInterrupt: () => void; onTerminate: () => void }): void {
  process.on('SIGINT', isSupervised() ? () => undefined : handlers.onInterrupt);
  process.on('SIGTERM', handlers.onTerminate);
  process.on('SIGHUP', isSupervised() ? () => undefined : handlers.onTerminate);
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
