/**
 * Entry point of the merge worker thread: receives MergeJobs, answers with MergeResults (or an error
 * message with its code) on the MessagePort handed over in workerData (merge-runner.ts: the index can
 * take an answer from it synchronously). One job at a time; the index never sends a second before
 * the first answer.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { IndexError } from './errors.js';
import { mergeSegments, type MergeJob } from './merge.js';

if (parentPort === null) throw new Error('merge-worker.ts runs as a worker thread');
const answers = (workerData as { answers: MessagePort }).answers;
parentPort.on('message', (job: MergeJob) => {
  try {
    answers.postMessage({ ok: true, result: mergeSegments(job) });
  } catch (error) {
    answers.postMessage({ ok: false, code: error instanceof IndexError ? error.code : 'INDEX_IO', message: error instanceof Error ? error.message : String(error) });
  }
});
