/**
 * Self time per function from a V8 .cpuprofile (what `node --cpu-prof` writes): a tree of nodes, each
 * with a callFrame and a hitCount, plus `samples` (node id per tick) and `timeDeltas` (µs between ticks).
 *
 * A sample's duration is the gap to the next sample (timeDeltas[i + 1]), the convention Chrome DevTools
 * uses; the last sample gets the profile's end time. Without samples, hitCount × the mean interval is used.
 * Functions are keyed by name and source position, so one function reached by many paths is summed once.
 */

/** @returns {{ totalMs: number, functions: Row[], files: Row[] }} rows sorted by self time, largest first. */
export function selfTimes(profile) {
  const selfUs = new Map();
  const { nodes, samples, timeDeltas, startTime, endTime } = profile;
  if (Array.isArray(samples) && Array.isArray(timeDeltas) && samples.length > 0) {
    let at = startTime + (timeDeltas[0] ?? 0);
    for (let i = 0; i < samples.length; i++) {
      const next = i + 1 < samples.length ? at + timeDeltas[i + 1] : endTime;
      selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + Math.max(0, next - at));
      at = next;
    }
  } else {
    const hits = nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0);
    const perHit = hits === 0 ? 0 : (endTime - startTime) / hits;
    for (const node of nodes) selfUs.set(node.id, (node.hitCount ?? 0) * perHit);
  }

  const byFunction = new Map();
  const byFile = new Map();
  for (const node of nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const frame = node.callFrame;
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    const where = frame.url === '' ? '' : `${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    const key = `${name}\t${where}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const file = frame.url === '' ? name : moduleOf(frame.url);
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  const totalMs = (endTime - startTime) / 1000;
  const rows = (map, split) =>
    [...map.entries()]
      .map(([key, us]) => ({ ...split(key), selfMs: us / 1000, percent: totalMs === 0 ? 0 : (100 * us) / 1000 / totalMs }))
      .sort((a, b) => b.selfMs - a.selfMs);
  return {
    totalMs,
    functions: rows(byFunction, (key) => {
      const [name, where] = key.split('\t');
      return { name, where };
    }),
    files: rows(byFile, (key) => ({ name: key, where: '' })),
  };
}

/** file:///work/main/dist/fetcher/x.js → dist/fetcher/x.js; node_modules paths keep only the package part. */
function shortUrl(url) {
  const path = url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('/node_modules/');
  if (modules !== -1) return path.slice(modules + '/node_modules/'.length);
  const dist = path.indexOf('/dist/');
  if (dist !== -1) return path.slice(dist + 1);
  return path;
}

/** The package (for node_modules), the Node built-in module, or the project file a frame belongs to. */
function moduleOf(url) {
  const short = shortUrl(url);
  if (url.includes('/node_modules/')) {
    const parts = short.split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  return short;
}

/**
 * Total (inclusive) time per function: the time of every sample with the function anywhere on its
 * stack, counted once per sample even when the function recurses. Only functions whose file passes
 * `keep(url)` are listed (e.g. the project's own dist/ code). The same is summed per module for every
 * frame, with Node's module loader (node:internal/modules/*) as one "(module loading)" entry: start-up.
 * This is what says "extractPage costs X ms with everything it calls", where self time only names leaves.
 * Only the synchronous stack counts: an async function's work after an await is charged to the
 * callback that resumed it.
 *
 * @returns {{ totalMs: number, functions: Row[], files: Row[] }} sorted by inclusive time, largest first.
 */
export function inclusiveTimes(profile, keep = () => true) {
  const { nodes } = profile;
  const parentOf = new Map();
  const byId = new Map();
  for (const node of nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const durations = sampleDurations(profile);
  /** node id → the distinct function and file keys on its stack (memoized: a child adds to its parent's). */
  const stackKeys = new Map();
  const keysOf = (id) => {
    const known = stackKeys.get(id);
    if (known !== undefined) return known;
    const chain = [];
    let at = id;
    while (at !== undefined && !stackKeys.has(at)) {
      chain.push(at);
      at = parentOf.get(at);
    }
    let keys = at === undefined ? { functions: new Set(), files: new Set() } : stackKeys.get(at);
    for (let i = chain.length - 1; i >= 0; i--) {
      const frame = byId.get(chain[i]).callFrame;
      if (frame.url !== '') {
        const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
        const group = frame.url.startsWith('node:internal/modules/') ? '(module loading)' : moduleOf(frame.url);
        const functions = keep(frame.url) ? new Set(keys.functions).add(`${name}\t${shortUrl(frame.url)}:${frame.lineNumber + 1}`) : keys.functions;
        keys = { functions, files: keys.files.has(group) ? keys.files : new Set(keys.files).add(group) };
      }
      stackKeys.set(chain[i], keys);
    }
    return keys;
  };
  const byFunction = new Map();
  const byFile = new Map();
  for (const [id, us] of durations) {
    const keys = keysOf(id);
    for (const key of keys.functions) byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    for (const key of keys.files) byFile.set(key, (byFile.get(key) ?? 0) + us);
  }
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const rows = (map, split) =>
    [...map.entries()]
      .map(([key, us]) => ({ ...split(key), totalMs: us / 1000, percent: totalMs === 0 ? 0 : (100 * us) / 1000 / totalMs }))
      .sort((a, b) => b.totalMs - a.totalMs);
  return {
    totalMs,
    functions: rows(byFunction, (key) => {
      const [name, where] = key.split('\t');
      return { name, where };
    }),
    files: rows(byFile, (key) => ({ name: key, where: '' })),
  };
}

/** µs per node id, sampled as in selfTimes. */
function sampleDurations({ nodes, samples, timeDeltas, startTime, endTime }) {
  const out = new Map();
  if (Array.isArray(samples) && Array.isArray(timeDeltas) && samples.length > 0) {
    let at = startTime + (timeDeltas[0] ?? 0);
    for (let i = 0; i < samples.length; i++) {
      const next = i + 1 < samples.length ? at + timeDeltas[i + 1] : endTime;
      out.set(samples[i], (out.get(samples[i]) ?? 0) + Math.max(0, next - at));
      at = next;
    }
  } else {
    const hits = nodes.reduce((sum, node) => sum + (node.hitCount ?? 0), 0);
    const perHit = hits === 0 ? 0 : (endTime - startTime) / hits;
    for (const node of nodes) if ((node.hitCount ?? 0) > 0) out.set(node.id, node.hitCount * perHit);
  }
  return out;
}

/** The project's own code (not node_modules, not Node's built-ins). */
export function isProjectCode(url) {
  return url.startsWith('file://') && !url.includes('/node_modules/');
}

/**
 * The fetcher's features, for `featureTimes`: each sample goes to the first feature met walking its
 * stack from the leaf up, so a simhash inside extractPage counts as simhash, and the parse as parse.
 * Matched on function names and file names, which survive bundling (dist/cli/petrel-*.js chunks are
 * named after their first module) as well as they name tsc's files.
 */
export const FETCHER_FEATURES = [
  { name: 'simhash', test: (name, url) => /simhash/.test(url) || name === 'simhash' },
  { name: 'parse (htmlparser2 callbacks: links, title, meta, text)', test: (name) => name === 'scanPage' },
  { name: 'excerpt (white space collapsed)', test: (name) => name === 'excerptOf' },
  { name: 'links resolved and normalized, strings bounded', test: (name) => name === 'extractPage' || name === 'normalizeUrl' },
  { name: 'decode (charset)', test: (name) => name === 'decodeHtml' },
  { name: 'signature (xxHash64 of the body)', test: (name) => name === 'contentSignature' },
  { name: 'results to the queue server (JSON, HMAC, post)', test: (name) => ['#post', '#flush', 'results', 'claim', 'heartbeat', 'signRequest'].includes(name) },
  { name: 'HTTP client (undici, zlib): downloads and posts', test: (name, url) => /undici/.test(url) || /^(download|onResponse\w+|onRequestStart|#keep|#succeed|#fail|#settle)$/.test(name) || url === 'node:zlib' || url.startsWith('node:internal/streams') || url === 'node:net' },
  { name: 'fetch loop, result records', test: (name) => ['fetchPage', 'fetchRobots', 'fetchItem', 'baseResult', '#runSlot', 'looksBinary', 'isHtml'].includes(name) },
  { name: 'start-up (module loading)', test: (_name, url) => url.startsWith('node:internal/modules/') },
  { name: 'garbage collection', test: (name, url) => url === '' && name === '(garbage collector)' },
];

/**
 * Busy time per feature (ms), with what matched none as "other" and idle time left out: the CPU share of
 * each feature of a process. @returns {{ busyMs: number, features: { name: string, ms: number, percent: number }[] }}
 */
export function featureTimes(profile, features = FETCHER_FEATURES) {
  const { nodes } = profile;
  const parentOf = new Map();
  const byId = new Map();
  for (const node of nodes) {
    byId.set(node.id, node);
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const featureOf = new Map();
  const resolve = (id) => {
    if (featureOf.has(id)) return featureOf.get(id);
    const frame = byId.get(id).callFrame;
    const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
    let found = features.find((feature) => feature.test(name, frame.url))?.name ?? null;
    if (found === null && name === '(idle)') found = '(idle)';
    if (found === null) {
      const parent = parentOf.get(id);
      found = parent === undefined ? 'other' : resolve(parent);
    }
    featureOf.set(id, found);
    return found;
  };
  const totals = new Map();
  for (const [id, us] of sampleDurations(profile)) {
    const feature = resolve(id);
    totals.set(feature, (totals.get(feature) ?? 0) + us);
  }
  totals.delete('(idle)');
  const busyMs = [...totals.values()].reduce((sum, us) => sum + us, 0) / 1000;
  const order = [...features.map((f) => f.name), 'other'];
  return {
    busyMs,
    features: order.map((name) => ({ name, ms: (totals.get(name) ?? 0) / 1000, percent: busyMs === 0 ? 0 : (100 * (totals.get(name) ?? 0)) / 1000 / busyMs })),
  };
}
