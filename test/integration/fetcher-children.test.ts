/**
 * `petrel crawl`'s fetcher children (cli/fetcher-children.ts), as built: fetchers started in two
 * steps (the crawl starts one beside the queue server, the rest once it listens) are numbered on, so
 * every one has a name of its own, and each is a real `petrel fetcher` process. The fetchers here are
 * given an option they refuse, so each exits at once with status 2 and says so.
 */
import { describe, expect, it } from 'vitest';
import { assertBuilt } from '../support/petrel-process.js';

describe('fetcher children started in steps', () => {
  it('start(1) then start(2) runs three fetchers named fetcher-1 to fetcher-3', async () => {
    assertBuilt();
    // The built module: its children run dist/cli/petrel.js, the bundle beside it.
    const built = new URL('../../dist/cli/fetcher-children.js', import.meta.url).href;
    const { FetcherChildren } = (await import(built)) as typeof import('../../cli/fetcher-children.js');
    const lines: string[] = [];
    const children = new FetcherChildren({
      label: 'test',
      namePrefix: 'fetcher',
      args: (name) => ['fetcher', '--name', name, '--no-such-option'],
      restart: { kind: 'limited', restarts: 0 },
      log: (line) => lines.push(line),
    });
    children.start(1);
    children.start(2);
    await expect.poll(() => lines.filter((line) => line.includes('exited (status')).length, { timeout: 30_000, interval: 50 }).toBe(3);
    const exited = lines.filter((line) => line.includes('exited (status')).sort();
    const refused = ': it refused its arguments, not started again';
    expect(exited).toEqual([`test: fetcher fetcher-1 exited (status 2)${refused}`, `test: fetcher fetcher-2 exited (status 2)${refused}`, `test: fetcher fetcher-3 exited (status 2)${refused}`]);
    await children.stop();
    children.start(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(lines.filter((line) => line.includes('exited (status')).length, 'no fetcher starts after stop()').toBe(3);
  });

  it('does not start again a fetcher that refused its arguments, and says when none is left (petrel crawl then ends instead of waiting for ever)', async () => {
    assertBuilt();
    const built = new URL('../../dist/cli/fetcher-children.js', import.meta.url).href;
    const { FetcherChildren } = (await import(built)) as typeof import('../../cli/fetcher-children.js');
    const lines: string[] = [];
    let noneLeft = 0;
    const children = new FetcherChildren({
      label: 'test',
      namePrefix: 'fetcher',
      args: (name) => ['fetcher', '--name', name, '--no-such-option'],
      restart: { kind: 'limited', restarts: 3 },
      log: (line) => lines.push(line),
      onNoneLeft: () => noneLeft++,
    });
    children.start(2);
    await expect.poll(() => noneLeft, { timeout: 30_000, interval: 50 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(lines.filter((line) => line.includes('exited (status 2)')).length, lines.join('\n')).toBe(2);
    expect(noneLeft).toBe(1);
    await children.stop();
  });
});
