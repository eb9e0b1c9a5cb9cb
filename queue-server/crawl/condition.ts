/**
 * A condition variable for an event loop: waiters park until `notifyAll` (work appeared) or until
 * their own timeout. No polling: a claim that finds no work waits here and is woken the moment the
 * frontier, a lease expiry or a politeness timer makes work available.
 *
 * Waking is a hint, not a promise: a woken waiter re-checks for work (as with any condition
 * variable), and waits again if another waiter took it first.
 */
export class Condition {
  readonly #waiters = new Set<() => void>();

  get waiting(): number {
    return this.#waiters.size;
  }

  /** Resolves true when notified, false when `timeoutMs` passed first or `signal` aborted. */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve(false);
      const finish = (notified: boolean) => {
        clearTimeout(timer);
        this.#waiters.delete(wake);
        signal?.removeEventListener('abort', onAbort);
        resolve(notified);
      };
      const wake = () => finish(true);
      const onAbort = () => finish(false);
      const timer = setTimeout(() => finish(false), timeoutMs);
      this.#waiters.add(wake);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  notifyAll(): void {
    for (const wake of [...this.#waiters]) wake();
  }
}
