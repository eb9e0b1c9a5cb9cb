/**
 * Durations as people write and read them, in one place for every option, --help text and message:
 * `500ms`, `90s`, `5min` (or `5m`), `2h`, `30d`, or a plain number of milliseconds (so `--delay-ms 250`
 * keeps meaning what it always did). Pure functions; every duration inside Petrel is whole milliseconds.
 */

const UNITS_MS = { ms: 1, s: 1000, min: 60_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Largest first: the unit `formatDuration` picks is the largest that divides the value exactly. */
const FORMAT_UNITS: readonly [string, number][] = [
  ['d', UNITS_MS.d],
  ['h', UNITS_MS.h],
  ['min', UNITS_MS.min],
  ['s', UNITS_MS.s],
  ['ms', UNITS_MS.ms],
];

/** What `parseDuration` accepts, for error messages and --help. */
export const DURATION_SYNTAX = 'a number of milliseconds, or a number with a unit: 500ms, 90s, 5min, 2h, 30d';

/** Milliseconds of `text`, or null when it is not a duration (or not a whole number of ms). */
export function parseDuration(text: string): number | null {
  const match = /^(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?$/i.exec(text.trim());
  if (match === null) return null;
  const unit = (match[2]?.toLowerCase() ?? 'ms') as keyof typeof UNITS_MS;
  const ms = Number(match[1]) * UNITS_MS[unit];
  // 1.5s is 1500 ms; 0.5ms is not a whole millisecond, and nothing in Petrel counts finer.
  if (!Number.isSafeInteger(ms)) return null;
  return ms;
}

/** The exact, shortest spelling: 2592000000 is `30d`, 90000 is `90s`, 1500 is `1500ms`. */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of FORMAT_UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A rounded reading for estimates and waits: `45s`, `19min`, `2h 05min`, `3d 4h`. */
export function formatApproxDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '?';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.round(ms / 60_000);
  if (minutes < 60) return `${minutes}min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ${String(minutes % 60).padStart(2, '0')}min`;
  return `${Math.floor(hours / 24)}d ${hours % 24}h`;
}
