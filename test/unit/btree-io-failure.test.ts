/**
 * The B-Tree's commit under a failing disk, through the file-operations seam (storage/file-ops.ts):
 * the order of writes and fsyncs (every page the new meta references is fsynced before the meta is
 * written), and a failure at each write or fsync of a commit (an EIO fsync, a torn write followed by
 * the kernel's ENOSPC) leaves a file that reopens to the last acknowledged commit (or, when only the
 * final fsync failed, possibly the one in flight, whole), with a clean check. After `recover()` the
 * same handle commits again. SIGKILL tests (btree-crash.test.ts) cannot catch a missing fsync; these can.
 */
import { describe, expect, it } from 'vitest';
import { BTree, BTreeError } from '../../queue-server/btree/index.js';
import { dump, expectClean, hex, key, tempFile, text } from '../support/btree-helpers.js';
import { FaultyFileOps, type Fault, type FileOp } from '../support/faulty-file-ops.js';

const PAGE_SIZE = 1024;
const SEEDED_TXID = 2;

/** Two commits (txid 2): the second rewrites every third key, so free pages lie scattered through the file. */
function seeded(file: string): Map<string, string> {
  const tree = BTree.open(file, { pageSize: PAGE_SIZE });
  tree.write((b) => {
    for (let i = 0; i < 300; i++) b.put(key(i), text(`first ${i}`));
  });
  tree.write((b) => {
    for (let i = 0; i < 300; i += 3) b.put(key(i), text(`first ${i}`));
  });
  const state = dump(tree);
  tree.close();
  return state;
}

/** The second commit: rewrites every key, adds some, deletes some (splits, merges, a new free list). */
function secondBatch(tree: BTree): void {
  tree.write((b) => {
    for (let i = 0; i < 300; i++) b.put(key(i), text(`second ${i}`));
    for (let i = 300; i < 360; i++) b.put(key(i), text(`new ${i}`));
    for (let i = 0; i < 300; i += 7) b.delete(key(i));
  });
}

function expectedAfterSecond(before: Map<string, string>): Map<string, string> {
  const after = new Map(before);
  for (let i = 0; i < 300; i++) after.set(hex(key(i)), hex(text(`second ${i}`)));
  for (let i = 300; i < 360; i++) after.set(hex(key(i)), hex(text(`new ${i}`)));
  for (let i = 0; i < 300; i += 7) after.delete(hex(key(i)));
  return new Map([...after].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof BTreeError ? err.code : String(err);
  }
  return undefined;
}

/** The operations of one commit of `secondBatch` on a freshly seeded file, as the seam sees them. */
function commitOps(): FileOp[] {
  const file = tempFile();
  seeded(file);
  const io = new FaultyFileOps();
  const tree = BTree.open(file, { io });
  io.reset();
  secondBatch(tree);
  tree.close();
  return io.ops.filter((op) => op.kind === 'write' || op.kind === 'fsync');
}

const isMetaWrite = (op: FileOp) => op.kind === 'write' && (op.position === 0 || op.position === PAGE_SIZE);

describe('BTree commit order', () => {
  it('writes every data page, fsyncs, then writes one meta page and fsyncs again', () => {
    const ops = commitOps();
    // Pages reused from the free list lie apart: several writes, each one a run of pages.
    expect(ops.filter((op) => op.kind === 'write' && !isMetaWrite(op)).length).toBeGreaterThanOrEqual(2);
    const metaAt = ops.findIndex(isMetaWrite);
    expect(metaAt).toBeGreaterThan(1);
    const before = ops.slice(0, metaAt);
    // Step 1: data pages only, all beyond the two meta pages; step 2: one fsync after the last of them.
    expect(before.slice(0, -1).every((op) => op.kind === 'write' && op.position! >= 2 * PAGE_SIZE)).toBe(true);
    expect(before.at(-1)!.kind).toBe('fsync');
    // Steps 3 and 4: the meta page (one page, at slot 0 or 1), then the fsync that makes it durable.
    expect(ops.slice(metaAt).map((op) => op.kind)).toEqual(['write', 'fsync']);
    expect(ops[metaAt]!.length).toBe(PAGE_SIZE);
  });
});

describe('BTree commit I/O failures', () => {
  const steps = commitOps();

  it('a failed fsync before the meta write (step 2) keeps the previous commit and poisons the handle', () => {
    const file = tempFile();
    const before = seeded(file);
    const io = new FaultyFileOps();
    const tree = BTree.open(file, { io });
    io.rule = (op) => (op.kind === 'fsync' ? 'eio' : null);
    expect(codeOf(() => secondBatch(tree))).toBe('BTREE_IO');
    expect(io.failed).toHaveLength(1);
    // After a failed fsync the handle cannot know what is on disk: it refuses everything.
    expect(codeOf(() => tree.get(key(1)))).toBe('BTREE_IO');
    expect(codeOf(() => tree.put(key(1), text('x')))).toBe('BTREE_IO');
    tree.close();

    const reopened = BTree.open(file);
    expect(reopened.stats().txid).toBe(SEEDED_TXID);
    expect(dump(reopened)).toEqual(before);
    expectClean(reopened);
    reopened.put(key(1), text('after'));
    expectClean(reopened);
    reopened.close();
  });

  it('a failed fsync after the meta write (step 4) reopens to one whole commit, old or new', () => {
    const file = tempFile();
    const before = seeded(file);
    const io = new FaultyFileOps();
    const tree = BTree.open(file, { io });
    let fsyncs = 0;
    io.rule = (op) => (op.kind === 'fsync' && ++fsyncs === 2 ? 'eio' : null);
    expect(codeOf(() => tree.put(key(5), text('maybe')))).toBe('BTREE_IO');
    tree.close();

    const reopened = BTree.open(file);
    const txid = reopened.stats().txid;
    const expected = new Map(before);
    if (txid === SEEDED_TXID + 1) expected.set(hex(key(5)), hex(text('maybe')));
    else expect(txid).toBe(SEEDED_TXID);
    expect(dump(reopened)).toEqual(expected);
    expectClean(reopened);
    reopened.close();
  });

  const cases: [string, number, Fault][] = steps.map((op, index) => [
    `${op.kind === 'write' ? (isMetaWrite(op) ? 'the meta write' : `data write ${index + 1}`) : index === steps.length - 1 ? 'the final fsync' : 'the data fsync'} (${op.kind === 'write' ? 'torn, then ENOSPC' : 'EIO'})`,
    index,
    op.kind === 'write' ? 'short-write' : 'eio',
  ]);

  it.each(cases)('a failure at %s reopens to the last acknowledged commit, and recover() lets the handle commit again', (_name, step, fault) => {
    const file = tempFile();
    const before = seeded(file);
    const after = expectedAfterSecond(before);
    const io = new FaultyFileOps();
    const tree = BTree.open(file, { io });
    io.reset();
    let counted = -1;
    io.rule = (op) => (op.kind === 'write' || op.kind === 'fsync') && ++counted === step ? fault : null;
    expect(codeOf(() => secondBatch(tree))).toBe('BTREE_IO');
    expect(io.failed.map((failure) => failure.fault)).toEqual([fault]);

    // What a crash now would leave: the previous commit, except once the meta write has begun: a meta page
    // written before a failed final fsync may be in the file, and so may a torn one whose missing half
    // held only the zeros that pad it (its checksum then holds). Either way the whole new commit, never a mix.
    const reopened = BTree.open(file, { readOnly: true });
    const mayBeNew = step === steps.length - 1 || isMetaWrite(steps[step]!);
    expect(dump(reopened)).toEqual(mayBeNew && reopened.stats().txid === SEEDED_TXID + 1 ? after : before);
    if (!mayBeNew) expect(reopened.stats().txid).toBe(SEEDED_TXID);
    expectClean(reopened);
    reopened.close();

    // The disk works again: the same handle recovers and the batch, written again, is acknowledged.
    io.rule = null;
    tree.recover();
    expect(dump(tree)).toEqual(mayBeNew && tree.stats().txid === SEEDED_TXID + 1 ? after : before);
    secondBatch(tree);
    expect(dump(tree)).toEqual(after);
    tree.close();
    const final = BTree.open(file);
    expect(dump(final)).toEqual(after);
    expectClean(final);
    final.close();
  });
});
