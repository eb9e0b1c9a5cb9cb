/**
 * Runs one command under GNU time and the /proc sampler, and returns what it cost.
 *
 * CPU: `/usr/bin/time -f` reports user and sys of the command and of every descendant it (or they)
 * waited for, which for a Node parent that spawns children is the whole tree. Wall time is taken here,
 * around spawn → exit, and also read from time's %e. Peak RSS per process comes from the sampler
 * (VmHWM); GNU time's %M is only the largest single process, kept as a cross-check.
 *
 * The command runs in its own process group, so a timeout or Ctrl-C here ends exactly that tree.
 * `stopWhen`, if given, is asked every 100 ms; once it says yes, the crawler's processes (not the time
 * wrapper, which must live to report) get SIGTERM: how --max caps wget, which has no page limit.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { sampleProcessTree, treePids } from './proc-tree.mjs';

const TIME = '/usr/bin/time';
// elapsed s, user s, sys s, max RSS kB of the largest process, exit status
const TIME_FORMAT = 'bench-time %e %U %S %M %x';

/**
 * @param {{ argv: string[], env?: NodeJS.ProcessEnv, cwd?: string, stdoutFile: string, stderrFile: string,
 *           timeFile: string, timeoutMs: number, stopWhen?: () => boolean }} run
 */
export async function measure(run) {
  const stdout = openSync(run.stdoutFile, 'w');
  const stderr = openSync(run.stderrFile, 'w');
  const loadBefore = loadavg()[0];
  const machineBefore = machineBusyS();
  const started = performance.now();
  const spawnedAtMs = performance.timeOrigin + started; // same clock as the test web's request log
  const child = spawn(TIME, ['-o', run.timeFile, '-f', TIME_FORMAT, ...run.argv], {
    env: run.env ?? process.env,
    cwd: run.cwd,
    stdio: ['ignore', stdout, stderr],
    detached: true,
  });
  closeSync(stdout);
  closeSync(stderr);
  const sampler = sampleProcessTree(child.pid, 100);
  const stopTree = () => {
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stopTree();
  }, run.timeoutMs);
  process.once('SIGINT', stopTree);
  let capped = false;
  const capTimer =
    run.stopWhen === undefined
      ? null
      : setInterval(() => {
          if (capped || !run.stopWhen()) return;
          capped = true;
          for (const pid of treePids(child.pid)) {
            if (pid === child.pid) continue;
            try {
              process.kill(pid, 'SIGTERM');
            } catch {
              // gone already
            }
          }
        }, 100);
  const exitCode = await new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const wallMs = performance.now() - started;
  const machineCpuS = machineBusyS() - machineBefore;
  clearTimeout(timer);
  if (capTimer !== null) clearInterval(capTimer);
  process.off('SIGINT', stopTree);
  const processes = sampler.stop().filter((record) => record.pid !== child.pid); // drop the time wrapper

  const time = parseTime(readFileSync(run.timeFile, 'utf8'));
  return {
    exitCode: time.exitStatus ?? exitCode,
    timedOut,
    /** Stopped by stopWhen (a --max cap), not finished by itself. */
    capped,
    wallMs,
    spawnedAtMs,
    exitedAtMs: spawnedAtMs + wallMs,
    timeElapsedS: time.elapsedS,
    cpuUserS: time.userS,
    cpuSysS: time.sysS,
    cpuS: time.userS + time.sysS,
    largestProcessRssKb: time.maxRssKb,
    processes,
    /** The largest Pss sum of the crawler's processes at one sample (proc-tree.mjs), kB. */
    peakTreePssKb: sampler.peakTreePssKb,
    /** pid of the time wrapper: the crawler's own main process is its child. */
    wrapperPid: child.pid,
    loadBefore,
    /** CPU s the whole machine spent during the run, every process of every user (from /proc/stat). */
    machineCpuS,
  };
}

function parseTime(text) {
  const line = text.split('\n').find((l) => l.startsWith('bench-time '));
  if (line === undefined) throw new Error(`no GNU time line in: ${text}`);
  const [, elapsedS, userS, sysS, maxRssKb, exitStatus] = line.split(' ').map(Number);
  return { elapsedS, userS, sysS, maxRssKb, exitStatus };
}

/** Busy CPU seconds of the machine since boot: all of /proc/stat's first line except idle and iowait. */
function machineBusyS() {
  const fields = readFileSync('/proc/stat', 'latin1').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
  const [user, nice, system, , , irq, softirq, steal] = fields;
  return (user + nice + system + irq + softirq + steal) / 100; // USER_HZ = 100
}
