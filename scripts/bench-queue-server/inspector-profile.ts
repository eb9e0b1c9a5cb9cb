/**
 * A CPU profile of a running Node process over a window of its life, through its inspector: SIGUSR1
 * makes Node open it (on 127.0.0.1:9229, loopback only), the DevTools protocol's Profiler domain starts
 * and stops sampling over a WebSocket (undici's client), and the profile is written as a .cpuprofile
 * (node --cpu-prof's format, read by cpu-profile.ts). Where --cpu-prof covers a whole run, this shows
 * where the time goes at one size of the crawl (`scale --profile-at`).
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { WebSocket } from 'undici';

const INSPECTOR_PORT = 9229;
/** How long the inspector may take to listen after SIGUSR1. */
const OPEN_TIMEOUT_MS = 10_000;

/** Samples `pid` for `seconds` (1 ms interval, as --cpu-prof) and writes the profile to `file`. */
export async function profileWindow(pid: number, seconds: number, file: string): Promise<void> {
  process.kill(pid, 'SIGUSR1');
  const socket = new WebSocket(await debuggerUrl());
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error('the inspector WebSocket failed to open'));
  });
  const replies = new Map<number, (message: { result?: unknown; error?: { message: string } }) => void>();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
    if (message.id !== undefined) replies.get(message.id)?.(message);
  };
  let nextId = 0;
  const call = (method: string, params: Record<string, unknown> = {}): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      replies.set(id, (message) => {
        replies.delete(id);
        if (message.error !== undefined) reject(new Error(`${method}: ${message.error.message}`));
        else resolve(message.result);
      });
      socket.send(JSON.stringify({ id, method, params }));
    });
  try {
    await call('Profiler.enable');
    await call('Profiler.setSamplingInterval', { interval: 1000 });
    await call('Profiler.start');
    await sleep(seconds * 1000);
    const { profile } = (await call('Profiler.stop')) as { profile: unknown };
    writeFileSync(file, JSON.stringify(profile));
  } finally {
    socket.close();
  }
}

/** The WebSocket URL of the inspector's one target, once it listens. */
async function debuggerUrl(): Promise<string> {
  const deadline = performance.now() + OPEN_TIMEOUT_MS;
  for (;;) {
    try {
      const targets = (await (await fetch(`http://127.0.0.1:${INSPECTOR_PORT}/json/list`)).json()) as { webSocketDebuggerUrl?: string }[];
      const url = targets[0]?.webSocketDebuggerUrl;
      if (url !== undefined) return url;
    } catch {
      // not listening yet
    }
    if (performance.now() > deadline) throw new Error(`no inspector on 127.0.0.1:${INSPECTOR_PORT} within ${OPEN_TIMEOUT_MS} ms of SIGUSR1`);
    await sleep(100);
  }
}
