/**
 * A real CrawlService on real store files in a temporary directory, started, for tests that drive the
 * service or an app around it in-process. `close()` stops the service, closes the stores and removes
 * the directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CacheStore } from '../../queue-server/cache/cache-store.js';
import { Crawl } from '../../queue-server/crawl/crawl.js';
import { CrawlService } from '../../queue-server/crawl/crawl-service.js';
import { PageArchive } from '../../queue-server/crawl/page-archive.js';
import { crawlConfigSchema, fetchScheduleOf } from '../../queue-server/crawl-config.js';
import { CrawlDb } from '../../queue-server/crawldb/crawl-db.js';

export interface TempCrawlService {
  readonly service: CrawlService;
  close(): void;
}

/** `settings`: crawl settings as the schema takes them (defaults for the rest); `clock`: the service's clock. */
export function tempCrawlService(name: string, settings: Record<string, unknown>, clock?: () => number): TempCrawlService {
  const dir = mkdtempSync(join(tmpdir(), `petrel-${name}-`));
  const archive = PageArchive.open(join(dir, 'pages.jsonl'));
  const cache = CacheStore.open(join(dir, 'cache.btree'));
  const crawlDb = CrawlDb.open(join(dir, 'crawldb.btree'));
  const config = crawlConfigSchema.parse(settings);
  const service = new CrawlService(new Crawl(config, { archive, cache, crawlDb, robots: null, warc: null }, fetchScheduleOf(config), null), clock === undefined ? undefined : { clock });
  service.start();
  return {
    service,
    close() {
      service.close();
      archive.close();
      cache.close();
      crawlDb.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
