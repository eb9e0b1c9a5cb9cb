/**
 * The queue server's status and control API as a program uses it: over HTTP, with the admin token as
 * bearer token (README "Admin page"). Only the fields the tests read are typed.
 */
import { readFileSync } from 'node:fs';

export interface QueueStatus {
  readonly duplicateResults: number;
  readonly lateResults: number;
  readonly itemsLeased: number;
  /** URLs queued, not out on lease. */
  readonly frontierSize: number;
  readonly pagesFetched: number;
  /** Results applied (requests made), robots.txt included. */
  readonly requests: number;
  readonly displayState: string;
  /** Every fetcher heard from, by its id: a claim registers its fetcher before it parks. */
  readonly fetchers: readonly { readonly id: string; readonly name: string }[];
}

/** The admin token of a queue server, from the file its `listening` event names. */
export function adminTokenOf(listening: Record<string, unknown>): string {
  return readFileSync(String(listening.adminTokenFile), 'utf8').trim();
}

/** GET /api/status with the admin token. */
export async function readStatus(serverUrl: string, adminToken: string): Promise<QueueStatus> {
  const response = await fetch(new URL('/api/status', serverUrl), { headers: { authorization: `Bearer ${adminToken}` }, signal: AbortSignal.timeout(30_000) });
  if (!response.ok) throw new Error(`GET /api/status answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as QueueStatus;
}

/** POST /api/control/inject with the admin token: the URLs join the crawl at depth 0 (not as seeds). */
export async function inject(serverUrl: string, adminToken: string, urls: readonly string[]): Promise<{ admitted: number }> {
  const response = await fetch(new URL('/api/control/inject', serverUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ urls }),
  });
  if (!response.ok) throw new Error(`POST /api/control/inject answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as { admitted: number };
}
