/**
 * The crawl's settings kept in the data directory (`crawl.json`), so that the next `petrel start`,
 * `petrel crawl` or `petrel queue-server` on it goes on with the same seeds, scope and limits instead
 * of forgetting them. Written atomically (storage/atomic-file.ts) whenever the settings change: at
 * start, when a crawl is started from the admin page or the API, and when the crawl is stopped (not
 * when URLs are injected: they are queued, not made seeds, crawl/crawl.ts `inject`) (a stopped crawl stays stopped across a restart until a new one is started).
 *
 * What is kept: every setting but `once` (that is the command's mode, not the crawl's). A file that
 * does not parse or holds a value out of bounds is an error naming the file, never silently ignored.
 */
import { z } from 'zod';
import { readJsonFile, writeFileAtomic } from '../storage/atomic-file.js';
import { crawlConfigSchema, type CrawlConfig } from '../crawl-config.js';

export interface SavedCrawl {
  /** Every setting but `once`. */
  readonly settings: Omit<CrawlConfig, 'once'>;
  /** The crawl was stopped (admin page, API): a restart does not take it up again by itself. */
  readonly stopped: boolean;
}

const FORMAT = 1;

const savedSchema = z.object({
  format: z.literal(FORMAT),
  settings: crawlConfigSchema.omit({ once: true }).partial(),
  stopped: z.boolean().default(false),
});

export function readSavedCrawl(path: string): { settings: Partial<Omit<CrawlConfig, 'once'>>; stopped: boolean } | null {
  let raw: unknown;
  try {
    raw = readJsonFile<unknown>(path);
  } catch (error) {
    throw new Error(`cannot read the saved crawl settings ${path}: ${(error as Error).message} (fix or remove the file; the options given on the command line are used then)`);
  }
  if (raw === null) return null;
  const parsed = savedSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`the saved crawl settings ${path} are not valid (${issue.path.join('.')}: ${issue.message}): fix or remove the file`);
  }
  return { settings: parsed.data.settings, stopped: parsed.data.stopped };
}

export function saveCrawl(path: string, config: CrawlConfig, stopped: boolean): void {
  const { once: _once, ...settings } = config;
  writeFileAtomic(path, `${JSON.stringify({ format: FORMAT, settings, stopped }, null, 2)}\n`);
}
