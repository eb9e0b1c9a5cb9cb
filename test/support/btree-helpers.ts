/** Shared helpers for the B-tree tests: temp files, key construction, invariant checks. */
import { mulberry32 } from '../../scripts/test-web/prng.js';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, expect } from 'vitest';
import type { BTree } from '../../queue-server/btree/index.js';

const dirs: string[] = [];

afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** A fresh path in a temp dir that is removed after the current test. */
export function tempFile(name = 'tree.btree'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-btree-'));
  dirs.push(dir);
  return path.join(dir, name);
}

/**
 * Runs `fn` with a fresh file path and removes its directory as soon as `fn` returns or throws. Property
 * tests use this so that thousands of shrinking runs do not pile up temp dirs until afterEach.
 */
export function withTempFile<T>(fn: (file: string) => T): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'petrel-btree-'));
  try {
    return fn(path.join(dir, 'tree.btree'));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** 8-byte big-endian key for an integer (so numeric order = key order). */
export function key(n: number | bigint): Uint8Array {
  const k = new Uint8Array(8);
  new DataView(k.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(n)));
  return k;
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

export function fromHex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'hex'));
}

export function text(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

/** The whole tree as hex key -> hex value, in iteration order. */
export function dump(tree: BTree): Map<string, string> {
  const out = new Map<string, string>();
  for (const [k, v] of tree.entries()) out.set(hex(k), hex(v));
  return out;
}

/** Every storage test ends here: the file must pass the full consistency check. */
export function expectClean(tree: BTree): void {
  const report = tree.check();
  expect(report.faults).toEqual([]);
  expect(report.ok).toBe(true);
}

/** Deterministic PRNG (mulberry32) for tests that want reproducible randomness without fast-check. */
export const prng = mulberry32;
