/**
 * Injected URLs are queued, not made seeds (so an inject costs the same however many came before it),
 * yet their origins keep what seeds' hosts have: the fetcher may reach them on a private address
 * (`allowPrivateAddresses` in the schedule). That trust is kept in frontier.btree with the queued URLs,
 * so it survives a kill -9 of the queue server, and a new crawl started from the API ends it. Real
 * processes, signed claims over HTTP; nothing is fetched (the hosts are 127.0.0.1:9 and 127.0.0.5:9,
 * never connected to: no fetcher runs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { QueueClient } from '../../fetcher/queue-client.js';
import { PROTOCOL_VERSION, type ClaimRequest, type Schedule } from '../../shared/protocol.js';
import { adminTokenOf, inject } from '../support/admin-api.js';
import { assertBuilt, freePort, killStartedPetrels, startPetrel, tempDir, waitForEvent } from '../support/petrel-process.js';

const SEED = 'http://127.0.0.1:9/';
const OTHER = 'http://127.0.0.5:9';
const STATS = { rssBytes: 0, inFlight: 0, pagesFetched: 0, errors: 0, bytesDownloaded: 0 };

/** Claims until the origin's robots.txt slot comes out; returns that slot. */
async function slotOf(serverUrl: string, tokenFile: string, origin: string, fetcherId: string): Promise<Schedule['slots'][number]> {
  const client = new QueueClient({ serverUrl, token: readFileSync(tokenFile, 'utf8').trim(), signal: new AbortController().signal });
  try {
    const request: ClaimRequest = { protocolVersion: PROTOCOL_VERSION, fetcherId, name: fetcherId, capacity: 16, waitMs: 2000, stats: STATS };
    for (let attempt = 0; attempt < 10; attempt++) {
      const answer = await client.claim(request);
      if (answer.kind !== 'schedule') continue;
      const slot = answer.schedule.slots.find((candidate) => candidate.origin === origin);
      if (slot !== undefined) return slot;
    }
    throw new Error(`no slot of ${origin} was handed out`);
  } finally {
    await client.close();
  }
}

async function control(serverUrl: string, token: string, action: string, body: unknown = {}): Promise<unknown> {
  const response = await fetch(new URL(`/api/control/${action}`, serverUrl), { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (!response.ok) throw new Error(`${action} answered ${response.status}: ${await response.text()}`);
  return response.json();
}

describe('an injected URL', () => {
  afterAll(() => killStartedPetrels());

  it('is queued without joining the seeds, and its origin may be on a private address, also after a kill -9, until a new crawl', async () => {
    assertBuilt();
    const dataDir = join(tempDir('inject-trust'), 'data');
    const port = await freePort();
    const args = ['queue-server', '--data', dataDir, '--port', String(port), '--seed', SEED, '--scope', 'any', '--lease-ms', '2s'];
    let server = startPetrel(args);
    let listening = await waitForEvent(server, 'listening');
    const serverUrl = String(listening.url);
    const token = adminTokenOf(listening);
    expect(await inject(serverUrl, token, [`${OTHER}/page.html`])).toMatchObject({ admitted: 1 });
    const saved = JSON.parse(readFileSync(join(dataDir, 'crawl.json'), 'utf8')) as { settings: { seeds: string[] } };
    expect(saved.settings.seeds).toEqual([SEED]);
    expect((await slotOf(serverUrl, String(listening.tokenFile), OTHER, 'first'))).toMatchObject({ allowPrivateAddresses: true, items: [{ kind: 'robots' }] });

    // The inject was answered, so its commit is on disk: the trust is too.
    server.kill('SIGKILL');
    await server.output;
    server = startPetrel(args);
    listening = await waitForEvent(server, 'listening');
    expect((await slotOf(serverUrl, String(listening.tokenFile), OTHER, 'after-kill'))).toMatchObject({ allowPrivateAddresses: true, items: [{ kind: 'robots' }] });

    // A new crawl with the same seed: the URL is queued again (known, unfetched, in scope), not trusted.
    const newToken = adminTokenOf(listening);
    await control(serverUrl, newToken, 'stop');
    expect(await control(serverUrl, newToken, 'crawl', { seeds: [SEED] })).toMatchObject({ state: 'running' });
    expect((await slotOf(serverUrl, String(listening.tokenFile), OTHER, 'new-crawl'))).toMatchObject({ allowPrivateAddresses: false });
    server.kill('SIGTERM');
    await server.output;
  }, 60_000);
});
