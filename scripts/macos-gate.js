#!/usr/bin/env node
'use strict';
// The macOS compile-and-link gate, run on Linux x86_64 (nothing here can run
// a Mach-O binary; .github/workflows/macos.yml runs them on macOS):
//
//   node scripts/macos-gate.js [--arch=arm64,x64] [--allocator=jemalloc,system]
//   node scripts/macos-gate.js --check FILE...   (the checks alone, on bundles
//       built elsewhere: the macOS workflow runs them on its native builds,
//       with the system's nm and the SDK's libSystem.tbd)
//
// For each arch: the pinned zig toolchain from npm (deps/darwin-toolchain.sh:
// version and sha512 integrity checked) and Debian's ld64.lld; the deps
// cross-built for darwin by their own scripts (jemalloc with lg-page 14 on
// arm64, 12 on x64, without its malloc zone; OpenSSL darwin64-arm64 /
// darwin64-x86_64; libdeflate; hiredis with its TLS layer), cached in
// $SYMPHONY_CACHE_DIR like the Linux builds; src/ (kqueue, not epoll), src/tls
// and binding/ compiled with -Werror as binding.gyp does (objects cached by
// the hash of the sources, headers and flags); the bundle linked as
// binding.gyp's OS=="mac" settings link it (-bundle, -undefined
// dynamic_lookup, the exported symbols list, -dead_strip, ad-hoc signature).
// Then what can be checked without running it:
//   - a Mach-O 64-bit bundle (MH_BUNDLE) of the right CPU type,
//   - its minimum macOS (LC_BUILD_VERSION: 11.0 on arm64, 10.15 on x64),
//   - exactly the exports binding/exports.map gives on Linux (so no
//     jemalloc, OpenSSL, libdeflate or hiredis symbol is visible),
//   - every undefined symbol either an N-API one (Node's, found at load) or
//     one libSystem exports (-undefined dynamic_lookup would otherwise hide
//     a missing function until load time),
//   - no malloc-zone function referenced (jemalloc's zone would take over
//     the process's malloc),
//   - no library loaded but libSystem,
//   - an ad-hoc code signature (LC_CODE_SIGNATURE, a CodeDirectory with the
//     adhoc flag: Apple Silicon refuses unsigned code),
//   - the build marker: allocator, lg-page, libc=darwin, arch.
// Prints one line per check and a closing "N passed, N failed"; exits 1 on
// any failure. Bundles are left in build/macos-gate/<arch>/.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { compileAll, linuxExports, sources } = require('./cross-compile');
const { depDir } = require('./deps');
const { nodeHeaders } = require('./node-headers');

const root = path.resolve(__dirname, '..');
const ARCHES = {
  arm64: { lgPage: 14, cputype: 0x0100000c, minos: '11.0', name: 'arm64' },
  x64: { lgPage: 12, cputype: 0x01000007, minos: '10.15', name: 'x86_64' },
};
const ZONE_FUNCTIONS = ['_malloc_zone_register', '_malloc_zone_unregister', '_malloc_default_zone',
  '_malloc_default_purgeable_zone', '_malloc_create_zone', '_malloc_set_zone_name', '_malloc_zone_from_ptr'];

function parseArgs(argv) {
  const opts = { arches: ['arm64', 'x64'], allocators: ['jemalloc', 'system'], check: null };
  if (argv[0] === '--check') {
    opts.check = argv.slice(1);
    if (opts.check.length === 0) throw new Error('macos-gate.js: --check needs at least one file');
    return opts;
  }
  for (const a of argv) {
    const m = /^--(arch|allocator)=(.+)$/.exec(a);
    if (!m) throw new Error(`macos-gate.js: unknown argument ${a}`);
    const list = m[2].split(',').filter(Boolean);
    if (m[1] === 'arch') {
      for (const x of list) if (!ARCHES[x]) throw new Error(`macos-gate.js: --arch: arm64 or x64, not ${x}`);
      opts.arches = list;
    } else {
      for (const x of list) if (!['jemalloc', 'system'].includes(x)) throw new Error(`macos-gate.js: --allocator: jemalloc or system, not ${x}`);
      opts.allocators = list;
    }
  }
  return opts;
}

const secs = (t) => `${((Date.now() - t) / 1000).toFixed(1)} s`;

/** The toolchain's facts (deps/darwin-toolchain.sh's env file). */
function toolchain(arch) {
  const r = spawnSync('bash', [path.join(root, 'deps', 'darwin-toolchain.sh'), arch], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error(`deps/darwin-toolchain.sh ${arch} exited with ${r.status ?? r.signal}`);
  const dir = r.stdout.toString().trim().split('\n').pop();
  const env = {};
  for (const line of fs.readFileSync(path.join(dir, 'env'), 'utf8').split('\n')) {
    const m = /^([A-Z0-9_]+)=(.*)$/.exec(line);
    if (m) env[m[1]] = m[2];
  }
  env.BIN = path.join(dir, 'bin');
  env.NM = path.join(env.BIN, `${env.TRIPLE}-nm`);
  env.LIBSYSTEM = path.join(path.dirname(env.ZIG), 'lib', 'libc', 'darwin', 'libSystem.tbd');
  return env;
}

/** The deps for one arch, built by their own scripts with the cross toolchain. */
function deps(tc, lgPage, allocators) {
  const env = { ...process.env, PATH: `${tc.BIN}:${process.env.PATH}` };
  const cross = ['--host', tc.TRIPLE, '--cc', tc.CC];
  const t = Date.now();
  const d = {};
  d.openssl = depDir('openssl', cross, env);
  d.libdeflate = depDir('libdeflate', cross, env);
  d.hiredis = depDir('hiredis', [...cross, '--openssl', d.openssl], env);
  d.yyjson = depDir('yyjson', cross, env);
  if (allocators.includes('jemalloc')) d.jemalloc = depDir('jemalloc', [...cross, '--lg-page', String(lgPage)], env);
  console.log(`macos-gate: ${tc.TRIPLE} deps ready in ${secs(t)}`);
  return d;
}

/** binding.gyp's sources on macOS: kqueue, not epoll or AFD; TLS built in; no testing.c. */
const LEAVE = ['src/net/sy_poll_epoll.c', 'src/net/sy_poll_afd.c', 'binding/testing.c'];

/** Compiles every source (two at a time), reusing cached objects. */
function compile(tc, d, allocator, lgPage, outDir) {
  const defines = ['-DNAPI_VERSION=8', `-DSY_LG_PAGE=${allocator === 'jemalloc' ? lgPage : 0}`, '-DSY_WITH_TLS',
    '-DBUILDING_NODE_EXTENSION'];
  if (allocator === 'jemalloc') defines.push('-DSY_USE_JEMALLOC');
  const includes = ['-Isrc', `-I${d.openssl}/include`, `-I${d.libdeflate}/include`, `-I${d.hiredis}/include`,
    `-I${d.yyjson}/include`, `-I${path.join(nodeHeaders(), 'include', 'node')}`];
  if (allocator === 'jemalloc') includes.push(`-I${d.jemalloc}/include`);
  const flags = ['-std=c11', '-Wall', '-Wextra', '-Werror', '-O2', '-fvisibility=hidden', '-fno-strict-aliasing',
    '-fPIC', ...defines, ...includes];
  return compileAll({ cc: tc.CC, flags, toolId: `${tc.ZIG_INTEGRITY} ${tc.ZIG_TARGET}`, srcs: sources(LEAVE), outDir,
    what: `macos-gate (${tc.TRIPLE}, ${allocator})` });
}

function link(tc, d, allocator, objects, out) {
  const libs = [];
  if (allocator === 'jemalloc') libs.push(`${d.jemalloc}/lib/libjemalloc_pic.a`);
  libs.push(`${d.libdeflate}/libdeflate.a`, `${d.hiredis}/libhiredis.a`, `${d.yyjson}/libyyjson.a`, `${d.openssl}/libssl.a`, `${d.openssl}/libcrypto.a`);
  const args = ['-arch', ARCHES[tc.ARCH].name, '-platform_version', 'macos', tc.MIN_OS, tc.SDK_VERSION,
    '-bundle', '-undefined', 'dynamic_lookup', '-exported_symbols_list', path.join(root, 'binding', 'exports.darwin'),
    '-dead_strip', '-adhoc_codesign', '-o', out, ...objects, ...libs,
    '-L', path.dirname(tc.LIBSYSTEM), '-lSystem'];
  const r = spawnSync(tc.LD64, args, { cwd: root, stdio: ['ignore', 'inherit', 'pipe'] });
  if (r.status !== 0) throw new Error(`macos-gate: ld64.lld failed:\n${r.stderr}`);
}

// ---- reading the bundle ---------------------------------------------------

const LC_LOAD_DYLIB = 0xc;
const LC_CODE_SIGNATURE = 0x1d;
const LC_VERSION_MIN_MACOSX = 0x24;
const LC_BUILD_VERSION = 0x32;
const MH_BUNDLE = 8;

function version(v) {
  const patch = v & 0xff;
  return `${v >>> 16}.${(v >>> 8) & 0xff}${patch ? `.${patch}` : ''}`;
}

/** The facts of a Mach-O file the checks need. */
function machO(file) {
  const b = fs.readFileSync(file);
  const out = { magic: b.readUInt32LE(0), cputype: b.readUInt32LE(4), filetype: b.readUInt32LE(12), dylibs: [] };
  const ncmds = b.readUInt32LE(16);
  let off = 32;
  for (let i = 0; i < ncmds; i++) {
    const cmd = b.readUInt32LE(off);
    const size = b.readUInt32LE(off + 4);
    if (cmd === LC_BUILD_VERSION) {
      out.platform = b.readUInt32LE(off + 8);
      out.minos = version(b.readUInt32LE(off + 12));
      out.sdk = version(b.readUInt32LE(off + 16));
    } else if (cmd === LC_VERSION_MIN_MACOSX) {
      out.platform = 1;
      out.minos = version(b.readUInt32LE(off + 8));
      out.sdk = version(b.readUInt32LE(off + 12));
    } else if ((cmd & 0x7fffffff) === LC_LOAD_DYLIB || cmd === 0x80000018 /* weak */) {
      const nameOff = b.readUInt32LE(off + 8);
      out.dylibs.push(b.toString('latin1', off + nameOff, off + size).replace(/\0.*$/s, ''));
    } else if (cmd === LC_CODE_SIGNATURE) {
      const dataoff = b.readUInt32LE(off + 8);
      const datasize = b.readUInt32LE(off + 12);
      out.signature = { size: datasize };
      // A SuperBlob (0xfade0cc0) whose slot 0 is the CodeDirectory (0xfade0c02).
      if (b.readUInt32BE(dataoff) === 0xfade0cc0) {
        const count = b.readUInt32BE(dataoff + 8);
        for (let k = 0; k < count; k++) {
          const type = b.readUInt32BE(dataoff + 12 + k * 8);
          const at = dataoff + b.readUInt32BE(dataoff + 16 + k * 8);
          if (type === 0 && b.readUInt32BE(at) === 0xfade0c02) out.signature.flags = b.readUInt32BE(at + 12);
        }
      }
    }
    off += size;
  }
  out.text = b;
  return out;
}

function nm(tc, file, args) {
  const r = spawnSync(tc.NM, [...args, file], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`macos-gate: nm ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.split('\n').map((s) => s.trim()).filter(Boolean);
}

function darwinExportsList() {
  return fs.readFileSync(path.join(root, 'binding', 'exports.darwin'), 'utf8').split('\n')
    .map((s) => s.trim()).filter((s) => s && !s.startsWith('#')).map((s) => s.replace(/^_/, '')).sort();
}

/** Every check of one bundle: [{ name, ok, detail }]. */
function checks(tc, arch, allocator, file) {
  const a = ARCHES[arch] || { name: arch, cputype: -1, minos: '?', lgPage: 0 };
  const m = machO(file);
  const res = [];
  const add = (name, ok, detail) => res.push({ name, ok, detail });
  add('Mach-O 64-bit bundle', m.magic === 0xfeedfacf && m.filetype === MH_BUNDLE,
    `magic 0x${m.magic.toString(16)}, filetype ${m.filetype}`);
  add(`architecture ${a.name}`, m.cputype === a.cputype, `cputype 0x${m.cputype.toString(16)}`);
  add(`minimum macOS ${a.minos}`, m.platform === 1 && m.minos === a.minos, `platform ${m.platform}, minos ${m.minos}, sdk ${m.sdk}`);
  const exported = nm(tc, file, ['-gUj']).map((s) => s.replace(/^_/, '')).sort();
  const want = linuxExports();
  add('exports: exactly the Linux build\'s', JSON.stringify(exported) === JSON.stringify(want) &&
    JSON.stringify(darwinExportsList()) === JSON.stringify(want), exported.join(', '));
  const leaked = exported.filter((s) => /^(sy_je_|je_|SSL_|EVP_|OPENSSL_|CRYPTO_|libdeflate_|redis|yyjson_)/.test(s));
  add('no jemalloc/OpenSSL/libdeflate/hiredis/yyjson symbol visible', leaked.length === 0, leaked.join(', ') || 'none');
  const undef = nm(tc, file, ['-uj']);
  const zone = undef.filter((s) => ZONE_FUNCTIONS.includes(s));
  add('no malloc-zone registration referenced', zone.length === 0, zone.join(', ') || 'none');
  if (tc.LIBSYSTEM) {
    const tbd = fs.readFileSync(tc.LIBSYSTEM, 'utf8');
    const missing = undef.filter((s) => !/^_(napi_|node_api_)/.test(s) &&
      !new RegExp(`[\\s,\\[']${s.replace(/\$/g, '\\$')}[\\s,\\]']`).test(tbd));
    add('undefined symbols: N-API or libSystem', missing.length === 0,
      missing.length ? `not in libSystem: ${missing.join(', ')}` : `${undef.length} symbols`);
  }
  add('loads libSystem only', m.dylibs.length > 0 && m.dylibs.every((l) => l === '/usr/lib/libSystem.B.dylib'), m.dylibs.join(', '));
  add('ad-hoc code signature', m.signature !== undefined && m.signature.flags !== undefined && (m.signature.flags & 0x2) !== 0,
    m.signature ? `${m.signature.size} bytes, CodeDirectory flags 0x${(m.signature.flags ?? 0).toString(16)}` : 'none');
  const marker = /symphony-build: allocator=[^\0]*/.exec(m.text.toString('latin1'));
  const wantMarker = allocator === 'jemalloc'
    ? new RegExp(`^symphony-build: allocator=jemalloc-5\\.3\\.0\\S* lg-page=${a.lgPage} libc=darwin arch=${arch}$`)
    : /^symphony-build: allocator=system$/;
  add('build marker', marker !== null && wantMarker.test(marker[0]), marker ? marker[0] : 'none');
  return res;
}

/** --check: the checks of bundles built elsewhere (natively, on macOS). */
function checkOnly(files) {
  let sdk = null;
  const x = spawnSync('xcrun', ['--show-sdk-path'], { encoding: 'utf8' });
  if (x.status === 0 && fs.existsSync(path.join(x.stdout.trim(), 'usr', 'lib', 'libSystem.tbd'))) {
    sdk = path.join(x.stdout.trim(), 'usr', 'lib', 'libSystem.tbd');
  }
  let passed = 0;
  let failed = 0;
  for (const file of files) {
    const m = machO(file);
    const arch = Object.keys(ARCHES).find((a) => ARCHES[a].cputype === m.cputype) || 'unknown';
    const allocator = /\.system\.node$/.test(file) ? 'system' : 'jemalloc';
    for (const c of checks({ NM: process.env.NM || 'nm', LIBSYSTEM: sdk }, arch, allocator, file)) {
      if (c.ok) passed++;
      else failed++;
      console.log(`${c.ok ? 'ok  ' : 'FAIL'} ${path.basename(file)}: ${c.name} (${c.detail})`);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  if (failed) process.exitCode = 1;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.check) return checkOnly(opts.check);
  const started = Date.now();
  let passed = 0;
  let failed = 0;
  for (const arch of opts.arches) {
    const tc = { ...toolchain(arch), ARCH: arch };
    const d = deps(tc, ARCHES[arch].lgPage, opts.allocators);
    for (const allocator of opts.allocators) {
      const outDir = path.join(root, 'build', 'macos-gate', arch, allocator);
      const t = Date.now();
      const { objects, compiled } = await compile(tc, d, allocator, ARCHES[arch].lgPage, outDir);
      const page = allocator === 'jemalloc' ? `-${(1 << ARCHES[arch].lgPage) / 1024}k` : '';
      const file = path.join(root, 'build', 'macos-gate', arch, `symphony.darwin.${allocator}${page}.node`);
      link(tc, d, allocator, objects, file);
      console.log(`macos-gate: ${path.relative(root, file)} (${(fs.statSync(file).size / 1048576).toFixed(1)} MiB): ` +
        `${compiled} of ${objects.length} files compiled, linked, in ${secs(t)}`);
      for (const c of checks(tc, arch, allocator, file)) {
        if (c.ok) passed++;
        else failed++;
        console.log(`${c.ok ? 'ok  ' : 'FAIL'} darwin-${arch} ${allocator}: ${c.name} (${c.detail})`);
      }
    }
  }
  console.log(`macos-gate: done in ${secs(started)}`);
  console.log(`${passed} passed, ${failed} failed`);
  if (failed) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}

module.exports = { machO, linuxExports, checks };
