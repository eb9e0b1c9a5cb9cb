/**
 * Crawl control as the API offers it: pause, resume, stop, inject URLs, start a crawl. The bearer-token
 * routes (app.ts, for programs) and the admin page's session routes (admin/routes.ts) both call
 * these, so a control behaves the same whichever way it is reached. Bodies are validated here; a bad
 * one is a 400 naming the field, and changes nothing.
 */
import { z } from 'zod';
import { LIMITS } from '../../shared/protocol.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { crawlConfigSchema, formSettings } from '../crawl-config.js';
import type { CrawlService, DisplayState } from '../crawl/crawl-service.js';
import { HttpError, parseBody } from './http-errors.js';

export const CONTROL_ACTIONS = ['pause', 'resume', 'stop', 'inject', 'crawl'] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];

const MAX_URLS = 1000;

const injectSchema = z.object({ urls: z.array(z.string().min(1).max(LIMITS.urlChars)).min(1).max(MAX_URLS) }).strict();

/**
 * The settings a person may choose when starting a crawl: the admin form's (crawl-config.ts, `form`),
 * with their bounds. A field left out keeps the queue server's current value (no schema defaults here,
 * or they would silently replace it); null means no limit where the setting has one.
 */
const crawlStartSchema = z
  .object({
    ...Object.fromEntries(formSettings().map(([name, setting]) => [name, (setting.schema as z.ZodType<unknown>).optional()])),
    seeds: z.array(z.string().min(1).max(LIMITS.urlChars)).max(MAX_URLS),
  })
  .strict();

/**
 * What a cluster member (cluster/cluster-member.ts) adds to the controls: pause, resume, stop and a
 * crawl start reach every member (cluster/cluster-control.ts); an inject's URLs of other partitions
 * go to their owners (cluster/cluster-inject.ts).
 */
export interface ClusterPort {
  publishControl(action: 'pause' | 'resume' | 'stop'): Promise<number>;
  publishCrawl(body: unknown): Promise<number>;
  injectElsewhere(urls: readonly string[]): Promise<{ own: string[]; forwarded: number }>;
}

export type ControlResult =
  | { state: DisplayState }
  | { state: DisplayState; dropped: number }
  /** `forwarded`: in a cluster, URLs handed to the owners of their hosts' partitions (injected there). */
  | { state: DisplayState; admitted: number; rejected: { url: string; code: string; reason: string }[]; forwarded?: number }
  /** A crawl started: URLs queued now (seeds and known URLs not fetched yet), and waiting for a later time. */
  | { state: DisplayState; queued: number; waiting: number };

/** Runs one control with its (unvalidated) JSON body; rejects with HttpError for bad input or a refused action. */
export async function runControl(service: CrawlService, action: ControlAction, body: unknown, cluster?: ClusterPort): Promise<ControlResult> {
  switch (action) {
    case 'pause':
      service.pause();
      await cluster?.publishControl(action);
      return { state: service.displayState() };
    case 'resume':
      service.resume();
      await cluster?.publishControl(action);
      return { state: service.displayState() };
    case 'stop': {
      const dropped = service.stop();
      await cluster?.publishControl(action);
      return { state: service.displayState(), dropped };
    }
    case 'inject': {
      const { urls } = parseBody(injectSchema, body);
      // In a cluster, other partitions' URLs are in their owners' streams before this answer.
      const split = cluster === undefined ? { own: urls, forwarded: null } : await cluster.injectElsewhere(urls);
      const result = split.own.length > 0 ? service.inject(split.own) : { admitted: 0, rejected: [] };
      // Answered once the admitted URLs are durable (the group commit), as results are: an inject that
      // was answered survives a kill, and the crawl database's stage stays one commit window.
      if (result.admitted > 0) await service.durable();
      return { state: service.displayState(), ...result, ...(split.forwarded === null ? {} : { forwarded: split.forwarded }) };
    }
    case 'crawl': {
      const result = startCrawl(service, body);
      await cluster?.publishCrawl(body);
      return result;
    }
  }
}

function startCrawl(service: CrawlService, body: unknown): ControlResult {
  const input = parseBody(crawlStartSchema, body);
  if (input.seeds.length === 0) throw new HttpError(400, 'invalid-body', 'seeds: give at least one URL');
  input.seeds.forEach((seed, index) => {
    const result = normalizeUrl(seed);
    if (!result.ok) throw new HttpError(400, 'invalid-seed', `seeds.${index}: not a crawlable http(s) URL (${result.code})`);
  });
  const current = service.config;
  const config = crawlConfigSchema.parse({ ...current, ...input });
  let loaded;
  try {
    loaded = service.restart(config);
  } catch (error) {
    throw new HttpError(409, 'crawl-running', (error as Error).message);
  }
  return { state: service.displayState(), queued: loaded.queued, waiting: loaded.waiting };
}
