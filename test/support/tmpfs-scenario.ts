/**
 * Disk-full scenarios on a disk that really fills: a scenario script (scripts/*-disk-full.ts, built to
 * dist/scripts/) run in its own mount namespace (`unshare -m`, as root) with a small tmpfs mounted at a
 * temporary directory, which it gets as its first argument. Where mount namespaces are not available
 * (not root, not Linux), `canMountTmpfs` says so and the tests skip.
 */
import { execFileSync, spawn } from 'node:child_process';
import { tempDir } from './petrel-process.js';

export function canMountTmpfs(): boolean {
  try {
    const probe = tempDir('tmpfs-mount-probe');
    execFileSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs "$1"', 'sh', probe], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface ScenarioOutput {
  readonly stdout: string;
  readonly stderr: string;
  readonly code: number | null;
}

/** Runs `node SCRIPT MOUNT_POINT ...args` with a tmpfs of `size` (such as `640k`) mounted at MOUNT_POINT. */
export function runOnTmpfs(script: string, size: string, mountPoint: string, args: readonly string[] = []): Promise<ScenarioOutput> {
  return new Promise((resolve, reject) => {
    const child = spawn('unshare', ['-m', 'sh', '-c', 'size=$1; dir=$2; shift 2; mount -t tmpfs -o size="$size" tmpfs "$dir" && exec "$@"', 'sh', size, mountPoint, process.execPath, script, mountPoint, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ stdout, stderr, code }));
  });
}
