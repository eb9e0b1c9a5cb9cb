/**
 * Runs merges off the request path. `worker`: in a worker thread (merge-worker.js beside this module
 * in the build), so a merge of any size never blocks the queue server's event loop. `inline`: on the
 * event loop after a macrotask (tests that run from the TypeScript sources, where no compiled worker
 * exists).
 *
 * A merge's outcome reaches the index through `done`, called once: from the event loop when it turns,
 * or synchronously from `poll()`, which the index calls at every commit. Without `poll` a writer that
 * stages and commits without yielding (a burst of results posts, the benchmark's loop) would leave
 * every finished merge uninstalled until the burst ends, and the merges would then run one after
 * another at the end instead of beside the commits (profiled: 18 s of a 69 s build of 100,000
 * documents). The worker answers on a MessagePort of its own so `receiveMessageOnPort` can take the
 * answer without the event loop.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { IndexError, type IndexErrorCode } from './errors.js';
import { mergeSegments, type MergeJob, type MergeResult } from './merge.js';

export type MergeOutcome = { readonly ok: true; readonly result: MergeResult } | { readonly ok: false; readonly error: Error };

export interface MergeRunner {
  /** Starts a merge (one at a time); `done` is called once with its outcome, from the event loop or from `poll`. */
  start(job: MergeJob, done: (outcome: MergeOutcome) => void): void;
  /** Delivers the outcome of a finished merge now, synchronously, if there is one. */
  poll(): void;
  /** Stops a merge in flight (its partial output is an orphan the next open removes); `done` is not called. */
  close(): Promise<void>;
}

export type MergeMode = 'worker' | 'inline' | 'off';

/**
 * The compiled worker: beside this module in tsc's output (dist/queue-server/search/), and from the
 * bundled CLI's chunks in dist/cli/ (scripts/bundle-cli.mjs), where this module's code lives in a chunk,
 * at tsc's copy. Without the second, a bundled queue server found no worker and merged on its event loop.
 */
const WORKER_URL = [new URL('./merge-worker.js', import.meta.url), new URL('../queue-server/search/merge-worker.js', import.meta.url)].find((url) => existsSync(fileURLToPath(url))) ?? new URL('./merge-worker.js', import.meta.url);

/**
 * The merge worker's JS heap bound. A merge's big data (postings, columns, remap tables, store blocks)
 * lives in typed arrays outside the JS heap; what is inside is per-term bookkeeping and the set of
 * deleted entries (passed as typed arrays). Without a bound V8 lets the worker's heap grow with the
 * garbage of merge after merge; with it the worker collects early.
 * A merge that needed more would fail with ERR_WORKER_OUT_OF_MEMORY, reported in stats().lastMergeError.
 */
const WORKER_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 8 };

/** Whether the compiled worker exists (false when running from the .ts sources). */
export function workerAvailable(): boolean {
  return existsSync(fileURLToPath(WORKER_URL));
}

function run(job: MergeJob): MergeOutcome {
  try {
    return { ok: true, result: mergeSegments(job) };
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error : new Error(String(error)) };
  }
}

/**
 * On the event loop after a macrotask; `poll` runs a started merge at once (as if a worker had
 * finished it), so tests from the sources exercise the index's install-at-commit path too.
 */
export function inlineRunner(): MergeRunner {
  let pending: { job: MergeJob; done: (outcome: MergeOutcome) => void; timer: NodeJS.Immediate } | null = null;
  const finish = (): void => {
    const p = pending;
    if (p === null) return;
    pending = null;
    clearImmediate(p.timer);
    p.done(run(p.job));
  };
  return {
    start(job, done) {
      if (pending !== null) throw new Error('one merge at a time');
      pending = { job, done, timer: setImmediate(finish) };
    },
    poll: finish,
    close: async () => {
      if (pending !== null) clearImmediate(pending.timer);
      pending = null;
    },
  };
}

type Answer = { ok: true; result: MergeResult } | { ok: false; code: IndexErrorCode; message: string };

export function workerRunner(): MergeRunner {
  let worker: Worker | null = null;
  let answers: MessagePort | null = null;
  let pending: ((outcome: MergeOutcome) => void) | null = null;
  const settle = (outcome: MergeOutcome): void => {
    const done = pending;
    pending = null;
    // Idle, the worker must not keep the process alive (listening refs it: unref after).
    worker?.unref();
    answers?.unref();
    done?.(outcome);
  };
  const answered = (answer: Answer): void => settle(answer.ok ? { ok: true, result: answer.result } : { ok: false, error: new IndexError(answer.code, answer.message) });
  const fail = (error: Error): void => {
    worker = null;
    answers?.close();
    answers = null;
    settle({ ok: false, error });
  };
  return {
    start(job, done) {
      if (pending !== null) throw new Error('one merge at a time');
      if (worker === null) {
        const { port1, port2 } = new MessageChannel();
        const w = new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS, workerData: { answers: port2 }, transferList: [port2] });
        port1.on('message', answered);
        w.on('error', (error) => fail(error));
        w.on('exit', (code) => fail(new Error(`merge worker exited with code ${code}`)));
        worker = w;
        answers = port1;
      }
      pending = done;
      // A merge in flight keeps the process alive, so whoever awaits it (idle()) gets its answer.
      worker.ref();
      answers!.ref();
      worker.postMessage(job);
    },
    poll() {
      if (pending === null || answers === null) return;
      const received = receiveMessageOnPort(answers);
      if (received !== undefined) answered(received.message as Answer);
    },
    async close() {
      const w = worker;
      worker = null;
      pending = null;
      answers?.close();
      answers = null;
      if (w !== null) await w.terminate();
    },
  };
}
