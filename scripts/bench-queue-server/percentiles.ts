/** Nearest-rank percentiles of latency samples (ms), for the benchmarks' reports. */

/** The q-quantiles (0 < q <= 1) of the first `count` values (sorted in place), rounded to 0.1 ms; null when there are none. */
export function quantiles(values: Float64Array | number[], count: number, qs: readonly number[]): (number | null)[] {
  if (count === 0) return qs.map(() => null);
  const sorted = values instanceof Float64Array ? values.subarray(0, count).sort() : values.slice(0, count).sort((a, b) => a - b);
  return qs.map((q) => Math.round(sorted[Math.min(count - 1, Math.max(0, Math.ceil(q * count) - 1))]! * 10) / 10);
}
