'use strict';
// The release tarballs of deps/ (jemalloc, OpenSSL, libdeflate, hiredis) are taken only when their
// sha256 is the pinned one: a user's copy that is missing or not the release
// is refused with a message that names the variable and the expected sum,
// before anything is built. (The fetch chain itself runs in every build.)
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const deps = path.join(__dirname, '..', '..', 'deps');

function run(script, env) {
  return spawnSync('bash', [path.join(deps, script)], {
    env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60000,
  });
}

for (const [script, variable] of [['jemalloc.sh', 'SYMPHONY_JEMALLOC_TARBALL'], ['openssl.sh', 'SYMPHONY_OPENSSL_TARBALL'],
  ['libdeflate.sh', 'SYMPHONY_LIBDEFLATE_TARBALL'], ['hiredis.sh', 'SYMPHONY_HIREDIS_TARBALL']]) {
  test(`${script}: a ${variable} that is not the pinned release is refused`, (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-deps-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const pinned = /^(?:JE|SSL|LD|HR)_SHA256=([0-9a-f]{64})$/m.exec(fs.readFileSync(path.join(deps, script), 'utf8'))[1];
    const bogus = path.join(dir, 'release.tar');
    fs.writeFileSync(bogus, 'not the release');
    for (const given of [bogus, path.join(dir, 'missing.tar')]) {
      // A cache of its own, so that nothing cached could be used instead.
      const r = run(script, { [variable]: given, SYMPHONY_CACHE_DIR: path.join(dir, 'cache') });
      assert.equal(r.status, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`${variable}=${given.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is missing or its sha256 is not ${pinned}`));
      assert.equal(r.stdout, '', 'no build folder printed');
      assert.deepEqual(fs.readdirSync(path.join(dir, 'cache')).filter((f) => f.startsWith('build')), [], 'nothing built');
    }
  });
}

test('sysroot.sh: an unknown sysroot name is refused', () => {
  const r = spawnSync('bash', [path.join(deps, 'sysroot.sh'), 'solaris-sparc'], { encoding: 'utf8', timeout: 10000 });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown sysroot 'solaris-sparc'/);
  assert.equal(r.stdout, '');
});

test('the deps for this host are built as the prebuilt target\'s on Linux glibc x64/arm64 (gcc, the glibc floor), and only there', () => {
  const { hostEnv } = require('../../scripts/deps');
  const floor = `-include ${path.join(deps, '..', 'binding', 'glibc_floor.h')}`;
  const linux = { platform: 'linux', arch: 'x64', libc: 'glibc' };
  assert.deepEqual(hostEnv([], { PATH: '/bin' }, linux), { PATH: '/bin', CC: 'gcc', CFLAGS: floor });
  assert.deepEqual(hostEnv(['--lg-page', '16'], { CC: 'gcc' }, { ...linux, arch: 'arm64' }), { CC: 'gcc', CFLAGS: floor });
  // Another target, the caller's compiler or flags, another system or libc: as given.
  for (const [args, env, host] of [[['--host', 'aarch64-linux-gnu'], {}, linux], [['--cc', 'musl-gcc'], {}, linux],
    [[], { CC: 'clang' }, linux], [[], { CFLAGS: '-O1' }, linux], [[], {}, { ...linux, libc: 'musl' }],
    [[], {}, { ...linux, arch: 'ia32' }], [[], {}, { platform: 'darwin', arch: 'arm64', libc: 'darwin' }]]) {
    assert.equal(hostEnv(args, env, host), env, JSON.stringify({ args, env, host }));
  }
});

// OpenSSL's Configure takes CFLAGS from the environment instead of its
// target's -O3: a caller's CFLAGS (scripts/deps.js gives the glibc floor's
// -include on Linux glibc) built it at -O0, and Ed25519 verified 3x slower
// than Node's (issue 43). deps/openssl.sh puts -O3 first; configured only.
test('openssl.sh: a caller\'s CFLAGS come after OpenSSL\'s own -O3', { skip: process.platform === 'win32' && 'bash and gcc' }, (t) => {
  const script = fs.readFileSync(path.join(deps, 'openssl.sh'), 'utf8');
  const version = /^SSL_VERSION=(\S+)$/m.exec(script)[1];
  const tarball = path.join(process.env.SYMPHONY_CACHE_DIR || path.join(deps, 'cache'), `openssl-${version}.tar.gz`);
  if (!fs.existsSync(tarball)) return t.skip(`no ${path.basename(tarball)} in the cache yet (deps/openssl.sh fetches it)`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-deps-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  // A caller's define and its own -O (which still wins: it comes last).
  const r = spawnSync('bash', [path.join(deps, 'openssl.sh')], {
    env: { ...process.env, SYMPHONY_OPENSSL_TARBALL: tarball, SYMPHONY_CACHE_DIR: path.join(dir, 'cache'), SYMPHONY_OPENSSL_CONFIGURE_ONLY: '1', CFLAGS: '-DSY_CALLER_FLAG -O1' },
    encoding: 'utf8', timeout: 180000,
  });
  assert.equal(r.status, 0, r.stderr);
  const makefile = fs.readFileSync(path.join(r.stdout.trim().split('\n').pop(), 'Makefile'), 'utf8');
  assert.match(makefile, /^CFLAGS=-O3 -DSY_CALLER_FLAG -O1 /m);
});
