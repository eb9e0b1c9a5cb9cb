/**
 * A real redis-server (Debian's, installed by .ci/run) started by a test on a loopback port, with
 * the persistence the cluster's guarantee needs (README "Cluster"): AOF on, fsync at every write.
 * Never the system service.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
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

export async function startRedis(dir: string, options: { password?: string; port?: number; extraArgs?: readonly string[] } = {}): Promise<TestRedis> {
  const port = options.port ?? (await freePort());
  let child: ChildProcess | null = null;
  const start = async () => {
    const started = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--protected-mode', 'yes', ...(options.password === undefined ? [] : ['--requirepass', options.password]), ...(options.extraArgs ?? [])], { stdio: ['ignore', 'pipe', 'pipe'] });
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

export const REDIS_CLI = '/usr/bin/redis-cli';

export interface TestRedisCluster {
  /** The nodes (all primaries), in the order started. */
  readonly nodes: readonly TestRedis[];
  /** The first node's address: what `--cluster URL --redis-cluster` is given. */
  readonly url: string;
  close(): Promise<void>;
}

/** Whether a port and its cluster bus port (port + 10000) are both free on 127.0.0.1. */
async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/**
 * A real Redis Cluster of `size` primaries on loopback (no replicas), each with AOF and fsync at every
 * write, created with `redis-cli --cluster create` and waited for until every node says cluster_state:ok.
 * Ports below the ephemeral range (10000-21999), so that each bus port (port + 10000) is too.
 */
export async function startRedisCluster(dir: string, size = 3): Promise<TestRedisCluster> {
  const ports: number[] = [];
  while (ports.length < size) {
    const port = 10_000 + Math.floor(Math.random() * 12_000);
    if (!ports.includes(port) && (await portFree(port)) && (await portFree(port + 10_000))) ports.push(port);
  }
  const nodes: TestRedis[] = [];
  for (const port of ports) {
    const nodeDir = join(dir, `node-${port}`);
    mkdirSync(nodeDir, { recursive: true });
    nodes.push(await startRedis(nodeDir, { port, extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '3000'] }));
  }
  const cli = promisify(execFile);
  await cli(REDIS_CLI, ['--cluster', 'create', ...ports.map((port) => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
  const deadline = Date.now() + 30_000;
  for (const port of ports) {
    for (;;) {
      const { stdout } = await cli(REDIS_CLI, ['-p', String(port), 'cluster', 'info'], { timeout: 5000 });
      if (stdout.includes('cluster_state:ok')) break;
      if (Date.now() > deadline) throw new Error(`the Redis Cluster on ${ports.join(', ')} did not become ok: ${stdout}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    nodes,
    url: nodes[0]!.url,
    close: async () => {
      await Promise.all(nodes.map((node) => node.close()));
    },
  };
}
