/**
 * Crash-test writer for the B-tree (test/integration/btree-crash.test.ts runs it as a real child process and SIGKILLs
 * it at random instants).
 *
 *   node dist/scripts/btree-crash-writer.js FILE [PAGE_SIZE]
 *
 * Opens FILE (creating it with PAGE_SIZE, default 1024), prints `ready TXID`, then commits batch after batch
 * forever, printing each txid once its commit has returned (that is, once it is durable). Writes to stdout
 * are synchronous, so every printed txid was acknowledged before the next commit began. Batch t depends
 * only on t (`crashBatch`), so a test can rebuild the exact expected contents after any txid, and the
 * writer resumes correctly from whatever txid the file holds.
 */
import * as fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import { BTree } from '../queue-server/btree/index.js';
import { mulberry32 } from './test-web/prng.js';

export type CrashOp =
  | { readonly kind: 'put'; readonly key: Uint8Array; readonly value: Uint8Array }
  | { readonly kind: 'delete'; readonly key: Uint8Array };

/** Distinct keys the writer touches; small enough that puts overwrite and deletes hit. */
export const CRASH_KEY_SPACE = 3000;
/** Longest value the writer produces; fits a 1 KiB page (max 242). */
const MAX_VALUE = 200;

/** Key number n, scattered over the 64-bit space so about half the keys have the high bit set. */
export function crashKey(n: number): Uint8Array {
  const key = new Uint8Array(8);
  new DataView(key.buffer).setBigUint64(0, BigInt.asUintN(64, BigInt(n + 1) * 0x9e3779b97f4a7c15n));
  return key;
}

/**
 * The operations of commit `txid`: 1 to ~300 of them (mostly few, sometimes many, so commits range from one
 * page to dozens), about 70% puts; the first is always a put, so every batch changes the tree and commits.
 */
export function crashBatch(txid: number): CrashOp[] {
  const rand = mulberry32(Math.imul(txid, 0x9e3779b1) ^ 0x5bd1e995);
  const r = rand();
  const count = 1 + Math.floor(r * r * r * 300);
  const ops: CrashOp[] = [];
  for (let i = 0; i < count; i++) {
    const key = crashKey(Math.floor(rand() * CRASH_KEY_SPACE));
    if (i > 0 && rand() < 0.3) {
      ops.push({ kind: 'delete', key });
      continue;
    }
    const head = new TextEncoder().encode(`t${txid}.${i}:`);
    const value = new Uint8Array(head.length + Math.floor(rand() * (MAX_VALUE - head.length)));
    value.set(head);
    value.fill(txid & 0xff, head.length);
    ops.push({ kind: 'put', key, value });
  }
  return ops;
}

function main(argv: readonly string[]): void {
  const [file, pageSizeArg] = argv;
  if (file === undefined) {
    process.stderr.write('usage: btree-crash-writer FILE [PAGE_SIZE]\n');
    process.exitCode = 2;
    return;
  }
  const tree = BTree.open(file, { pageSize: Number(pageSizeArg ?? 1024), cachePages: 64 });
  let txid = tree.stats().txid;
  fs.writeSync(1, `ready ${txid}\n`);
  for (;;) {
    txid++;
    const ops = crashBatch(txid);
    tree.write((batch) => {
      for (const op of ops) {
        if (op.kind === 'put') batch.put(op.key, op.value);
        else batch.delete(op.key);
      }
    });
    const committed = tree.stats().txid;
    if (committed !== txid) throw new Error(`expected txid ${txid} after commit, found ${committed}`);
    fs.writeSync(1, `${txid}\n`);
  }
}

const invoked = process.argv[1];
if (invoked !== undefined && import.meta.url === pathToFileURL(invoked).href) main(process.argv.slice(2));
