#!/usr/bin/env node
'use strict';
// npm test: the C unit tests of src/ under ASan/UBSan and under valgrind, a short fuzz smoke run
// of every parser, then the node:test suites against the default (jemalloc)
// build and again against the system-allocator build (but those that test
// what lies between processes, bus/ browser/ examples/, and the Pusher
// acceptance suite, pusher/: once, against the default build). Steps that
// mostly wait, or that each keep one core busy, run side by side (below,
// and docs/testing.md, "How long npm test takes").
//
// The suites run against the production builds (what ships). The suites that
// use the test-only exports (_testAlloc/_testFree: those that require
// __test__/helpers/testing.js) run once more against the testing build of
// the same allocator and page (scripts/build.js --testing, rebuilt here when
// missing or older than a source), named by SYMPHONY_NATIVE; against a
// production build those tests are skipped.
//
// Also the TLS module (src/tls) against the private OpenSSL (deps/openssl.sh:
// fetched, checked and built once, then cached), under ASan/UBSan.
//
// The public types too: a TypeScript example of the whole API (__test__/types),
// compiled with tsc --noEmit --strict against lib/index.d.ts ("types", ~10 s).
// __test__/package/esm.test.mjs (the package imported from an ES module by its name)
// is one of the node:test suites.
//
// First (in well under a second) it checks that every system package the
// tests need is there (scripts/system-deps.js: the list `npm run setup`
// installs) and, if one is missing, stops at once with the whole list and
// the line that installs them. Each suite file is bounded in time
// (--test-timeout, FILE_TIMEOUT_MS): a file that hangs fails and the run goes on.
//
//   node scripts/test.js [--only=types,c,c-valgrind,tls,fuzz,jemalloc,system,bench-smoke]
//     (jemalloc: its stream, the between and Pusher streams, its testing twin's)
//   node scripts/test.js --list-testing   (prints the suites run against the testing builds)

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { depDir } = require('./deps');
const { FILE } = require('./notices');
const { testingDir } = require('./build');
const { candidatePaths } = require('../lib/loader');
const { platformDir, pageOfFile } = require('../lib/variants');
const { suites, loads } = require('./suites');
const systemDeps = require('./system-deps');

/** The longest a suite file may run (node --test's --test-timeout bounds each file, and each test without its own). */
const FILE_TIMEOUT_MS = 10 * 60 * 1000;

const root = path.resolve(__dirname, '..');
const only = (process.argv.find((a) => a.startsWith('--only=')) || '').slice(7).split(',').filter(Boolean);
const want = (name) => only.length === 0 || only.includes(name);

const results = [];

// The system packages, before anything else (not for --list-testing).
if (!process.argv.includes('--list-testing')) {
  const need = systemDeps.missing(['test']);
  if (need.length > 0) {
    console.error(`npm test: missing system packages (the tests need every one):\n${need.map((e) => `  ${e.pkg.padEnd(20)} ${e.why}`).join('\n')}\n`);
    console.error(`Install them with \`npm run setup\` as root, or:\n\n  ${systemDeps.installLine(need.map((e) => e.pkg))}\n`);
    process.exit(1);
  }
}

/** Runs one step when its name (or the group it belongs to) is wanted. */
function step(name, cmd, args, env = {}, group = name) {
  if (!want(group)) return;
  const started = Date.now();
  console.log(`\n=== ${name}: ${cmd} ${args.join(' ')}`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const ok = r.status === 0;
  results.push({ name, ok, secs });
  console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`})`} in ${secs} s`);
}

/**
 * Runs streams at the same time: each stream a list of steps ([name, cmd,
 * args, env, group]) run one after another, each step's output in a file
 * printed whole when it ends (2 cores: a step that mostly waits on sockets
 * and sanitizers leaves room for another). A lone step is a stream of one.
 * Resolves when all have ended.
 */
async function together(streams) {
  const { spawn } = require('node:child_process');
  const os = require('node:os');
  const run = ([name, cmd, args, env = {}]) => {
    const started = Date.now();
    const log = path.join(os.tmpdir(), `symphony-test-${process.pid}-${name}.log`);
    const fd = fs.openSync(log, 'w');
    console.log(`=== ${name}: ${cmd} ${args.join(' ')} (output below when it ends)`);
    const child = spawn(cmd, args, { cwd: root, stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
    return new Promise((resolve) => {
      const done = (status, error) => {
        fs.closeSync(fd);
        const secs = ((Date.now() - started) / 1000).toFixed(1);
        const ok = status === 0;
        const output = fs.readFileSync(log);
        console.log(`\n=== ${name}:`);
        process.stdout.write(output);
        fs.rmSync(log, { force: true });
        results.push({ name, ok, secs, failed: ok ? '' : failedPart(output.toString()) });
        console.log(`=== ${name}: ${ok ? 'ok' : `FAILED (${error ? error.message : `exit ${status}`})`} in ${secs} s`);
        resolve();
      };
      child.on('error', (err) => done(null, err));
      child.on('exit', (code, signal) => done(code ?? signal));
    });
  };
  await Promise.all(streams.map(async (stream) => {
    const steps = typeof stream[0] === 'string' ? [stream] : stream;
    for (const s of steps.filter(([name, , , , group = name]) => want(group))) await run(s);
  }));
}

/**
 * The part of a failed node:test run's output that names its failures (the
 * dot reporter's "Failed tests:" section), at most 120 lines: printed again
 * after the summary, where a log's tail (all CI keeps) shows it.
 */
function failedPart(output) {
  const at = output.lastIndexOf('\nFailed tests:');
  const lines = (at >= 0 ? output.slice(at + 1) : output).split('\n');
  return (at >= 0 ? lines.slice(0, 120) : lines.slice(-40)).join('\n');
}

/** True when file exists and was built after the last change to what it is built from. */
function upToDate(file) {
  return file !== null && fs.existsSync(file) && fs.statSync(file).mtimeMs > newestSource();
}

/**
 * True when the production build the suites will load for allocator is
 * there, newer than every source (an older one is rebuilt, as the testing
 * builds are: a build made from sources that changed since, even mid-way,
 * would be tested instead of the code), with its notices beside it
 * (__test__/package/notices.test.js).
 */
function nativeBuilt(allocator) {
  const prod = productionBuild(allocator);
  return upToDate(prod) && fs.existsSync(path.join(path.dirname(prod), FILE));
}

/** The production build the loader picks for allocator in native/ (null: none). */
function productionBuild(allocator) {
  const dir = path.join(root, 'native', platformDir());
  return candidatePaths({ SYMPHONY_ALLOCATOR: allocator })
    .find((p) => path.dirname(p) === dir && fs.existsSync(p)) ?? null;
}

/** The newest modification time of what a native build is made from (folders too: a removed file); read once. */
let newestCache = null;
function newestSource() {
  if (newestCache !== null) return newestCache;
  let newest = 0;
  const walk = (p) => {
    const st = fs.statSync(p);
    newest = Math.max(newest, st.mtimeMs);
    if (st.isDirectory()) for (const f of fs.readdirSync(p)) walk(path.join(p, f));
  };
  for (const p of ['src', 'binding', 'binding.gyp']) walk(path.join(root, p));
  newestCache = newest;
  return newest;
}

// The suites that need a testing build: those that load __test__/helpers/testing.js
// (in any folder of __test__/, by whatever relative path).
const testingSuites = suites().filter((f) => loads(f, path.join('__test__', 'helpers', 'testing')));
if (process.argv.includes('--list-testing')) {
  console.log(testingSuites.join('\n'));
  process.exit(0);
}

const testingBuilds = {};
for (const allocator of ['jemalloc', 'system']) {
  if (want(allocator) && !nativeBuilt(allocator)) {
    step(`build-${allocator}`, process.execPath, [path.join(root, 'scripts', 'build.js'), `--allocator=${allocator}`]);
  }
  const prod = want(allocator) && testingSuites.length > 0 ? productionBuild(allocator) : null;
  if (!prod) continue;
  // The testing twin of the build the suites load: same allocator and page.
  const file = path.join(testingDir(), path.basename(prod));
  testingBuilds[allocator] = file;
  if (upToDate(file)) continue;
  const page = pageOfFile(prod);
  step(`build-${allocator}-testing`, process.execPath, [path.join(root, 'scripts', 'build.js'), '--testing',
    `--allocator=${allocator}`, ...(page ? [`--lg-page=${Math.log2(page)}`] : [])], {}, allocator);
}
// The private OpenSSL (built by npm install; cached): the TLS C tests, and
// the TLS server test under valgrind too; the tokens' fuzz target.
let opensslDir = '';
if (want('tls') || want('c-valgrind') || want('fuzz')) {
  try {
    opensslDir = depDir('openssl');
  } catch (err) {
    results.push({ name: err.message, ok: false, secs: '0' });
  }
}
(async () => {
  // The types, the C tests under the sanitizers and the TLS C tests side by
  // side: each is one process at a time (tsc; make without -j, building then
  // running), so the three fill the 2 cores (~70 s, the C tests' time,
  // where one after another took ~95 s). The one file the C tests and the
  // TLS tests both build (the Pusher test vectors) is made first, alone.
  if (want('c') && opensslDir) step('c-vectors', 'make', ['-s', '-C', '__test__/c', 'out/vectors/pusher.json'], {}, 'c');
  await together([
    ['types', process.execPath, [require.resolve('typescript/bin/tsc', { paths: [root] }), '-p', '__test__/types']],
    ['c', 'make', ['-s', '-C', '__test__/c', 'test']],
    ...(opensslDir ? [['tls', 'make', ['-s', '-C', '__test__/c', 'tls', `OPENSSL_DIR=${opensslDir}`]]] : []),
  ]);
  // valgrind and the fuzzers each keep one core busy: side by side. The
  // fuzz smoke (~300 s: its clang builds, then 15 s per target) outlasts
  // valgrind (~200 s): the suites start when valgrind ends, beside the
  // fuzzers' last ~100 s, instead of waiting for them (SMOKE_TIME stays:
  // fewer seconds reached less coverage on the slower targets, fuzz_jwt,
  // fuzz_pusher_http, fuzz_v2).
  const fuzzing = fs.existsSync(path.join(root, '__test__', 'fuzz', 'Makefile'))
    ? together([['fuzz', 'make', ['-s', '-C', '__test__/fuzz', 'smoke', ...(opensslDir ? [`OPENSSL_DIR=${opensslDir}`] : [])]]])
    : Promise.resolve();
  if (opensslDir) await together([['c-valgrind', 'make', ['-s', '-C', '__test__/c', 'valgrind', `OPENSSL_DIR=${opensslDir}`]]]);
  // The suites, in four streams side by side: they wait on sockets, Redis,
  // Chromium and timers more than they compute, and every suite must pass
  // on a busy machine anyway (docs/testing.md), the fuzzers' end too.
  // - jemalloc, system: every suite that tests symphony's own code, once
  //   against each production build (what ships), each followed by the
  //   suites that need the test-only exports against that build's testing
  //   twin.
  // - jemalloc-between: the Redis bus', the browser's and the examples'
  //   suites (bus/, browser/, examples/) test what lies between processes
  //   (Redis, Chromium), not the allocator: once, against the default build.
  // - jemalloc-pusher: the Pusher acceptance suite (pusher/) tests the
  //   Pusher protocol's behaviour (frames, webhooks, the HTTP API, Pusher's
  //   clients and SDK) through a server in a child process, not the
  //   allocator: once, against the default build (it was ~45% of each
  //   allocator stream, ~200 s, run twice).
  const nodeTest = ['--test', '--test-concurrency=1', '--expose-gc', '--test-reporter=dot', `--test-timeout=${FILE_TIMEOUT_MS}`];
  const between = (f) => /^__test__[\\/](bus|browser|examples)[\\/]/.test(f);
  const pusher = (f) => /^__test__[\\/]pusher[\\/]/.test(f);
  const twice = suites().filter((f) => !between(f) && !pusher(f));
  const once = suites().filter(between);
  const acceptance = suites().filter(pusher);
  await together([
    ...['jemalloc', 'system'].map((allocator) => [
      [allocator, process.execPath, [...nodeTest, ...twice], { SYMPHONY_ALLOCATOR: allocator }],
      ...(testingBuilds[allocator] ? [[`${allocator}-testing`, process.execPath, [...nodeTest, ...testingSuites],
        { SYMPHONY_ALLOCATOR: allocator, SYMPHONY_NATIVE: testingBuilds[allocator] }, allocator]] : []),
    ]),
    ['jemalloc-between', process.execPath, [...nodeTest, ...once], { SYMPHONY_ALLOCATOR: 'jemalloc' }, 'jemalloc'],
    ['jemalloc-pusher', process.execPath, [...nodeTest, ...acceptance], { SYMPHONY_ALLOCATOR: 'jemalloc' }, 'jemalloc'],
  ]);
  await fuzzing;
  // The benchmark runner's shape, once (it runs both allocator arms
  // itself), alone at the end: its runs check that each arm delivered
  // what was published within a 2 s window (97-103%), and beside the
  // suite streams a peer arm's backlog landed in a window (ws-redis 104%,
  // ws 104.5%: bench/results/2026-12-06-npm-test-times).
  step('bench-smoke', process.execPath, ['--test', '--test-reporter=dot', `--test-timeout=${FILE_TIMEOUT_MS}`, '__test__/bench-smoke.js']);

  console.log('\n=== summary');
  for (const r of results) console.log(`${r.ok ? 'ok  ' : 'FAIL'} ${r.name} (${r.secs} s)`);
  for (const r of results.filter((x) => x.failed)) console.log(`\n=== ${r.name}, what failed:\n${r.failed}`);
  process.exit(results.every((r) => r.ok) ? 0 : 1);
})();
