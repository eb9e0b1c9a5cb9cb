/**
 * docs/petrel-queue-server.service is a unit systemd accepts: `systemd-analyze verify` finds no error
 * and no warning (an unknown or misspelt directive is only a warning, so the output must be empty),
 * and `systemd-analyze security --offline` rates its exposure low. Its ExecStart names the petrel
 * executable's real layout (dist/cli/petrel.js) and the options queue-server has. Skipped where
 * systemd-analyze is missing (.ci/run installs the systemd package for it).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const UNIT = fileURLToPath(new URL('../../docs/petrel-queue-server.service', import.meta.url));
const ANALYZE = spawnSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' }).stdout.trim();

describe.skipIf(ANALYZE === '')('the systemd unit (needs systemd-analyze: apt-get install systemd)', () => {
  const text = readFileSync(UNIT, 'utf8');
  const dir = mkdtempSync(join(tmpdir(), 'petrel-unit-'));
  const copy = join(dir, 'petrel-queue-server.service');
  // The node of this machine, wherever it is installed; everything else as shipped.
  writeFileSync(copy, text.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`));

  it('passes systemd-analyze verify without an error or a warning', () => {
    const run = spawnSync(ANALYZE, ['verify', copy], { encoding: 'utf8' });
    expect({ status: run.status, output: `${run.stdout}${run.stderr}`.trim() }).toEqual({ status: 0, output: '' });
  });

  it('is refused by the same check when a directive is misspelt (the check can fail)', () => {
    const bad = join(dir, 'misspelt.service');
    writeFileSync(bad, text.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`).replace('ProtectSystem=strict', 'ProtectSystm=strict'));
    const run = spawnSync(ANALYZE, ['verify', bad], { encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`).toContain("Unknown key 'ProtectSystm'");
  });

  it('lets node start under its system call filter: the groups it allows hold pkey_alloc, and a call left out fails with EPERM, not SIGSYS', () => {
    // Node 20 calls pkey_alloc at every start; systemd 252's @system-service does not hold it, and a
    // filter without SystemCallErrorNumber kills the process with SIGSYS (a restart loop under Restart=on-failure).
    const allowed = text.split('\n').filter((line) => line.startsWith('SystemCallFilter=') && !line.startsWith('SystemCallFilter=~')).flatMap((line) => line.slice('SystemCallFilter='.length).split(/\s+/));
    const calls = spawnSync(ANALYZE, ['syscall-filter', ...allowed], { encoding: 'utf8' }).stdout;
    expect(calls.split('\n').map((line) => line.trim())).toContain('pkey_alloc');
    expect(text.split('\n')).toContain('SystemCallErrorNumber=EPERM');
  });

  it('is hardened: dedicated user, read-only system but the data directory, no new privileges, restart on failure, low exposure', () => {
    for (const line of ['User=petrel', 'ProtectSystem=strict', 'ReadWritePaths=/var/lib/petrel', 'NoNewPrivileges=yes', 'Restart=on-failure', 'RestartPreventExitStatus=2', 'KillSignal=SIGTERM']) {
      expect(text.split('\n'), line).toContain(line);
    }
    expect(text).toMatch(/^ExecStart=\S+ \/opt\/petrel\/dist\/cli\/petrel\.js queue-server --config \S+ --data \/var\/lib\/petrel --log-format json$/m);
    const security = spawnSync(ANALYZE, ['security', '--offline=true', copy], { encoding: 'utf8' });
    const exposure = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(`${security.stdout}${security.stderr}`);
    expect(exposure, `${security.stdout}${security.stderr}`.slice(-500)).not.toBeNull();
    // systemd's scale: 0 (fully hardened) to 10; below 2 it calls "OK".
    expect(Number(exposure![1])).toBeLessThan(2);
  });
});
