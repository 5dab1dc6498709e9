'use strict';
// Every block of README.md and docs/*.md marked `<!-- runs: NAME -->` (those
// docs.test.js runs) that is JavaScript, so TypeScript-shaped, type-checks as
// TypeScript under `strict`, against the shipped .d.ts files, in a project
// that installs symphony-ws as a user's does (node_modules/symphony-ws),
// under both module resolutions: "nodenext" (package.json's "exports") and
// "commonjs"/"node10" (which reads "typesVersions" for symphony-ws/client).
// Each block is taken as printed, its require() lines written as the imports
// they stand for. No block is left out: a new runnable block is checked as
// soon as it is marked.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Every block marked `<!-- runs: NAME -->` whose fence says js/javascript/ts, as { page, name, code }. */
function runnableBlocks() {
  const out = [];
  for (const page of pages) {
    const text = fs.readFileSync(path.join(root, page), 'utf8');
    for (const m of text.matchAll(/^<!-- runs: ?(.*?) ?-->\n```([a-z]*)\n([\s\S]*?)^```$/gm)) {
      if (['js', 'javascript', 'ts', 'typescript'].includes(m[2])) out.push({ page, name: m[1], code: m[3] });
    }
  }
  return out;
}

/** require() lines as imports: `const { A, B } = require('m');` and `const A = require('m');`. */
function asTypeScript(code) {
  return code
    .replace(/^const (\{[^}]*\}) = require\(('[^']+')\);/gm, 'import $1 from $2;')
    .replace(/^const (\w+) = require\(('[^']+')\);/gm, 'import $1 = require($2);');
}

// The blocks' other packages: ws and node have their @types here; express
// (the FAQ's Express example) has none installed, so the part of its API the
// block uses is declared as @types/express declares it (Express 4 and 5).
const EXPRESS = `declare module 'express' {
  import type { IncomingMessage, ServerResponse } from 'node:http';
  namespace e {
    interface Request extends IncomingMessage { body: any }
    interface Response extends ServerResponse { json(body?: any): this }
    type NextFunction = (err?: any) => void;
    type RequestHandler = (req: Request, res: Response, next: NextFunction) => void;
    interface Express {
      (req: IncomingMessage, res: ServerResponse): void;
      use(...handlers: RequestHandler[]): this;
      post(path: string, ...handlers: RequestHandler[]): this;
    }
    function json(): RequestHandler;
  }
  function e(): e.Express;
  export = e;
}
`;

/** A user's project: node_modules/symphony-ws (this package), @types/node and @types/ws; one .ts per block. */
function project(t, blocks) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-readme-types-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.mkdirSync(path.join(dir, 'node_modules', '@types'), { recursive: true });
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'symphony-ws'), 'dir');
  for (const name of ['node', 'ws']) {
    fs.symlinkSync(path.join(root, 'node_modules', '@types', name), path.join(dir, 'node_modules', '@types', name), 'dir');
  }
  fs.writeFileSync(path.join(dir, 'package.json'), '{ "name": "app", "private": true }\n');
  fs.writeFileSync(path.join(dir, 'express.d.ts'), EXPRESS);
  const files = ['express.d.ts'];
  for (const b of blocks) {
    // One file per block, named after its page and marker: tsc's errors say which.
    const file = `${b.page.replace(/[/.]/g, '_')}__${b.name}.ts`;
    // `export {}`: each file its own module (blocks declare the same names).
    fs.writeFileSync(path.join(dir, file), `${asTypeScript(b.code)}\nexport {};\n`);
    files.push(file);
  }
  return { dir, files };
}

test('readme-types: the runnable blocks are found (README.md and docs/)', () => {
  const names = runnableBlocks().map((b) => `${b.page}#${b.name}`);
  for (const expected of ['README.md#quick-start-server', 'README.md#quick-start-client', 'README.md#asks-server',
    'README.md#asks-client', 'docs/sse.md#sse-quick', 'docs/faq.md#faq-body-parsers']) {
    assert.ok(names.includes(expected), `${expected} is checked (found: ${names.join(', ')})`);
  }
});

for (const [mode, options] of [
  ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
  ['commonjs', { module: 'commonjs', moduleResolution: 'node10' }],
]) {
  test(`readme-types: every runnable block of README.md and docs/ type-checks under strict, module ${mode}`, { timeout: 120000 }, (t) => {
    const blocks = runnableBlocks();
    const { dir, files } = project(t, blocks);
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', types: ['node'], esModuleInterop: true, skipLibCheck: false, ...options },
      files,
    }));
    const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });
    const r = spawnSync(process.execPath, [tsc, '-p', dir], { cwd: dir, encoding: 'utf8', timeout: 110000 });
    assert.equal(r.status, 0, `tsc:\n${r.stdout}${r.stderr}`);
  });
}
