/**
 * Ranking, as constants and pure functions: BM25F (Robertson, Zaragoza and Taylor, "Simple BM25
 * extension to multiple weighted fields", CIKM 2004) over title, headings, body and anchor text, plus
 * the proximity of the query's words in the best results; the page's link authority breaks ties.
 *
 * Per query term t and result group g (a page plus the anchor text of its inlinks):
 *   tf~(t, g) = sum over fields f of  weight_f * tf_f(t, g) / (1 - b_f + b_f * length_f(g) / avgLength_f)
 *   score(g)  = sum over t of  idf(t) * tf~ * (k1 + 1) / (k1 + tf~)
 *   idf(t)    = ln(1 + (N - df + 0.5) / (df + 0.5))      N: live pages; df: live groups with t in any
 *                                                       field, each counted once
 * A phrase counts as one term whose frequency is its number of occurrences. site: and lang: only
 * filter. The anchor field's length is all anchor text that counts for the group.
 *
 * df is BM25F's: the group is the document, anchor text one of its fields. Counting anchor docs (one
 * per linking page) as documents, as this did before, made a word common in link text look common on
 * the site: "section" was in 548 of the PostgreSQL manual's 1,169 pages and in 998 links, so its
 * df passed N and its idf fell to zero. It is counted while the clause's postings are read (a mark
 * per group), so it costs no extra pass; clauses are still ordered by the dictionary's counts.
 *
 * Term proximity (Büttcher, Clarke and Lushman, "Term proximity scoring for ad-hoc retrieval on very
 * large text collections", SIGIR 2006), added to the BM25F score of the best PROXIMITY_WINDOW (20)
 * results of a query of two words or more (phrases aside: they are adjacent by definition):
 *   occurrences of the query's words in each page field (title, headings, body; never across two),
 *   in position order; for each two neighbours of different words v, w at distance d:
 *     acc(v) += idf(w) / d^2,   acc(w) += idf(v) / d^2
 *   prox(g)  = sum over words w of  min(1, idf(w)) * acc(w) * (k1 + 1) / (acc(w) + K),
 *   K        = k1 * (1 - b_body + b_body * bodyLength / avgBodyLength)
 * so words next to each other count as much as a further occurrence of a word, saturating as BM25
 * does, and a word between two others separates them. Why: a known-item query names a page's topic
 * in a few words, and the page that is about it has them in one sentence or heading, where another
 * page mentions them in different places; BM25F sees only counts. It needs only the positions the
 * index keeps for phrases. Measured alone (README): the held-out Python set 0.923 -> 0.981, the
 * PostgreSQL set 0.845 -> 0.827 (two queries up, three down). Tao and Zhai's MinDist (SIGIR 2007),
 * also tried, moved no query on either: in pages this long some two query words are almost always
 * adjacent somewhere. Cost: it added about 1.3 ms to a two- or three-word query at the median on the
 * benchmark's 100,000 documents while it read each word's postings again and walked them a posting
 * and a byte at a time; it now takes the doc streams and skip points the scoring read (proximity.ts),
 * and its share of the time of such queries fell from 22% to 6% in a profile (README, "Search").
 *
 * Field weights: title 4, anchor text 3, headings 2, body 1 (a title or the words other pages use to
 * link to a page say more about it than a word in its body; Yioop and Nutch weight them alike). A
 * sweep of k1, each weight and each b, one at a time, found no value better on both query sets.
 *
 * Link authority: the crawl's OPIC cash of the URL (crawldb `score`, handed in per URL as
 * `authorityOf`, so the index stores none) orders only results whose scores tie to 4 decimals (what
 * a result shows): ties are broken by cash, then URL hash, so a ranking is deterministic. It used to
 * multiply BM25F by (1 + 0.25 * ln(1 + cash) / ln(1 + max cash of the best 100)), and every weight
 * and shape tried lost MRR@10 on both measured sites (README, "Search"), because what the cash
 * measures is not what a searcher wants there:
 * - with `--order bfs` (the default) a URL's cash is the share of the one page that found it first,
 *   so it is fixed by the discovery path: on the PostgreSQL manual 1,169 pages have 31 distinct values,
 *   the seed's 111 children hold 0.009 each and the leaves 0.00004-0.0002, and which parent came first
 *   changes between crawls of the same site (MRR@10 0.800 and 0.784 for the same site and queries);
 * - with `--order opic`, or counting every inlink, the pages with the most are the tables of contents
 *   and navigation targets that every page of a section links to, while known-item queries ask for
 *   the leaves. ln(1 + cash) did not damp anything either: cash is far below 1, where ln(1 + x) = x.
 * A damped multiplicative (weight 0.1), log-normalized, rank-based or additive saturating prior
 * (Craswell et al., "Relevance weighting for query independent evidence", SIGIR 2005) over bfs cash,
 * opic cash or in-link counts lost MRR@10 as its weight grew; at the smallest weights tried it was
 * within one query of no prior (the README's table).
 */
export const K1 = 1.2;
export const FIELD_WEIGHTS = { title: 4, heading: 2, body: 1, anchor: 3 } as const;
export const FIELD_B = { title: 0.4, heading: 0.5, body: 0.75, anchor: 0.6 } as const;

export function idf(livePages: number, df: number): number {
  const n = Math.max(livePages, 1);
  const d = Math.min(Math.max(df, 0), n);
  return Math.log(1 + (n - d + 0.5) / (d + 0.5));
}

export function saturate(tf: number): number {
  return (tf * (K1 + 1)) / (K1 + tf);
}

/**
 * The part of a score that decides its rank: scores equal to 4 decimals (as results show them) tie,
 * and ties are ordered by authority. Exact float equality would leave two copies of a page apart when
 * their sums were added in another order (anchor docs from different segments).
 */
export function tieKey(score: number): number {
  return Math.round(score * 1e4);
}

/**
 * How many of the best results by BM25F get a proximity score: two pages of ten, so a page can move
 * up from the second page. Windows of 10, 20, 30, 50 and 100 gave the same MRR@10 on both measured
 * query sets. 100 cost most (two- and three-word p95 on the benchmark's 100,000 documents 22.3 / 12.2
 * ms against 14.3 / 10.3 at 20, one series); 10 and 20 were within noise of each other, since either
 * way nearly every segment holds a candidate and each word's postings are walked in each. (Measured
 * when those walks went through every posting; with skip points a candidate costs at most 32 postings
 * decoded per word, and what a segment holding one costs is reading the words' position streams.)
 */
export const PROXIMITY_WINDOW = 20;

/**
 * Büttcher et al.'s proximity score: acc[w] is the sum, over each pair of neighbouring occurrences of
 * word w and another word v (nothing of the query between them), of idf(v) / distance^2.
 */
export function proximityScore(idfs: Float64Array, acc: Float64Array, bodyLength: number, avgBodyLength: number): number {
  const k = K1 * (1 - FIELD_B.body + (FIELD_B.body * bodyLength) / Math.max(avgBodyLength, 1));
  let score = 0;
  for (let w = 0; w < acc.length; w++) {
    const a = acc[w]!;
    if (a > 0) score += (Math.min(1, idfs[w]!) * a * (K1 + 1)) / (a + k);
  }
  return score;
}
