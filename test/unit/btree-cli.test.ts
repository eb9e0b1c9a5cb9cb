import * as fs from 'node:fs';
import * as path from 'node:path';
import { CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { BTree } from '../../queue-server/btree/index.js';
import { btreeCommand } from '../../cli/btree-command.js';
import { key, tempFile, text } from '../support/btree-helpers.js';

interface Result {
  out: string;
  err: string;
  code: number | null;
  /** Set when commander itself stopped (help, usage error) instead of an action running. */
  commander?: string;
}

async function run(args: string[]): Promise<Result> {
  const result: Result = { out: '', err: '', code: null };
  const cmd = btreeCommand({
    out: (t) => {
      result.out += t;
    },
    err: (t) => {
      result.err += t;
    },
    setExitCode: (c) => {
      result.code = c;
    },
  });
  for (const c of [cmd, ...cmd.commands]) {
    c.exitOverride().configureOutput({
      writeOut: (t) => {
        result.out += t;
      },
      writeErr: (t) => {
        result.err += t;
      },
    });
  }
  try {
    await cmd.parseAsync(args, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    result.commander = err.code;
  }
  return result;
}

function sampleFile(): string {
  const file = tempFile();
  const tree = BTree.open(file, { pageSize: 1024 });
  tree.write((b) => {
    for (let i = 0; i < 500; i++) b.put(key(i * 31), text(`value ${i}`));
  });
  tree.close();
  return file;
}

describe('petrel btree', () => {
  it('check prints ok and exits 0 for a clean file', async () => {
    const file = sampleFile();
    expect(await run(['check', file])).toEqual({ out: `${file}: ok\n`, err: '', code: 0 });
    const json = await run(['check', '--json', file]);
    expect(JSON.parse(json.out)).toEqual({ file, ok: true, faults: [], warnings: [] });
  });

  it('check lists faults and exits 1 when a page is damaged', async () => {
    const file = sampleFile();
    const bytes = fs.readFileSync(file);
    bytes[2 * 1024 + 300]! ^= 0xff; // page 2 is in the tree: the first page a new file allocates
    fs.writeFileSync(file, bytes);
    const res = await run(['check', file]);
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/^PAGE_CORRUPT page 2: /m);
    const json = JSON.parse((await run(['check', '--json', file])).out) as { ok: boolean; faults: unknown[] };
    expect(json.ok).toBe(false);
    expect(json.faults).toContainEqual(expect.objectContaining({ code: 'PAGE_CORRUPT', page: 2 }));
  });

  it('check exits 1 when no meta page of a B-tree is readable, and 2 for a missing file, a directory or a file that is no B-tree', async () => {
    // Both meta pages damaged (their magic left): a B-tree, damaged.
    const damaged = sampleFile();
    const bytes = fs.readFileSync(damaged);
    for (const page of [0, 1]) bytes[page * 1024 + 40] = bytes[page * 1024 + 40]! ^ 0xff;
    fs.writeFileSync(damaged, bytes);
    const res = await run(['check', damaged]);
    expect(res.code).toBe(1);
    expect(res.out).toMatch(/PAGE_CORRUPT page 0: .*neither meta page/);

    // Bytes with no meta page's magic anywhere (pages.jsonl, a token, garbage): not a B-tree at all.
    const garbage = tempFile();
    fs.writeFileSync(garbage, Buffer.alloc(8192, 7));
    const notOne = await run(['check', garbage]);
    expect(notOne.code).toBe(2);
    expect(notOne.err).toMatch(/is not a Petrel B-tree file/);
    const directory = await run(['check', path.dirname(garbage)]);
    expect(directory.code).toBe(2);
    expect(directory.err).toMatch(/is a directory: give a B-tree file in it/);

    const missing = tempFile('nope.btree');
    const gone = await run(['check', missing]);
    expect(gone.code).toBe(2);
    expect(gone.err).toMatch(/no B-tree file/);
    expect(fs.existsSync(missing)).toBe(false);
  });

  it('stats prints a table, or JSON with --json', async () => {
    const file = sampleFile();
    const table = await run(['stats', file]);
    expect(table.code).toBe(0);
    expect(table.out).toMatch(/^keys +500$/m);
    expect(table.out).toMatch(/^page size +1024 B \(values up to 242 B\)$/m);
    expect(table.out).toMatch(/^last commit +txid 1$/m);
    const json = JSON.parse((await run(['stats', '--json', file])).out) as Record<string, unknown>;
    expect(json).toMatchObject({ file, keys: 500, pageSize: 1024, txid: 1, height: 2 });
  });

  it('documents every option and the exit statuses in --help', async () => {
    for (const sub of ['check', 'stats']) {
      const help = await run([sub, '--help']);
      expect(help.commander).toBe('commander.helpDisplayed');
      expect(help.out).toContain(`btree ${sub} [options] <file>`);
      expect(help.out).toMatch(/--json +print/);
      expect(help.out).toContain(sub === 'check' ? 'Exit status: 0 when clean, 1 when the file has faults' : 'Exit status: 0 when the figures were printed, 1 when the file is too damaged');
    }
    const usage = await run(['check']);
    expect(usage.commander).toBe('commander.missingArgument');
  });

  it('upgrade --data rewrites every format-1 file of a data directory, leaves current ones alone, and refuses a directory in use', async () => {
    const dir = path.dirname(tempFile());
    fs.copyFileSync(path.join(import.meta.dirname, '../fixtures/btree-format1.btree'), path.join(dir, 'crawldb.btree'));
    const current = path.join(dir, 'cache.btree');
    fs.copyFileSync(sampleFile(), current);
    fs.writeFileSync(path.join(dir, 'pages.jsonl'), '');
    fs.writeFileSync(path.join(dir, 'LOCK'), `${process.pid}\n`);
    const inUse = await run(['upgrade', '--data', dir]);
    expect(inUse.code).toBe(2);
    expect(inUse.err).toContain(`is in use by process ${process.pid}`);
    fs.rmSync(path.join(dir, 'LOCK'));
    const done = await run(['upgrade', '--data', dir]);
    expect(done.err).toBe('');
    expect(done.code).toBe(0);
    expect(done.out).toBe(`${current}: already format 2, left alone\n${path.join(dir, 'crawldb.btree')}: upgraded from format 1 to 2 (22 pages, 266 keys, checked clean)\n`);
    expect(fs.existsSync(path.join(dir, 'LOCK'))).toBe(false);
    expect((await run(['check', path.join(dir, 'crawldb.btree')])).code).toBe(0);
    const usage = await run(['upgrade']);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/give the files to upgrade, or --data DIR/);
    const help = await run(['upgrade', '--help']);
    expect(help.out).toContain('Exit status: 0 when every file is of format 2 afterwards');
  });
});
