'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { runNode } = require('./helpers/build');
const { candidatePaths } = require('../lib/loader');
const { kernelPageSize, variantFileName } = require('../lib/variants');

test('the kernel page size is read from the aux vector', () => {
  const page = kernelPageSize();
  assert.equal(typeof page, 'number');
  assert.ok([4096, 16384, 65536].includes(page), String(page));
});

test('jemalloc builds with a page smaller than the kernel\'s are never candidates', () => {
  const paths = candidatePaths({ SYMPHONY_ALLOCATOR: 'jemalloc' });
  const page = kernelPageSize();
  for (const p of paths) {
    const m = /jemalloc-(\d+)k\.node$/.exec(p);
    assert.ok(m, p);
    assert.ok(Number(m[1]) * 1024 >= page, p);
  }
  // Smallest fitting page first.
  assert.match(paths[0], page === 4096 ? /-4k\.node$/ : /-(16|64)k\.node$/);
  assert.equal(variantFileName({ libc: 'glibc', allocator: 'jemalloc', lgPage: 16 }), 'symphony.glibc.jemalloc-64k.node');
});

test('a missing build: the error names every path tried', () => {
  const r = runNode('require(".")', { SYMPHONY_NATIVE: '/nonexistent/symphony.node' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /ERR_SYMPHONY_LOAD|no native build could be loaded/);
  assert.match(r.stderr, /\/nonexistent\/symphony\.node: not found/);
});

test('a build that fails to load: the system\'s dlopen message is passed through', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bad = path.join(dir, 'broken.node');
  fs.writeFileSync(bad, 'this is not an ELF file');
  const r = runNode('try { require(".") } catch (e) { console.log(JSON.stringify({code: e.code, msg: e.message, tried: e.tried})) }',
    { SYMPHONY_NATIVE: bad });
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  assert.equal(e.code, 'ERR_SYMPHONY_LOAD');
  assert.equal(e.tried.length, 1);
  assert.match(e.tried[0].error, /invalid ELF header|file too short/);
  assert.match(e.msg, new RegExp(bad.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
});

test('an unknown SYMPHONY_ALLOCATOR is refused with a clear message', () => {
  const r = runNode('require(".")', { SYMPHONY_ALLOCATOR: 'tcmalloc' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /SYMPHONY_ALLOCATOR must be 'jemalloc' or 'system', not 'tcmalloc'/);
});
