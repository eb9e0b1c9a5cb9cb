/**
 * What one URL of the test web serves: the single description that both the server (which turns it into
 * bytes, see `response.ts`) and the model (which turns it into a `ModelPage`, see `site-model.ts`) read,
 * so the ground truth cannot drift from what is served.
 */
import type { HtmlDoc } from './html.js';
import { LAST_MODIFIED } from './response.js';

export interface HtmlResource {
  kind: 'html';
  status: number;
  doc: HtmlDoc;
  /** Extra response headers, e.g. Retry-After on a 503. */
  headers: Readonly<Record<string, string>>;
  /** How long the server waits before answering, ms. */
  delayMs: number;
  /** The Last-Modified of a 200 (IMF-fixdate): LAST_MODIFIED, or later for pages changed by a generation. */
  lastModified: string;
}

export interface RedirectResource {
  kind: 'redirect';
  status: 301 | 302 | 303 | 307 | 308;
  /** The Location header as sent (may be relative). */
  location: string;
}

export interface FileResource {
  kind: 'file';
  status: number;
  contentType: string;
  body: Buffer;
}

export type Resource = HtmlResource | RedirectResource | FileResource;

/**
 * One host's content: `pathAndQuery` is canonical (see `canonical.ts`), e.g. '/section-1/page-2.html'.
 * `generation` is the web's generation (see `generations.ts`); only normal hosts look at it.
 */
export interface HostSite {
  /** What the path serves in `generation`: for a flaky page, what it serves once it has recovered. */
  resolve(pathAndQuery: string, generation: number): Resource;
  /** How many requests to the path answer 500 in `generation` before it recovers; absent means none. */
  flakyFailures?(pathAndQuery: string, generation: number): number;
}

export function htmlPage(doc: HtmlDoc, opts: { status?: number; headers?: Record<string, string>; delayMs?: number } = {}): HtmlResource {
  return { kind: 'html', status: opts.status ?? 200, doc, headers: opts.headers ?? {}, delayMs: opts.delayMs ?? 0, lastModified: LAST_MODIFIED };
}

export function textFile(text: string, opts: { status?: number; contentType?: string } = {}): FileResource {
  return {
    kind: 'file',
    status: opts.status ?? 200,
    contentType: opts.contentType ?? 'text/plain; charset=utf-8',
    body: Buffer.from(text, 'utf8'),
  };
}
