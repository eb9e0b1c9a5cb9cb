/**
 * Live progress for `petrel crawl`: follows the queue server's status stream (server-sent events)
 * and keeps one line on the terminal up to date; without a terminal, prints a line every 5 s.
 * The stream is asked for with a signed request (fetcher/queue-client.ts, keyed by fetcher.token),
 * so the secret never crosses the wire, as for the fetchers.
 */
import { QueueClient } from '../fetcher/queue-client.js';
import type { CrawlStatus } from '../queue-server/crawl/crawl-status.js';

/** The sender id progress signs as (the queue server records no fetcher for a status request). */
const PROGRESS_ID = 'petrel-crawl-progress';

export function formatProgress(status: Pick<CrawlStatus, 'elapsedMs' | 'pagesFetched' | 'pagesPerSecond' | 'notModified' | 'errors' | 'robotsDenied' | 'frontierSize' | 'itemsLeased' | 'fetchers' | 'urlsDiscovered'>): string {
  const seconds = (status.elapsedMs / 1000).toFixed(1);
  return (
    `[${seconds}s] fetched ${status.pagesFetched} (${status.pagesPerSecond}/s), 304 ${status.notModified}, ` +
    `errors ${status.errors}, robots-denied ${status.robotsDenied}, discovered ${status.urlsDiscovered}, ` +
    `queued ${status.frontierSize}, leased ${status.itemsLeased}, fetchers ${status.fetchers.length}`
  );
}

export function followProgress(serverUrl: string, token: string, out: NodeJS.WriteStream): () => void {
  const controller = new AbortController();
  const tty = out.isTTY === true;
  let lastPrinted = 0;
  let latest: string | null = null;
  const show = (line: string) => {
    latest = line;
    const now = Date.now();
    if (tty) out.write(`\r\x1b[K${line}`);
    else if (now - lastPrinted >= 5000) {
      lastPrinted = now;
      out.write(`${line}\n`);
    }
  };
  void (async () => {
    // The client retries until the stream begins (a queue server still starting); the stream then
    // ends when the queue server exits. Progress is best effort.
    const client = new QueueClient({ serverUrl, token, signal: controller.signal, connections: 1 });
    try {
      let buffer = '';
      for await (const chunk of await client.openStatusStream(PROGRESS_ID)) {
        buffer += chunk.toString();
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event);
          if (event.startsWith('event: status') && data !== null) show(formatProgress(JSON.parse(data[1]!) as CrawlStatus));
        }
      }
    } catch {
      // Stopped, or the queue server went away.
    } finally {
      await client.close().catch(() => undefined);
    }
  })();
  return () => {
    controller.abort();
    if (tty && latest !== null) out.write('\n');
  };
}
