/**
 * Which segments to merge next: a pure function of the live segments' sizes, so the number of
 * segments stays logarithmic in the number of entries (a log-structured merge policy, like Lucene's
 * LogByteSizeMergePolicy).
 *
 * A segment's level is floor(log_F(live entries / MIN_ENTRIES)), F being the merge factor (8). As soon
 * as F segments share a level, the F oldest of them are merged into one of the next level. So at most
 * F - 1 segments sit on each level and there are about log_F(n / MIN_ENTRIES) levels: with commits of
 * 100 entries and F = 8, a million entries are at most 7 * 5 = 35 segments, and every entry is
 * rewritten about log_F(n) times in its life. A segment with more than a third of its entries deleted
 * is rewritten alone (its tombstones dropped), so deleted entries never hold more than a third of a
 * segment's space for long.
 */
export const MERGE_FACTOR = 8;
export const MIN_ENTRIES = 64;
export const EXPUNGE_FRACTION = 1 / 3;

export interface SegmentSize {
  readonly id: number;
  readonly entries: number;
  readonly deleted: number;
}

export function levelOf(liveEntries: number, factor = MERGE_FACTOR): number {
  return liveEntries <= MIN_ENTRIES ? 0 : Math.floor(Math.log(liveEntries / MIN_ENTRIES) / Math.log(factor));
}

/** Segment ids to merge (oldest first), or null when no merge is due. Segments are given oldest first. */
export function planMerge(segments: readonly SegmentSize[], factor = MERGE_FACTOR): number[] | null {
  const byLevel = new Map<number, number[]>();
  for (const s of segments) {
    const level = levelOf(s.entries - s.deleted, factor);
    const ids = byLevel.get(level) ?? [];
    ids.push(s.id);
    byLevel.set(level, ids);
  }
  for (const level of [...byLevel.keys()].sort((a, b) => a - b)) {
    const ids = byLevel.get(level)!;
    if (ids.length >= factor) return ids.slice(0, factor);
  }
  for (const s of segments) {
    if (s.entries > 0 && s.deleted / s.entries > EXPUNGE_FRACTION) return [s.id];
  }
  return null;
}
