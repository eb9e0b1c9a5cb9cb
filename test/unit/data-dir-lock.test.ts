/**
 * The data directory's LOCK (queue-server/storage/data-dir.ts): a live holder keeps it, a dead one or
 * a zombie (exited, not reaped: signal 0 still reaches it) does not.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { lockDataDir, processAlive } from '../../queue-server/storage/data-dir.js';

const dir = mkdtempSync(join(tmpdir(), 'petrel-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the data directory lock', () => {
  it('is refused while its holder lives, and taken from a holder that died', () => {
    writeFileSync(join(dir, 'LOCK'), `${process.pid}\n`);
    expect(() => lockDataDir(dir)).toThrow(`is in use by process ${process.pid}`);
    // The holder's command line says what it is (a stale LOCK whose pid another program took, say).
    if (existsSync('/proc/self/cmdline')) expect(() => lockDataDir(dir)).toThrow(new RegExp(`process ${process.pid} \\(\\S*node.*\\): stop it \\(kill ${process.pid}\\)`));
    writeFileSync(join(dir, 'LOCK'), '2147483646\n');
    const release = lockDataDir(dir);
    expect(readFileSync(join(dir, 'LOCK'), 'utf8')).toBe(`${process.pid}\n`);
    release();
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });

  it.skipIf(!existsSync('/proc/self/stat'))('is taken from a holder that exited and was never reaped (a zombie)', async () => {
    // `sleep 0` exits at once; its parent has become `sleep 30`, which never waits for it: a zombie.
    const parent = spawn('sh', ['-c', 'sleep 0 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number.parseInt(await new Promise<string>((resolve) => parent.stdout!.once('data', (chunk: Buffer) => resolve(chunk.toString()))), 10);
      for (let i = 0; i < 200 && !readFileSync(`/proc/${zombie}/stat`, 'utf8').includes(') Z '); i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(readFileSync(`/proc/${zombie}/stat`, 'utf8')).toContain(') Z ');
      expect(() => process.kill(zombie, 0)).not.toThrow();
      expect(processAlive(zombie)).toBe(false);
      writeFileSync(join(dir, 'LOCK'), `${zombie}\n`);
      lockDataDir(dir)();
      expect(processAlive(parent.pid!)).toBe(true);
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
