/**
 * Inject in a cluster: URLs given to any member (API or admin page) reach the owner of each URL's
 * host, which injects them itself (its frontier, its crawl database, its refusals), as if it had been
 * given them. The member given the inject keeps its own partition's URLs and appends the others to
 * their partitions' streams as `inject` entries (link-inbox.ts reads them, injects, commits, then
 * acknowledges), before it answers: an answered inject is in Redis (appendfsync always) or here.
 *
 * A forwarded URL is not checked by the member given it (the owner's answer is asynchronous): the
 * answer counts it as `forwarded`, and the owner logs what it refused. A URL that does not parse
 * stays here, to be refused with its reason in the answer.
 */
import { pipelinePerGroup, type RedisClient as Redis } from './redis-connection.js';
import type { ClusterKeys } from '../../shared/cluster-keys.js';
import { normalizeUrl } from '../../shared/url-normalize.js';
import { partitionOfUrl } from './partition.js';

/** The field that marks a stream entry as an inject (link entries have none). */
export const INJECT_KIND = 'inject';

export interface InjectSplit {
  /** This partition's URLs, and those that do not parse (refused here with their reason). */
  readonly own: string[];
  readonly elsewhere: Map<number, string[]>;
}

export function splitInject(urls: readonly string[], own: number, partitions: number): InjectSplit {
  const split: InjectSplit = { own: [], elsewhere: new Map() };
  for (const url of urls) {
    const normalized = normalizeUrl(url);
    const partition = normalized.ok ? partitionOfUrl(normalized.url, partitions) : own;
    if (partition === own) split.own.push(url);
    else {
      let list = split.elsewhere.get(partition);
      if (list === undefined) split.elsewhere.set(partition, (list = []));
      list.push(url);
    }
  }
  return split;
}

/** Appends the other partitions' URLs to their streams; resolves once Redis acknowledged all of them. */
export async function forwardInject(redis: Redis, keys: ClusterKeys, from: number, elsewhere: ReadonlyMap<number, readonly string[]>): Promise<number> {
  if (elsewhere.size === 0) return 0;
  let count = 0;
  for (const urls of elsewhere.values()) count += urls.length;
  await pipelinePerGroup(redis, [...elsewhere], (pipeline, [partition, urls]) => {
    pipeline.xadd(keys.links(partition), '*', 'from', String(from), 'kind', INJECT_KIND, 'urls', JSON.stringify(urls));
  });
  return count;
}
