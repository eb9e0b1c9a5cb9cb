/**
 * What /proc says about a process (Linux): its CPU time and its resident memory. Read by the queue
 * server benchmarks from outside the measured process, so reading costs it nothing.
 */
import { readFileSync } from 'node:fs';

/** Kernel clock ticks per second for /proc/PID/stat (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

/** User and system CPU time of a process (utime, stime), ms; null once it has exited. */
export function cpuOf(pid: number): { user: number; system: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name, which is in parentheses and may contain spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: (Number(fields[11]) * 1000) / CLOCK_TICKS, system: (Number(fields[12]) * 1000) / CLOCK_TICKS };
  } catch {
    return null;
  }
}

/** Resident memory now (VmRSS) and at its peak (VmHWM), KiB; null once the process has exited. */
export function memoryOf(pid: number): { rssKib: number; peakKib: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'latin1');
    const rss = /VmRSS:\s+(\d+) kB/.exec(status);
    const peak = /VmHWM:\s+(\d+) kB/.exec(status);
    return rss === null || peak === null ? null : { rssKib: Number(rss[1]), peakKib: Number(peak[1]) };
  } catch {
    return null;
  }
}
