#!/usr/bin/env node
'use strict';
// npm test: the C unit tests of src/ under ASan/UBSan and under valgrind, a short fuzz smoke run
// of every parser, then the node:test suites against the default (jemalloc)
// build and again against the system-allocator build.
//
// Also the TLS module (src/tls) against the private OpenSSL (deps/openssl.sh:
// fetched, checked and built once, then cached), under ASan/UBSan.
//
//   node scripts/test.js [--only=c,c-valgrind,tls,fuzz,jemalloc,system,bench-smoke]

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { depDir } = require('./deps');

const root = path.resolve(__dirname, '..');
const only = (process.argv.find((a) => a.startsWith('--only=')) || '').slice(7).split(',').filter(Boolean);
const want = (name) => only.length === 0 || only.includes(name);

const results = [];

function step(name, cmd, args, env = {}) {
  if (!want(name)) return;
  const started = Date.now();
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const ok = r.status === 0;
  results.push({ name, ok, secs });
  console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`})`} in ${secs} s`);
}

function nativeBuilt(allocator) {
  const dir = path.join(root, 'native', `${process.platform}-${process.arch}`);
  return fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.includes(`.${allocator}`));
}

for (const allocator of ['jemalloc', 'system']) {
  if (want(allocator) && !nativeBuilt(allocator)) {
    step(`build-${allocator}`, process.execPath, [path.join(root, 'scripts', 'build.js'), `--allocator=${allocator}`]);
  }
}
// The private OpenSSL (built by npm install; cached): the TLS C tests, and
// the TLS server test under valgrind too.
let opensslDir = '';
if (want('tls') || want('c-valgrind')) {
  try {
    opensslDir = depDir('openssl');
  } catch (err) {
    results.push({ name: err.message, ok: false, secs: '0' });
  }
}
step('c', 'make', ['-s', '-C', '__test__/c', 'test']);
if (opensslDir) step('c-valgrind', 'make', ['-s', '-C', '__test__/c', 'valgrind', `OPENSSL_DIR=${opensslDir}`]);
if (opensslDir) step('tls', 'make', ['-s', '-C', '__test__/c', 'tls', `OPENSSL_DIR=${opensslDir}`]);
if (fs.existsSync(path.join(root, '__test__', 'fuzz', 'Makefile'))) {
  step('fuzz', 'make', ['-s', '-C', '__test__/fuzz', 'smoke']);
}
const nodeTest = ['--test', '--test-concurrency=1', '--expose-gc', '--test-reporter=dot', '__test__/'];
step('jemalloc', process.execPath, nodeTest, { SYMPHONY_ALLOCATOR: 'jemalloc' });
step('system', process.execPath, nodeTest, { SYMPHONY_ALLOCATOR: 'system' });
// The benchmark runner's shape, once (it runs both allocator arms itself).
step('bench-smoke', process.execPath, ['--test', '--test-reporter=dot', '__test__/bench-smoke.js']);

console.log('\n=== summary');
for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name} (${r.secs} s)`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
