/**
 * What a fetcher pays per page for the index data (tokenizing, stemming, counting: buildIndexData),
 * what the page's index data weighs on the wire (JSON, and gzipped as queue-client.ts posts batches
 * over 16 KiB), and what the queue server pays to parse and validate it (JSON.parse + the zod schema).
 *
 *   node tokenize-cost.mjs        (after `npm run build` in the checkout)
 *
 * The English page is 14 KB of real prose (Petrel's README and ARCHITECTURE, cut at 14,000 characters),
 * the Japanese one 14 KB of a few sentences repeated (ICU segmentation cost per character).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

const root = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const { tokenize } = await import(pathToFileURL(join(root, 'dist/shared/tokenize.js')).href);
const { buildIndexData, indexDataSchema } = await import(pathToFileURL(join(root, 'dist/shared/index-data.js')).href);

const prose = (readFileSync(join(root, 'README.md'), 'utf8') + readFileSync(join(root, 'ARCHITECTURE.md'), 'utf8'))
  .replace(/[`|#*>\[\]()_-]+/g, ' ')
  .replace(/\s+/g, ' ')
  .slice(0, 14_000);
const japanese = '東京都に住んでいる友人は毎朝電車で会社に通っています。検索エンジンはウェブページを集めて索引を作ります。日本語の文章は単語の間に空白がありません。'.repeat(200).slice(0, 14_000 / 3);

function measure(name, fn, rounds) {
  for (let i = 0; i < 20; i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < rounds; i++) fn();
  return (performance.now() - t0) / rounds;
}

const report = {};
for (const [name, text, language] of [['english', prose, 'en'], ['japanese', japanese, 'ja']]) {
  const tokens = tokenize(text, { language }).length;
  const input = { title: 'A page about the crawler', headings: ['Storage and crash safety', 'Processes'], bodyText: text, language, anchors: Array.from({ length: 50 }, (_, i) => ({ url: `https://example.org/docs/page-${i}.html`, text: `link number ${i} to docs` })) };
  const tokenizeMs = measure(name, () => tokenize(text, { language }), name === 'english' ? 300 : 30);
  const buildMs = measure(name, () => buildIndexData(input), name === 'english' ? 300 : 30);
  const data = buildIndexData(input);
  const json = JSON.stringify(data);
  const parseMs = measure(name, () => JSON.parse(json), 300);
  const validateMs = measure(name, () => indexDataSchema.parse(JSON.parse(json)), 300) - parseMs;
  report[name] = {
    textChars: text.length,
    textBytes: Buffer.byteLength(text),
    tokens,
    distinctBodyTerms: data.fields.body.length,
    tokenizeMsPerPage: round(tokenizeMs),
    tokensPerSecond: Math.round(tokens / (tokenizeMs / 1000)),
    buildIndexDataMsPerPage: round(buildMs),
    wireJsonBytes: Buffer.byteLength(json),
    wireGzipBytes: gzipSync(json).length,
    storedTextBytes: Buffer.byteLength(data.text),
    queueServerParseMs: round(parseMs),
    queueServerValidateMs: round(validateMs),
  };
}
process.stdout.write(`${JSON.stringify({ node: process.version, ...report }, null, 2)}\n`);

function round(x) {
  return Math.round(x * 1000) / 1000;
}
