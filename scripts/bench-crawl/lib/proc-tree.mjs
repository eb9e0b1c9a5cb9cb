/**
 * Peak memory of every process in a tree, sampled from /proc (Linux only).
 *
 * It also keeps each process's CPU time as of its last sample, which misses up to one interval of work
 * before exit: good enough to split CPU between processes, while the total comes from GNU time.
 *
 * Every `intervalMs` it walks the tree below `rootPid` through /proc/<pid>/task/<tid>/children and reads
 * each process's VmHWM (its own peak resident set, kept by the kernel, so a sample only has to happen
 * while the process is alive, not at the moment of the peak). A process that grows in the last interval
 * before it exits is under-reported by that growth; a process that lives less than one interval may be
 * missed entirely. Both are rare for crawlers that run for seconds.
 *
 * It also sums the tree's proportional set size (Pss of /proc/<pid>/smaps_rollup: each page shared by
 * N processes counted 1/N in each) every `pssIntervalMs` and keeps the largest sum: the memory the whole tree
 * held at its peak. A plain sum of each process's peak RSS counts pages the processes share (the node
 * binary's ~45 MB of mapped code, for one) once per process, so it overstates a crawler made of several
 * processes against one made of one. The root (the caller's wrapper) is left out of the sum. The sum
 * is only as good as the sampling: a peak between two samples is missed. Reading smaps_rollup walks the
 * process's page tables: 3.2 ms of the sampler's CPU for one 300 MB Node process (status: 0.1 ms, stat:
 * 0.03 ms). Every 100 ms over a crawl's four processes that was 12 % of a core taken from the crawl it
 * measured, on a two-core machine (`perf record -a` put 7 % of all samples of a test-web crawl in
 * smaps_account), so Pss is read five times less often than the rest.
 *
 * Memory: one small record per process ever seen in the tree.
 */
import { readFileSync, readdirSync } from 'node:fs';

/** Starts sampling; `stop()` takes a last sample and returns one record per process seen. */
export function sampleProcessTree(rootPid, intervalMs = 100, pssIntervalMs = 500) {
  /** pid → { pid, ppid, argv, peakKb, samples } */
  const seen = new Map();
  let peakTreePssKb = 0;
  let pssReadAt = -Infinity;
  const sample = (forcePss = false) => {
    const now = performance.now();
    const readPss = forcePss || now - pssReadAt >= pssIntervalMs;
    if (readPss) pssReadAt = now;
    const stack = [{ pid: rootPid, ppid: null }];
    let treePssKb = 0;
    while (stack.length > 0) {
      const { pid, ppid } = stack.pop();
      const hwm = readVmHwmKb(pid);
      if (hwm === null) continue; // gone (or a zombie, which has no memory left to report)
      if (readPss && pid !== rootPid) treePssKb += readPssKb(pid) ?? 0;
      let record = seen.get(pid);
      if (record === undefined) {
        record = { pid, ppid, argv: [], peakKb: 0, cpuS: 0, samples: 0 };
        seen.set(pid, record);
      }
      // Re-read argv: right after fork() a child still shows its parent's command line until exec().
      record.argv = readArgv(pid) ?? record.argv;
      record.peakKb = Math.max(record.peakKb, hwm);
      record.cpuS = readCpuS(pid) ?? record.cpuS;
      record.samples++;
      for (const child of readChildren(pid)) stack.push({ pid: child, ppid: pid });
    }
    peakTreePssKb = Math.max(peakTreePssKb, treePssKb);
  };
  sample();
  const timer = setInterval(() => sample(), intervalMs);
  return {
    /** Call before the root is reaped (e.g. on the child's 'exit' is too late for its own HWM). */
    sample: () => sample(true),
    stop() {
      clearInterval(timer);
      sample(true);
      return [...seen.values()];
    },
    /** The largest sum of the tree's Pss seen in one sample, root left out (kB). */
    get peakTreePssKb() {
      return peakTreePssKb;
    },
  };
}

function readVmHwmKb(pid) {
  let status;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return null;
  }
  const match = /^VmHWM:\s+(\d+) kB$/m.exec(status);
  return match === null ? null : Number(match[1]);
}

function readPssKb(pid) {
  try {
    const match = /^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'latin1'));
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

/** user + sys CPU seconds so far, from /proc/<pid>/stat (fields 14 and 15, in clock ticks of 1/100 s). */
export function processCpuS(pid) {
  return readCpuS(pid);
}

/** `rootPid` and every process below it, now. */
export function treePids(rootPid) {
  const pids = [];
  const stack = [rootPid];
  while (stack.length > 0) {
    const pid = stack.pop();
    pids.push(pid);
    stack.push(...readChildren(pid));
  }
  return pids;
}

function readCpuS(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count fields after its closing ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_S;
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on every Linux this runs on (getconf CLK_TCK). */
const CLOCK_TICKS_PER_S = 100;

function readArgv(pid) {
  try {
    const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return raw.length === 0 ? null : raw.replace(/\0$/, '').split('\0');
  } catch {
    return null;
  }
}

function readChildren(pid) {
  const children = [];
  let tasks;
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return children;
  }
  // A child is listed under the thread that forked it; Node forks from its main thread, but look at all.
  for (const tid of tasks) {
    try {
      for (const text of readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1').split(' ')) {
        if (text !== '' && text !== '\n') children.push(Number(text));
      }
    } catch {
      // the thread ended between readdir and read
    }
  }
  return children;
}
