'use strict';
// The system packages (Debian 12's names) that building and testing symphony
// need beyond Node: the one list, read by `npm run setup` (scripts/setup.js,
// which installs them), by `npm test` (scripts/test.js, which checks the
// 'test' ones in its first second and stops with the whole list of what is
// missing) and by .ci/run (`node scripts/setup.js --all`).
//
// Each entry: the package, what needs it, the group ('test': npm test;
// 'ci': only .ci/run's prebuilds and gates) and how to tell it is there
// (a command on PATH, or one of some files: a glob's '*' matches one name).

const fs = require('node:fs');
const path = require('node:path');

const PACKAGES = [
  // The addon, jemalloc and the other C libraries; node-gyp.
  { pkg: 'build-essential', why: 'gcc and make: the addon and its C libraries', group: 'test', cmds: ['gcc', 'make'] },
  { pkg: 'python3', why: 'node-gyp', group: 'test', cmds: ['python3'] },
  { pkg: 'patch', why: "patching jemalloc's and OpenSSL's release tarballs", group: 'test', cmds: ['patch'] },
  { pkg: 'bzip2', why: "unpacking jemalloc's release tarball", group: 'test', cmds: ['bzip2'] },
  { pkg: 'binutils', why: 'nm, readelf, objdump: the exports and imports of the .node', group: 'test', cmds: ['nm', 'readelf', 'objdump'] },
  { pkg: 'ca-certificates', why: "fetching the C libraries' tarballs over https", group: 'test', files: ['/etc/ssl/certs/ca-certificates.crt'] },
  { pkg: 'curl', why: "fetching the C libraries' tarballs", group: 'test', cmds: ['curl'] },
  // The tests.
  { pkg: 'clang', why: 'the fuzz targets (libFuzzer)', group: 'test', cmds: ['clang'] },
  { pkg: 'libclang-rt-14-dev', why: "clang's runtime: libFuzzer and the sanitizers", group: 'test',
    files: ['/usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a'] },
  { pkg: 'clang-format', why: 'the one C format (__test__/repo/format.test.js)', group: 'test', cmds: ['clang-format'] },
  { pkg: 'valgrind', why: "the C tests' leak run", group: 'test', cmds: ['valgrind'] },
  { pkg: 'openssl', why: 'the test certificates of the TLS tests', group: 'test', cmds: ['openssl'] },
  { pkg: 'chromium', why: 'the real-browser tests (__test__/browser/)', group: 'test', cmds: ['chromium'], env: 'CHROMIUM' },
  { pkg: 'redis-server', why: 'the bus tests start their own Redis, cluster and sentinels', group: 'test', cmds: ['redis-server'] },
  { pkg: 'redis-tools', why: 'redis-cli --cluster create (the bus cluster tests)', group: 'test', cmds: ['redis-cli'] },
  { pkg: 'haproxy', why: 'the load balancer of examples/two-nodes (__test__/examples/two-nodes.test.js)', group: 'test', cmds: ['haproxy'] },
  // .ci/run's prebuilt binaries and gates.
  { pkg: 'gcc-aarch64-linux-gnu', why: 'the arm64 prebuilt binaries', group: 'ci', cmds: ['aarch64-linux-gnu-gcc'] },
  { pkg: 'libc6-dev-arm64-cross', why: 'the arm64 prebuilt binaries', group: 'ci', files: ['/usr/aarch64-linux-gnu/include/stdio.h'] },
  { pkg: 'qemu-user', why: "the arm64 binaries' tests (Node's arm64 binary under qemu)", group: 'ci', cmds: ['qemu-aarch64'] },
  { pkg: 'lld-14', why: "ld64.lld, the macOS gate's linker (scripts/macos-gate.js)", group: 'ci',
    files: ['/usr/lib/llvm-14/bin/ld64.lld'] },
  { pkg: 'gcc-mingw-w64-x86-64', why: "the Windows gate's cross compiler", group: 'ci', cmds: ['x86_64-w64-mingw32-gcc'] },
  { pkg: 'wine64', why: 'the Windows gate runs node.exe and the addon under Wine', group: 'ci', files: ['/usr/lib/wine/wine64'] },
  { pkg: 'clang-tools-14', why: "clang-cl, MSVC's cl stood in for (scripts/msvc-deps-check.js)", group: 'ci',
    files: ['/usr/lib/llvm-14/bin/clang-cl'] },
  { pkg: 'llvm-14', why: "llvm-lib, MSVC's lib stood in for (scripts/msvc-deps-check.js)", group: 'ci',
    files: ['/usr/lib/llvm-14/bin/llvm-lib'] },
];

/** Whether cmd is an executable file in one of PATH's folders. */
function onPath(cmd, env = process.env) {
  for (const dir of (env.PATH || '').split(path.delimiter)) {
    if (!dir) continue;
    try {
      fs.accessSync(path.join(dir, cmd), fs.constants.X_OK);
      return true;
    } catch {}
  }
  return false;
}

/** Whether some file matches pattern (absolute; a '*' stands for one name, within a folder). */
function matches(pattern) {
  const parts = pattern.split('/').filter(Boolean);
  const walk = (dir, i) => {
    if (i === parts.length) return true;
    if (!parts[i].includes('*')) return walk(path.join(dir, parts[i]), i + 1) && fs.existsSync(path.join(dir, parts[i]));
    const re = new RegExp(`^${parts[i].split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
    let names;
    try {
      names = fs.readdirSync(dir);
    } catch {
      return false;
    }
    return names.some((n) => re.test(n) && walk(path.join(dir, n), i + 1));
  };
  return walk('/', 0);
}

/** Whether the package's commands and files are there (its env variable, when set, stands for its command). */
function present(entry, env = process.env) {
  if (entry.env && env[entry.env]) return true;
  return (entry.cmds ?? []).every((c) => onPath(c, env)) && (entry.files ?? []).every(matches);
}

/** The entries of groups that are not there. */
function missing(groups = ['test'], env = process.env) {
  return PACKAGES.filter((e) => groups.includes(e.group) && !present(e, env));
}

/** The one line that installs pkgs (names) on Debian/Ubuntu. */
function installLine(pkgs) {
  return `sudo apt-get update && sudo apt-get install -y --no-install-recommends ${pkgs.join(' ')}`;
}

module.exports = { PACKAGES, missing, present, installLine, onPath };
