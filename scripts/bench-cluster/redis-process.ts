/**
 * A redis-server for a benchmark: Debian's binary on a free loopback port, with the persistence the
 * cluster's guarantee needs (AOF, appendfsync always; README "Cluster"), its data in `dir`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../free-port.js';

export const REDIS_SERVER = '/usr/bin/redis-server';

export async function startRedis(dir: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const child = spawn(REDIS_SERVER, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`redis-server did not start: ${out}`)), 15_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('Ready to accept connections')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
  });
  return { child, port };
}

/** A number from Redis INFO's text (0 when absent). */
export function infoField(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
  return match === null ? 0 : Number(match[1]);
}
