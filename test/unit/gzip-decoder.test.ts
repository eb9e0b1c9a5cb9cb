/**
 * fetcher/gzip-decoder.ts against Node's gunzip: the same bytes out for every body gunzip reads, in
 * any chunking, and the page kept where gunzip fails a body only for what follows its last member (a
 * newline, a PHP page's trailing text); errors where the gzip itself is damaged or cut.
 */
import fc from 'fast-check';
import { crc32, gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { gzipHeaderLength, MAX_HEADER_BYTES, MAX_MEMBERS, MAX_TAIL_BYTES, TolerantGunzip } from '../../fetcher/gzip-decoder.js';

const seed = process.env.FC_SEED === undefined ? Date.now() % 2 ** 31 : Number(process.env.FC_SEED);
console.log(`gzip-decoder fast-check seed ${seed} (set FC_SEED to replay)`);

/** Decodes `body` written in `chunks` pieces of the given sizes (cycled); the text, or the error's code. */
async function decode(body: Buffer, sizes: readonly number[] = [body.length || 1]): Promise<{ text: string } | { error: string }> {
  const decoder = new TolerantGunzip();
  const out: Buffer[] = [];
  decoder.on('data', (chunk: Buffer) => out.push(chunk));
  const done = new Promise<{ text: string } | { error: string }>((resolve) => {
    decoder.on('end', () => resolve({ text: Buffer.concat(out).toString('latin1') }));
    decoder.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });
  for (let at = 0, i = 0; at < body.length; i++) {
    const size = Math.max(1, sizes[i % sizes.length]!);
    decoder.write(body.subarray(at, at + size));
    at += size;
  }
  decoder.end();
  return done;
}

const PAGE = Buffer.from(`<html><title>Petrels</title>${'<p>Storm petrels walk on water. '.repeat(300)}</html>`);

describe('the gzip body decoder', () => {
  it('reads a member, several members, and a member with a name, comment and extra field', async () => {
    expect(await decode(gzipSync(PAGE))).toEqual({ text: PAGE.toString('latin1') });
    expect(await decode(Buffer.concat([gzipSync('first, '), gzipSync('second')]))).toEqual({ text: 'first, second' });
    const plain = gzipSync('named');
    // FLG = FEXTRA | FNAME | FCOMMENT | FHCRC, as gzip(1) may write them.
    const fields = Buffer.concat([plain.subarray(0, 3), Buffer.from([0x1e]), plain.subarray(4, 10), Buffer.from([3, 0, 1, 2, 3]), Buffer.from('page.html\0a comment\0')]);
    const headerCrc = Buffer.alloc(2);
    headerCrc.writeUInt16LE(crc32(fields) & 0xffff);
    const header = Buffer.concat([fields, headerCrc]);
    const named = Buffer.concat([header, plain.subarray(10)]);
    expect(gzipHeaderLength(named)).toBe(header.length);
    expect(gunzipSync(named).toString()).toBe('named');
    expect(await decode(named, [1])).toEqual({ text: 'named' });
  });

  it('keeps the page where gunzip fails it for what follows the last member', async () => {
    for (const tail of ['\n', '\r\n', '</html>\n', 'garbage after the member', '\x1f', '\x00\x00\x00']) {
      const body = Buffer.concat([gzipSync(PAGE), Buffer.from(tail, 'latin1')]);
      expect(await decode(body), JSON.stringify(tail)).toEqual({ text: PAGE.toString('latin1') });
      expect(await decode(body, [7, 1, 300]), JSON.stringify(tail)).toEqual({ text: PAGE.toString('latin1') });
    }
    // Node's gunzip, for the record: the whole page lost.
    expect(() => gunzipSync(Buffer.concat([gzipSync(PAGE), Buffer.from('garbage')]))).toThrow();
  });

  it('fails a body that is no gzip, a damaged member, a bad check value, and a body cut short', async () => {
    expect(await decode(Buffer.from('<html>not compressed</html>'))).toEqual({ error: 'Z_DATA_ERROR' });
    expect(await decode(Buffer.alloc(0))).toEqual({ error: 'Z_BUF_ERROR' });
    const body = gzipSync(PAGE);
    const damaged = Buffer.from(body);
    for (let i = 20; i < 40; i++) damaged[i] = 0xff;
    expect(await decode(damaged)).toMatchObject({ error: expect.stringMatching(/^Z_(DATA|BUF)_ERROR$/) });
    const badCrc = Buffer.from(body);
    badCrc[badCrc.length - 8]! ^= 0x01;
    expect(await decode(badCrc)).toEqual({ error: 'Z_DATA_ERROR' });
    for (const cut of [5, 12, body.length - 20, body.length - 8, body.length - 3]) {
      expect(await decode(body.subarray(0, cut), [3]), `cut at ${cut}`).toEqual({ error: 'Z_BUF_ERROR' });
    }
  });

  it('reads a page that inflates to many buffers from one write', async () => {
    const big = Buffer.from(Array.from({ length: 6000 }, (_, i) => `<p>paragraph ${i} of a long page</p>`).join('\n'));
    expect(big.length).toBeGreaterThan(150_000);
    expect(await decode(gzipSync(big))).toEqual({ text: big.toString('latin1') });
    expect(await decode(Buffer.concat([gzipSync(big), Buffer.from('\n')]), [100_000])).toEqual({ text: big.toString('latin1') });
  });

  it('bounds what a hostile body costs: a header with no end, members by the thousand, a tail that goes on', async () => {
    // FLG = FNAME, and a name that never ends: refused past MAX_HEADER_BYTES, not joined and searched for ever.
    const endlessName = Buffer.concat([Buffer.from([0x1f, 0x8b, 8, 0x08, 0, 0, 0, 0, 0, 3]), Buffer.alloc(MAX_HEADER_BYTES + 10, 0x61)]);
    expect(await decode(endlessName, [4096])).toEqual({ error: 'Z_DATA_ERROR' });
    const empty = gzipSync(Buffer.alloc(0));
    expect(await decode(Buffer.concat(Array.from({ length: MAX_MEMBERS }, () => empty)))).toEqual({ text: '' });
    expect(await decode(Buffer.concat(Array.from({ length: MAX_MEMBERS + 1 }, () => empty)))).toEqual({ error: 'Z_DATA_ERROR' });
    expect(await decode(Buffer.concat([gzipSync(PAGE), Buffer.alloc(MAX_TAIL_BYTES, 0x20)]), [4096])).toEqual({ text: PAGE.toString('latin1') });
    expect(await decode(Buffer.concat([gzipSync(PAGE), Buffer.alloc(MAX_TAIL_BYTES + 1, 0x20)]), [4096])).toEqual({ error: 'Z_DATA_ERROR' });
  });

  it('gives what gunzip gives for any members, in any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 1, maxLength: 3 }),
        fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 5 }),
        async (members, sizes) => {
          const body = Buffer.concat(members.map((member) => gzipSync(member)));
          expect(await decode(body, sizes)).toEqual({ text: gunzipSync(body).toString('latin1') });
        },
      ),
      { seed, numRuns: 150 },
    );
  });
});
