/** Top functions by self time in a V8 .cpuprofile (as written by node --cpu-prof). */
import { readFileSync } from 'node:fs';

export function topSelfTimes(path, top) {
  const profile = JSON.parse(readFileSync(path, 'utf8'));
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const samples = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i];
    samples.set(id, (samples.get(id) ?? 0) + (deltas[i] ?? 0));
  }
  const totals = new Map();
  let all = 0;
  for (const [id, us] of samples) {
    const frame = byId.get(id).callFrame;
    const file = frame.url.replace(/^file:\/\//, '').split('/').slice(-2).join('/');
    const name = `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`.trim();
    totals.set(name, (totals.get(name) ?? 0) + us);
    all += us;
  }
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, ms: us / 1000, share: all === 0 ? 0 : us / all }));
}
