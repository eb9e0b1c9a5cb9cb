/**
 * A fetcher given the wrong scheme for its queue server says so and stops, rather than retrying
 * forever: an http:// URL for a queue server that serves HTTPS (it closes plain HTTP requests without
 * an answer, "other side closed") fails with a message to use https://. The reverse case (an https://
 * URL for a plain HTTP server) is in fleet-auth.test.ts. A real TLS queue server with a fresh openssl
 * pair, and a real `petrel fetcher` process.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startQueueServer, type RunningQueueServer } from '../../queue-server/daemon.js';
import { assertBuilt, killStartedPetrels, startPetrel, tempDir } from '../support/petrel-process.js';

const HOST = '127.0.0.1';
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;

describe.skipIf(!hasOpenssl)('a fetcher pointed at an HTTPS queue server with an http:// URL', () => {
  let dir: string;
  let certFile: string;
  let server: RunningQueueServer;

  beforeAll(async () => {
    assertBuilt();
    dir = tempDir('wrong-scheme');
    certFile = join(dir, 'cert.pem');
    const made = spawnSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', certFile,
      '-days', '2', '-subj', `/CN=${HOST}`, '-addext', `subjectAltName=IP:${HOST}`,
    ], { encoding: 'utf8' });
    if (made.status !== 0) throw new Error(`openssl could not make a test certificate: ${made.stderr}`);
    server = await startQueueServer({
      dataDir: join(dir, 'data'), host: HOST, port: 0, tls: { cert: readFileSync(certFile), key: readFileSync(join(dir, 'key.pem')) },
      crawl: { seeds: ['http://127.0.0.1:9/'], bloomCapacity: 1000 },
    });
  });

  afterAll(async () => {
    killStartedPetrels();
    await server?.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('fails at once with a message that says to use https://, instead of retrying forever', async () => {
    expect(server.url).toMatch(/^https:/);
    const plain = server.url.replace(/^https:/, 'http:');
    const fetcher = startPetrel(['fetcher', '--server', plain, '--token-file', server.tokenFile, '--name', 'wrong-scheme']);
    // Today's fetcher would retry "other side closed" until killed; this bound only ends such a run.
    const timer = setTimeout(() => fetcher.kill('SIGKILL'), 20_000);
    const finished = await fetcher.output;
    clearTimeout(timer);
    expect(finished.signal).toBeNull();
    expect(finished.code).toBe(1);
    expect(finished.stderr).toContain(`the queue server at ${plain} speaks TLS`);
    expect(finished.stderr).toContain(`use --server ${server.url}`);
    expect(server.service.status().fetchers).toEqual([]);
  });
});
