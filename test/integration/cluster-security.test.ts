/**
 * Redis holds the cluster's leases and link streams, so reaching it is guarded: a password comes from
 * a file or the environment (never an argument: /proc/PID/cmdline is readable by every user), is
 * never logged, and a non-loopback Redis without one is refused before any connection is tried.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertBuilt, killStartedPetrels, runPetrel, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';
import { closeStartedRedis, haveRedis, startRedis, type TestRedis } from '../support/redis-server.js';

describe.skipIf(!haveRedis())('reaching the cluster\'s Redis', () => {
  let redis: TestRedis | undefined;
  afterAll(async () => {
    killStartedPetrels();
    await closeStartedRedis();
  });

  it('takes the password from a file, never shows it in the process title or the logs, and says a wrong one without repeating it', async () => {
    assertBuilt();
    const password = `pw-${randomBytes(12).toString('hex')}`;
    redis = await startRedis(tempDir('redis'), { password });
    const dir = tempDir('secure');
    const passwordFile = join(dir, 'redis.password');
    writeFileSync(passwordFile, `${password}\n`, { mode: 0o600 });
    const args = ['queue-server', '--data', join(dir, 'data'), '--port', '0', '--cluster', redis.url, '--partitions', '1', '--seed', 'http://127.0.0.1:9/', '--log-level', 'debug'];
    const server = startPetrel([...args, '--redis-password-file', passwordFile]);
    await waitForEvent(server, 'listening');
    const cmdline = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8');
    expect(cmdline).not.toContain(password);
    server.kill('SIGTERM');
    const out = await server.output;
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout + out.stderr).not.toContain(password);
    expect(out.stderr).toContain('owns partition 0 of 1');

    // From the environment too; a wrong password is refused, named as such, not echoed.
    const wrong = `wrong-${randomBytes(8).toString('hex')}`;
    const child = startPetrel([...args.map((arg) => (arg.endsWith('/data') ? join(dir, 'data3') : arg))], { PETREL_REDIS_PASSWORD: wrong });
    const failed = await child.output;
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('refused the password');
    expect(failed.stdout + failed.stderr).not.toContain(wrong);
    expect(failed.stdout + failed.stderr).not.toContain(password);

    // A fetcher refused the same way stops and says so (it ran on, serving nothing, before).
    const tokenFile = join(dir, 'fetcher.token');
    writeFileSync(tokenFile, `${randomBytes(16).toString('hex')}\n`);
    const fetcher = startPetrel(['fetcher', '--cluster', redis.url, '--token-file', tokenFile], { PETREL_REDIS_PASSWORD: wrong });
    const refused = await fetcher.output;
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stderr).toContain('refused the password');
    expect(refused.stdout + refused.stderr).not.toContain(wrong);
  }, 60_000);

  it('refuses a password in the URL and a non-loopback Redis without a password, before connecting', async () => {
    const dir = tempDir('secure');
    const inUrl = await runPetrel(['queue-server', '--data', join(dir, 'a'), '--cluster', 'redis://:sekrit-in-url@127.0.0.1:6379', '--partitions', '1']);
    expect(inUrl.code).toBe(2);
    expect(inUrl.stderr).toContain('--redis-password-file');
    expect(inUrl.stderr).not.toContain('sekrit-in-url');
    // 192.0.2.0/24 is TEST-NET-1; refused by the option check, nothing is dialled (the suite runs without a network anyway).
    const remote = await runPetrel(['queue-server', '--data', join(dir, 'b'), '--cluster', 'redis://192.0.2.1:6379', '--partitions', '1']);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('--allow-insecure-redis');
    const fetcher = await runPetrel(['fetcher', '--cluster', 'redis://192.0.2.1:6379'], 30_000);
    expect(fetcher.code).toBe(2);
    // Cluster members run until stopped: a one-shot fetcher of a cluster would never be told it is done.
    const once = await runPetrel(['fetcher', '--cluster', 'redis://127.0.0.1:6379', '--once'], 30_000);
    expect(once.code).toBe(2);
    expect(once.stderr).toContain('--once and --cluster do not go together');
  }, 60_000);
});
