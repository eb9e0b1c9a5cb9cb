/**
 * What one URL of the test web serves: the single description that both the server (which turns it into
 * bytes, see `response.ts`) and the model (which turns it into a `ModelPage`, see `site-model.ts`) read,
 * so the ground truth cannot drift from what is served.
 */
import type { HtmlDoc } from './html.js';

export interface HtmlResource {
  kind: 'html';
  status: number;
  doc: HtmlDoc;
  /** Extra response headers, e.g. Retry-After on a 503. */
  headers: Readonly<Record<string, string>>;
  /** How long the server waits before answering, ms. */
  delayMs: number;
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

/** One host's content: `pathAndQuery` is canonical (see `canonical.ts`), e.g. '/section-1/page-2.html'. */
export interface HostSite {
  resolve(pathAndQuery: string): Resource;
}

export function htmlPage(doc: HtmlDoc, opts: { status?: number; headers?: Record<string, string>; delayMs?: number } = {}): HtmlResource {
  return { kind: 'html', status: opts.status ?? 200, doc, headers: opts.headers ?? {}, delayMs: opts.delayMs ?? 0 };
}

export function textFile(text: string, opts: { status?: number; contentType?: string } = {}): FileResource {
  return {
    kind: 'file',
    status: opts.status ?? 200,
    contentType: opts.contentType ?? 'text/plain; charset=utf-8',
    body: Buffer.from(text, 'utf8'),
  };
}
