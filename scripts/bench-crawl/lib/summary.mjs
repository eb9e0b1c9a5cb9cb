/**
 * The view across corpora: one table of every crawler on every corpus, the ratios, Petrel's CPU by
 * process, the revalidation passes, and each of issue 10's goals with the figure measured against it.
 * Pure: takes the per-corpus results run.mjs collected, returns data and text.
 */

/** Issue 10's goals, measured on one corpus. Each: { goal, target, measured, met } (met null: no target here). */
export function goals(corpus) {
  const rows = corpus.results;
  const petrel = rows.find((r) => r.name === 'petrel');
  const revalidate = rows.find((r) => r.name === 'petrel-revalidate');
  const wget = rows.find((r) => r.name === 'wget');
  const crawlee = rows.find((r) => r.name === 'crawlee');
  const out = [];
  const add = (goal, target, measured, met) => out.push({ goal, target, measured, met });
  if (petrel !== undefined) {
    const fetchers = petrel.cpuSplit.fetchers?.msPerPage;
    const queue = petrel.cpuSplit['queue-server']?.msPerPage;
    if (fetchers != null) add('fetcher CPU per page (all fetchers)', '≤ 2 ms', `${fetchers.toFixed(2)} ms`, fetchers <= 2);
    if (queue != null) add('queue server CPU per page', '≤ 1 ms', `${queue.toFixed(2)} ms`, queue <= 1);
    if (petrel.timeline !== null) {
      add('`petrel crawl` → first request', '< 300 ms', `${(1000 * petrel.timeline.startupS).toFixed(0)} ms`, petrel.timeline.startupS < 0.3);
      add('last response → exit', '≤ 200 ms', `${(1000 * petrel.timeline.shutdownS).toFixed(0)} ms`, petrel.timeline.shutdownS <= 0.2);
    }
  }
  if (revalidate !== undefined) {
    const perUrl = revalidate.cpuMsPerPage;
    add('revalidation CPU per URL (all processes)', '≤ 0.5 ms', perUrl === null ? '-' : `${perUrl.toFixed(2)} ms`, perUrl !== null && perUrl <= 0.5);
    const urls = revalidate.distinctPages;
    const allowedS = (1.5 * urls) / 1000;
    add(`revalidation wall time, ${urls} URLs, start-up included`, `< 1.5 s per 1,000 (${allowedS.toFixed(2)} s)`, `${revalidate.wallS.toFixed(2)} s`, urls > 0 && revalidate.wallS < allowedS);
    if (revalidate.timeline !== null) {
      add('revalidation: `petrel crawl` → first request', '< 300 ms', `${(1000 * revalidate.timeline.startupS).toFixed(0)} ms`, revalidate.timeline.startupS < 0.3);
      add('revalidation: last response → exit', '≤ 200 ms', `${(1000 * revalidate.timeline.shutdownS).toFixed(0)} ms`, revalidate.timeline.shutdownS <= 0.2);
    }
  }
  if (petrel !== undefined && wget !== undefined) {
    const ratio = petrel.pagesPerSecond / wget.pagesPerSecond;
    const target = corpus.name === 'large' ? 2 : corpus.name === 'small' ? 1 : null;
    add('pages/s vs wget -r', target === null ? '(no goal on this corpus)' : `≥ ${target}x`, `${ratio.toFixed(2)}x`, target === null ? null : ratio >= target);
  }
  if (petrel !== undefined && crawlee !== undefined) {
    const ratio = petrel.pagesPerSecond / crawlee.pagesPerSecond;
    add('pages/s vs Crawlee', '≥ 6x', `${ratio.toFixed(2)}x`, ratio >= 6);
    add('summed peak RSS vs Crawlee', '< 1x', `${(petrel.peakRssSumMb / crawlee.peakRssSumMb).toFixed(2)}x (${petrel.peakRssSumMb.toFixed(0)} vs ${crawlee.peakRssSumMb.toFixed(0)} MB)`, petrel.peakRssSumMb < crawlee.peakRssSumMb);
    // The same with each shared page counted once (proc-tree.mjs): Petrel's four processes map the same
    // node binary, which a sum of RSS counts four times and Crawlee's one process once.
    add('peak PSS of all processes vs Crawlee (shared pages once)', '< 1x', `${(petrel.peakPssSumMb / crawlee.peakPssSumMb).toFixed(2)}x (${petrel.peakPssSumMb.toFixed(0)} vs ${crawlee.peakPssSumMb.toFixed(0)} MB)`, petrel.peakPssSumMb < crawlee.peakPssSumMb);
  }
  return out;
}

export function formatGoals(list) {
  const mark = (met) => (met === null ? '' : met ? 'met' : 'NOT MET');
  return grid([['goal (issue 10)', 'target', 'measured', ''], ...list.map((g) => [g.goal, g.target, g.measured, mark(g.met)])], '  ', false);
}

/** Every crawler on every corpus, then the ratios, Petrel's CPU split and the revalidation passes. */
export function formatSummary(corpora) {
  const lines = [];
  const header = ['corpus', 'crawler', 'pages', 'wall s', 'pages/s', 'CPU s', 'CPU ms/page', 'RSS sum MB', 'RSS max MB', 'PSS peak MB', 'load before', 'other CPU s', 'check'];
  const body = [];
  for (const corpus of corpora) {
    for (const row of corpus.results) {
      body.push([
        corpus.name,
        row.label,
        String(row.distinctPages),
        row.wallS.toFixed(2),
        row.pagesPerSecond.toFixed(0),
        row.cpuS.toFixed(2),
        row.cpuMsPerPage === null ? '-' : row.cpuMsPerPage.toFixed(2),
        row.peakRssSumMb.toFixed(0),
        row.peakRssMaxMb.toFixed(0),
        row.peakPssSumMb.toFixed(0),
        row.loadAverageBefore.toFixed(2),
        row.otherCpuS.toFixed(1),
        row.problems.length === 0 ? 'ok' : 'see above',
      ]);
    }
  }
  lines.push(grid([header, ...body]));
  lines.push('  (a revalidation row counts URLs answered 200 or 304 as its pages)');

  const ratioRows = [];
  for (const corpus of corpora) {
    for (const [pair, r] of Object.entries(corpus.ratios)) {
      ratioRows.push([corpus.name, pair, `${r.pagesPerSecond.toFixed(2)}x`, `${r.cpuMsPerPage.toFixed(2)}x`, `${r.peakRssSum.toFixed(2)}x`, `${r.peakPssSum.toFixed(2)}x`]);
    }
  }
  if (ratioRows.length > 0) {
    lines.push('', 'Ratios, Petrel ÷ peer (pages/s above 1: Petrel faster; CPU ms/page and RSS below 1: Petrel cheaper):');
    lines.push(grid([['corpus', 'pair', 'pages/s', 'CPU ms/page', 'summed peak RSS', 'peak PSS'], ...ratioRows], '  '));
  }

  const splitRows = [];
  for (const corpus of corpora) {
    for (const row of corpus.results.filter((r) => r.name.startsWith('petrel'))) {
      const c = row.cpuSplit;
      const ms = (group) => (c[group]?.msPerPage == null ? '-' : c[group].msPerPage.toFixed(2));
      splitRows.push([corpus.name, row.label, ms('queue-server'), ms('fetchers'), ms('crawl (parent)'), ms('unattributed'), row.cpuMsPerPage === null ? '-' : row.cpuMsPerPage.toFixed(2)]);
    }
  }
  if (splitRows.length > 0) {
    lines.push('', 'Petrel CPU ms per page by process (sampled every 100 ms; unattributed = GNU time total - samples):');
    lines.push(grid([['corpus', 'run', 'queue-server', 'fetchers', 'parent', 'unattributed', 'total'], ...splitRows], '  '));
  }

  const revalidations = [];
  for (const corpus of corpora) {
    const r = corpus.results.find((row) => row.name === 'petrel-revalidate');
    if (r === undefined) continue;
    revalidations.push([
      corpus.name,
      String(r.notModified),
      String(r.page200 - r.notModified),
      r.wallS.toFixed(2),
      r.cpuS.toFixed(2),
      r.cpuMsPerPage === null ? '-' : r.cpuMsPerPage.toFixed(2),
      r.timeline === null ? '-' : (1000 * r.timeline.startupS).toFixed(0),
      r.timeline === null ? '-' : (1000 * r.timeline.requestingS).toFixed(0),
      r.timeline === null ? '-' : (1000 * r.timeline.shutdownS).toFixed(0),
    ]);
  }
  if (revalidations.length > 0) {
    lines.push('', 'Revalidation passes (Petrel again on its data dir, every page stale):');
    lines.push(grid([['corpus', '304s', '200s', 'wall s', 'CPU s', 'CPU ms/URL', 'spawn → 1st request ms', 'requesting ms', 'last response → exit ms'], ...revalidations], '  '));
  }
  const profiled = corpora.map((corpus) => ({ corpus: corpus.name, features: corpus.profile?.find((pass) => pass.pass === 'crawl')?.fetcherFeatures ?? null })).filter((c) => c.features !== null);
  if (profiled.length > 0) {
    lines.push('', 'Fetcher CPU by feature (crawl pass, from the profile: share of busy time, and that share of the plain run\'s fetcher ms/page):');
    const header = ['feature', ...profiled.map((c) => `${c.corpus} share`), ...profiled.map((c) => `${c.corpus} ms/page`)];
    const rows = profiled[0].features.features.map(({ name }, i) => [
      name,
      ...profiled.map((c) => `${(100 * c.features.features[i].share).toFixed(1)}%`),
      ...profiled.map((c) => (c.features.features[i].msPerPageUnprofiled === null ? '-' : c.features.features[i].msPerPageUnprofiled.toFixed(3))),
    ]);
    lines.push(grid([header, ...rows], '  '));
  }
  return lines.join('\n');
}

export function grid(rows, indent = '', alignNumbers = true) {
  rows = rows.map((row) => row.map(String));
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  return rows
    // Numbers right-aligned, text left-aligned.
    .map((row) => indent + row.map((cell, col) => (alignNumbers && /^-?[\d.]+[%x]?$/.test(cell) ? cell.padStart(widths[col]) : cell.padEnd(widths[col]))).join('  ').trimEnd())
    .join('\n');
}
