'use strict';
// What scripts/build.js builds (buildPlan, gypArgs), per platform, without
// building: Linux's and macOS' plans as they were before Windows had one
// (every default variant, the deps for this host, node-gyp with
// scripts/node-headers.js' --nodedir); Windows' the system allocator only,
// the deps in deps/*.sh's MSVC mode, no --nodedir (node-gyp fetches Node's
// headers and node.lib there), and jemalloc refused with the way to it.
// And the .lib names binding.gyp's OS=="win" links are the ones the MSVC
// mode of deps/*.sh makes.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { buildPlan, gypArgs } = require('../../scripts/build');
const { variantFileName } = require('../../lib/variants');

const root = path.join(__dirname, '..', '..');
const MSVC = ['--host', 'x86_64-pc-windows-msvc', '--cc', 'cl'];
const DIRS = { opensslDir: '/o', libdeflateDir: '/d', hiredisDir: '/h', yyjsonDir: '/y' };
const depsOf = (plan) => plan.deps.map((d) => [d.key, d.name, d.args]);

test('linux x64: jemalloc 4 KiB then system, the deps for this host, --nodedir', () => {
  const plan = buildPlan({ platform: 'linux', arch: 'x64', env: {}, libc: 'glibc' });
  assert.deepEqual(plan.variants, [{ allocator: 'jemalloc', lgPage: 12 }, { allocator: 'system', lgPage: null }]);
  assert.deepEqual(depsOf(plan), [['opensslDir', 'openssl', []], ['libdeflateDir', 'libdeflate', []],
    ['yyjsonDir', 'yyjson', []], ['hiredisDir', 'hiredis', ['--openssl', '<openssl>']]]);
  assert.equal(plan.nodedir, true);
  assert.equal(plan.libc, 'glibc');
});

test('linux arm64: 4 KiB and 64 KiB jemalloc; --allocator and --lg-page narrow it; SYMPHONY_ALLOCATOR is not read', () => {
  const base = { platform: 'linux', arch: 'arm64', libc: 'glibc' };
  assert.deepEqual(buildPlan({ ...base, env: { SYMPHONY_ALLOCATOR: 'system' } }).variants,
    [{ allocator: 'jemalloc', lgPage: 12 }, { allocator: 'jemalloc', lgPage: 16 }, { allocator: 'system', lgPage: null }]);
  assert.deepEqual(buildPlan({ ...base, env: {}, allocator: 'system' }).variants, [{ allocator: 'system', lgPage: null }]);
  assert.deepEqual(buildPlan({ ...base, env: {}, allocator: 'jemalloc', lgPage: 16 }).variants, [{ allocator: 'jemalloc', lgPage: 16 }]);
});

test('darwin: 16 KiB jemalloc on arm64, 4 KiB on x64, the deps for this host', () => {
  const arm = buildPlan({ platform: 'darwin', arch: 'arm64', env: {}, libc: 'darwin' });
  assert.deepEqual(arm.variants, [{ allocator: 'jemalloc', lgPage: 14 }, { allocator: 'system', lgPage: null }]);
  assert.deepEqual(buildPlan({ platform: 'darwin', arch: 'x64', env: {}, libc: 'darwin' }).variants[0], { allocator: 'jemalloc', lgPage: 12 });
  assert.ok(arm.deps.every((d) => !d.args.includes('--host')));
  assert.equal(arm.nodedir, true);
});

test('win32: the system allocator only, the deps in MSVC mode, no --nodedir, symphony.win32.system.node', () => {
  const plan = buildPlan({ platform: 'win32', arch: 'x64', env: {} });
  assert.deepEqual(plan.variants, [{ allocator: 'system', lgPage: null }]);
  assert.deepEqual(depsOf(plan), [['opensslDir', 'openssl', MSVC], ['libdeflateDir', 'libdeflate', MSVC],
    ['yyjsonDir', 'yyjson', MSVC], ['hiredisDir', 'hiredis', [...MSVC, '--openssl', '<openssl>']]]);
  assert.equal(plan.nodedir, false);
  assert.equal(plan.libc, 'win32');
  assert.equal(variantFileName({ libc: plan.libc, ...plan.variants[0] }), 'symphony.win32.system.node');
  assert.deepEqual(buildPlan({ platform: 'win32', arch: 'x64', env: {}, allocator: 'system' }).variants, plan.variants);
  assert.deepEqual(buildPlan({ platform: 'win32', arch: 'x64', env: { SYMPHONY_ALLOCATOR: 'system' } }).variants, plan.variants);
});

test('win32: jemalloc, by --allocator or SYMPHONY_ALLOCATOR, stops with the prebuilt package and the mingw-w64 way', () => {
  const said = /jemalloc is not built from source on Windows.*@symphony-ws\/win32-x64 has jemalloc.*needs mingw-w64: npm run gate:windows on Linux/;
  assert.throws(() => buildPlan({ platform: 'win32', arch: 'x64', env: {}, allocator: 'jemalloc' }), said);
  assert.throws(() => buildPlan({ platform: 'win32', arch: 'x64', env: { SYMPHONY_ALLOCATOR: 'jemalloc' } }), said);
  // An explicit --allocator=system wins over the environment.
  assert.deepEqual(buildPlan({ platform: 'win32', arch: 'x64', env: { SYMPHONY_ALLOCATOR: 'jemalloc' }, allocator: 'system' }).variants,
    [{ allocator: 'system', lgPage: null }]);
});

test('node-gyp arguments: --nodedir (node-headers.js) first on Linux, none on win32; jemalloc last', (t) => {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-plan-'));
  const saved = process.env.SYMPHONY_CACHE_DIR;
  process.env.SYMPHONY_CACHE_DIR = cache;
  t.after(() => {
    if (saved === undefined) delete process.env.SYMPHONY_CACHE_DIR;
    else process.env.SYMPHONY_CACHE_DIR = saved;
    fs.rmSync(cache, { recursive: true, force: true });
  });
  const rest = (allocator) => ['--jobs=max', `--sy_allocator=${allocator}`, '--sy_openssl_dir=/o', '--sy_libdeflate_dir=/d',
    '--sy_hiredis_dir=/h', '--sy_yyjson_dir=/y'];
  const linux = gypArgs({ allocator: 'jemalloc', lgPage: 12 }, DIRS, false, { nodedir: true, jeDir: '/je' });
  assert.equal(linux[0], 'rebuild');
  assert.match(linux[1], /^--nodedir=/);
  assert.ok(fs.existsSync(path.join(linux[1].slice('--nodedir='.length), 'include', 'node', 'node_api.h')));
  assert.ok(!fs.existsSync(path.join(linux[1].slice('--nodedir='.length), 'include', 'node', 'openssl')));
  assert.deepEqual(linux.slice(2), [...rest('jemalloc'), '--sy_testing=0', '--sy_jemalloc_dir=/je', '--sy_lg_page=12']);
  assert.deepEqual(gypArgs({ allocator: 'system', lgPage: null }, DIRS, true, { nodedir: false }),
    ['rebuild', ...rest('system'), '--sy_testing=1']);
});

test('the .lib files binding.gyp links on Windows are the ones deps/*.sh make in MSVC mode', () => {
  const gyp = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8');
  const linked = [...gyp.matchAll(/<\(sy_(\w+)_dir\)\/(\w+\.lib)/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(linked.map(([dep]) => dep).sort(), ['hiredis', 'libdeflate', 'openssl', 'openssl', 'yyjson']);
  for (const [dep, lib] of linked) {
    const script = fs.readFileSync(path.join(root, 'deps', `${dep}.sh`), 'utf8');
    if (dep === 'openssl') {
      // VC-WIN64A's own names, said in the script.
      assert.match(script, /x86_64-\*-windows-msvc\) target=VC-WIN64A/);
      assert.ok(script.includes(lib), `deps/openssl.sh does not name ${lib}`);
    } else {
      assert.match(script, new RegExp(`msvc_archive "\\$cc" "\\$ar" "\\$out\\.tmp" ${lib.replace('.', '\\.')} `), `deps/${dep}.sh does not make ${lib}`);
    }
  }
});
