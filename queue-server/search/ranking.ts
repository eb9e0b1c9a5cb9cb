/**
 * Ranking, as constants and pure functions: BM25F (Robertson, Zaragoza and Taylor, "Simple BM25
 * extension to multiple weighted fields", CIKM 2004) over title, headings, body and anchor text, then
 * the page's link authority.
 *
 * Per query term t and result group g (a page plus the anchor text of its inlinks):
 *   tf~(t, g) = sum over fields f of  weight_f * tf_f(t, g) / (1 - b_f + b_f * length_f(g) / avgLength_f)
 *   score(g)  = sum over t of  idf(t) * tf~ * (k1 + 1) / (k1 + tf~)
 *   idf(t)    = ln(1 + (N - df + 0.5) / (df + 0.5))      N: live pages; df: docs with t, counted per
 *                                                       segment, deleted ones included, as Lucene does
 * A phrase counts as one term whose frequency is its number of occurrences. site: and lang: only
 * filter. The anchor field's length is all anchor text that counts for the group.
 *
 * Field weights: title 4, anchor text 3, headings 2, body 1 (a title or the words other pages use to
 * link to a page say more about it than a word in its body; Yioop and Nutch weight them alike).
 *
 * Link authority: the crawl's OPIC cash of the URL (crawldb `score`; OPIC rather than PageRank because
 * the crawl already keeps it per URL, updated as links are found, with no separate iteration over the
 * link graph). It is handed in per URL (`authorityOf`), so the index stores none. The best
 * AUTHORITY_WINDOW (100) results by BM25F are rescored (a crawl database read each):
 *   final = bm25f * (1 + AUTHORITY_WEIGHT * ln(1 + cash) / ln(1 + max cash in the window))
 * so authority reorders pages of comparable relevance and never lifts an irrelevant one far; ties
 * break by URL hash, so a ranking is deterministic.
 */
export const K1 = 1.2;
export const FIELD_WEIGHTS = { title: 4, heading: 2, body: 1, anchor: 3 } as const;
export const FIELD_B = { title: 0.4, heading: 0.5, body: 0.75, anchor: 0.6 } as const;
export const AUTHORITY_WEIGHT = 0.25;
export const AUTHORITY_WINDOW = 100;

export function idf(livePages: number, df: number): number {
  const n = Math.max(livePages, 1);
  const d = Math.min(Math.max(df, 0), n);
  return Math.log(1 + (n - d + 0.5) / (d + 0.5));
}

export function saturate(tf: number): number {
  return (tf * (K1 + 1)) / (K1 + tf);
}

/** BM25F score combined with authority (cash >= 0; maxCash: the largest in the rescored window). */
export function withAuthority(bm25f: number, cash: number, maxCash: number): number {
  if (!(maxCash > 0) || !(cash > 0)) return bm25f;
  return bm25f * (1 + (AUTHORITY_WEIGHT * Math.log1p(cash)) / Math.log1p(maxCash));
}
