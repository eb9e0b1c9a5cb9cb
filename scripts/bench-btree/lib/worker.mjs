/**
 * One engine, in its own process (run.mjs starts it): put, reopen, random get, ordered scan, file size.
 * Prints one JSON object on stdout. Arguments: a JSON object (engine, dir, keys, batch, gets, cacheKib,
 * sqliteJournal, petrelRoot).
 *
 * Each phase reports wall time and this process's CPU time (user + system) over it: a put phase that
 * waits on fsync shows wall time well above CPU time.
 */
import { dirBytes, makeEngine } from './engines.mjs';
import { lookupOrder, makeWorkload, valueMatches } from './workload.mjs';

const args = JSON.parse(process.argv[2]);
const { keys: n, batch, gets } = args;

function phase(fn) {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const result = fn();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  return { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, result };
}

const { keys, values } = makeWorkload(n);
const order = lookupOrder(n);
const engine = await makeEngine(args.engine, args.dir, args);
engine.open();

const put = phase(() => {
  let commits = 0;
  for (let from = 0; from < n; from += batch) {
    engine.putBatch(keys, values, from, Math.min(n, from + batch));
    commits++;
  }
  return commits;
});
const bytesAfterPut = dirBytes(args.dir);

// Reopen, so no engine reads from what its own write path left in memory.
await engine.close();
engine.open();

const get = phase(() => {
  let wrong = 0;
  for (let g = 0; g < gets; g++) {
    const i = order[g % n];
    if (!valueMatches(engine.get(keys[i]), i, keys[i])) wrong++;
  }
  return wrong;
});
if (get.result !== 0) throw new Error(`${args.engine}: ${get.result} look-ups returned a wrong value`);

const scan = phase(() => {
  let count = 0;
  let previous = null;
  let disorder = 0;
  engine.scan((key, value) => {
    if (previous !== null && Buffer.compare(previous, key) >= 0) disorder++;
    if (value.length !== 100) disorder++;
    previous = key;
    count++;
  });
  return { count, disorder };
});
if (scan.result.count !== n || scan.result.disorder !== 0) {
  throw new Error(`${args.engine}: scan returned ${scan.result.count} of ${n} keys, ${scan.result.disorder} out of order`);
}

await engine.close();
const bytesClosed = dirBytes(args.dir);
const usage = process.resourceUsage();

process.stdout.write(
  `${JSON.stringify({
    engine: args.engine,
    describe: engine.describe,
    keys: n,
    batch,
    commits: put.result,
    put: { wallMs: put.wallMs, cpuMs: put.cpuMs, keysPerSec: n / (put.wallMs / 1000), commitsPerSec: put.result / (put.wallMs / 1000) },
    get: { count: gets, wallMs: get.wallMs, cpuMs: get.cpuMs, usPerGet: (get.wallMs * 1000) / gets, getsPerSec: gets / (get.wallMs / 1000) },
    scan: { count: n, wallMs: scan.wallMs, cpuMs: scan.cpuMs, keysPerSec: n / (scan.wallMs / 1000) },
    bytesAfterPut,
    bytesClosed,
    bytesPerKey: bytesClosed / n,
    maxRssKib: usage.maxRSS,
  })}\n`,
);
