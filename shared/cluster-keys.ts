/**
 * The Redis key names of a Petrel cluster, read by queue servers (queue-server/cluster/) and by
 * fetchers that look the queue servers up (fetcher/cluster-directory.ts). One place, so both agree.
 *
 * Every key starts with `petrel:`, then the cluster's name, so one Redis can hold several clusters.
 * The names carry Redis Cluster hash tags (the part in braces picks the hash slot): the cluster-wide
 * keys (meta, leases, member cards, control, events) share the slot of `{<name>}`, so the look-ups
 * that read all leases or all cards at once (MGET) and the control script that touches three keys
 * stay in one slot; each partition's stream and Bloom filter share the slot of `{<name>:<i>}`, so the
 * partitions spread over a sharded Redis's primaries (ARCHITECTURE.md "The cluster past this machine").
 * On a single Redis the braces are only characters.
 */
export interface ClusterKeys {
  /** Hash: `partitions` (K), fixed by the first member; later members must agree. */
  readonly meta: string;
  /** String with a TTL: the member id holding partition i (its lease). */
  lease(partition: number): string;
  /** String with a TTL: a member's JSON card (url, partition, pid, startedAt). */
  member(memberId: string): string;
  /** Stream: links for partition i's hosts, appended by every other member, read by its owner. */
  links(partition: number): string;
  /** Bitmap: partition i's Bloom filter of admitted URLs (set by the owner, probed by senders). */
  bloom(partition: number): string;
  /** Hash: the cluster-wide control (state: active | paused | stopped, when it changed, the last crawl start). */
  readonly control: string;
  /** Hash: member id -> the last crawl start (control version) it applied. */
  readonly controlApplied: string;
  /** Pub/sub channel: membership and control changed (cluster-events.ts); a hint, the keys are the truth. */
  readonly events: string;
}

/** The consumer group that reads a partition's stream; its one consumer is the partition's owner. */
export const LINKS_GROUP = 'owner';

export function clusterKeys(name: string): ClusterKeys {
  checkClusterName(name);
  const prefix = `petrel:{${name}}:`;
  const partitionKey = (partition: number, kind: string) => `petrel:{${name}:${partition}}:${kind}`;
  return {
    meta: `${prefix}meta`,
    lease: (partition) => `${prefix}lease:${partition}`,
    member: (memberId) => `${prefix}member:${memberId}`,
    links: (partition) => partitionKey(partition, 'links'),
    bloom: (partition) => partitionKey(partition, 'bloom'),
    control: `${prefix}control`,
    controlApplied: `${prefix}control-applied`,
    events: `${prefix}events`,
  };
}

/**
 * The key names before hash tags (`petrel:<name>:...`), used once by a member that finds a cluster
 * made by an earlier Petrel on a single Redis (cluster-member.ts renames its keys). Leases and member
 * cards are not among them: they expire within seconds and are taken anew.
 */
export function legacyClusterKeys(name: string): Pick<ClusterKeys, 'meta' | 'links' | 'bloom' | 'control' | 'controlApplied'> {
  checkClusterName(name);
  const prefix = `petrel:${name}:`;
  return {
    meta: `${prefix}meta`,
    links: (partition) => `${prefix}links:${partition}`,
    bloom: (partition) => `${prefix}bloom:${partition}`,
    control: `${prefix}control`,
    controlApplied: `${prefix}control-applied`,
  };
}

function checkClusterName(name: string): void {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) throw new Error(`cluster name must be 1-64 of A-Z a-z 0-9 _ . -, got ${JSON.stringify(name.slice(0, 80))}`);
}

/** What a member publishes about itself (the value of `member(id)`). */
export interface MemberCard {
  readonly memberId: string;
  readonly url: string;
  readonly partition: number;
  readonly pid: number;
  readonly startedAt: number;
  /** The member's counters as of its last heartbeat (GET /api/cluster sums them). */
  readonly status?: MemberStatus;
}

export interface MemberStatus {
  readonly state: string;
  readonly pagesFetched: number;
  readonly urlsDiscovered: number;
  readonly frontierSize: number;
  readonly itemsLeased: number;
  readonly errors: number;
  /** Links sent to other partitions, and received from them. */
  readonly linksForwarded: number;
  readonly linksReceived: number;
  readonly bloomSkipped: number;
}

export function parseMemberCard(text: string | null): MemberCard | null {
  if (text === null) return null;
  try {
    const card = JSON.parse(text) as Partial<MemberCard>;
    if (typeof card.memberId !== 'string' || typeof card.url !== 'string' || typeof card.partition !== 'number' || typeof card.pid !== 'number' || typeof card.startedAt !== 'number') return null;
    const url = new URL(card.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return null;
    return card as MemberCard;
  } catch {
    return null;
  }
}
