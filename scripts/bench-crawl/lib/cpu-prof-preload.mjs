/**
 * `node --cpu-prof` for a whole process tree on Node 20, where NODE_OPTIONS may not carry --cpu-prof
 * ("--cpu-prof is not allowed in NODE_OPTIONS") and Petrel starts its children without passing execArgv on.
 * Loaded with NODE_OPTIONS=--import=<this file>, which every child inherits. It starts V8's sampling
 * profiler through the inspector (1 ms interval, as --cpu-prof does) and writes
 * $PETREL_BENCH_CPU_PROF_DIR/pid-<pid>.cpuprofile when the process exits.
 *
 * The write happens on 'exit', so a process killed by a signal leaves no profile. The inspector session
 * answers synchronously on the main thread, which is what makes writing from 'exit' possible.
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join } from 'node:path';

const dir = process.env.PETREL_BENCH_CPU_PROF_DIR;
if (dir !== undefined && dir !== '') {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 }); // µs
  session.post('Profiler.start');
  process.once('exit', () => {
    session.post('Profiler.stop', (error, result) => {
      if (error === null && result?.profile !== undefined) writeFileSync(join(dir, `pid-${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}
