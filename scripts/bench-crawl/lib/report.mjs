/**
 * Turning measurements into the rows of the results table, the ratios, and text for the terminal.
 *
 * pages/s and CPU per page divide by the distinct pages the server answered with 200 (from its request
 * log), not by what a crawler says about itself: a crawler that fetched a page twice does not get two
 * pages' credit, and one that missed pages does not hide it. The crawler's own count is shown beside it.
 */

/** A process seen in fewer samples than this (alive under ~0.5 s at 100 ms) is a transient helper. */
const TRANSIENT_SAMPLES = 5;

/**
 * One table row from a run: the peer, its own count, the server's tally and the measurement.
 * `capped`: the run was limited by --max, so missing pages are expected and not a problem.
 * `revalidation`: a second Petrel pass on the same data dir, where a page counts when answered 200 or
 * 304 and Petrel's own count is its pagesFetched + notModified.
 */
export function resultRow(peer, own, tally, measured, expected, { capped = false, revalidation = false } = {}) {
  if (revalidation) {
    tally = { ...tally, page200: tally.page200 + tally.notModified, distinctPages: tally.distinctAnswered, missing: tally.missingAnswered };
    own = { ...own, pagesFetched: own.pagesFetched === null ? null : own.pagesFetched + (own.notModified ?? 0) };
  }
  const all = measured.processes.map((record) => ({
    pid: record.pid,
    role: peer.role(record.argv) || '(exited before named)',
    peakRssMb: record.peakKb / 1024,
    /** CPU s as of the last sample (up to 100 ms short); the tree's exact total is cpuS. */
    cpuS: record.cpuS,
    samples: record.samples,
    main: record.ppid === measured.wrapperPid,
  }));
  // Helpers that live for a moment (Crawlee runs `ps` every few seconds to watch its memory) would
  // inflate a plain sum of peaks, since they never run at the same time: they count once, as the
  // largest of them, and are listed apart.
  // The crawler's main process is never a helper, however short the crawl.
  const isTransient = (p) => p.samples < TRANSIENT_SAMPLES && !p.main;
  const processes = all.filter((p) => !isTransient(p));
  const transient = all.filter(isTransient);
  const transientPeakMb = Math.max(0, ...transient.map((p) => p.peakRssMb));
  const pages = tally.distinctPages;
  const wallS = measured.wallMs / 1000;
  const problems = [];
  if (!(peer.okExitCodes ?? [0]).includes(measured.exitCode) && !measured.capped) problems.push(`exit status ${measured.exitCode}`);
  if (measured.timedOut) problems.push('timed out');
  if (tally.missing > 0 && !capped) problems.push(`missed ${tally.missing} of ${expected} pages${revalidation || (tally.missingExamples ?? []).length === 0 ? '' : ` (e.g. ${tally.missingExamples.slice(0, 3).join(', ')})`}`);
  if ((tally.unexpected ?? 0) > 0) problems.push(`${tally.unexpected} pages beyond the reachable set (e.g. ${(tally.unexpectedExamples ?? []).slice(0, 3).join(', ')})`);
  const answers = revalidation ? 'page 200s and 304s' : 'page 200s';
  if (own.pagesFetched !== null && own.pagesFetched !== tally.page200 && !capped) problems.push(`reports ${own.pagesFetched} pages, server sent ${tally.page200} ${answers}`);
  if (own.pagesFetched === null) problems.push('no page count of its own');
  if (tally.page200 > tally.distinctPages) problems.push(`${tally.page200 - tally.distinctPages} duplicate page fetches`);
  return {
    name: revalidation ? `${peer.name}-revalidate` : peer.name,
    label: revalidation ? `${peer.label} revalidate` : peer.label,
    revalidation,
    capped,
    exitCode: measured.exitCode,
    wallS,
    /** The crawler's own duration (Petrel's summary elapsedMs, Crawlee's run(), wget's wall clock line). */
    ownElapsedS: own.elapsedS ?? null,
    pagesReported: own.pagesFetched,
    page200: tally.page200,
    distinctPages: pages,
    missing: tally.missing,
    unexpected: tally.unexpected ?? 0,
    /** 304 answers (a revalidation pass); page200 then counts 200s and 304s together. */
    notModified: tally.notModified ?? 0,
    requests: tally.requests,
    statuses: tally.statuses,
    duplicateExamples: tally.duplicateExamples,
    pagesPerSecond: pages / wallS,
    /** Every request the server saw (robots.txt and duplicates included) ÷ wall s. */
    requestsPerSecond: tally.requests / wallS,
    cpuMsPerRequest: tally.requests === 0 ? null : (1000 * measured.cpuS) / tally.requests,
    cpuUserS: measured.cpuUserS,
    cpuSysS: measured.cpuSysS,
    cpuS: measured.cpuS,
    cpuMsPerPage: pages === 0 ? null : (1000 * measured.cpuS) / pages,
    /** CPU the crawler used per second of wall time (2.0 = both cores of this machine). */
    coresUsed: measured.cpuS / wallS,
    processes,
    transientProcesses: { count: transient.length, largestPeakRssMb: transientPeakMb, commands: [...new Set(transient.map((p) => p.role))].slice(0, 5) },
    peakRssSumMb: processes.reduce((sum, p) => sum + p.peakRssMb, 0) + transientPeakMb,
    peakRssMaxMb: Math.max(0, ...processes.map((p) => p.peakRssMb)),
    /** The largest Pss sum of the crawler's processes at one sample: shared pages counted once (proc-tree.mjs). */
    peakPssSumMb: (measured.peakTreePssKb ?? 0) / 1024,
    cpuSplit: cpuSplit(all, measured.cpuS, pages),
    /** Where the wall time went: spawn → first request, first request → last response, → exit. */
    timeline:
      tally.firstRequestAtMs === null
        ? null
        : {
            startupS: (tally.firstRequestAtMs - measured.spawnedAtMs) / 1000,
            requestingS: (tally.lastResponseAtMs - tally.firstRequestAtMs) / 1000,
            shutdownS: (measured.exitedAtMs - tally.lastResponseAtMs) / 1000,
          },
    largestProcessRssMbByTime: measured.largestProcessRssKb / 1024,
    serverCpuS: tally.serverCpuS,
    loadAverageBefore: measured.loadBefore,
    /**
     * CPU s used by everything else on the machine during the run (other users, this script's sampler),
     * i.e. the machine's busy time minus the crawler's tree and the test web. Near 0 means a clean run.
     */
    otherCpuS: measured.machineCpuS - measured.cpuS - tally.serverCpuS,
    problems,
    crawlerReport: own.report,
  };
}

/**
 * CPU by kind of process (Petrel: queue-server, fetchers, crawl (parent)), from each process's last
 * sample, so up to 100 ms short per process; `unattributed` is GNU time's total minus their sum.
 */
function cpuSplit(processes, totalCpuS, pages) {
  const groups = {};
  for (const p of processes) {
    const group = /^fetcher/.test(p.role) ? 'fetchers' : p.role;
    groups[group] = (groups[group] ?? 0) + p.cpuS;
  }
  const sampled = Object.values(groups).reduce((sum, s) => sum + s, 0);
  groups.unattributed = Math.max(0, totalCpuS - sampled);
  return Object.fromEntries(Object.entries(groups).map(([group, cpuS]) => [group, { cpuS, msPerPage: pages === 0 ? null : (1000 * cpuS) / pages }]));
}

/** Petrel against each other peer: >1 means Petrel is faster (pages/s) or costlier (CPU per page). */
export function ratios(rows) {
  const petrel = rows.find((row) => row.name === 'petrel');
  const out = {};
  if (petrel === undefined) return out;
  for (const row of rows) {
    if (row === petrel || row.revalidation) continue;
    out[`petrel/${row.name}`] = {
      pagesPerSecond: petrel.pagesPerSecond / row.pagesPerSecond,
      /** Same, on each crawler's own duration (start-up and shutdown left out). */
      pagesPerOwnSecond: petrel.ownElapsedS === null || row.ownElapsedS === null ? null : row.ownElapsedS / petrel.ownElapsedS,
      cpuMsPerPage: petrel.cpuMsPerPage / row.cpuMsPerPage,
      peakRssSum: petrel.peakRssSumMb / row.peakRssSumMb,
      peakPssSum: petrel.peakPssSumMb / row.peakPssSumMb,
      /** Per HTTP request instead of per distinct page: what remains if duplicate fetches are forgiven. */
      requestsPerSecond: petrel.requestsPerSecond / row.requestsPerSecond,
      cpuMsPerRequest: petrel.cpuMsPerRequest / row.cpuMsPerRequest,
    };
  }
  return out;
}

/** The middle value (the lower of the two middle ones for an even count); null for none. */
export function median(values) {
  const sorted = values.filter((v) => v !== null && Number.isFinite(v)).sort((a, b) => a - b);
  return sorted.length === 0 ? null : sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Petrel against each other crawler round by round, when the crawlers ran more than once: the ratios
 * of two runs of one round (the closest in time, so a drift of the machine's speed falls on both) and
 * their median. On this shared two-core machine a crawler's own CPU per page drifts by 10 to 20 %
 * between runs minutes apart, more than the "cleanest run" choice can see (it looks only at other
 * processes' CPU), so the paired medians are the figures to compare two builds by.
 */
export function pairedRatios(allRuns) {
  const runs = allRuns.filter((row) => !row.revalidation);
  const petrelRuns = runs.filter((row) => row.name === 'petrel');
  const out = {};
  if (petrelRuns.length < 2) return out;
  for (const name of new Set(runs.map((row) => row.name))) {
    if (name === 'petrel') continue;
    const rounds = [];
    for (const mine of petrelRuns) {
      const theirs = runs.find((row) => row.name === name && row.round === mine.round);
      if (theirs === undefined) continue;
      const split = (role) => {
        const a = mine.cpuSplit?.[role]?.msPerPage;
        const b = theirs.cpuSplit?.[role]?.msPerPage;
        return a === undefined || b === undefined || a === null || b === null || b === 0 ? null : a / b;
      };
      rounds.push({ round: mine.round, pagesPerSecond: mine.pagesPerSecond / theirs.pagesPerSecond, cpuMsPerPage: mine.cpuMsPerPage / theirs.cpuMsPerPage, fetchersCpuMsPerPage: split('fetchers'), queueServerCpuMsPerPage: split('queue-server') });
    }
    if (rounds.length === 0) continue;
    out[`petrel/${name}`] = {
      rounds,
      medianPagesPerSecond: median(rounds.map((r) => r.pagesPerSecond)),
      medianCpuMsPerPage: median(rounds.map((r) => r.cpuMsPerPage)),
      medianFetchersCpuMsPerPage: median(rounds.map((r) => r.fetchersCpuMsPerPage)),
      medianQueueServerCpuMsPerPage: median(rounds.map((r) => r.queueServerCpuMsPerPage)),
      petrelMedianCpuMsPerPage: median(petrelRuns.map((r) => r.cpuMsPerPage)),
      peerMedianCpuMsPerPage: median(runs.filter((row) => row.name === name).map((r) => r.cpuMsPerPage)),
    };
  }
  return out;
}

export function formatPairedRatios(table) {
  return Object.entries(table)
    .map(([pair, r]) => `  ${pair}: CPU ms/page round by round ${r.rounds.map((x) => x.cpuMsPerPage.toFixed(3)).join(', ')}, median ×${r.medianCpuMsPerPage.toFixed(3)} (medians ${r.petrelMedianCpuMsPerPage?.toFixed(2)} vs ${r.peerMedianCpuMsPerPage?.toFixed(2)} ms); pages/s round by round ${r.rounds.map((x) => x.pagesPerSecond.toFixed(3)).join(', ')}, median ×${r.medianPagesPerSecond.toFixed(3)}${r.medianFetchersCpuMsPerPage === null ? '' : `; median CPU per page of the fetchers ×${r.medianFetchersCpuMsPerPage.toFixed(3)}, of the queue server ×${r.medianQueueServerCpuMsPerPage?.toFixed(3)}`}`)
    .join('\n');
}

export function formatTable(rows) {
  const header = ['crawler', 'pages', 'own count', 'dup', 'requests', 'wall s', 'own s', 'pages/s', 'CPU s', 'CPU ms/page', 'cores', 'RSS sum MB', 'RSS max MB', 'PSS peak MB', 'web CPU s', 'other CPU s'];
  const body = rows.map((row) => [
    row.label,
    String(row.distinctPages),
    String(row.pagesReported ?? '-'),
    String(row.page200 - row.distinctPages),
    String(row.requests),
    row.wallS.toFixed(2),
    row.ownElapsedS === null ? '-' : row.ownElapsedS.toFixed(2),
    row.pagesPerSecond.toFixed(0),
    row.cpuS.toFixed(2),
    row.cpuMsPerPage === null ? '-' : row.cpuMsPerPage.toFixed(2),
    row.coresUsed.toFixed(2),
    row.peakRssSumMb.toFixed(0),
    row.peakRssMaxMb.toFixed(0),
    row.peakPssSumMb.toFixed(0),
    row.serverCpuS.toFixed(2),
    row.otherCpuS.toFixed(2),
  ]);
  const lines = [grid([header, ...body])];
  lines.push('', 'Peak RSS (VmHWM) and CPU s per process (CPU as last sampled, up to 100 ms short):');
  for (const row of rows) {
    const parts = row.processes.map((p) => `${p.role} ${p.peakRssMb.toFixed(0)} MB ${p.cpuS.toFixed(1)} s`);
    const helpers = row.transientProcesses;
    if (helpers.count > 0) parts.push(`${helpers.count} short-lived helpers (${helpers.commands.join(', ')}) up to ${helpers.largestPeakRssMb.toFixed(0)} MB`);
    lines.push(`  ${row.label}: ${parts.join(', ')}  (sum ${row.peakRssSumMb.toFixed(0)} MB)`);
  }
  for (const row of rows.filter((r) => r.name.startsWith('petrel'))) {
    const parts = Object.entries(row.cpuSplit).map(([group, c]) => `${group} ${c.cpuS.toFixed(2)} s = ${c.msPerPage === null ? '-' : c.msPerPage.toFixed(2)} ms/page`);
    lines.push(`  ${row.label} CPU by process: ${parts.join(', ')}`);
  }
  lines.push('', 'Timeline (from the server\'s log): spawn → first request | first request → last response | last response → exit:');
  for (const row of rows) {
    const t = row.timeline;
    lines.push(`  ${row.label}: ${t === null ? 'no requests' : `${t.startupS.toFixed(2)} s | ${t.requestingS.toFixed(2)} s (${(row.distinctPages / t.requestingS).toFixed(0)} pages/s) | ${t.shutdownS.toFixed(2)} s`}`);
  }
  const problems = rows.filter((row) => row.problems.length > 0);
  if (problems.length > 0) {
    lines.push('', 'Check:');
    for (const row of problems) lines.push(`  ${row.label}: ${row.problems.join('; ')}`);
  }
  return lines.join('\n');
}

export function formatRatios(table) {
  return Object.entries(table)
    .map(([pair, r]) => {
      const own = r.pagesPerOwnSecond === null ? '' : ` (×${r.pagesPerOwnSecond.toFixed(2)} on own durations)`;
      const perRequest = `per request: req/s ×${r.requestsPerSecond.toFixed(2)}, CPU ms/request ×${r.cpuMsPerRequest.toFixed(2)}`;
      return `  ${pair}: pages/s ×${r.pagesPerSecond.toFixed(2)}${own}, CPU ms/page ×${r.cpuMsPerPage.toFixed(2)}, summed peak RSS ×${r.peakRssSum.toFixed(2)}, peak PSS of all processes ×${r.peakPssSum.toFixed(2)}; ${perRequest}`;
    })
    .join('\n');
}

/** The fetchers' CPU by feature (run.mjs combineFeatures) as a table. */
export function formatFeatures(title, { pages, plainMsPerPage, features }) {
  const plain = plainMsPerPage === null ? null : `≈ ms/page of the plain run (${plainMsPerPage.toFixed(2)} in all)`;
  const header = ['feature', 'share', 'ms/page profiled', ...(plain === null ? [] : [plain])];
  const rows = features.map((f) => [f.name, `${(100 * f.share).toFixed(1)}%`, f.msPerPageProfiled === null ? '-' : f.msPerPageProfiled.toFixed(3), ...(plain === null ? [] : [f.msPerPageUnprofiled.toFixed(3)])]);
  return `${title}, ${pages} pages:\n${grid([header, ...rows], '  ')}`;
}

/**
 * Top rows of a profile summary as text; `inclusive` (optional) adds total times with callees, and
 * `pages` (optional) a column of ms per page.
 */
export function formatProfile(title, summary, top, inclusive = null, pages = null) {
  const perPage = (ms) => (pages === null || pages === 0 ? [] : [(ms / pages).toFixed(3)]);
  const perPageHeader = pages === null || pages === 0 ? [] : ['ms/page'];
  const idle = summary.functions.find((f) => f.name === '(idle)')?.selfMs ?? 0;
  const busy = summary.totalMs - idle;
  const lines = [`${title}: ${summary.totalMs.toFixed(0)} ms profiled, ${busy.toFixed(0)} ms busy (${((100 * busy) / summary.totalMs).toFixed(0)}%); % below are of the whole profile`];
  const rows = summary.functions.slice(0, top).map((f) => [f.selfMs.toFixed(0), ...perPage(f.selfMs), `${f.percent.toFixed(1)}%`, f.name, f.where]);
  lines.push(grid([['self ms', ...perPageHeader, '%', 'function', 'where'], ...rows], '    '));
  const files = summary.files.slice(0, 8).map((f) => `${f.name} ${f.percent.toFixed(1)}%`);
  lines.push(`    self time by module: ${files.join(', ')}`);
  if (inclusive !== null) {
    const totals = inclusive.functions.slice(0, top).map((f) => [f.totalMs.toFixed(0), ...perPage(f.totalMs), `${f.percent.toFixed(1)}%`, f.name, f.where]);
    if (totals.length > 0) lines.push('    with callees (project code only):', grid([['total ms', ...perPageHeader, '%', 'function', 'where'], ...totals], '    '));
    const modules = inclusive.files.slice(0, 10).map((f) => `${f.name} ${f.percent.toFixed(1)}%`);
    lines.push(`    with callees, by module: ${modules.join(', ')}`);
  }
  return lines.join('\n');
}

function grid(rows, indent = '') {
  rows = rows.map((row) => row.map(String));
  const widths = rows[0].map((_, col) => Math.max(...rows.map((row) => row[col].length)));
  return rows
    // Numbers right-aligned, text left-aligned.
    .map((row) => indent + row.map((cell, col) => (/^-?[\d.]+%?$/.test(cell) ? cell.padStart(widths[col]) : cell.padEnd(widths[col]))).join('  ').trimEnd())
    .join('\n');
}
