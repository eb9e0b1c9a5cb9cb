/**
 * The link inbox: the owner of a partition reads its stream (links other members found for its
 * hosts) with a consumer group, admits each link as if it had found it itself, and acknowledges the
 * stream entries (XACK, then XDEL: the stream holds only the backlog) only after the group commit
 * that made the admissions durable. Entries read and not acknowledged stay in the group's pending
 * list; a restarted owner reads that list first (id 0), then new entries (>). So a link is never lost
 * between servers, and a partition whose server is down keeps its backlog in Redis until one returns.
 *
 * The group has one consumer, named for the partition, not the process: whoever holds the lease
 * next (membership.ts) inherits the pending list.
 */
import type { RedisClient as Redis } from './redis-connection.js';
import { LINKS_GROUP, type ClusterKeys } from '../../shared/cluster-keys.js';
import { LIMITS } from '../../shared/protocol.js';
import type { ForwardedLink } from './link-router.js';
import { INJECT_KIND } from './cluster-inject.js';

const READ_COUNT = 64;
const BLOCK_MS = 1000;
/** After a failed read or commit, wait this long before reading the pending list again. */
const RETRY_MS = 500;
/**
 * The pending list is read again every this many reads (a read blocks for at most BLOCK_MS: about
 * every 10 s on an idle stream, more often on a busy one, where an empty pending list answers at
 * once). An entry can be pending without any error here: ioredis sends a read again after a
 * reconnect (its auto-resend), so a `>` read whose reply was lost (Redis killed after handing the
 * entry out, a connection reset) comes back as a new read, and the entry it had handed out stays in
 * the pending list. A reconnect also makes the next read the pending list's; this bounds what
 * anything else could leave there.
 */
const PENDING_EVERY_READS = 10;

export interface InboxCounters {
  /** Links read from the stream (a re-read after a failure counts again). */
  received: number;
  /** Of those, admitted as new URLs. */
  admitted: number;
  /** Stream entries refused as malformed (dropped and acknowledged: they can never be admitted). */
  malformed: number;
  /** Entries acknowledged. */
  acked: number;
  /** URLs injected at another member for this partition (cluster-inject.ts), and of those admitted. */
  injected: number;
  injectAdmitted: number;
}

export interface InboxOptions {
  /** A connection of its own: XREADGROUP BLOCK holds it. */
  readonly redis: Redis;
  readonly keys: ClusterKeys;
  readonly partition: number;
  /** Admits links; returns the URLs (normalized) that are now known here (admitted or seen before), for the Bloom filter. */
  readonly admit: (links: readonly ForwardedLink[]) => { admitted: number; known: string[] };
  /** URLs injected at another member (cluster-inject.ts): injected here as given here. */
  readonly inject?: (urls: readonly string[]) => { admitted: number; rejected: readonly { code: string }[] };
  /** Resolves after the next group commit (rejects when it failed). */
  readonly committed: () => Promise<void>;
  /** After the commit, before the acknowledgement: the owner's Bloom bits for these URLs. */
  readonly afterCommit?: (known: readonly string[]) => Promise<void>;
  readonly log: (message: string) => void;
}

type StreamReply = [key: string, entries: [id: string, fields: string[]][]][] | null;

export class LinkInbox {
  readonly #options: InboxOptions;
  #stopped = false;
  #running: Promise<void> | null = null;
  readonly counters: InboxCounters = { received: 0, admitted: 0, malformed: 0, acked: 0, injected: 0, injectAdmitted: 0 };

  constructor(options: InboxOptions) {
    this.#options = options;
  }

  /** Set on every (re)connection of the reader: the next read is the pending list's. */
  #rereadPending = false;

  async start(): Promise<void> {
    const { redis, keys } = this.#options;
    redis.on('ready', () => (this.#rereadPending = true));
    try {
      // From the stream's start ('0'): links forwarded before this partition ever had an owner count.
      await redis.xgroup('CREATE', keys.links(this.#options.partition), LINKS_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).includes('BUSYGROUP')) throw error;
    }
    this.#running = this.#loop();
  }

  async #loop(): Promise<void> {
    const { redis, keys, partition } = this.#options;
    const stream = keys.links(partition);
    const consumer = `partition-${partition}`;
    // The pending list first: entries read before a crash or a failed commit and never acknowledged.
    let from = '0';
    let readsSincePending = 0;
    while (!this.#stopped) {
      if (this.#rereadPending || readsSincePending >= PENDING_EVERY_READS) {
        this.#rereadPending = false;
        from = '0';
      }
      readsSincePending = from === '0' ? 0 : readsSincePending + 1;
      try {
        const reply = (await redis.xreadgroup('GROUP', LINKS_GROUP, consumer, 'COUNT', READ_COUNT, 'BLOCK', BLOCK_MS, 'STREAMS', stream, from)) as StreamReply;
        const entries = reply?.[0]?.[1] ?? [];
        if (entries.length === 0) {
          from = '>';
          continue;
        }
        const links: ForwardedLink[] = [];
        const injected: string[] = [];
        for (const [, fields] of entries) {
          if (kindOf(fields) === INJECT_KIND && this.#options.inject !== undefined) {
            const urls = parseInjectEntry(fields);
            if (urls === null) this.counters.malformed++;
            else injected.push(...urls);
            continue;
          }
          const parsed = parseEntry(fields);
          if (parsed === null) this.counters.malformed++;
          else links.push(...parsed);
        }
        this.counters.received += links.length;
        const outcome = this.#options.admit(links);
        this.counters.admitted += outcome.admitted;
        if (injected.length > 0) {
          const result = this.#options.inject!(injected);
          this.counters.injected += injected.length;
          this.counters.injectAdmitted += result.admitted;
          const codes = [...new Set(result.rejected.map((refusal) => refusal.code))].slice(0, 5).join(', ');
          this.#options.log(`petrel queue-server: injected ${injected.length} URLs given to another member: ${result.admitted} admitted${result.rejected.length > 0 ? `, ${result.rejected.length} refused (${codes})` : ''}`);
        }
        await this.#options.committed();
        await this.#options.afterCommit?.(outcome.known);
        const ids = entries.map(([id]) => id);
        await redis.multi().xack(stream, LINKS_GROUP, ...ids).xdel(stream, ...ids).exec();
        this.counters.acked += ids.length;
      } catch (error) {
        if (this.#stopped) break;
        this.#options.log(`petrel queue-server: reading partition ${partition}'s links: ${(error as Error).message.slice(0, 200)}; reading its pending entries again in ${RETRY_MS} ms`);
        from = '0';
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
      }
    }
  }

  /** Stops reading; entries read and not acknowledged stay pending for the next owner. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#options.redis.disconnect();
    await this.#running?.catch(() => undefined);
  }

  /** Links waiting for this partition in Redis (entries, each up to BATCH_LINKS links). */
  static backlog(redis: Redis, keys: ClusterKeys, partition: number): Promise<number> {
    return redis.xlen(keys.links(partition));
  }
}

function kindOf(fields: readonly string[]): string | null {
  const at = fields.indexOf('kind');
  return at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? null) : null;
}

/** An inject entry's URLs (cluster-inject.ts), bounded as the inject route bounds them; null when malformed. */
export function parseInjectEntry(fields: readonly string[]): string[] | null {
  const at = fields.indexOf('urls');
  const json = at >= 0 && at % 2 === 0 ? fields[at + 1] : undefined;
  if (json === undefined || json.length > 4 * 1024 * 1024) return null;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length > 10_000) return null;
  if (!value.every((url): url is string => typeof url === 'string' && url.length > 0 && url.length <= LIMITS.urlChars)) return null;
  return value;
}

/** A stream entry's links, each checked (an entry comes from another process: bounded, typed); null when malformed. */
export function parseEntry(fields: readonly string[]): ForwardedLink[] | null {
  const at = fields.indexOf('links');
  const json = at >= 0 && at % 2 === 0 ? fields[at + 1] : undefined;
  if (json === undefined || json.length > 4 * 1024 * 1024) return null;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length > 10_000) return null;
  const links: ForwardedLink[] = [];
  for (const item of value) {
    if (!Array.isArray(item) || item.length !== 3) return null;
    const [url, depth, score] = item as unknown[];
    if (typeof url !== 'string' || url.length === 0 || url.length > LIMITS.urlChars) return null;
    if (typeof depth !== 'number' || !Number.isInteger(depth) || depth < 0 || depth > 1_000_000) return null;
    if (typeof score !== 'number' || !Number.isFinite(score) || score < 0) return null;
    links.push([url, depth, score]);
  }
  return links;
}
