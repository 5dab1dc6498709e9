#!/usr/bin/env node
'use strict';
// Builds symphony's native addon, offline, with the running Node's own headers.
//
//   node scripts/build.js                      every default variant for this host
//   node scripts/build.js --allocator=system   only the system-allocator build
//   node scripts/build.js --allocator=jemalloc --lg-page=16
//   node scripts/build.js --if-needed         (npm's install script) nothing to do when
//                                             a prebuilt binary loads here, else build
//   node scripts/build.js --testing [--allocator=...]
//                                             testing builds (SY_TESTING: _testAlloc/_testFree
//                                             and src/'s test hooks) into
//                                             native/<platform>-<arch>/testing/, same file
//                                             names; scripts/test.js runs the suites that
//                                             need them against these. Never shipped.
//
// --if-needed always builds in a git checkout (a developer's or CI's clone), and
// when npm is asked to (npm install --build-from-source) or
// SYMPHONY_BUILD_FROM_SOURCE=1; an installed package uses its platform
// package (@symphony-ws/<target>, lib/variants.js PLATFORMS) when it loads.
//
// Each variant lands in native/<platform>-<arch>/ under the name the loader
// (lib/loader.js) looks for. jemalloc, OpenSSL, libdeflate, hiredis and yyjson are built
// (once, cached) by deps/jemalloc.sh, deps/openssl.sh, deps/libdeflate.sh, deps/yyjson.sh and
// deps/hiredis.sh. Beside the builds, THIRD_PARTY_NOTICES.md: the versions and
// licence texts of those libraries, from the release tarballs of the build
// folders linked (scripts/notices.js).
//
// On Windows (win32 x64, from source: npm install --build-from-source, or
// .github/workflows/windows.yml) the system-allocator build only, with MSVC:
// the deps by deps/*.sh's MSVC mode (--host x86_64-pc-windows-msvc --cc cl,
// in Git for Windows' bash, with the Visual Studio environment set), and
// node-gyp with Node's headers and node.lib that node-gyp fetches itself
// (no --nodedir: scripts/node-headers.js' folder is Linux's and macOS'). The
// jemalloc build for Windows is the prebuilt @symphony-ws/win32-x64's, made
// with mingw-w64 on Linux (npm run gate:windows); asking for it here stops
// with that said. buildPlan() is what is built, for any platform, without
// building (__test__/package/build-plan.test.js).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { nodeHeaders, gypEnv } = require('./node-headers');
const { depDir } = require('./deps');
const { writeBeside } = require('./notices');
const { variantFileName, platformDir, detectLibc, pageOfFile } = require('../lib/variants');

const root = path.resolve(__dirname, '..');

function parseArgs(argv) {
  const opts = { allocator: null, lgPage: null, ifNeeded: false, testing: false };
  for (const arg of argv) {
    if (arg === '--if-needed' || arg === '--testing') {
      opts[arg === '--testing' ? 'testing' : 'ifNeeded'] = true;
      continue;
    }
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (!m) throw new Error(`build.js: unknown argument ${arg}`);
    if (m[1] === 'allocator') opts.allocator = m[2];
    else if (m[1] === 'lg-page') opts.lgPage = Number(m[2]);
    else throw new Error(`build.js: unknown option --${m[1]}`);
  }
  if (opts.allocator && !['jemalloc', 'system'].includes(opts.allocator)) {
    throw new Error(`build.js: --allocator must be jemalloc or system, not ${opts.allocator}`);
  }
  return opts;
}

// x64 kernels use 4 KiB pages; arm64 kernels 4, 16 or 64 KiB, so arm64 gets
// a 4 KiB build and a 64 KiB build (the loader picks by the kernel's page).
// macOS: 16 KiB on Apple Silicon, 4 KiB on Intel (lib/variants.js).
function defaultLgPages(arch, platform = process.platform) {
  if (platform === 'darwin') return arch === 'arm64' ? [14] : [12];
  return arch === 'arm64' ? [12, 16] : [12];
}

/** The deps' arguments on Windows: deps/*.sh's MSVC mode. */
const MSVC_DEPS = ['--host', 'x86_64-pc-windows-msvc', '--cc', 'cl'];

const JEMALLOC_ON_WINDOWS = 'build.js: jemalloc is not built from source on Windows (MSVC): the system allocator only. ' +
  'The prebuilt @symphony-ws/win32-x64 has jemalloc; building it from source needs mingw-w64: npm run gate:windows on Linux';

/**
 * What a build makes, without making it: { variants, libc, deps, nodedir }.
 * variants: [{ allocator, lgPage }] in build order; libc: the files' libc
 * segment (lib/variants.js variantFileName); deps: [{ key, label, name,
 * args }] in build order, where an argument '<openssl>' stands for
 * OpenSSL's build folder; nodedir: whether node-gyp gets --nodedir
 * (scripts/node-headers.js). On win32 the system allocator only (jemalloc,
 * by --allocator or SYMPHONY_ALLOCATOR, throws JEMALLOC_ON_WINDOWS) and the
 * deps in MSVC mode. `libc` may be given (detectLibc() otherwise, on this
 * host).
 */
function buildPlan({ platform = process.platform, arch = process.arch, allocator = null, lgPage = null, env = process.env, libc } = {}) {
  const windows = platform === 'win32';
  if (windows && (allocator === 'jemalloc' || (!allocator && env.SYMPHONY_ALLOCATOR === 'jemalloc'))) {
    throw new Error(JEMALLOC_ON_WINDOWS);
  }
  const variants = [];
  const allocators = windows ? ['system'] : allocator ? [allocator] : ['jemalloc', 'system'];
  for (const a of allocators) {
    if (a === 'system') variants.push({ allocator: a, lgPage: null });
    else for (const p of lgPage ? [lgPage] : defaultLgPages(arch, platform)) variants.push({ allocator: a, lgPage: p });
  }
  const base = windows ? MSVC_DEPS : [];
  const deps = [
    { key: 'opensslDir', label: 'OpenSSL', name: 'openssl', args: [...base] },
    { key: 'libdeflateDir', label: 'libdeflate', name: 'libdeflate', args: [...base] },
    { key: 'yyjsonDir', label: 'yyjson', name: 'yyjson', args: [...base] },
    // With its TLS layer built against the private OpenSSL (rediss://).
    { key: 'hiredisDir', label: 'hiredis', name: 'hiredis', args: [...base, '--openssl', '<openssl>'] },
  ];
  return { variants, libc: libc ?? (windows ? 'win32' : detectLibc()), deps, nodedir: !windows };
}

/** node-gyp's arguments for one variant (jeDir: its jemalloc build folder, when jemalloc). */
function gypArgs({ allocator, lgPage }, { opensslDir, libdeflateDir, hiredisDir, yyjsonDir }, testing, { nodedir, jeDir = null }) {
  const args = ['rebuild', ...(nodedir ? [`--nodedir=${nodeHeaders()}`] : []), '--jobs=max', `--sy_allocator=${allocator}`,
    `--sy_openssl_dir=${opensslDir}`, `--sy_libdeflate_dir=${libdeflateDir}`, `--sy_hiredis_dir=${hiredisDir}`,
    `--sy_yyjson_dir=${yyjsonDir}`, `--sy_testing=${testing ? 1 : 0}`];
  if (allocator === 'jemalloc') args.push(`--sy_jemalloc_dir=${jeDir}`, `--sy_lg_page=${lgPage}`);
  return args;
}

function nodeGypScript() {
  try {
    return require.resolve('node-gyp/bin/node-gyp.js', { paths: [root] });
  } catch {
    if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp;
    throw new Error('build.js: node-gyp not found (npm install it, or run through npm)');
  }
}

function run(cmd, args, env) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], env });
  if (r.error) throw r.error;
  if (r.status !== 0) {
    process.stderr.write(r.stdout);
    throw new Error(`build.js: ${path.basename(cmd)} ${args[0]} exited with ${r.status}`);
  }
  return r.stdout.toString();
}

/** A dependency's build folder (scripts/deps.js: built once, then cached), timed. */
function dependency(label, name, args = []) {
  const t = Date.now();
  const dir = depDir(name, args);
  console.error(`symphony: ${label} ready in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  return dir;
}

/** Where testing builds go: a folder of their own, never searched by the loader. */
function testingDir() {
  return path.join(root, 'native', platformDir(), 'testing');
}

function buildVariant({ allocator, lgPage }, deps, testing, plan) {
  const started = Date.now();
  let jeDir = null;
  if (allocator === 'jemalloc') jeDir = dependency(`jemalloc (lg-page ${lgPage})`, 'jemalloc', ['--lg-page', String(lgPage)]);
  const args = gypArgs({ allocator, lgPage }, deps, testing, { nodedir: plan.nodedir, jeDir });
  // Windows: MSVC, which node-gyp finds itself (CC and LINK are not its).
  const env = plan.nodedir ? gypEnv({ ...process.env, CC: process.env.CC || 'gcc', LINK: process.env.LINK || process.env.CC || 'gcc' }) : gypEnv(process.env);
  const t = Date.now();
  run(process.execPath, [nodeGypScript(), ...args], env);
  const built = path.join(root, 'build', 'Release', 'symphony.node');
  const destDir = testing ? testingDir() : path.join(root, 'native', platformDir());
  fs.mkdirSync(destDir, { recursive: true });
  const dest = path.join(destDir, variantFileName({ libc: plan.libc, allocator, lgPage }));
  // Copy then rename: a process that has the old file loaded keeps its
  // mapping intact (overwriting it in place would change running code).
  const tmp = `${dest}.tmp-${process.pid}`;
  fs.copyFileSync(built, tmp);
  fs.renameSync(tmp, dest);
  // The loader's last resort is build/Release/symphony.node: never a testing build.
  if (testing) fs.rmSync(built);
  const size = fs.statSync(dest).size;
  console.error(`symphony: built ${testing ? 'the testing build ' : ''}${path.relative(root, dest)} (${(size / 1048576).toFixed(1)} MiB) ` +
    `addon ${((Date.now() - t) / 1000).toFixed(1)} s, total ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { dest, jeDir };
}

/**
 * THIRD_PARTY_NOTICES.md beside the builds of native/<platform>-<arch>/
 * (scripts/notices.js): the licence texts of the libraries they link, from
 * the release tarballs of the build folders just linked. jemalloc's too when
 * a jemalloc build made earlier lies there (its cached build folder, found by
 * its page).
 */
function writeNotices(deps, jeDir) {
  const dir = path.join(root, 'native', platformDir());
  if (!jeDir) {
    const earlier = fs.readdirSync(dir).find((f) => /\.jemalloc-\d+k\.node$/.test(f));
    if (earlier) jeDir = dependency('jemalloc', 'jemalloc', ['--lg-page', String(Math.log2(pageOfFile(earlier)))]);
  }
  const file = writeBeside(dir, { sy_openssl_dir: deps.opensslDir, sy_libdeflate_dir: deps.libdeflateDir,
    sy_hiredis_dir: deps.hiredisDir, sy_yyjson_dir: deps.yyjsonDir, sy_jemalloc_dir: jeDir });
  console.error(`symphony: wrote ${path.relative(root, file)}`);
}

/** True when a prebuilt binary loads on this host (and building is not asked for). */
function prebuiltLoads() {
  const fromSource = process.env.npm_config_build_from_source === 'true' ||
    process.env.SYMPHONY_BUILD_FROM_SOURCE === '1' || fs.existsSync(path.join(root, '.git'));
  if (fromSource) return false;
  try {
    const { path: file, platformPackage: pkg } = require('../lib/loader').load();
    const fromPackage = pkg !== null && pkg.dir !== null && file.startsWith(pkg.dir + path.sep);
    if (!fromPackage && !file.includes(`${path.sep}prebuilds${path.sep}`)) return false;
    console.error(`symphony: using the prebuilt ${fromPackage ? `${pkg.name}/${path.basename(file)}` : path.relative(root, file)}` +
      ' (no compiler needed)');
    return true;
  } catch (err) {
    console.error(`symphony: no prebuilt binary loads here, building from source\n${err.message}`);
    return false;
  }
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.ifNeeded && prebuiltLoads()) return;
  const plan = buildPlan({ allocator: opts.allocator, lgPage: opts.lgPage });
  const deps = {};
  for (const d of plan.deps) {
    deps[d.key] = dependency(d.label, d.name, d.args.map((a) => (a === '<openssl>' ? deps.opensslDir : a)));
  }
  let jeDir = null;
  for (const v of plan.variants) jeDir = buildVariant(v, deps, opts.testing, plan).jeDir || jeDir;
  // Testing builds are never shipped: no notices in testing/.
  if (!opts.testing) writeNotices(deps, jeDir);
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}

module.exports = { testingDir, buildPlan, gypArgs, JEMALLOC_ON_WINDOWS };
