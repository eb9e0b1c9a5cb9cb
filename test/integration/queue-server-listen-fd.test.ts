/**
 * `petrel queue-server --listen-fd 3`, as `petrel crawl` starts it: the socket is bound and listening
 * before the queue server process exists, so a client that connects and sends its request at once is
 * not refused: the request waits in the socket's backlog and is answered once the queue server is up.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { loadOrCreateToken } from '../../queue-server/auth/tokens.js';
import { dataPath, ensureDataDir } from '../../queue-server/storage/data-dir.js';
import { ROUTES } from '../../shared/protocol.js';
import { assertBuilt, PETREL_BIN, tempDir, waitForEvent } from '../support/petrel-process.js';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function listening(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

describe('a queue server on an inherited listening socket', () => {
  it('answers a request sent before it was ready, on the port of the socket it was given', async () => {
    assertBuilt();
    const dir = tempDir('listen-fd');
    dirs.push(dir);
    const data = join(dir, 'data');
    ensureDataDir(data);
    loadOrCreateToken(dataPath(data, 'token'));
    // The status takes the admin token as a bearer token (fetchers sign instead).
    const token = loadOrCreateToken(dataPath(data, 'adminToken'));
    const socket = await listening();
    const { port } = socket.address() as { port: number };
    const fd = (socket as unknown as { _handle: { fd: number } })._handle.fd;
    const child = spawn(process.execPath, [PETREL_BIN, 'queue-server', '--data', data, '--listen-fd', '3', '--once', '--seed', 'http://127.0.0.1:9/x.html'], {
      stdio: ['ignore', 'pipe', 'pipe', fd],
    });
    children.push(child);
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    const events: string[] = [];
    const listened = waitForEvent(child, 'listening').then((event) => {
      events.push('listening');
      return event;
    });
    // Sent while the child is still loading: with a port that nobody listened on yet, this would be refused.
    const answer = await request(`http://127.0.0.1:${port}${ROUTES.status}`, { headers: { authorization: `Bearer ${token}` } });
    events.push('answered');
    const status = (await answer.body.json()) as { state: string };
    expect(answer.statusCode).toBe(200);
    expect(status.state).toBe('running');
    const event = await listened;
    expect(event.url).toBe(`http://127.0.0.1:${port}`);
    expect(events).toEqual(['listening', 'answered']);
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  });
});
