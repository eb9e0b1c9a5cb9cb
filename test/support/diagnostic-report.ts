/**
 * What a child process that will not finish is doing, for a test's failure message: Node's diagnostic
 * report (https://nodejs.org/api/report.html), which the child writes when it gets SIGUSR2 if it was
 * started with `diagnosableEnv`. The report is taken by a watchdog thread and an interrupt of the
 * main thread, so a child busy in a loop of JavaScript reports too; one blocked in a system call
 * reports when the call returns (a tight loop may never look at the interrupt: then the CPU time it
 * used while asked says which it is). Summarized: the JavaScript stack, the libuv handles by kind, the
 * worker threads.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';

/** Environment for startPetrel that makes the child write a report into `directory` on SIGUSR2. */
export function diagnosableEnv(directory = mkdtempSync(join(tmpdir(), 'petrel-report-'))): { env: NodeJS.ProcessEnv; directory: string } {
  const options = `--report-on-signal --report-signal=SIGUSR2 --report-directory=${directory}`;
  const inherited = process.env.NODE_OPTIONS;
  return { env: { NODE_OPTIONS: inherited === undefined || inherited === '' ? options : `${inherited} ${options}` }, directory };
}

interface Report {
  javascriptStack?: { message?: string; stack?: string[] };
  libuv?: { type: string; is_active?: boolean; is_referenced?: boolean; firesInMsFromNow?: number; localEndpoint?: { port?: number } | null; remoteEndpoint?: { port?: number } | null }[];
  workers?: unknown[];
}

/**
 * Asks a running child (started with `diagnosableEnv(directory)`) for its report and summarizes it in
 * a few lines; says so instead when the child has exited or writes none within `timeoutMs`.
 */
export async function describeRunningChild(child: ChildProcess, directory: string, timeoutMs = 5000): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) return `(exited: code ${child.exitCode}, signal ${child.signalCode})`;
  const before = new Set(readdirSync(directory));
  const cpuBefore = cpuTicksOf(child.pid);
  child.kill('SIGUSR2');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const written = readdirSync(directory).find((name) => !before.has(name) && name.endsWith('.json'));
    if (written === undefined) continue;
    let report: Report;
    try {
      report = JSON.parse(readFileSync(join(directory, written), 'utf8')) as Report;
    } catch {
      continue; // still being written
    }
    return summarizeReport(report);
  }
  // A loop of JavaScript that never checks for interrupts, or a system call that does not return.
  const cpu = cpuTicksOf(child.pid);
  const busy = cpu === null || cpuBefore === null ? 'unknown' : `${cpu - cpuBefore} clock ticks of CPU meanwhile`;
  return `(no diagnostic report within ${timeoutMs} ms; ${busy})`;
}

/** utime + stime of a process from /proc (Linux), or null. */
function cpuTicksOf(pid: number | undefined): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return null;
  }
}

export function summarizeReport(report: Report): string {
  const stack = report.javascriptStack?.stack ?? [];
  const handles = new Map<string, number>();
  for (const handle of report.libuv ?? []) {
    const kind = `${handle.type}${handle.is_active === true ? '' : ' (inactive)'}${handle.is_referenced === false ? ' (unref)' : ''}`;
    handles.set(kind, (handles.get(kind) ?? 0) + 1);
  }
  const timers = (report.libuv ?? []).filter((handle) => handle.type === 'timer' && handle.is_active === true).map((handle) => handle.firesInMsFromNow);
  const sockets = (report.libuv ?? []).filter((handle) => handle.type === 'tcp').map((handle) => `${handle.localEndpoint?.port ?? '?'}->${handle.remoteEndpoint?.port ?? '-'}`);
  return [
    `diagnostic report: ${report.workers?.length ?? 0} worker thread(s)`,
    // An idle event loop has no JavaScript on its stack.
    `javascript: ${stack.length === 0 ? '(idle: none running)' : `\n  ${stack.slice(0, 12).join('\n  ')}`}`,
    `libuv handles: ${[...handles].map(([kind, count]) => `${count} ${kind}`).join(', ')}`,
    `active timers fire in (ms): ${timers.join(', ')}`,
    `tcp (local->remote port): ${sockets.join(', ')}`,
  ].join('\n');
}
