/**
 * Crawl benchmark (not a test): Petrel, Crawlee's CheerioCrawler and `wget -r`, one after another, on
 * each corpus: the project's generated test web, and real documentation sites from Debian packages served
 * by the benchmark's own nginx on loopback. For each: wall time, pages got (the crawler's own count and
 * the server's log), pages/s, CPU seconds of the whole process tree, and peak RSS of every process in
 * it; for Petrel also a revalidation pass (every answer a 304). Writes out/latest.json. See README.md.
 *
 *   cd scripts/bench-crawl && npm ci && node run.mjs [--corpus testweb,small,large] [--profile]
 *
 * Steps:
 *   1. check the prerequisites (Petrel built; wget, GNU time, nginx and the documentation packages
 *      installed, installing what is missing);
 *   2. per corpus: start its server (the test web, or nginx) and learn the reachable pages;
 *   3. for each crawler: run it under GNU time and the /proc sampler, tally the server's log, check the
 *      crawler got every page; after Petrel, run it again on the same data dir once the pages are stale;
 *   4. print the corpus's table, ratios and issue 10's goals; at the end the table across corpora;
 *      write out/latest.json (after every corpus, so a long run leaves what it has);
 *   5. with --profile, run Petrel again on each corpus under V8's CPU profiler (the equivalent of
 *      --cpu-prof, through a preload) and print the top functions of each process.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { CORPORA, DEFAULT_CORPORA, installPackages, missingPackages, packageVersion, reachablePages } from './lib/corpora.mjs';
import { featureTimes, inclusiveTimes, isProjectCode, selfTimes } from './lib/cpuprofile.mjs';
import { measure } from './lib/measure.mjs';
import { startNginxSite } from './lib/nginx-site.mjs';
import { PEERS, petrel, petrelTotalConcurrency } from './lib/peers.mjs';
import { petrelBinPath, snapshotPetrel, testWebModulePath } from './lib/petrel-build.mjs';
import { formatFeatures, formatPairedRatios, formatProfile, formatRatios, formatTable, median, pairedRatios, ratios, resultRow } from './lib/report.mjs';
import { formatGoals, formatSummary, goals } from './lib/summary.mjs';
import { startTestWebSite } from './lib/test-web-site.mjs';

const USAGE = `Usage: node run.mjs [options]

Runs Petrel, Crawlee (CheerioCrawler) and wget -r one after another on each corpus and compares them.

Corpora (--corpus, comma-separated; default ${DEFAULT_CORPORA.join(',')}):
${Object.values(CORPORA).map((c) => `  ${c.name.padEnd(9)} ${c.description}${c.kind === 'nginx' ? `, nginx on ${c.ip}` : ''}`).join('\n')}
  The real corpora are Debian packages served by nginx started by this script (own config, logs and pid
  file in a temp dir; never the system service); missing packages (and nginx, wget, time) are installed
  with apt-get, which the script says before it does it.

Concurrency (requests in flight at once), made equal for Petrel and Crawlee:
  Petrel     --host-concurrency per host across all fetchers, and --concurrency slots per fetcher (one
             request at a time per slot): min(hosts x host concurrency, fetchers x concurrency) in all,
             16 on one host with the defaults, 32 on the test web's 5 hosts
  Crawlee    maxConcurrency = that same total (--crawlee-concurrency to override); its autoscaled pool
             ramps up to it and backs off when it finds the CPU busy
  wget -r    one connection, one request at a time (it has no parallelism)
  No crawler waits between requests (Petrel --delay-ms 0; Crawlee and wget have no delay by default);
  all obey robots.txt (each real corpus's allows everything).

Bounds per page, made as loose as the peers' (neither wget nor Crawlee has one): Petrel runs with
  --max-body-bytes 16777216 and --max-links-per-page 100000, so it reads the Rust documentation's pages
  of 3 to 10 MB and 24,000 links whole and fetches every page the others fetch (with its defaults, 2 MiB
  and 5,000, it leaves out about 3,500 pages that only those index pages link to).

Options:
  --corpus LIST         corpora to run, in this order (default ${DEFAULT_CORPORA.join(',')})
  --pages N             test web: pages, all hosts together (default 10000)
  --hosts N             test web: hosts, 127.0.0.2 and up (default 5)
  --max N               real corpora: stop each crawler after N pages (Petrel --max-pages, Crawlee
                        maxRequestsPerCrawl, wget stopped once the server has answered N pages), so a
                        run during development takes seconds; completeness is then not checked
  --fetchers N          Petrel fetcher processes (default 2)
  --concurrency N       Petrel slots per fetcher, \`petrel crawl --concurrency\` (default 16)
  --host-concurrency N  Petrel requests per host across fetchers (default 16)
  --crawlee-concurrency N  Crawlee maxConcurrency (default: Petrel's total, see above)
  --only LIST           comma-separated subset of: ${PEERS.map((p) => p.name).join(',')} (default: all
                        but petrel-noindex and petrel-bare, which with petrel and petrel-nowarc say what the
                        search index and the web archive each cost the queue server and the fetchers)
  --no-revalidate       skip Petrel's second pass on the real corpora (every page stale, every answer a 304)
  --gzip                real corpora: nginx gzips its text responses (level 6) for clients that accept it,
                        as most sites do (Petrel and Crawlee ask for gzip; wget -r does not), instead of
                        serving the files as they are
  --no-warmup           skip the unmeasured Petrel --no-warc crawl each corpus gets first (it fills the page
                        cache with the corpus's files and warms the server, so the first crawler measured
                        does not pay for that alone)
  --repeat N            run each crawler N times, interleaved, every other round in reverse order (so no
                        crawler always runs right after the same one); the table shows each one's cleanest run (least
                        CPU used by everything else on the machine), the JSON keeps every run (default 1)
  --profile             afterwards, on each corpus, run Petrel once more (and its revalidation) under the CPU
                        profiler (like --cpu-prof) and print each process's top functions; .cpuprofile
                        files go to out/profile/<corpus>/
  --top N               functions per process in the profile (default 15)
  --timeout-s N         give up on one crawler after this long (default 1800)
  --baseline-root DIR   a second Petrel build (a checkout, or a copy of its dist/ and package.json) run as
                        petrel-base and petrel-base-nowarc, interleaved with the others: before and after
                        a change in one run
  --petrel-root DIR     the Petrel checkout whose build is benchmarked (default: the one holding this
                        script), e.g. to compare a branch built elsewhere
  --help                show this help
`;

const here = dirname(fileURLToPath(import.meta.url));
const ownRoot = resolve(here, '..', '..');
const outDir = join(here, 'out');
/** nginx's Cache-Control max-age: the revalidation pass waits this long after the first pass. */
const EXPIRES_S = 1;

const { values } = parseArgs({
  options: {
    corpus: { type: 'string', default: DEFAULT_CORPORA.join(',') },
    pages: { type: 'string', default: '10000' },
    hosts: { type: 'string', default: '5' },
    max: { type: 'string' },
    fetchers: { type: 'string', default: '2' },
    concurrency: { type: 'string', default: '16' },
    'host-concurrency': { type: 'string', default: '16' },
    'crawlee-concurrency': { type: 'string' },
    only: { type: 'string' },
    'no-revalidate': { type: 'boolean', default: false },
    gzip: { type: 'boolean', default: false },
    'no-warmup': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    top: { type: 'string', default: '15' },
    repeat: { type: 'string', default: '1' },
    'timeout-s': { type: 'string', default: '1800' },
    'petrel-root': { type: 'string' },
    'baseline-root': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
  strict: true,
});
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
/** Petrel's checkout; the test web always comes from this script's own. */
const root = values['petrel-root'] === undefined ? ownRoot : resolve(values['petrel-root']);
const options = {
  corpora: values.corpus.split(',').map((name) => CORPORA[name.trim()] ?? usage(`unknown corpus: ${name} (known: ${Object.keys(CORPORA).join(', ')})`)),
  pages: positive('--pages', values.pages),
  hosts: positive('--hosts', values.hosts),
  maxPages: values.max === undefined ? null : positive('--max', values.max),
  fetchers: positive('--fetchers', values.fetchers),
  concurrency: positive('--concurrency', values.concurrency),
  hostConcurrency: positive('--host-concurrency', values['host-concurrency']),
  crawleeConcurrency: values['crawlee-concurrency'] === undefined ? null : positive('--crawlee-concurrency', values['crawlee-concurrency']),
  revalidate: !values['no-revalidate'],
  gzip: values.gzip,
  warmup: !values['no-warmup'],
  top: positive('--top', values.top),
  repeat: positive('--repeat', values.repeat),
  timeoutMs: positive('--timeout-s', values['timeout-s']) * 1000,
  profile: values.profile,
};
const baselineRoot = values['baseline-root'] === undefined ? null : resolve(values['baseline-root']);
const isBaseline = (peer) => peer.name.startsWith('petrel-base');
const peers = values.only === undefined ? PEERS.filter((p) => p.optional !== true && (baselineRoot !== null || !isBaseline(p))) : values.only.split(',').map((name) => PEERS.find((p) => p.name === name.trim()) ?? usage(`unknown crawler in --only: ${name}`));
const pagesPerHost = Math.round(options.pages / options.hosts);

// 1. Prerequisites, and a private copy of Petrel's build: the tree is shared, and a `npm run build`
// elsewhere (which starts with rm -rf dist) must not pull modules from under a running crawl.
const testWebModule = testWebModulePath(ownRoot);
checkPrerequisites();
mkdirSync(outDir, { recursive: true });
const scratch = mkdtempSync(join(tmpdir(), 'petrel-bench-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
// Ctrl-C or a kill: let the 'exit' hooks stop nginx and the test web.
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));
const petrelBuild = { root, commit: gitDescribe(root), bin: petrelBinPath(root) };
const petrelBin = snapshotPetrel(root, join(scratch, 'petrel'));
say(`Petrel: ${root} at ${petrelBuild.commit ?? 'unknown commit'}, ${petrelBuild.bin} copied to ${petrelBin}`);
if (peers.some(isBaseline) && baselineRoot === null) usage('petrel-base and petrel-base-nowarc need --baseline-root DIR');
const baselineBuild = baselineRoot === null ? null : { root: baselineRoot, commit: gitDescribe(baselineRoot), bin: petrelBinPath(baselineRoot) };
const baselineBin = baselineRoot === null ? null : snapshotPetrel(baselineRoot, join(scratch, 'petrel-base'));
if (baselineBuild !== null) say(`Petrel baseline: ${baselineRoot} at ${baselineBuild.commit ?? 'unknown commit'}, copied to ${baselineBin}`);

const report = {
  createdAt: new Date().toISOString(),
  command: process.argv.slice(2),
  machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, node: process.version, wget: wgetVersion(), crawlee: crawleeVersion(), nginx: packageVersion('nginx'), loadAverageAtStart: loadavg() },
  options: { ...options, corpora: options.corpora.map((c) => c.name), pagesPerHost, peers: peers.map((p) => p.name) },
  petrel: petrelBuild,
  baseline: baselineBuild,
  corpora: [],
};

for (const corpus of options.corpora) {
  const result = await runCorpus(corpus);
  report.corpora.push(result);
  writeReport(false);
}
report.machine.loadAverageAtEnd = loadavg();
say(`\n=== All corpora (${report.createdAt}, load average at start ${report.machine.loadAverageAtStart.map((l) => l.toFixed(2)).join(' ')}, at end ${report.machine.loadAverageAtEnd.map((l) => l.toFixed(2)).join(' ')}) ===\n`);
say(formatSummary(report.corpora));
writeReport(true);

/** Every crawler on one corpus; returns what goes into the report. */
async function runCorpus(corpus) {
  say(`\n=== corpus ${corpus.name}: ${corpus.description} ===`);
  const site = await startSite(corpus);
  const hosts = site.origins.length;
  const petrelTotal = petrelTotalConcurrency({ hosts, hostConcurrency: options.hostConcurrency, concurrency: options.concurrency, fetchers: options.fetchers });
  const crawleeConcurrency = options.crawleeConcurrency ?? petrelTotal;
  const capped = corpus.kind === 'nginx' && options.maxPages !== null;
  say(`${site.origins.join(' ')}: ${site.expected} reachable pages${capped ? `, each crawler capped at ${options.maxPages}` : ''}; concurrency: Petrel ${petrelTotal} (${options.fetchers} fetchers x ${options.concurrency} slots, ${options.hostConcurrency} per host), Crawlee ${crawleeConcurrency}, wget 1`);
  const base = {
    corpus: corpus.name,
    multiHost: hosts > 1,
    origins: site.origins,
    seeds: site.seeds,
    hostConcurrency: options.hostConcurrency,
    concurrency: options.concurrency,
    fetchers: options.fetchers,
    crawleeConcurrency,
    maxPages: capped ? options.maxPages : null,
    petrelBin,
    baselineBin,
    here,
    logDir: outDir,
  };
  const allRuns = [];
  let profile = null;
  try {
    if (options.warmup) {
      await runPeer(PEERS.find((peer) => peer.name === 'petrel-nowarc'), site, base, { capped, label: 'warm-up, not counted' });
    }
    await site.tally(); // start from an empty log
    for (let round = 1; round <= options.repeat; round++) {
      for (const peer of round % 2 === 1 ? peers : [...peers].reverse()) {
        const revalidate = peer === petrel && options.revalidate && corpus.kind === 'nginx';
        const first = await runPeer(peer, site, base, { capped, keepDir: revalidate });
        first.row.round = round;
        allRuns.push(first.row);
        if (revalidate) {
          const second = await revalidatePetrel(site, base, first, { capped });
          second.row.round = round;
          allRuns.push(second.row);
        }
      }
    }
    // On a shared machine the cleanest run is the least disturbed one, not the luckiest.
    const names = [...new Set(allRuns.map((row) => row.name))];
    const rows = names.map((name) => allRuns.filter((row) => row.name === name).sort((a, b) => a.otherCpuS - b.otherCpuS)[0]);
    if (options.repeat > 1) say(`\nEach crawler's cleanest of ${options.repeat} runs (least CPU used by everything else): ${rows.map((r) => `${r.label} run ${r.round}`).join(', ')}`);

    const ratioTable = ratios(rows);
    say(`\n${corpus.name}:\n${formatTable(rows)}`);
    if (Object.keys(ratioTable).length > 0) say(`\nRatios (Petrel ÷ peer; pages/s above 1 = Petrel faster, CPU ms/page below 1 = Petrel cheaper):\n${formatRatios(ratioTable)}`);
    const paired = pairedRatios(allRuns);
    if (Object.keys(paired).length > 0) say(`\nThe same, the two runs of each round paired (the figures to compare builds by):\n${formatPairedRatios(paired)}`);
    const corpusResult = { name: corpus.name, description: corpus.description, kind: corpus.kind, site: siteInfo(corpus, site), concurrency: { petrel: petrelTotal, crawlee: crawleeConcurrency, wget: 1 }, capped, results: rows, ratios: ratioTable, pairedRatios: paired, allRuns };
    corpusResult.goals = goals(corpusResult);
    // Issue 12: archiving costs at most 15 % of pages per second.
    const withWarc = rows.find((r) => r.name === 'petrel');
    const withoutWarc = rows.find((r) => r.name === 'petrel-nowarc');
    if (withWarc !== undefined && withoutWarc !== undefined) {
      const ratio = withWarc.pagesPerSecond / withoutWarc.pagesPerSecond;
      // The same ratio round by round (the two runs of a round are the closest in time), and its median.
      const roundRatios = [];
      for (let round = 1; round <= options.repeat; round++) {
        const a = allRuns.find((r) => r.name === 'petrel' && r.round === round);
        const b = allRuns.find((r) => r.name === 'petrel-nowarc' && r.round === round);
        if (a !== undefined && b !== undefined) roundRatios.push(a.pagesPerSecond / b.pagesPerSecond);
      }
      const medianRatio = median(roundRatios) ?? ratio;
      const met = ratio >= 0.85 && medianRatio >= 0.85;
      corpusResult.archiving = { pagesPerSecondRatio: ratio, roundRatios, medianRoundRatio: medianRatio, goalMet: met, cpuMsPerPage: { warc: withWarc.cpuMsPerPage, noWarc: withoutWarc.cpuMsPerPage }, warcBytesPerPage: withWarc.warcBytesPerPage, wgetWarcBytesPerPage: rows.find((r) => r.name === 'wget-warc')?.warcBytesPerPage ?? null };
      say(`\nWeb archive on ${corpus.name}: ${withWarc.pagesPerSecond.toFixed(0)} pages/s with WARC, ${withoutWarc.pagesPerSecond.toFixed(0)} with --no-warc (cleanest runs' ratio ${ratio.toFixed(3)}; round by round ${roundRatios.map((r) => r.toFixed(3)).join(', ')}, median ${medianRatio.toFixed(3)}; goal >= 0.85 on both: ${met ? 'met' : 'NOT MET'}); CPU ms/page ${withWarc.cpuMsPerPage?.toFixed(2)} vs ${withoutWarc.cpuMsPerPage?.toFixed(2)}; WARC bytes per page: Petrel ${withWarc.warcBytesPerPage?.toFixed(0) ?? '-'}, wget --warc-file ${corpusResult.archiving.wgetWarcBytesPerPage?.toFixed(0) ?? '-'}`);
    }
    const features = featureCosts(rows, allRuns);
    if (features !== null) {
      corpusResult.featureCosts = features;
      say(`\nWhat each feature costs on ${corpus.name} (CPU ms per page, cleanest runs; in brackets the median over rounds of the same difference):\n${formatFeatureCosts(features)}`);
    }
    const baseWarc = rows.find((r) => r.name === 'petrel-base');
    const baseNoWarc = rows.find((r) => r.name === 'petrel-base-nowarc');
    if (baseWarc !== undefined && baseNoWarc !== undefined) {
      const ratio = baseWarc.pagesPerSecond / baseNoWarc.pagesPerSecond;
      corpusResult.baselineArchiving = { pagesPerSecondRatio: ratio, cpuMsPerPage: { warc: baseWarc.cpuMsPerPage, noWarc: baseNoWarc.cpuMsPerPage } };
      say(`Web archive on ${corpus.name}, baseline build: ${baseWarc.pagesPerSecond.toFixed(0)} pages/s with WARC, ${baseNoWarc.pagesPerSecond.toFixed(0)} with --no-warc (ratio ${ratio.toFixed(3)}); CPU ms/page ${baseWarc.cpuMsPerPage?.toFixed(2)} vs ${baseNoWarc.cpuMsPerPage?.toFixed(2)}`);
    }
    for (const [after, before] of [['petrel', 'petrel-base'], ['petrel-nowarc', 'petrel-base-nowarc']]) {
      const a = rows.find((r) => r.name === after);
      const b = rows.find((r) => r.name === before);
      if (a === undefined || b === undefined) continue;
      const split = (row, kind) => row.cpuSplit[kind]?.msPerPage ?? null;
      const ratio = (x, y) => (x === null || y === null ? '-' : (x / y).toFixed(3));
      say(`${after} ÷ ${before}: pages/s ${ratio(a.pagesPerSecond, b.pagesPerSecond)}, CPU ms/page ${ratio(a.cpuMsPerPage, b.cpuMsPerPage)} (queue server ${split(a, 'queue-server')?.toFixed(2)} vs ${split(b, 'queue-server')?.toFixed(2)}, fetchers ${split(a, 'fetchers')?.toFixed(2)} vs ${split(b, 'fetchers')?.toFixed(2)})`);
    }
    if (corpusResult.goals.length > 0) say(`\nIssue 10 goals on ${corpus.name}:\n${formatGoals(corpusResult.goals)}`);
    if (options.profile && peers.includes(petrel)) profile = await profilePetrel(corpus, site, base, { capped, unprofiled: rows });
    corpusResult.profile = profile;
    return corpusResult;
  } finally {
    await site.close();
  }
}

/**
 * The search index's and the web archive's cost, from Petrel's runs with and without them: each as
 * the difference in CPU ms per page (all processes, the queue server, the fetchers) and the ratio of
 * pages per second, between a run with the feature and one without it, the other feature alike (the
 * index: petrel - petrel-noindex, and petrel-nowarc - petrel-bare; the archive: petrel - petrel-nowarc,
 * and petrel-noindex - petrel-bare). Null unless petrel and at least one run without a feature ran.
 */
function featureCosts(rows, allRuns) {
  const pairs = [
    ['search index', 'petrel', 'petrel-noindex'],
    ['search index (archive off)', 'petrel-nowarc', 'petrel-bare'],
    ['web archive', 'petrel', 'petrel-nowarc'],
    ['web archive (index off)', 'petrel-noindex', 'petrel-bare'],
  ];
  const split = (row, role) => row.cpuSplit?.[role]?.msPerPage ?? null;
  const minus = (a, b) => (a === null || b === null ? null : a - b);
  const costs = [];
  for (const [feature, withIt, without] of pairs) {
    const a = rows.find((r) => r.name === withIt);
    const b = rows.find((r) => r.name === without);
    if (a === undefined || b === undefined) continue;
    const rounds = [];
    for (const x of allRuns.filter((r) => r.name === withIt)) {
      const y = allRuns.find((r) => r.name === without && r.round === x.round);
      if (y !== undefined) rounds.push({ all: minus(x.cpuMsPerPage, y.cpuMsPerPage), queueServer: minus(split(x, 'queue-server'), split(y, 'queue-server')), fetchers: minus(split(x, 'fetchers'), split(y, 'fetchers')), pagesPerSecond: x.pagesPerSecond / y.pagesPerSecond });
    }
    const medianOf = (key) => median(rounds.map((r) => r[key]).filter((v) => v !== null));
    costs.push({
      feature,
      with: withIt,
      without,
      cpuMsPerPage: minus(a.cpuMsPerPage, b.cpuMsPerPage),
      queueServerCpuMsPerPage: minus(split(a, 'queue-server'), split(b, 'queue-server')),
      fetchersCpuMsPerPage: minus(split(a, 'fetchers'), split(b, 'fetchers')),
      pagesPerSecondRatio: a.pagesPerSecond / b.pagesPerSecond,
      rounds,
      median: { cpuMsPerPage: medianOf('all'), queueServerCpuMsPerPage: medianOf('queueServer'), fetchersCpuMsPerPage: medianOf('fetchers'), pagesPerSecondRatio: medianOf('pagesPerSecond') },
    });
  }
  return costs.length === 0 ? null : costs;
}

function formatFeatureCosts(costs) {
  const f = (v) => (v === null || v === undefined ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
  const lines = [`  ${'feature'.padEnd(28)} ${'pair'.padEnd(30)} ${'all'.padStart(14)} ${'queue server'.padStart(14)} ${'fetchers'.padStart(14)} ${'pages/s ratio'.padStart(15)}`];
  for (const c of costs) {
    const cell = (v, m) => `${f(v)} (${f(m)})`.padStart(14);
    lines.push(`  ${c.feature.padEnd(28)} ${`${c.with} - ${c.without}`.padEnd(30)} ${cell(c.cpuMsPerPage, c.median.cpuMsPerPage)} ${cell(c.queueServerCpuMsPerPage, c.median.queueServerCpuMsPerPage)} ${cell(c.fetchersCpuMsPerPage, c.median.fetchersCpuMsPerPage)} ${`${c.pagesPerSecondRatio.toFixed(3)} (${c.median.pagesPerSecondRatio?.toFixed(3) ?? '-'})`.padStart(15)}`);
  }
  return lines.join('\n');
}

/** Starts a corpus's server: the test web in its own process, or nginx on the package's directory. */
async function startSite(corpus) {
  if (corpus.kind === 'testweb') {
    const site = await startTestWebSite({ testWebModule, pagesPerHost, hosts: options.hosts });
    say(`test web: ${site.origins.length} hosts × ${pagesPerHost} pages = ${site.expected} reachable pages, port ${site.port}`);
    if (site.expected !== pagesPerHost * options.hosts) say(`warning: expected ${pagesPerHost * options.hosts} reachable pages, the model says ${site.expected}`);
    return site;
  }
  const reachable = reachablePages(corpus, join(outDir, 'reachable'), say);
  say(`${corpus.debianPackage} ${reachable.version}: ${reachable.pages} reachable pages from /index.html (link walk over the files${reachable.cached === null ? `, ${(reachable.walkMs / 1000).toFixed(1)} s` : ', cached'}), HTML ${reachable.htmlMeanKb.toFixed(1)} KB mean / ${reachable.htmlMedianKb.toFixed(1)} KB median, ${reachable.pagesOver2MiB} over 2 MiB, ${reachable.notFound} links to missing files`);
  const site = await startNginxSite({ corpus, reachable: reachable.keys, dir: mkdtempSync(join(scratch, `nginx-${corpus.name}-`)), expiresS: EXPIRES_S, gzip: options.gzip });
  site.walk = { ...reachable, keys: undefined };
  return site;
}

function siteInfo(corpus, site) {
  if (corpus.kind === 'testweb') return { port: site.port, origins: site.origins, expectedPages: site.expected, pagesPerHost, hosts: options.hosts };
  return { origins: site.origins, expectedPages: site.expected, root: corpus.root, walk: site.walk, cacheMaxAgeS: EXPIRES_S };
}

/** Runs one crawler on a corpus and returns its result row (and the measurement and context). */
async function runPeer(peer, site, base, { capped, keepDir = false, dir, extraEnv, label, revalidation = false, summaryFile }) {
  dir ??= mkdtempSync(join(scratch, `${base.corpus}-${peer.name}-`));
  const logName = `${base.corpus}-${peer.name}${label === undefined ? '' : `-${label}`}`;
  const ctx = { ...base, dir, logName, extraEnv, summaryFile };
  const { argv, env, cwd } = peer.command(ctx);
  say(`\n${peer.label}${label === undefined ? '' : ` (${label})`}: ${argv.map(shellQuote).join(' ')}`);
  const stopWhen = capped && peer.needsExternalCap ? () => site.pagesSoFar() >= options.maxPages : undefined;
  const measured = await measure({
    argv,
    env,
    cwd,
    stdoutFile: join(outDir, `${logName}.stdout.log`),
    stderrFile: join(outDir, `${logName}.stderr.log`),
    timeFile: join(dir, `time-${label ?? 'run'}.txt`),
    timeoutMs: options.timeoutMs,
    stopWhen,
  });
  const tally = await site.tally();
  const own = peer.ownCount(ctx);
  const row = resultRow(peer, own, tally, measured, site.expected, { capped, revalidation });
  if (label !== undefined && label !== 'revalidate') row.label = `${row.label} (${label.replace(/^revalidate-/, '')})`;
  row.command = argv;
  // The web archive's size: Petrel's summary (warcBytes, records of this crawl), wget's --warc-file.
  row.warcBytes = typeof own.report?.warcBytes === 'number' ? own.report.warcBytes : null;
  row.warcBytesPerPage = row.warcBytes === null || row.distinctPages === 0 ? null : row.warcBytes / row.distinctPages;
  if (row.warcBytes !== null && row.warcBytes > 0) say(`  web archive: ${row.warcBytes.toLocaleString('en')} bytes of WARC, ${Math.round(row.warcBytesPerPage).toLocaleString('en')} per page`);
  const what = revalidation ? `${row.notModified} 304s + ${row.page200 - row.notModified} 200s` : `${row.distinctPages} pages`;
  say(`  ${what} in ${row.wallS.toFixed(2)} s = ${row.pagesPerSecond.toFixed(0)}/s, CPU ${row.cpuS.toFixed(2)} s = ${row.cpuMsPerPage?.toFixed(2) ?? '-'} ms each (everything else on the machine: ${row.otherCpuS.toFixed(1)} s)` + (row.problems.length > 0 ? `; CHECK: ${row.problems.join('; ')}` : ''));
  if (!(peer.okExitCodes ?? [0]).includes(measured.exitCode) && !measured.capped) say(`  stderr tail (${join(outDir, `${logName}.stderr.log`)}):\n${tail(join(outDir, `${logName}.stderr.log`), 10)}`);
  if (!keepDir) rmSync(dir, { recursive: true, force: true });
  return { row, measured, ctx };
}

/**
 * Petrel's second pass on the data dir of `first`: every page is stale (nginx's max-age has passed), so
 * every request is conditional and every answer a 304. Removes the data dir afterwards.
 */
async function revalidatePetrel(site, base, first, { capped, extraEnv, label = 'revalidate' }) {
  const staleAt = first.measured.exitedAtMs + EXPIRES_S * 1000 + 200;
  const wait = staleAt - (performance.timeOrigin + performance.now());
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  try {
    return await runPeer(petrel, site, base, { capped, dir: first.ctx.dir, keepDir: true, extraEnv, label, revalidation: true, summaryFile: join(first.ctx.dir, 'summary-revalidate.json') });
  } finally {
    rmSync(first.ctx.dir, { recursive: true, force: true });
  }
}

/** Petrel again under the CPU profiler (and its revalidation pass); profiles kept for DevTools. */
async function profilePetrel(corpus, site, base, { capped, unprofiled }) {
  const profileRoot = join(outDir, 'profile', corpus.name);
  rmSync(profileRoot, { recursive: true, force: true });
  const passes = [];
  // Node 20 refuses --cpu-prof in NODE_OPTIONS; the preload does the same through the inspector.
  const preload = pathToFileURL(join(here, 'lib', 'cpu-prof-preload.mjs')).href;
  const nodeOptions = [process.env.NODE_OPTIONS ?? '', `--import=${preload}`].join(' ').trim();
  const envFor = (dir) => ({ NODE_OPTIONS: nodeOptions, PETREL_BENCH_CPU_PROF_DIR: dir });
  const crawlDir = join(profileRoot, 'crawl');
  mkdirSync(crawlDir, { recursive: true });
  const revalidate = options.revalidate && corpus.kind === 'nginx';
  const first = await runPeer(petrel, site, base, { capped, keepDir: revalidate, extraEnv: envFor(crawlDir), label: 'profiled' });
  passes.push({ pass: 'crawl', dir: crawlDir, ...first });
  if (revalidate) {
    const revalidateDir = join(profileRoot, 'revalidate');
    mkdirSync(revalidateDir, { recursive: true });
    const second = await revalidatePetrel(site, base, first, { capped, extraEnv: envFor(revalidateDir), label: 'revalidate-profiled' });
    passes.push({ pass: 'revalidate', dir: revalidateDir, ...second });
  }
  const out = [];
  for (const { pass, dir, row, measured } of passes) {
    const roleByPid = new Map(measured.processes.map((record) => [record.pid, petrel.role(record.argv)]));
    const processes = [];
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
      const pid = Number(/^pid-(\d+)\.cpuprofile$/.exec(file)?.[1]);
      const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
      const summary = selfTimes(profile);
      const inclusive = inclusiveTimes(profile, isProjectCode);
      processes.push({
        pid,
        role: roleByPid.get(pid) ?? `pid ${pid}`,
        file: join('out', 'profile', corpus.name, pass, file),
        totalMs: summary.totalMs,
        functions: summary.functions.slice(0, 50),
        modules: summary.files.slice(0, 20),
        inclusiveFunctions: inclusive.functions.slice(0, 50),
        inclusiveModules: inclusive.files.slice(0, 20),
        features: featureTimes(profile),
      });
    }
    const order = (role) => (role === 'queue-server' ? 0 : role.startsWith('fetcher') ? 1 : 2);
    processes.sort((a, b) => order(a.role) - order(b.role) || a.role.localeCompare(b.role));
    say(`\nProfile of Petrel's ${pass} on ${corpus.name}: ${row.distinctPages} pages, ${row.cpuS.toFixed(2)} s CPU in all (a profiled run costs more than a plain one; ms/page divides by ${row.distinctPages}):`);
    for (const p of processes) {
      const inclusive = { functions: p.inclusiveFunctions, files: p.inclusiveModules };
      say(`\n${formatProfile(`${p.role} (pid ${p.pid})`, { totalMs: p.totalMs, functions: p.functions, files: p.modules }, p.role.startsWith('crawl') ? 5 : options.top, inclusive, row.distinctPages)}`);
    }
    // Each feature's share of the fetchers' busy time, and what that share is of the unprofiled run's
    // fetcher CPU per page (the profiler slows everything, roughly evenly).
    const fetchers = processes.filter((p) => p.role.startsWith('fetcher'));
    const plain = unprofiled.find((r) => r.name === (pass === 'crawl' ? 'petrel' : 'petrel-revalidate'));
    const features = fetchers.length === 0 ? null : combineFeatures(fetchers.map((p) => p.features), row.distinctPages, plain?.cpuSplit?.fetchers?.msPerPage ?? null);
    if (features !== null) say(`\n${formatFeatures(`Fetcher CPU by feature, ${pass} on ${corpus.name} (both fetchers; share of their busy time in the profile)`, features)}`);
    out.push({ pass, run: row, processes, fetcherFeatures: features });
  }
  return out;
}

/** Feature times summed over processes: ms/page profiled, share of busy time, and that share of `plainMsPerPage`. */
function combineFeatures(list, pages, plainMsPerPage) {
  const busyMs = list.reduce((sum, f) => sum + f.busyMs, 0);
  const features = list[0].features.map(({ name }, i) => {
    const ms = list.reduce((sum, f) => sum + f.features[i].ms, 0);
    const share = busyMs === 0 ? 0 : ms / busyMs;
    return { name, msProfiled: ms, msPerPageProfiled: pages === 0 ? null : ms / pages, share, msPerPageUnprofiled: plainMsPerPage === null ? null : share * plainMsPerPage };
  });
  return { pages, busyMs, plainMsPerPage, features };
}

function writeReport(final) {
  // latest.json is overwritten; the dated copy keeps earlier runs for comparison.
  const text = `${JSON.stringify({ ...report, complete: final }, null, 2)}\n`;
  const dated = join(outDir, `run-${report.createdAt.replace(/[:.]/g, '-')}.json`);
  writeFileSync(join(outDir, 'latest.json'), text);
  writeFileSync(dated, text);
  if (final) say(`\nwrote ${join(outDir, 'latest.json')} (and ${dated})`);
}

function checkPrerequisites() {
  const packages = ['time'];
  if (peers.some((p) => p.name === 'wget')) packages.push('wget');
  const real = options.corpora.filter((c) => c.kind === 'nginx');
  if (real.length > 0) packages.push('nginx', ...real.map((c) => c.debianPackage));
  try {
    installPackages(missingPackages(packages), say);
  } catch (error) {
    usage(error.message);
  }
  const missing = [];
  let bin = null;
  try {
    bin = join(root, petrelBinPath(root));
  } catch (error) {
    missing.push(`Petrel's binary: ${error.message}`);
  }
  if (bin !== null && !existsSync(bin)) missing.push(`${bin} (run \`npm run build\` in ${root})`);
  if (options.corpora.some((c) => c.kind === 'testweb') && (testWebModule === null || !existsSync(testWebModule))) missing.push(`the compiled test web ${testWebModule ?? '(no path in tsconfig.build.json or the test-web script)'} (run \`npm run build\` in ${ownRoot})`);
  if (peers.some((p) => p.name === 'crawlee') && !existsSync(join(here, 'node_modules', '@crawlee', 'cheerio'))) missing.push('@crawlee/cheerio (run `npm ci` in scripts/bench-crawl)');
  if (real.length > 0 && !existsSync(join(here, 'node_modules', 'htmlparser2'))) missing.push('htmlparser2, for the link walk (run `npm ci` in scripts/bench-crawl)');
  if (missing.length === 0 && peers.includes(petrel)) {
    // Fail here, not after a server is up, if the build is broken (e.g. a missing module).
    const check = spawnSync(process.execPath, [bin, 'crawl', '--help'], { encoding: 'utf8' });
    if (check.status !== 0) missing.push(`a working Petrel build: \`petrel crawl --help\` failed:\n${check.stderr.split('\n').slice(0, 6).join('\n')}`);
  }
  if (missing.length > 0) usage(`missing:\n  ${missing.join('\n  ')}`);
}

/** "abc1234" or "abc1234+dirty" (uncommitted changes in the tree the build came from), null outside git. */
function gitDescribe(dir) {
  const head = spawnSync('git', ['-C', dir, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  if (head.status !== 0) return null;
  const dirty = spawnSync('git', ['-C', dir, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return `${head.stdout.trim()}${dirty.stdout.trim() === '' ? '' : '+dirty'}`;
}

function wgetVersion() {
  const out = spawnSync('wget', ['--version'], { encoding: 'utf8' });
  return out.status === 0 ? out.stdout.split('\n')[0] : null;
}

function crawleeVersion() {
  const file = join(here, 'node_modules', '@crawlee', 'cheerio', 'package.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : null;
}

function tail(file, lines) {
  return existsSync(file) ? readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).map((l) => `    ${l}`).join('\n') : '    (none)';
}

function shellQuote(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

function positive(flag, text) {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) usage(`${flag} expects a positive integer, got ${text}`);
  return value;
}

function usage(message) {
  process.stderr.write(`bench-crawl: ${message}\n\n${USAGE}`);
  process.exit(2);
}

function say(text) {
  process.stdout.write(`${text}\n`);
}
