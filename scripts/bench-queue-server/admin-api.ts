/** The admin bearer-token routes the benchmarks call: inject URLs, read the status. */

export interface InjectAnswer {
  admitted: number;
  rejected: { url: string; code: string; reason: string }[];
}

/** POST /api/control/inject (at most 1,000 URLs: the route's bound). */
export async function inject(serverUrl: string, adminToken: string, urls: readonly string[]): Promise<InjectAnswer> {
  const response = await fetch(new URL('/api/control/inject', serverUrl), {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ urls }),
  });
  if (!response.ok) throw new Error(`POST /api/control/inject answered ${response.status}: ${(await response.text()).slice(0, 500)}`);
  return (await response.json()) as InjectAnswer;
}

/** The part of GET /api/status the benchmarks read. */
export interface StatusFigures {
  urlsByStatus: Record<string, number>;
  frontierSize: number;
  waitingUrls: number;
  origins: number;
  pagesFetched: number;
  urlsDiscovered: number;
  errorsByCode: Record<string, number>;
  /** The seen-set's counters (recentHits since the recently seen URLs came; absent in older builds). */
  seenSet?: { exactLookups: number; recentHits?: number; bloomFalsePositives: number };
}

export async function status(serverUrl: string, adminToken: string): Promise<StatusFigures> {
  const response = await fetch(new URL('/api/status', serverUrl), { headers: { authorization: `Bearer ${adminToken}` } });
  if (!response.ok) throw new Error(`GET /api/status answered ${response.status}`);
  return (await response.json()) as StatusFigures;
}

/** The queue server's memory as its GET /metrics says (prom-client's process metrics), MiB. */
export interface MemoryMetrics {
  /** V8's heap: what it holds (live and garbage not yet collected) and what it has taken. */
  heapUsedMiB: number;
  heapTotalMiB: number;
  /** Memory outside the heap that V8 knows of: Buffers, typed arrays and their backing stores. */
  externalMiB: number;
}

export async function memoryMetrics(serverUrl: string, adminToken: string): Promise<MemoryMetrics> {
  const response = await fetch(new URL('/metrics', serverUrl), { headers: { authorization: `Bearer ${adminToken}` } });
  if (!response.ok) throw new Error(`GET /metrics answered ${response.status}`);
  const text = await response.text();
  const gauge = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    if (line === undefined) throw new Error(`GET /metrics has no ${name}`);
    return Math.round(Number(line.slice(name.length + 1).trim().split(' ')[0]) / (1024 * 1024));
  };
  return { heapUsedMiB: gauge('nodejs_heap_size_used_bytes'), heapTotalMiB: gauge('nodejs_heap_size_total_bytes'), externalMiB: gauge('nodejs_external_memory_bytes') };
}

/** URLs the crawl database holds, by the status's counts. */
export function knownUrlsOf(figures: StatusFigures): number {
  return Object.values(figures.urlsByStatus).reduce((sum, n) => sum + n, 0);
}
