/**
 * A sitemap as it crosses the wire (sitemaps.org protocol 0.9): what a fetcher found in one sitemap
 * file, a `<urlset>` of page URLs or a `<sitemapindex>` of further sitemaps, each entry with its
 * `<lastmod>` (ms since epoch, or null). The fetcher parses (fetcher/sitemap-parse.ts), the queue
 * server decides what an entry may be (queue-server/sitemaps/). Bounds: the protocol's own 50,000
 * entries per file, and at most SITEMAP_LIMITS.locChars characters of URLs per file, so a sitemap
 * result stays far below a results post's 64 MiB (the fetcher posts each one on its own).
 */
import { z } from 'zod';

export const SITEMAP_LIMITS = {
  /** Entries per sitemap file (sitemaps.org: "no more than 50,000 URLs"). */
  entries: 50_000,
  /** Characters of `<loc>` text kept per file, summed. */
  locChars: 8 * 1024 * 1024,
  /** Characters of one `<loc>` (the protocol: under 2,048). */
  urlChars: 2048,
} as const;

export const sitemapEntrySchema = z.object({
  loc: z.string().min(1).max(SITEMAP_LIMITS.urlChars),
  lastmod: z.number().int().nonnegative().nullable(),
});
export type SitemapEntry = z.infer<typeof sitemapEntrySchema>;

export const sitemapDataSchema = z.object({
  /** `urlset`: page URLs; `index`: a sitemap index, its entries are sitemaps; `none`: neither root element (not a sitemap). */
  kind: z.enum(['urlset', 'index', 'none']),
  entries: z.array(sitemapEntrySchema).max(SITEMAP_LIMITS.entries),
  /** Entries were left out: the file had more than the bounds allow, or its body was cut. */
  truncated: z.boolean(),
});
export type SitemapData = z.infer<typeof sitemapDataSchema>;

/**
 * A `<lastmod>` value (W3C Datetime: `2024-06-15`, `2024-06-15T10:00:00+02:00`, ...) in ms since epoch,
 * or null when it is not one. A date alone is midnight UTC.
 */
export function parseLastmod(text: string): number | null {
  const value = text.trim();
  if (value.length < 10 || value.length > 40 || !/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(value)) return null;
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  return Number.isFinite(ms) && ms >= 0 ? ms : null;
}
