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
