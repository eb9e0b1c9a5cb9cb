/**
 * Runs merges off the request path. `worker`: in a worker thread (merge-worker.js beside this module
 * in the build), so a merge of any size never blocks the queue server's event loop. `inline`: on the
 * event loop after a macrotask (tests that run from the TypeScript sources, where no compiled worker
 * exists). Both hand the result back asynchronously, so the index's install path is the same.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { IndexError, type IndexErrorCode } from './errors.js';
import { mergeSegments, type MergeJob, type MergeResult } from './merge.js';

export interface MergeRunner {
  run(job: MergeJob): Promise<MergeResult>;
  /** Stops a merge in flight (its partial output is an orphan the next open removes). */
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

export function inlineRunner(): MergeRunner {
  return {
    run: (job) => new Promise((resolve, reject) => {
      setImmediate(() => {
        try {
          resolve(mergeSegments(job));
        } catch (error) {
          reject(error);
        }
      });
    }),
    close: async () => {},
  };
}

type Answer = { ok: true; result: MergeResult } | { ok: false; code: IndexErrorCode; message: string };

export function workerRunner(): MergeRunner {
  let worker: Worker | null = null;
  let pending: { resolve: (r: MergeResult) => void; reject: (e: Error) => void } | null = null;
  const fail = (error: Error): void => {
    const p = pending;
    pending = null;
    worker = null;
    p?.reject(error);
  };
  return {
    run(job) {
      if (pending !== null) return Promise.reject(new Error('one merge at a time'));
      if (worker === null) {
        const w = new Worker(WORKER_URL, { resourceLimits: WORKER_LIMITS });
        w.on('message', (answer: Answer) => {
          const p = pending;
          pending = null;
          // Idle, the worker must not keep the process alive (listening refs it: unref after).
          w.unref();
          if (p === null) return;
          if (answer.ok) p.resolve(answer.result);
          else p.reject(new IndexError(answer.code, answer.message));
        });
        w.on('error', (error) => fail(error));
        w.on('exit', (code) => fail(new Error(`merge worker exited with code ${code}`)));
        worker = w;
      }
      return new Promise((resolve, reject) => {
        pending = { resolve, reject };
        // A merge in flight keeps the process alive, so whoever awaits it (idle()) gets its answer.
        worker!.ref();
        worker!.postMessage(job);
      });
    },
    async close() {
      const w = worker;
      worker = null;
      pending = null;
      if (w !== null) await w.terminate();
    },
  };
}
