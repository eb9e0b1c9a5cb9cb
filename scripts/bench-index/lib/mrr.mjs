/**
 * MRR@10 of known-item queries: for each query the rank of its one right answer in the top 10
 * (1/rank, 0 when absent), averaged.
 */
export function mrrAt10(rankedPerQuery, expected) {
  if (rankedPerQuery.length !== expected.length) throw new Error('one ranking per query');
  let sum = 0;
  rankedPerQuery.forEach((ranked, q) => {
    const at = ranked.slice(0, 10).indexOf(expected[q]);
    if (at >= 0) sum += 1 / (at + 1);
  });
  return expected.length === 0 ? 0 : sum / expected.length;
}
