/**
 * I/O failures inside a commit, injected by making fs.fsyncSync throw (node:fs named exports are
 * re-synced from the patched default export, so the pager's `import * as fs` sees the fault).
 */
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BTree, BTreeError } from '../../queue-server/btree/index.js';
import { dump, expectClean, key, tempFile, text } from '../support/btree-helpers.js';

afterEach(() => {
  vi.restoreAllMocks();
  syncBuiltinESMExports();
});

/** Makes the `nth` fsync from now on (1-based) fail with EIO. */
function failFsync(nth: number): void {
  const real = fs.fsyncSync;
  let calls = 0;
  vi.spyOn(fs, 'fsyncSync').mockImplementation((fd) => {
    calls++;
    if (calls === nth) throw Object.assign(new Error('EIO: simulated i/o error, fsync'), { code: 'EIO' });
    real(fd);
  });
  syncBuiltinESMExports();
}

function seeded(file: string): Map<string, string> {
  const tree = BTree.open(file, { pageSize: 1024 });
  tree.write((b) => {
    for (let i = 0; i < 300; i++) b.put(key(i), text(`first ${i}`));
  });
  const state = dump(tree);
  tree.close();
  return state;
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof BTreeError ? err.code : String(err);
  }
  return undefined;
}

describe('BTree commit I/O failures', () => {
  it('a failed fsync before the meta write (step 2) keeps the previous commit and poisons the handle', () => {
    const file = tempFile();
    const before = seeded(file);
    const tree = BTree.open(file);
    failFsync(1);
    const err = codeOf(() =>
      tree.write((b) => {
        for (let i = 0; i < 300; i++) b.put(key(i), text(`second ${i}`));
      }),
    );
    expect(err).toBe('BTREE_IO');
    // After a failed fsync the handle cannot know what is on disk: it refuses everything.
    expect(codeOf(() => tree.get(key(1)))).toBe('BTREE_IO');
    expect(codeOf(() => tree.put(key(1), text('x')))).toBe('BTREE_IO');
    tree.close();
    vi.restoreAllMocks();
    syncBuiltinESMExports();

    const reopened = BTree.open(file);
    expect(reopened.stats().txid).toBe(1);
    expect(dump(reopened)).toEqual(before);
    expectClean(reopened);
    reopened.put(key(1), text('after'));
    expectClean(reopened);
    reopened.close();
  });

  it('a failed fsync after the meta write (step 4) reopens to one whole commit, old or new', () => {
    const file = tempFile();
    const before = seeded(file);
    const tree = BTree.open(file);
    failFsync(2);
    expect(codeOf(() => tree.put(key(5), text('maybe')))).toBe('BTREE_IO');
    tree.close();
    vi.restoreAllMocks();
    syncBuiltinESMExports();

    const reopened = BTree.open(file);
    const txid = reopened.stats().txid;
    const expected = new Map(before);
    if (txid === 2) expected.set(Buffer.from(key(5)).toString('hex'), Buffer.from(text('maybe')).toString('hex'));
    else expect(txid).toBe(1);
    expect(dump(reopened)).toEqual(expected);
    expectClean(reopened);
    reopened.close();
  });
});
