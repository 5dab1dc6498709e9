#!/usr/bin/env node
'use strict';
// Builds the prebuilt binaries that npm users install: every Linux target
// and Windows x64, each with its own jemalloc, stripped, into
// prebuilds/<platform>-<arch>/. (macOS: scripts/macos-gate.js and the
// macOS workflow, on Apple's own linker.)
//
//   node scripts/prebuild.js                         every target
//   node scripts/prebuild.js --targets=linux-x64-glibc,linux-arm64-glibc
//
// Targets (name: CPU, C library, jemalloc pages, toolchain):
//   linux-x64-glibc    4 KiB           gcc, symbols bound to glibc <= GLIBC_FLOOR (scripts/glibc-floor.js)
//   linux-x64-musl     4 KiB           musl-gcc (musl-tools)
//   linux-arm64-glibc  4 KiB + 64 KiB  aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu)
//   linux-arm64-musl   4 KiB + 64 KiB  clang --target=aarch64-linux-musl, lld, and
//                                      Debian's arm64 musl (deps/sysroot.sh musl-arm64)
//   win32-x64          4 KiB           mingw-w64 (gcc-mingw-w64-x86-64), cross-built by
//                                      scripts/windows-gate.js's buildAll (the build its
//                                      Wine gate tests: one way to build for Windows)
// jemalloc is built once per (target, page) and cached (deps/jemalloc.sh), the
// private OpenSSL, libdeflate, hiredis and yyjson once per target (deps/openssl.sh,
// deps/libdeflate.sh, deps/hiredis.sh, deps/yyjson.sh);
// every addon is compiled from a clean build folder. A manifest
// (prebuilds/manifest.json) records each file's size, sha256 and build times.
// Each folder gets THIRD_PARTY_NOTICES.md: the versions and licence texts of
// the libraries linked in, from the release tarballs of their build folders
// (scripts/notices.js). Then the platform packages of the targets built
// are laid out in dist/npm/<target>/ (scripts/packages.js).
//
// Before building anything it checks that everything the chosen targets need
// is here (node-gyp from npm install, the compilers, make, perl, python3...)
// and names what is missing: a fresh clone is told to run npm install first,
// not after minutes of building jemalloc and OpenSSL. Each glibc artifact is
// checked against the glibc floor as soon as it is made.

const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { nodeHeaders, gypEnv: withoutNodedir } = require('./node-headers');
const { depDir } = require('./deps');
const { writeBeside } = require('./notices');
const { variantFileName, PLATFORMS } = require('../lib/variants');
const { GLIBC_FLOOR, glibcNeeds } = require('./glibc-floor');

const root = path.resolve(__dirname, '..');
const cache = process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');

const TARGETS = {
  'linux-x64-glibc': {
    os: 'linux', arch: 'x64', libc: 'glibc', lgPages: [12], host: 'x86_64-linux-gnu',
    cc: 'gcc', strip: 'strip', needs: ['gcc', 'strip (apt-get install binutils)'], floor: true,
  },
  'linux-x64-musl': {
    os: 'linux', arch: 'x64', libc: 'musl', lgPages: [12], host: 'x86_64-linux-musl',
    cc: 'musl-gcc', strip: 'strip', needs: ['musl-gcc (apt-get install musl-tools)', 'strip (apt-get install binutils)'],
  },
  'linux-arm64-glibc': {
    os: 'linux', arch: 'arm64', libc: 'glibc', lgPages: [12, 16], host: 'aarch64-linux-gnu',
    cc: 'aarch64-linux-gnu-gcc', strip: 'aarch64-linux-gnu-strip',
    needs: ['aarch64-linux-gnu-gcc (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)',
      'aarch64-linux-gnu-strip (apt-get install binutils-aarch64-linux-gnu)'], floor: true,
  },
  'linux-arm64-musl': {
    os: 'linux', arch: 'arm64', libc: 'musl', lgPages: [12, 16], host: 'aarch64-linux-musl',
    cc: null /* a wrapper, made below */, strip: 'aarch64-linux-gnu-strip',
    needs: ['clang', 'ld.lld (apt-get install clang lld)', 'aarch64-linux-gnu-gcc (for libgcc and crtbegin)',
      'aarch64-linux-gnu-strip (apt-get install binutils-aarch64-linux-gnu)'],
  },
  'win32-x64': {
    os: 'win32', arch: 'x64', libc: 'win32', lgPages: [12], host: 'x86_64-w64-mingw32', windows: true,
    needs: ['x86_64-w64-mingw32-gcc (apt-get install gcc-mingw-w64-x86-64)', 'x86_64-w64-mingw32-objdump (apt-get install binutils-mingw-w64-x86-64)'],
  },
};

function parseArgs(argv) {
  const opts = { targets: Object.keys(TARGETS) };
  for (const arg of argv) {
    const m = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (m && m[1] === 'targets') {
      opts.targets = m[2].split(',').filter(Boolean);
      for (const t of opts.targets) if (!TARGETS[t]) throw new Error(`prebuild: unknown target ${t} (known: ${Object.keys(TARGETS).join(', ')})`);
    } else {
      throw new Error(`prebuild: unknown argument ${arg}`);
    }
  }
  return opts;
}

function run(cmd, args, { env = process.env, cwd = root } = {}) {
  const r = spawnSync(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 << 20 });
  if (r.error) throw r.error;
  if (r.status !== 0) {
    process.stderr.write(r.stdout);
    process.stderr.write(r.stderr);
    throw new Error(`prebuild: ${path.basename(cmd)} ${args.slice(0, 2).join(' ')} exited with ${r.status}`);
  }
  return r.stdout.toString();
}

function have(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd.split(' ')[0]}`], { stdio: 'ignore' }).status === 0;
}

// What every target needs besides its compiler: node-gyp's python, the
// dependencies' build tools (tar with bzip2 and gzip, patch, make, perl for
// OpenSSL's Configure), readelf for the glibc floor check.
const COMMON_NEEDS = ['bash', 'make', 'tar', 'bzip2', 'gzip', 'patch', 'perl', 'python3 (node-gyp runs it)',
  'readelf (apt-get install binutils)'];

/** Everything the chosen targets need, checked before anything is built: a list of what is missing. */
function preflight(targets) {
  const missing = [];
  try {
    nodeGyp();
  } catch {
    missing.push('node-gyp (a dev dependency): run npm install first');
  }
  for (const n of COMMON_NEEDS) if (!have(n)) missing.push(n);
  for (const name of targets) {
    for (const n of TARGETS[name].needs) if (!have(n) && !missing.includes(n)) missing.push(`${n}, for ${name}`);
  }
  return missing;
}

function out(cmd, args) {
  return run(cmd, args).trim();
}

/** The compiler wrapper for arm64 musl: clang with musl's headers, crt files and libc. */
function muslArm64Wrapper() {
  const sysroot = out('bash', [path.join(root, 'deps', 'sysroot.sh'), 'musl-arm64']).split('\n').pop();
  const gcc = 'aarch64-linux-gnu-gcc';
  const crtDir = path.dirname(out(gcc, ['-print-file-name=crtbeginS.o']));
  const libgcc = out(gcc, ['-print-libgcc-file-name']);
  const res = out('clang', ['-print-resource-dir']);
  const dir = path.join(cache, 'toolchains');
  fs.mkdirSync(dir, { recursive: true });
  const lib = `${sysroot}/usr/lib/aarch64-linux-musl`;
  const text = `#!/usr/bin/env bash
# clang as an aarch64 musl compiler (written by scripts/prebuild.js).
flags=(--target=aarch64-linux-musl -nostdinc -isystem "${res}/include"
       -isystem "${sysroot}/usr/include/aarch64-linux-musl" -fuse-ld=lld -mno-outline-atomics -Wno-unused-command-line-argument)
# (no outline atomics: their helpers in libgcc need glibc's __getauxval)
link=1 shared=0 static=0
for a in "$@"; do
  case "$a" in -c|-E|-S|-M|-MM) link=0 ;; -shared) shared=1 ;; -static) static=1 ;; esac
done
[ $link = 0 ] && exec clang "\${flags[@]}" "$@"
L="${lib}"
if [ $shared = 1 ]; then
  pre=("$L/crti.o" "${crtDir}/crtbeginS.o"); post=("${crtDir}/crtendS.o" "$L/crtn.o"); extra=()
elif [ $static = 1 ]; then
  pre=("$L/crt1.o" "$L/crti.o" "${crtDir}/crtbeginT.o"); post=("${crtDir}/crtend.o" "$L/crtn.o"); extra=()
else
  pre=("$L/Scrt1.o" "$L/crti.o" "${crtDir}/crtbeginS.o"); post=("${crtDir}/crtendS.o" "$L/crtn.o")
  extra=(-pie -Wl,-dynamic-linker,/lib/ld-musl-aarch64.so.1)
fi
libdir=("-L${sysroot}/lib/aarch64-linux-musl" "-L$L")
[ $static = 1 ] && libdir=("-L$L")
exec clang "\${flags[@]}" -nostdlib "\${pre[@]}" "$@" "\${libdir[@]}" -lc "${libgcc}" "\${post[@]}" "\${extra[@]}"
`;
  // Named by its content, so that jemalloc's cache (keyed by the compiler's
  // path) never reuses a build made by another version of the wrapper.
  const hash = crypto.createHash('sha256').update(text).digest('hex').slice(0, 12);
  const file = path.join(dir, `aarch64-linux-musl-cc-${hash}`);
  if (!fs.existsSync(file)) fs.writeFileSync(file, text, { mode: 0o755 });
  return file;
}

function nodeGyp() {
  return require.resolve('node-gyp/bin/node-gyp.js', { paths: [root] });
}

function sha256(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function buildOne(name, t, cc, lgPage) {
  const floor = t.floor ? path.join(root, 'binding', 'glibc_floor.h') : '';
  const env = { ...process.env, CC: cc, LINK: cc, CFLAGS: floor ? `-include ${floor}` : '' };
  const t0 = Date.now();
  // The host's own target without --host (jemalloc's configure key would
  // differ by it): the same build as npm install's (scripts/deps.js hostEnv).
  const native = t.host === spawnSync('gcc', ['-dumpmachine'], { encoding: 'utf8' }).stdout.trim() && cc === 'gcc';
  const jeDir = depDir('jemalloc', ['--lg-page', String(lgPage), ...(native ? [] : ['--host', t.host]), '--cc', cc], env);
  const jeSeconds = Number(fs.readFileSync(path.join(jeDir, '.built'), 'utf8')) || 0;
  const jemallocS = (Date.now() - t0) / 1000;
  // The private OpenSSL for the same target (the glibc floor header too:
  // OpenSSL's pthread calls must bind to the old versions like ours).
  const tS = Date.now();
  const sslDir = depDir('openssl', ['--host', t.host, '--cc', cc], env);
  const opensslS = (Date.now() - tS) / 1000;
  const ldDir = depDir('libdeflate', ['--host', t.host, '--cc', cc], env);
  const hrDir = depDir('hiredis', ['--host', t.host, '--cc', cc, '--openssl', sslDir], env);
  const yyDir = depDir('yyjson', ['--host', t.host, '--cc', cc], env);
  const t1 = Date.now();
  const gypEnv = withoutNodedir(env);
  delete gypEnv.CFLAGS; // the floor header reaches the addon through binding.gyp
  const args = [nodeGyp(), 'rebuild', `--nodedir=${nodeHeaders()}`, `--arch=${t.arch}`, '--jobs=max',
    '--sy_allocator=jemalloc', `--sy_jemalloc_dir=${jeDir}`, `--sy_lg_page=${lgPage}`, `--sy_openssl_dir=${sslDir}`,
    `--sy_libdeflate_dir=${ldDir}`, `--sy_hiredis_dir=${hrDir}`, `--sy_yyjson_dir=${yyDir}`];
  if (floor) args.push(`--sy_glibc_floor=${floor}`);
  run(process.execPath, args, { env: gypEnv });
  if (floor) {
    // The floor, checked now rather than by the artifact test later.
    const needs = glibcNeeds(path.join(root, 'build', 'Release', 'symphony.node'));
    if (needs.above.length) {
      throw new Error(`prebuild: ${name} needs glibc above ${GLIBC_FLOOR} (scripts/glibc-floor.js): ${needs.above.join(', ')}; ` +
        'bind them to older versions in binding/glibc_floor.h (or define them in binding/glibc/compat.c)');
    }
  }
  const built = path.join(root, 'build', 'Release', 'symphony.node');
  const destDir = path.join(root, 'prebuilds', `linux-${t.arch}`);
  fs.mkdirSync(destDir, { recursive: true });
  const dest = path.join(destDir, variantFileName({ libc: t.libc, allocator: 'jemalloc', lgPage }));
  const tmp = `${dest}.tmp-${process.pid}`;
  run(t.strip, ['--strip-unneeded', '-o', tmp, built]);
  fs.renameSync(tmp, dest);
  // The licence texts of what was just linked in, beside it (every target
  // of a folder links the same libraries: the same file).
  writeBeside(destDir, { sy_jemalloc_dir: jeDir, sy_openssl_dir: sslDir, sy_libdeflate_dir: ldDir, sy_hiredis_dir: hrDir,
    sy_yyjson_dir: yyDir });
  const addonS = (Date.now() - t1) / 1000;
  const entry = {
    target: name, file: path.relative(root, dest), arch: t.arch, libc: t.libc, pageSize: 1 << lgPage,
    bytes: fs.statSync(dest).size, sha256: sha256(dest),
    jemallocBuildS: jeSeconds, jemallocStepS: Math.round(jemallocS * 10) / 10, addonS: Math.round(addonS * 10) / 10,
    jemallocDir: path.relative(root, jeDir),
    opensslStepS: Math.round(opensslS * 10) / 10, opensslDir: path.relative(root, sslDir),
    libdeflateDir: path.relative(root, ldDir),
    hiredisDir: path.relative(root, hrDir),
    yyjsonDir: path.relative(root, yyDir),
  };
  console.error(`prebuild: ${entry.file} ${(entry.bytes / 1048576).toFixed(2)} MiB · jemalloc ${jemallocS.toFixed(1)} s` +
    `${jemallocS < 5 ? ' (cached)' : ''} · OpenSSL ${opensslS.toFixed(1)} s${opensslS < 5 ? ' (cached)' : ''} · addon ${addonS.toFixed(1)} s`);
  return entry;
}

const { MINGW_NOTICES } = require('./packages');
const MINGW_COPYRIGHT = '/usr/share/doc/mingw-w64-x86-64-dev/copyright';

/**
 * The DLL links parts of mingw-w64's C runtime in (its startup code,
 * libmingwex: printf's and strtod's gdtoa, among others), whose licences
 * (ZPL-2.1, gdtoa's Lucent notice, ...) ask that binaries carry their
 * notices: Debian's copyright file of the package that provided them,
 * whole, with a line saying why. (libgcc's routines are under the GCC
 * Runtime Library Exception, which asks for none.)
 */
function writeMingwNotices(destDir) {
  if (!fs.existsSync(MINGW_COPYRIGHT)) throw new Error(`prebuild: ${MINGW_COPYRIGHT} is missing (apt-get install mingw-w64-x86-64-dev)`);
  const version = spawnSync('dpkg-query', ['-W', '-f=${Version}', 'mingw-w64-x86-64-dev'], { encoding: 'utf8' }).stdout.trim();
  fs.writeFileSync(path.join(destDir, MINGW_NOTICES),
    `The Windows build of symphony-ws links parts of the mingw-w64 C runtime (Debian's mingw-w64-x86-64-dev ${version}):
` +
    'its startup code and libmingwex. Their licences, as Debian\'s copyright file of that package gives them:\n\n' +
    fs.readFileSync(MINGW_COPYRIGHT, 'utf8'));
}

/**
 * win32-x64: the jemalloc DLL as scripts/windows-gate.js builds and checks
 * it (mingw-w64, linked with -s: stripped), into prebuilds/win32-x64/ with
 * the notices of what it links. Resolves the manifest entry.
 */
async function buildWindows(name, t) {
  const { buildAll } = require('./windows-gate');
  const t0 = Date.now();
  const failed = [];
  const { files, deps: d } = await buildAll(['jemalloc'], (check, ok, detail) => { if (!ok) failed.push(`${check} (${detail})`); });
  if (failed.length) throw new Error(`prebuild: ${name}: ${failed.join('; ')}`);
  const lgPage = t.lgPages[0];
  const destDir = path.join(root, 'prebuilds', `${t.os}-${t.arch}`);
  fs.mkdirSync(destDir, { recursive: true });
  const dest = path.join(destDir, variantFileName({ libc: t.libc, allocator: 'jemalloc', lgPage }));
  const tmp = `${dest}.tmp-${process.pid}`;
  fs.copyFileSync(files.jemalloc, tmp);
  fs.renameSync(tmp, dest);
  writeBeside(destDir, { sy_jemalloc_dir: d.jemalloc, sy_openssl_dir: d.openssl, sy_libdeflate_dir: d.libdeflate,
    sy_hiredis_dir: d.hiredis, sy_yyjson_dir: d.yyjson });
  writeMingwNotices(destDir);
  const rel = (dir) => path.relative(root, dir);
  const entry = {
    target: name, file: rel(dest), arch: t.arch, libc: t.libc, pageSize: 1 << lgPage,
    bytes: fs.statSync(dest).size, sha256: sha256(dest), addonS: Math.round((Date.now() - t0) / 100) / 10,
    jemallocDir: rel(d.jemalloc), opensslDir: rel(d.openssl), libdeflateDir: rel(d.libdeflate), hiredisDir: rel(d.hiredis),
    yyjsonDir: rel(d.yyjson),
  };
  console.error(`prebuild: ${entry.file} ${(entry.bytes / 1048576).toFixed(2)} MiB · ${entry.addonS} s (deps and DLL)`);
  return entry;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const missing = preflight(opts.targets);
  if (missing.length) {
    throw new Error(`prebuild: nothing built; missing:\n${missing.map((m) => `  - ${m}`).join('\n')}` +
      (missing.some((m) => m.startsWith('node-gyp')) ? '\nRun npm install first (in this checkout), then npm run prebuilds again.' : ''));
  }
  const manifestFile = path.join(root, 'prebuilds', 'manifest.json');
  let manifest = { files: [] };
  try { manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')); } catch { /* first run */ }
  for (const name of opts.targets) {
    const t = TARGETS[name];
    if (t.windows) {
      const entry = await buildWindows(name, t);
      manifest.files = manifest.files.filter((f) => f.file !== entry.file).concat(entry);
      continue;
    }
    const cc = t.cc || muslArm64Wrapper();
    for (const lgPage of t.lgPages) {
      const entry = buildOne(name, t, cc, lgPage);
      manifest.files = manifest.files.filter((f) => f.file !== entry.file).concat(entry);
    }
  }
  manifest.files.sort((a, b) => a.file.localeCompare(b.file));
  manifest.node = process.version;
  fs.writeFileSync(manifestFile, `${JSON.stringify(manifest, null, 2)}\n`);
  // The platform packages of what was just built, in dist/npm/<target>/
  // (scripts/packages.js; --pack there makes their tarballs).
  const packages = PLATFORMS.filter((p) => opts.targets.some((name) => TARGETS[name].arch === p.cpu && TARGETS[name].libc === p.libc &&
    TARGETS[name].os === p.os)).map((p) => p.name);
  run(process.execPath, [path.join(__dirname, 'packages.js'), `--targets=${packages.join(',')}`]);
  console.error(`prebuild: platform packages in dist/npm/ (${packages.join(', ')})`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err.message);
    process.exit(1);
  });
}

module.exports = { TARGETS, MINGW_NOTICES };
