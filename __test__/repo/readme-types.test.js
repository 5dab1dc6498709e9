'use strict';
// The README's server and client blocks (those marked `<!-- runs: NAME -->`,
// which docs.test.js runs) type-check as TypeScript under `strict`, against
// the shipped .d.ts files, in a project that installs symphony-ws as a user's
// does (node_modules/symphony-ws), under both module resolutions: "nodenext"
// (package.json's "exports") and "commonjs"/"node10" (which reads
// "typesVersions" for symphony-ws/client). Each block is taken as printed,
// its require() lines written as the imports they stand for.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
// Not 'asks-server': its onRequest returns server.subscribers(...) from inside
// `const server = new Server({ ... })`, which TypeScript (5.9) cannot type
// (TS7022: a `new` expression's type is not known before its arguments are
// checked, unlike a call's), and JSON.parse takes no Buffer. See CHANGELOG.
const BLOCKS = ['quick-start-server', 'quick-start-client', 'asks-client'];

/** The code of README's block marked `<!-- runs: name -->`. */
function block(name) {
  const text = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const at = text.indexOf(`<!-- runs: ${name} -->\n`);
  assert.ok(at >= 0, `README.md has a block marked ${name}`);
  const m = /^```[a-z]*\n([\s\S]*?)^```$/m.exec(text.slice(at));
  return m[1];
}

/** require() lines as imports: `const { A, B } = require('m');` and `const A = require('m');`. */
function asTypeScript(code) {
  return code
    .replace(/^const (\{[^}]*\}) = require\(('[^']+')\);/gm, 'import $1 from $2;')
    .replace(/^const (\w+) = require\(('[^']+')\);/gm, 'import $1 = require($2);');
}

/** A user's project: node_modules/symphony-ws (this package), @types/node and @types/ws. */
function project(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-readme-types-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true });
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'symphony-ws'), 'dir');
  for (const name of ['node', 'ws']) {
    fs.symlinkSync(path.join(root, 'node_modules', '@types', name), path.join(dir, 'node_modules', '@types', name), 'dir');
  }
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "app", "private": true }\n');
  for (const name of BLOCKS) fs.writeFileSync(path.join(dir, `${name}.ts`), asTypeScript(block(name)));
  return dir;
}

for (const [mode, options] of [
  ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
  ['commonjs', { module: 'commonjs', moduleResolution: 'node10' }],
]) {
  test(`README's blocks type-check under strict, module ${mode}`, { timeout: 120000 }, (t) => {
    const dir = project(t);
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', types: ['node'], esModuleInterop: true, skipLibCheck: false, ...options },
      files: BLOCKS.map((b) => `${b}.ts`),
    }));
    const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
    const r = spawnSync(process.execPath, [tsc, '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 110000 });
    assert.equal(r.status, 0, `tsc:\n${r.stdout}${r.stderr}`);
  });
}
