/**
 * Verifying a crawl database: the B-Tree's own check (checksums, order, balance, free list), then
 * every record: it decodes, it sits under the hash of its own URL, its URL is normalized, its fields
 * are in range, and a duplicate points at a URL the database knows; the records of the insert log
 * beside it (storage/insert-log.ts) with the tree's. Read-only.
 */
import { urlHash, urlHashHex } from '../../shared/url-hash.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { BTreeError, type CheckFault } from '../btree/index.js';
import { InsertLogError } from '../storage/insert-log.js';
import { CrawlDbReader } from './crawl-db-reader.js';
import { CRAWL_STATUSES, decodeCrawlDbRecord, type CrawlDbRecord, type CrawlDbStatus } from './record.js';

export interface CrawlDbFault {
  readonly code: string;
  readonly key?: string;
  readonly message: string;
}

export interface CrawlDbReport {
  /** No fault (warnings may remain). */
  readonly ok: boolean;
  readonly records: number;
  readonly byStatus: Record<CrawlDbStatus, number>;
  readonly faults: CrawlDbFault[];
  /** Repairable trouble that leaves the database usable (a damaged spare meta page: btree/check.ts). */
  readonly warnings: CrawlDbFault[];
}

const MAX_FAULTS = 1000;

export function checkCrawlDb(path: string): CrawlDbReport {
  const byStatus = Object.fromEntries(CRAWL_STATUSES.map((status) => [status, 0])) as Record<CrawlDbStatus, number>;
  let tree: CrawlDbReader;
  try {
    tree = CrawlDbReader.open(path);
  } catch (error) {
    // Too damaged to open (both meta pages, the free list): that is the report, not a crash.
    if (error instanceof BTreeError && error.code === 'BTREE_CORRUPT') {
      return { ok: false, records: 0, byStatus, faults: [{ code: 'btree-page_corrupt', message: error.message }], warnings: [] };
    }
    if (error instanceof InsertLogError) return { ok: false, records: 0, byStatus, faults: [{ code: 'insert-log-corrupt', message: error.message }], warnings: [] };
    throw error;
  }
  try {
    const asFault = (fault: CheckFault): CrawlDbFault => ({ code: `btree-${fault.code.toLowerCase()}`, message: `${fault.message}${fault.page === undefined ? '' : ` (page ${fault.page})`}` });
    const checked = tree.tree.check();
    const faults: CrawlDbFault[] = checked.faults.map(asFault);
    const warnings = checked.warnings.map(asFault);
    const duplicateTargets: { key: string; target: string }[] = [];
    const keys = new Set<string>();
    let records = 0;
    const add = (fault: CrawlDbFault) => {
      if (faults.length < MAX_FAULTS) faults.push(fault);
    };
    try {
      for (const [key, bytes] of tree.entries()) {
        records++;
        const hex = urlHashHex(key);
        keys.add(hex);
        let record: CrawlDbRecord;
        try {
          record = decodeCrawlDbRecord(bytes);
        } catch (error) {
          add({ code: 'undecodable', key: hex, message: (error as Error).message });
          continue;
        }
        byStatus[record.status]++;
        for (const fault of recordFaults(hex, record)) add(fault);
        if (record.status === 'duplicate' && record.duplicateOf !== null) duplicateTargets.push({ key: hex, target: record.duplicateOf });
      }
    } catch (error) {
      // A damaged page ends the walk over the records; the B-Tree check above already named it.
      if (!(error instanceof BTreeError) && !(error instanceof InsertLogError)) throw error;
      add({ code: 'records-unreadable', message: `the records after the first ${records} cannot be read: ${error.message}` });
    }
    for (const { key, target } of duplicateTargets) {
      if (!keys.has(target)) add({ code: 'dangling-duplicate', key, message: `duplicate of ${target}, which the database does not know` });
    }
    return { ok: faults.length === 0, records, byStatus, faults, warnings };
  } finally {
    tree.close();
  }
}

/** Faults of one record on its own. Pure. */
export function recordFaults(key: string, record: CrawlDbRecord): CrawlDbFault[] {
  const faults: CrawlDbFault[] = [];
  const normalized = normalizeUrl(record.url);
  if (!normalized.ok || normalized.url !== record.url) faults.push({ code: 'url-not-normalized', key, message: `stored URL is not in normal form: ${record.url.slice(0, 200)}` });
  if (urlHashHex(urlHash(record.url)) !== key) faults.push({ code: 'wrong-key', key, message: `record of ${record.url.slice(0, 200)} is stored under another URL's hash` });
  if (!Number.isInteger(record.depth) || record.depth < 0) faults.push({ code: 'bad-depth', key, message: `depth ${record.depth}` });
  if (!Number.isFinite(record.nextFetchAt)) faults.push({ code: 'bad-next-fetch', key, message: `next fetch at ${record.nextFetchAt}` });
  if (!(record.fetchIntervalMs > 0)) faults.push({ code: 'bad-interval', key, message: `fetch interval ${record.fetchIntervalMs}` });
  if (!Number.isFinite(record.score)) faults.push({ code: 'bad-score', key, message: `score ${record.score}` });
  if (record.status === 'unfetched' && record.lastFetchAt !== null) faults.push({ code: 'unfetched-but-fetched', key, message: 'status unfetched with a last fetch time' });
  if ((record.status === 'fetched' || record.status === 'notmodified') && record.lastFetchAt === null) faults.push({ code: 'fetched-never', key, message: `status ${record.status} without a fetch time` });
  if (record.status === 'duplicate' && record.duplicateOf === null) faults.push({ code: 'duplicate-of-nothing', key, message: 'status duplicate without the URL it duplicates' });
  if (record.duplicateOf === key) faults.push({ code: 'duplicate-of-itself', key, message: 'a page marked as a duplicate of itself' });
  return faults;
}
