/** Reading a V8 .cpuprofile (node --cpu-prof): the functions that took the most time themselves. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SelfTime {
  name: string;
  ms: number;
  share: number;
}

/** Top functions by self time of a .cpuprofile, named `function file:line` (the last two path parts). */
export function topSelfTimes(path: string, top: number): SelfTime[] {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as {
    nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
    samples: number[];
    timeDeltas: number[];
  };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const totals = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)!.callFrame;
    const file = frame.url.replace(/^file:\/\//, '').split('/').slice(-2).join('/');
    const name = `${frame.functionName || '(anonymous)'}${file === '' ? '' : ` ${file}:${frame.lineNumber + 1}`}`;
    const us = profile.timeDeltas[i] ?? 0;
    totals.set(name, (totals.get(name) ?? 0) + us);
    all += us;
  });
  return [...totals]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), share: all === 0 ? 0 : Math.round((us / all) * 1000) / 1000 }));
}

/** The profiles written into a directory (one per process that exited normally), oldest name first. */
export function profilesIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .sort()
      .map((name) => join(dir, name));
  } catch {
    return [];
  }
}
