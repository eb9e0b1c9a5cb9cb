/**
 * The test web as a corpus: web.mjs in its own process (so its CPU is never charged to a crawler),
 * wrapped so it looks like a real corpus's nginx site (lib/nginx-site.mjs): origins, seeds, the number
 * of reachable pages, tally() and close().
 */
import { fork } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));

/** Forks web.mjs and wraps its IPC: tally() returns the counts since the last tally, close() stops it. */
export async function startTestWebSite({ testWebModule, pagesPerHost, hosts }) {
  const child = fork(join(here, 'web.mjs'), [testWebModule, String(pagesPerHost), String(hosts)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const stopOnExit = () => child.kill('SIGTERM');
  process.once('exit', stopOnExit);
  const next = (type) =>
    new Promise((resolveMessage, reject) => {
      const onMessage = (message) => {
        if (message?.type !== type) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolveMessage(message);
      };
      const onExit = (code) => reject(new Error(`the test web exited (status ${code}) before answering '${type}'`));
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await next('ready');
  return {
    kind: 'testweb',
    ...ready,
    async tally() {
      const answer = next('tally');
      child.send({ type: 'tally' });
      return answer;
    },
    async close() {
      process.off('exit', stopOnExit);
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'close' });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill('SIGTERM');
    },
  };
}
