/**
 * SIGHUP (the terminal went away: an SSH session closed) stops a daemon in order, as SIGTERM does:
 * the last commit, the `stopped` event, exit 0 and the data directory's lock released. Node's default
 * was to die on the spot (status 129), the lock left behind.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { assertBuilt, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

describe('SIGHUP', () => {
  it('stops a queue server in order: exit 0, the stopped event, the lock released', async () => {
    assertBuilt();
    const dataDir = join(tempDir('sighup'), 'data');
    const server = startPetrel(['queue-server', '--data', dataDir, '--port', '0']);
    await waitForEvent(server, 'listening');
    expect(existsSync(join(dataDir, 'LOCK'))).toBe(true);
    server.kill('SIGHUP');
    const { code, signal, stdout } = await server.output;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('"event":"stopped"');
    expect(existsSync(join(dataDir, 'LOCK'))).toBe(false);
  });
});
