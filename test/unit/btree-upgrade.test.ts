/**
 * Upgrading B-Tree files of format 1 (an older Petrel's) to format 2, on a file that Petrel of format 1
 * wrote (test/fixtures/btree-format1.btree, see test/fixtures/README.md): refused as it is with a message
 * naming the upgrade, upgraded with every key and value kept, writable after it; a damaged page the tree
 * reaches stops the upgrade with the original untouched.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import { FORMAT_VERSION } from '../../queue-server/btree/page-codec.js';
import { upgradeBtreeFile } from '../../queue-server/btree/upgrade.js';
import { hex, tempFile, text } from '../support/btree-helpers.js';

const FIXTURE = path.join(import.meta.dirname, '../fixtures/btree-format1.btree');

/** The keys and values make-btree-format1.mjs wrote: 400 put, every third deleted, i % 3 == 1 rewritten. */
function fixtureKey(i: number): Uint8Array {
  const k = new Uint8Array(8);
  new DataView(k.buffer).setBigUint64(0, (BigInt(i) * 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn);
  return k;
}
function fixtureValue(i: number): string {
  return `format-1 value ${i} generation ${i % 3 === 1 ? 1 : 0} `.repeat(1 + (i % 3));
}

function fixtureCopy(): string {
  const file = tempFile('crawldb.btree');
  fs.copyFileSync(FIXTURE, file);
  return file;
}

describe('upgrading a format-1 B-Tree file', () => {
  it('is refused as it is, with a message that names petrel btree upgrade', () => {
    const file = fixtureCopy();
    expect(() => BTree.open(file, { create: false })).toThrow(/format version 1; this Petrel reads version 2 only .*petrel btree upgrade/);
    expect(fs.readFileSync(file).equals(fs.readFileSync(FIXTURE))).toBe(true);
  });

  it('keeps every key and value, checks clean, and takes writes afterwards', () => {
    const file = fixtureCopy();
    const report = upgradeBtreeFile(file);
    expect(report).toMatchObject({ fromVersion: 1, toVersion: FORMAT_VERSION, upgraded: true, pages: 22, unreadablePages: 0, keys: 266 });
    expect(fs.existsSync(`${file}.upgrade`)).toBe(false);
    const tree = BTree.open(file, { create: false });
    try {
      expect(tree.check().ok).toBe(true);
      for (let i = 0; i < 400; i++) {
        const value = tree.get(fixtureKey(i));
        if (i % 3 === 0) expect(value, `key ${i} was deleted`).toBeNull();
        else expect(value === null ? null : new TextDecoder().decode(value), `key ${i}`).toBe(fixtureValue(i));
      }
      expect(tree.stats()).toMatchObject({ keys: 266, txid: 3, pageSize: 4096 });
      tree.put(fixtureKey(0), text('written after the upgrade'));
    } finally {
      tree.close();
    }
    const reopened = BTree.open(file, { create: false });
    try {
      expect(hex(reopened.get(fixtureKey(0))!)).toBe(hex(text('written after the upgrade')));
      expect(reopened.check().ok).toBe(true);
    } finally {
      reopened.close();
    }
  });

  it('leaves a file of the current format alone', () => {
    const file = fixtureCopy();
    upgradeBtreeFile(file);
    const before = fs.readFileSync(file);
    expect(upgradeBtreeFile(file)).toMatchObject({ upgraded: false, fromVersion: FORMAT_VERSION, keys: 266 });
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it('refuses a file whose reachable page is damaged, leaving the original as it was and no copy behind', () => {
    const file = fixtureCopy();
    // The root of the committed tree: the meta of the higher txid (3, slot 1) names it (LAYOUT.md, offset 40).
    const bytes = fs.readFileSync(file);
    const root = bytes.readUInt32LE(4096 + 40);
    expect(root).toBeGreaterThan(1);
    bytes[root * 4096 + 100]! ^= 0xff;
    fs.writeFileSync(file, bytes);
    expect(() => upgradeBtreeFile(file)).toThrow(/upgraded copy does not check clean, so the original is left as it was/);
    expect(fs.readFileSync(file).equals(bytes)).toBe(true);
    expect(fs.existsSync(`${file}.upgrade`)).toBe(false);
  });

  it('refuses a file that is no Petrel B-Tree', () => {
    const file = tempFile('not.btree');
    fs.writeFileSync(file, Buffer.alloc(8192, 7));
    expect(() => upgradeBtreeFile(file)).toThrow(/is not a Petrel B-Tree/);
  });
});
