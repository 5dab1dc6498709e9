'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { runNode } = require('../helpers/build');
const { candidatePaths } = require('../../lib/loader');
const { kernelPageSize, variantFileName, elfInterpreter, detectLibc, pageOfFile } = require('../../lib/variants');

const LINUX = process.platform === 'linux' ? false : 'the aux vector and the ELF interpreter: Linux by nature';

test('the kernel page size is read from the aux vector', { skip: LINUX }, () => {
  const page = kernelPageSize();
  assert.equal(typeof page, 'number');
  assert.ok([4096, 16384, 65536].includes(page), String(page));
});

test('macOS: the page comes from the CPU type (16 KiB on Apple Silicon, 4 KiB on Intel), no /proc needed', () => {
  assert.equal(kernelPageSize('darwin', 'arm64'), 16384);
  assert.equal(kernelPageSize('darwin', 'x64'), 4096);
  assert.equal(kernelPageSize('darwin', 'ia32'), null);
  if (process.platform === 'darwin') assert.ok([4096, 16384].includes(kernelPageSize()));
});

test('jemalloc builds with a page smaller than the kernel\'s are never candidates', () => {
  const all = candidatePaths({ SYMPHONY_ALLOCATOR: 'jemalloc' });
  // The last resort: a plain node-gyp build.
  assert.equal(all[all.length - 1], path.join(__dirname, '..', '..', 'build', 'Release', 'symphony.node'));
  const paths = all.slice(0, -1);
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

test('libc comes from Node\'s own ELF interpreter, without a child process', { skip: LINUX }, () => {
  const interp = elfInterpreter();
  assert.match(interp, /^\/lib(64)?\/ld-(linux|musl)-[a-z0-9_-]+\.so\.[12]$/);
  assert.equal(detectLibc(), /musl/.test(interp) ? 'musl' : 'glibc');
  assert.equal(detectLibc(), process.report.getReport().header.glibcVersionRuntime ? 'glibc' : 'musl');
  assert.equal(elfInterpreter(__filename), null, 'not an ELF file');
});

test('SYMPHONY_NATIVE naming a build for smaller pages than the kernel\'s is refused, not loaded', (t) => {
  // This kernel's page is 4 KiB: a file named for 2 KiB pages stands in for
  // "smaller than the kernel's" (on a 64 KiB kernel the 4 KiB build is refused
  // the same way; scripts/test-artifacts.js checks that under qemu).
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  assert.equal(pageOfFile('x/symphony.glibc.jemalloc-64k.node'), 65536);
  assert.equal(pageOfFile('x/symphony.glibc.system.node'), null);
  const small = path.join(dir, `symphony.glibc.jemalloc-${kernelPageSize() / 2048}k.node`);
  fs.copyFileSync(require('../..').allocator.nativePath, small);
  const r = runNode('try { require(".") } catch (e) { console.log(JSON.stringify({code: e.code, tried: e.tried})) }',
    { SYMPHONY_NATIVE: small });
  assert.equal(r.status, 0, r.stderr);
  const e = JSON.parse(r.stdout);
  assert.equal(e.code, 'ERR_SYMPHONY_LOAD');
  assert.match(e.tried[0].error, /built for \d+ KiB pages, the kernel's are \d+ KiB: not loaded/);
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
  const r = runNode('require(".")', { SYMPHONY_ALLOCATOR: 'tcmalloc', SYMPHONY_NATIVE: '' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /SYMPHONY_ALLOCATOR must be 'jemalloc' or 'system', not 'tcmalloc'/);
});
