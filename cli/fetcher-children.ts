/**
 * Fetcher child processes on this machine, for `petrel crawl` and `petrel start`: the same `petrel
 * fetcher` program a fleet runs, started N times against the local queue server, their output passed
 * to `log`. What happens when one exits on its own is the restart policy the command gives:
 *
 *   limited   (`petrel crawl`)  a fetcher that failed is started again at once, at most `restarts`
 *                               times; one that exits 0 (told the crawl is done) is not, nor one that
 *                               refused its arguments (status 2). When none is left, `onNoneLeft`.
 *   backoff   (`petrel start`)  a fetcher is always started again, after a pause that doubles with each
 *                               quick exit (firstDelayMs up to maxDelayMs), so a daemon keeps its
 *                               fetchers however long it runs; a run of healthyRunMs resets the pause.
 *
 * `stop` ends them all: SIGTERM (a fetcher finishes the request each slot is on and delivers the
 * results), then SIGKILL for any still running after a grace period.
 */
import type { ChildProcess } from 'node:child_process';
import { eachLine, exited, spawnPetrel } from './children.js';

export type RestartPolicy =
  | { readonly kind: 'limited'; readonly restarts: number }
  | { readonly kind: 'backoff'; readonly firstDelayMs: number; readonly maxDelayMs: number; readonly healthyRunMs: number };

export interface FetcherChildrenOptions {
  /** Who speaks in log lines, e.g. `petrel crawl`. */
  readonly label: string;
  /** Children are called `<namePrefix>-1`, `<namePrefix>-2`, ... */
  readonly namePrefix: string;
  /** The `petrel` arguments of the child called `name`. */
  readonly args: (name: string) => string[];
  readonly restart: RestartPolicy;
  readonly log: (line: string) => void;
  /** A child exited on its own (not stopped by `stop` or `kill`), before any restart: `start` hands its leases back at once. */
  readonly onExit?: (name: string) => void;
  /**
   * limited policy: every fetcher has exited on its own and none will be started again (failures past
   * the restarts, or a refusal of its arguments). `petrel crawl` ends then: nothing would fetch.
   */
  readonly onNoneLeft?: () => void;
}

/** A fetcher's exit status for refused arguments (cli/exit-codes.ts usage): starting it again would be refused again. */
const USAGE_STATUS = 2;

/** How long stop() lets SIGTERMed fetchers finish their requests in flight and deliver before SIGKILL. */
const STOP_GRACE_MS = 5000;

export class FetcherChildren {
  readonly #options: FetcherChildrenOptions;
  readonly #children: (ChildProcess | null)[] = [];
  readonly #timers = new Set<NodeJS.Timeout>();
  #stopping = false;

  constructor(options: FetcherChildrenOptions) {
    this.#options = options;
  }

  /** Starts `count` more fetchers (numbered on from those started before). */
  start(count: number): void {
    if (this.#stopping) return;
    const policy = this.#options.restart;
    const first = this.#children.length;
    for (let i = first; i < first + count; i++) this.#spawn(i, policy.kind === 'limited' ? policy.restarts : policy.firstDelayMs);
  }

  /** `next`: restarts left (limited), or the pause before the next restart (backoff). */
  #spawn(index: number, next: number): void {
    const { label, namePrefix, args, restart, log } = this.#options;
    const name = `${namePrefix}-${index + 1}`;
    const startedAt = Date.now();
    const child = spawnPetrel(args(name));
    this.#children[index] = child;
    eachLine(child.stderr, log);
    eachLine(child.stdout, log);
    child.once('exit', (code, signal) => {
      this.#children[index] = null;
      if (this.#stopping) return;
      this.#options.onExit?.(name);
      const why = `${label}: fetcher ${name} exited (${signal ?? `status ${code}`})`;
      if (restart.kind === 'limited') {
        if (code === 0) return;
        const again = next > 0 && code !== USAGE_STATUS;
        log(`${why}${again ? '; restarting it' : code === USAGE_STATUS ? ': it refused its arguments, not started again' : ''}`);
        if (again) this.#spawn(index, next - 1);
        else if (this.#children.every((other) => other === null)) this.#options.onNoneLeft?.();
        return;
      }
      const delay = Date.now() - startedAt >= restart.healthyRunMs ? restart.firstDelayMs : next;
      log(`${why}; starting it again in ${delay / 1000} s`);
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (!this.#stopping) this.#spawn(index, Math.min(delay * 2, restart.maxDelayMs));
      }, delay);
      this.#timers.add(timer);
    });
  }

  /** Ends every fetcher at once (SIGKILL) and restarts none: what they hold is fetched again later. */
  kill(): void {
    this.#stopping = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    for (const child of this.#children) if (child !== null && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }

  /** Ends every fetcher and restarts none: SIGTERM, then SIGKILL after a grace period. */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    const running = () => this.#children.filter((child): child is ChildProcess => child !== null && child.exitCode === null && child.signalCode === null);
    const exitedWithin = async (children: ChildProcess[], ms: number) => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(children.map(exited)), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
      clearTimeout(timer);
    };
    const left = running();
    for (const child of left) child.kill('SIGTERM');
    await exitedWithin(left, STOP_GRACE_MS);
    const stuck = left.filter((child) => child.exitCode === null && child.signalCode === null);
    if (stuck.length > 0) this.#options.log(`${this.#options.label}: ${stuck.length} fetcher${stuck.length === 1 ? '' : 's'} still busy ${STOP_GRACE_MS / 1000} s after SIGTERM: killed (what they held is fetched again later)`);
    for (const child of stuck) child.kill('SIGKILL');
    await Promise.all(left.map(exited));
  }
}
