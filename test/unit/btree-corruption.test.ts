/**
 * Damaged files: flipped bytes, torn pages, torn meta pages, and a commit interrupted between its data
 * write and its meta write (reproduced deterministically by rolling the meta page back on disk).
 */
import * as fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BTree, BTreeError } from '../../queue-server/btree/index.js';
import { decodeMeta, decodePage, encodeMeta, type MetaFields } from '../../queue-server/btree/page-codec.js';
import { dump, expectClean, key, tempFile, text } from '../support/btree-helpers.js';

function readMeta(file: string, slot: 0 | 1, pageSize: number): MetaFields | null {
  const bytes = fs.readFileSync(file).subarray(slot * pageSize, (slot + 1) * pageSize);
  return decodeMeta(new Uint8Array(bytes), slot);
}

function patch(file: string, offset: number, bytes: Uint8Array): void {
  const fd = fs.openSync(file, 'r+');
  try {
    fs.writeSync(fd, bytes, 0, bytes.length, offset);
  } finally {
    fs.closeSync(fd);
  }
}

function flipByte(file: string, offset: number): void {
  const b = fs.readFileSync(file);
  patch(file, offset, new Uint8Array([b[offset]! ^ 0x40]));
}

function caught(fn: () => unknown): BTreeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof BTreeError) return err;
    throw err;
  }
  throw new Error('expected a BTreeError');
}

/** Builds a tree in `commits` commits of 300 keys each; returns the contents after each commit. */
function build(file: string, pageSize: number, commits: number): Map<string, string>[] {
  const tree = BTree.open(file, { pageSize });
  const states: Map<string, string>[] = [];
  for (let c = 0; c < commits; c++) {
    tree.write((b) => {
      for (let i = 0; i < 300; i++) b.put(key((i * 7 + c * 1000) % 2000), text(`commit ${c} item ${i}`));
    });
    states.push(dump(tree));
  }
  expectClean(tree);
  tree.close();
  return states;
}

describe('BTree corruption detection', () => {
  it('reports a flipped byte in a data page as BTREE_CORRUPT with the page number, never as data', () => {
    const file = tempFile();
    build(file, 1024, 3);
    const meta = readMeta(file, 1, 1024)!; // txid 3 is in slot 1
    expect(meta.txid).toBe(3);
    const root = meta.root!;
    flipByte(file, root * 1024 + 200);

    const tree = BTree.open(file);
    const err = caught(() => tree.get(key(1)));
    expect(err.code).toBe('BTREE_CORRUPT');
    expect(err.page).toBe(root);
    expect(err.disposition).toBe('fatal');
    expect(caught(() => [...tree.entries()]).code).toBe('BTREE_CORRUPT');
    const report = tree.check();
    expect(report.ok).toBe(false);
    expect(report.faults).toContainEqual(expect.objectContaining({ code: 'PAGE_CORRUPT', page: root }));
    tree.close();
  });

  it('detects a torn data page (new first half, old second half) in a leaf', () => {
    const file = tempFile();
    build(file, 4096, 2);
    const meta = readMeta(file, 0, 4096)!; // txid 2 is in slot 0
    // Walk to the first leaf with the codec, then tear it.
    let id = meta.root!;
    for (;;) {
      const rec = decodePage(new Uint8Array(fs.readFileSync(file).subarray(id * 4096, (id + 1) * 4096)), id);
      if (rec.kind !== 'branch') break;
      id = rec.children[0]!;
    }
    patch(file, id * 4096 + 2048, new Uint8Array(2048).fill(0x5a));
    const tree = BTree.open(file);
    const err = caught(() => tree.get(key(0)));
    expect({ code: err.code, page: err.page }).toEqual({ code: 'BTREE_CORRUPT', page: id });
    expect(tree.check().faults).toContainEqual(expect.objectContaining({ code: 'PAGE_CORRUPT', page: id }));
    tree.close();
  });

  it('falls back to the previous commit when the newest meta page is torn', () => {
    for (const pageSize of [1024, 8192]) {
      for (const commits of [4, 5]) {
        const file = tempFile();
        const states = build(file, pageSize, commits);
        const newestSlot = commits % 2 === 0 ? 0 : 1;
        // Torn meta write: the first bytes reached the disk, the rest is whatever was there.
        patch(file, newestSlot * pageSize + 8, new Uint8Array(64).fill(0xa5));

        const tree = BTree.open(file);
        expect(tree.stats().txid).toBe(commits - 1);
        expect(tree.stats().pageSize).toBe(pageSize);
        expect(dump(tree)).toEqual(states[commits - 2]);
        expectClean(tree);
        // The next commit overwrites the torn slot and everything carries on.
        tree.put(key(99_999), text('after recovery'));
        tree.close();
        const again = BTree.open(file);
        expect(again.stats().txid).toBe(commits);
        expect(again.get(key(99_999))).toEqual(text('after recovery'));
        expectClean(again);
        again.close();
      }
    }
  });

  it('recovers the previous commit when a commit wrote its pages but not its meta (crash between steps 2 and 3)', () => {
    const file = tempFile();
    const states = build(file, 1024, 6);
    const before = fs.readFileSync(file);
    const tree = BTree.open(file);
    tree.write((b) => {
      for (let i = 0; i < 500; i++) b.put(key(5000 + i), text(`lost ${i}`));
      for (let i = 0; i < 100; i++) b.delete(key(i * 7));
    });
    expect(tree.stats().txid).toBe(7);
    tree.close();
    // Undo only the meta write of txid 7 (slot 1): its data pages stay on disk, as after a crash there.
    patch(file, 1024, new Uint8Array(before.subarray(1024, 2048)));

    const reopened = BTree.open(file);
    expect(reopened.stats().txid).toBe(6);
    expect(dump(reopened)).toEqual(states[5]);
    expectClean(reopened);
    reopened.close();
  });

  it('refuses to open a file whose meta pages are both damaged', () => {
    const file = tempFile();
    build(file, 4096, 2);
    flipByte(file, 100);
    flipByte(file, 4096 + 100);
    const err = caught(() => BTree.open(file));
    expect(err.code).toBe('BTREE_CORRUPT');
    expect(err.page).toBe(0);
  });

  it('refuses a file of another format version with BTREE_VERSION, naming both versions, and leaves it as it was', () => {
    for (const version of [1, 3]) {
      const file = tempFile();
      build(file, 4096, 2);
      // Version 1 files carry the same meta header (magic, then the version at byte 24); their CRC-32C
      // checksums do not verify as CRC-32, so every page of such a file fails this Petrel's checks.
      const stamp = new Uint8Array(4);
      new DataView(stamp.buffer).setUint32(0, version, true);
      patch(file, 24, stamp);
      patch(file, 4096 + 24, stamp);
      const before = fs.readFileSync(file);
      const err = caught(() => BTree.open(file));
      expect(err.code).toBe('BTREE_VERSION');
      expect(err.disposition).toBe('fatal');
      expect(err.message).toContain(`format version ${version}`);
      expect(err.message).toContain('reads version 2');
      expect(fs.readFileSync(file).equals(before)).toBe(true);
    }
  });

  it('refuses to open a file whose free-list page is damaged, naming the page', () => {
    const file = tempFile();
    build(file, 1024, 4);
    const meta = readMeta(file, 0, 1024)!;
    expect(meta.freelistHead).not.toBeNull();
    flipByte(file, meta.freelistHead! * 1024 + 40);
    const err = caught(() => BTree.open(file));
    expect({ code: err.code, page: err.page }).toEqual({ code: 'BTREE_CORRUPT', page: meta.freelistHead });
  });

  it('reports a page that is neither reachable nor free as leaked', () => {
    const file = tempFile();
    build(file, 1024, 1);
    // Grow the high-water mark in the newest meta without recording the new page anywhere.
    const meta = readMeta(file, 1, 1024)!;
    patch(file, 1024, encodeMeta(1, { ...meta, pageCount: meta.pageCount + 1 }));
    const reopened = BTree.open(file);
    const report = reopened.check();
    expect(report.faults).toEqual([expect.objectContaining({ code: 'PAGE_LEAKED', page: meta.pageCount })]);
    reopened.close();
  });
});
