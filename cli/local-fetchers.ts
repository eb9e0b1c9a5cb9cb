/**
 * Fetcher child processes on this machine for `petrel start`: the same `petrel fetcher` program a
 * fleet runs, started N times against the local queue server. A fetcher that exits on its own is
 * started again after a pause that doubles with each quick failure (1 s up to 30 s), so a daemon
 * keeps its fetchers however long it runs; `stop` ends them all.
 */
import type { ChildProcess } from 'node:child_process';
import { type Command } from 'commander';
import { FETCHER_DEFAULTS } from './fetcher-command.js';
import { eachLine, exited, spawnPetrel } from './children.js';
import { integerOption } from './options.js';

export interface LocalFetcherValues {
  concurrency: number;
  contact?: string;
  maxBodyBytes: number;
  timeoutMs: number;
}

export function addLocalFetcherOptions(command: Command): Command {
  return command
    .option('--concurrency <n>', 'hosts each local fetcher fetches at once', integerOption('--concurrency', 1, 1024), FETCHER_DEFAULTS.concurrency)
    .option('--contact <url-or-email>', 'contact put in the User-Agent so site owners can reach you')
    .option('--max-body-bytes <n>', 'body bytes kept per page; longer pages are cut and marked truncated', integerOption('--max-body-bytes', 1024), FETCHER_DEFAULTS.maxBodyBytes)
    .option('--timeout-ms <ms>', 'total time one request may take', integerOption('--timeout-ms', 100), FETCHER_DEFAULTS.timeoutMs);
}

const FIRST_RESTART_DELAY_MS = 1000;
const MAX_RESTART_DELAY_MS = 30_000;
/** A fetcher that ran this long before exiting gets the first restart delay again. */
const HEALTHY_RUN_MS = 60_000;
const STOP_GRACE_MS = 5000;

export class LocalFetchers {
  readonly #children: (ChildProcess | null)[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  readonly #args: (name: string) => string[];
  readonly #log: (line: string) => void;
  #stopping = false;

  /** `ca`: the CA file fetchers verify an HTTPS queue server with. */
  constructor(options: { serverUrl: string; tokenFile: string; ca?: string; values: LocalFetcherValues; log: (line: string) => void }) {
    const { serverUrl, tokenFile, ca, values } = options;
    this.#log = options.log;
    this.#args = (name) => {
      const args = ['fetcher', '--server', serverUrl, '--token-file', tokenFile, '--name', name];
      args.push('--concurrency', String(values.concurrency), '--max-body-bytes', String(values.maxBodyBytes), '--timeout-ms', String(values.timeoutMs));
      if (values.contact !== undefined) args.push('--contact', values.contact);
      if (ca !== undefined) args.push('--ca', ca);
      return args;
    };
  }

  start(count: number): void {
    for (let i = 0; i < count; i++) this.#spawn(i, FIRST_RESTART_DELAY_MS);
  }

  #spawn(index: number, nextDelayMs: number): void {
    const name = `local-${index + 1}`;
    const startedAt = Date.now();
    const child = spawnPetrel(this.#args(name));
    this.#children[index] = child;
    eachLine(child.stderr, this.#log);
    eachLine(child.stdout, this.#log);
    child.once('exit', (code, signal) => {
      this.#children[index] = null;
      if (this.#stopping) return;
      const delay = Date.now() - startedAt >= HEALTHY_RUN_MS ? FIRST_RESTART_DELAY_MS : nextDelayMs;
      this.#log(`petrel start: fetcher ${name} exited (${signal ?? `status ${code}`}); starting it again in ${delay / 1000} s`);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (!this.#stopping) this.#spawn(index, Math.min(delay * 2, MAX_RESTART_DELAY_MS));
      }, delay);
      this.#timers.add(timer);
    });
  }

  /** Ends every fetcher: SIGTERM, then SIGKILL for any still running after a grace period. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    const running = this.#children.filter((child): child is ChildProcess => child !== null && child.exitCode === null && child.signalCode === null);
    for (const child of running) child.kill('SIGTERM');
    const grace = new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS).unref());
    await Promise.race([Promise.all(running.map(exited)), grace]);
    for (const child of running) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(running.map(exited));
  }
}
