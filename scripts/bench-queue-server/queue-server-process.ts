/**
 * A real `petrel queue-server` child process as the benchmarks run it: spawned from a given build,
 * its stdout events (`listening`, `finished`, `stopped`) collected, its stderr's tail kept for a
 * message when it fails. Nothing here talks HTTP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface Listening {
  url: string;
  pid: number;
  tokenFile: string;
  adminTokenFile: string;
  loaded?: unknown;
  [key: string]: unknown;
}

export interface QueueServerProcess {
  readonly child: ChildProcess;
  /** performance.now() when it was spawned. */
  readonly spawnedAt: number;
  /** The `listening` event (printed once the crawl database is loaded), or null when it exited first. */
  readonly listening: Promise<Listening | null>;
  /** Its exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** The last event of each kind it printed. */
  readonly events: Record<string, Record<string, unknown>>;
  /** The last 20,000 characters of its stderr. */
  stderr(): string;
}

/**
 * Spawns `node [nodeArgs] DIST/cli/petrel.js queue-server ARGS`. `nodeArgs` is where `--cpu-prof`
 * goes. The child is never detached: it dies with its process group.
 */
export function spawnQueueServer(dist: string, args: readonly string[], nodeArgs: readonly string[] = []): QueueServerProcess {
  const spawnedAt = performance.now();
  const child = spawn(process.execPath, [...nodeArgs, join(dist, 'cli/petrel.js'), 'queue-server', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const events: Record<string, Record<string, unknown>> = {};
  const listening = new Promise<Listening | null>((resolve) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      let event: { event?: unknown };
      try {
        event = JSON.parse(line) as { event?: unknown };
      } catch {
        return; // not an event line
      }
      if (typeof event.event !== 'string') return;
      events[event.event] = event as Record<string, unknown>;
      if (event.event === 'listening') resolve(event as unknown as Listening);
    });
    void exited.then(() => resolve(null));
  });
  return { child, spawnedAt, listening, exited, events, stderr: () => stderr };
}
