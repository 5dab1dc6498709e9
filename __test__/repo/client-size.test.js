'use strict';
// The client's size the docs quote (README's quick start, docs/api.md's
// client section) is the one scripts/client-size.js measures: minified by
// the locked esbuild, gzipped at level 9. A change to the client moves it;
// the docs move with it.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');

test('README and docs/api.md quote the client\'s minified + gzipped size as scripts/client-size.js measures it', () => {
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'client-size.js'), '--json'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { minGzip } = JSON.parse(r.stdout);
  const quoted = `${minGzip.toLocaleString('en-US')} bytes`;
  for (const page of ['README.md', 'docs/api.md']) {
    const text = fs.readFileSync(path.join(root, page), 'utf8').replace(/\*\*/g, '');
    const figures = [...text.matchAll(/(\d{1,3}(?:,\d{3})*) bytes\s+minified and gzipped/g)].map((m) => `${m[1]} bytes`);
    assert.ok(figures.length > 0, `${page} quotes the client's size`);
    assert.deepEqual([...new Set(figures)], [quoted], `${page}: node scripts/client-size.js says ${quoted}`);
  }
  // The budget a page pays for the client: 8 KiB minified and gzipped.
  assert.ok(minGzip <= 8192, `the client is ${minGzip} bytes minified and gzipped, over its 8,192-byte budget`);
});
