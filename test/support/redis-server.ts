/**
 * A real redis-server (Debian's, installed by .ci/run) started by a test on a loopback port, with
 * the persistence the cluster's guarantee needs (README "Cluster"): AOF on, fsync at every write.
 * Never the system service.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { freePort } from './petrel-process.js';

export const REDIS_SERVER = '/usr/bin/redis-server';

export function haveRedis(): boolean {
  return spawnSync(REDIS_SERVER, ['--version']).status === 0;
}

export interface TestRedis {
  readonly port: number;
  readonly url: string;
  /** kill -9, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port and directory (the AOF is replayed). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Every redis-server a test started and has not closed: `closeStartedRedis` ends them (afterAll). */
const started = new Set<TestRedis>();

/** Ends every redis-server started by this test file (also one a test started and did not close). */
export async function closeStartedRedis(): Promise<void> {
  await Promise.all([...started].map((redis) => redis.close()));
}

export async function startRedis(dir: string, options: { password?: string } = {}): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | null = null;
  const start = async () => {
    const started = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--protected-mode', 'yes', ...(options.password === undefined ? [] : ['--requirepass', options.password])], { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 15_000);
      started.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      });
      started.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
    });
  };
  const stop = async (signal: NodeJS.Signals) => {
    const running = child;
    if (running === null || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill(signal);
    await exited;
  };
  await start();
  const redis: TestRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => stop('SIGKILL'),
    restart: start,
    close: async () => {
      started.delete(redis);
      await stop('SIGKILL');
    },
  };
  started.add(redis);
  return redis;
}
