/**
 * Where a Petrel checkout keeps what the benchmark runs, found from the checkout's own files rather than
 * hard-coded, so a re-laid-out build (dist/cli/petrel.js instead of dist/queue-server/cli/petrel.js)
 * keeps working:
 *  - the `petrel` binary: the root package.json's `bin.petrel`;
 *  - the compiled test web: `scripts/test-web.ts` mapped through tsconfig.build.json (rootDir → outDir),
 *    else the `node <file>.js` of package.json's `test-web` script.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, posix, relative } from 'node:path';

/** The `petrel` binary of the checkout at `root`, relative to it (e.g. dist/queue-server/cli/petrel.js). */
export function petrelBinPath(root) {
  const pkg = readJson(join(root, 'package.json'));
  const bin = typeof pkg.bin === 'string' ? pkg.bin : pkg.bin?.petrel;
  if (typeof bin !== 'string') throw new Error(`${join(root, 'package.json')} has no bin.petrel`);
  return posix.normalize(bin);
}

/** The compiled test web module (absolute path), or null when neither way finds a file name. */
export function testWebModulePath(root) {
  const candidates = [];
  const tsconfig = join(root, 'tsconfig.build.json');
  if (existsSync(tsconfig)) {
    const options = readJson(tsconfig).compilerOptions ?? {};
    if (typeof options.outDir === 'string') {
      const rootDir = typeof options.rootDir === 'string' ? options.rootDir : '.';
      const source = relative(join(root, rootDir), join(root, 'scripts', 'test-web.ts'));
      candidates.push(join(root, options.outDir, source.replace(/\.ts$/, '.js')));
    }
  }
  const script = readJson(join(root, 'package.json')).scripts?.['test-web'];
  const match = typeof script === 'string' ? /\bnode\s+(\S+\.js)\b/.exec(script) : null;
  if (match !== null) candidates.push(join(root, match[1]));
  return candidates.find((file) => existsSync(file)) ?? candidates[0] ?? null;
}

/**
 * Copies the build (the top directory holding the binary, e.g. dist/) and package.json to `to`, with
 * node_modules linked back: the tree is shared, and a `npm run build` elsewhere (which starts with
 * rm -rf dist) must not pull modules from under a running crawl. Returns the binary in the copy.
 */
export function snapshotPetrel(from, to) {
  const bin = petrelBinPath(from);
  const top = bin.split('/')[0];
  mkdirSync(to, { recursive: true });
  cpSync(join(from, top), join(to, top), { recursive: true });
  cpSync(join(from, 'package.json'), join(to, 'package.json'));
  symlinkSync(join(from, 'node_modules'), join(to, 'node_modules'));
  return join(to, bin);
}

/** JSON, tolerating the comments and trailing commas a tsconfig may hold. */
function readJson(file) {
  const text = readFileSync(file, 'utf8');
  try {
    return JSON.parse(text);
  } catch {
    const stripped = text
      .replace(/("(?:[^"\\]|\\.)*")|\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, (all, string) => string ?? '')
      .replace(/,(\s*[}\]])/g, '$1');
    return JSON.parse(stripped);
  }
}
