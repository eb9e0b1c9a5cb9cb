/**
 * Which partition a host belongs to: a stable hash of its host name (not the origin: http and https
 * of one host, and its ports, share politeness and robots.txt decisions, so they share an owner),
 * modulo the cluster's partition count K. Every member and every version computes the same answer,
 * so a host's crawl database records, robots.txt and politeness live in exactly one place.
 *
 * xxHash64 (the URL hash's function) of the lowercase host name's UTF-8 bytes, as an unsigned 64-bit
 * number, modulo K; K is fixed for the life of the cluster (shared/cluster-keys.ts `meta`).
 */
import { urlHash64 } from '../../shared/url-hash.js';

export const MAX_PARTITIONS = 4096;

export function partitionOfHost(hostname: string, partitions: number): number {
  return Number(urlHash64(hostname.toLowerCase()) % BigInt(partitions));
}

/** The partition of an origin or URL (`http://host:port/...`). */
export function partitionOfUrl(url: string, partitions: number): number {
  return partitionOfHost(new URL(url).hostname, partitions);
}
