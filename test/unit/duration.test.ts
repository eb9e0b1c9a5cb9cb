/** Durations as people write them (shared/duration.ts): what --help shows is what the options take. */
import { describe, expect, it } from 'vitest';
import { formatApproxDuration, formatDuration, parseDuration } from '../../shared/duration.js';

describe('durations', () => {
  it.each([
    ['500ms', 500],
    ['90s', 90_000],
    ['1.5s', 1500],
    ['5min', 300_000],
    ['5m', 300_000],
    ['2h', 7_200_000],
    ['30d', 2_592_000_000],
    ['1000', 1000],
    [' 20 ', 20],
    ['0', 0],
  ])('reads %s as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', 'soon', '-1s', '1y', '0.5ms', '1s2', 's', '1e3'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeNull();
  });

  it.each([
    [2_592_000_000, '30d'],
    [7_776_000_000, '90d'],
    [60_000, '1min'],
    [30_000, '30s'],
    [1000, '1s'],
    [1500, '1500ms'],
    [3_600_000, '1h'],
    [0, '0'],
  ])('writes %i ms as %s, which reads back the same', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
    expect(parseDuration(text)).toBe(ms);
  });

  it('rounds estimates for reading', () => {
    expect(formatApproxDuration(45_400)).toBe('45s');
    expect(formatApproxDuration(19 * 60_000 + 20_000)).toBe('19min');
    expect(formatApproxDuration(2 * 3_600_000 + 5 * 60_000)).toBe('2h 05min');
    expect(formatApproxDuration(3 * 86_400_000 + 4 * 3_600_000)).toBe('3d 4h');
    expect(formatApproxDuration(250)).toBe('250ms');
  });
});
