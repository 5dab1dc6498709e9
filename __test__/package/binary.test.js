'use strict';
// What the built .node exposes and contains: only the N-API entry points are
// exported; jemalloc stays hidden inside, and the system build has none; no
// test-only code is in it. This suite runs against production builds only
// (npm test's first run, or a prebuilt binary named by SYMPHONY_NATIVE).
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { binding, path: nativePath } = require('../../lib/native');
const { expectedAllocator } = require('../helpers/build');

// ELF by nature (nm's ELF output, readelf): on macOS the Mach-O bundle's
// exports, imports, zone functions and signature are checked by
// scripts/macos-gate.js --check, which the macOS workflow runs on it.
const ELF = process.platform === 'linux' ? false : 'ELF checks: Linux by nature (macOS: scripts/macos-gate.js --check)';

const NAPI_ENTRY_POINTS = ['napi_register_module_v1', 'node_api_module_get_api_version_v1'];

function nm(args, file = nativePath) {
  return execFileSync('nm', [...args, file], { encoding: 'utf8', maxBuffer: 64 << 20 })
    .split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/));
}

// Built only with SY_TESTING (scripts/build.js --testing, the C tests):
// binding/testing.c's exports and functions, and src/'s test hooks.
const TEST_ONLY = ['_testAlloc', '_testFree', 'sy_binding_testing_init', 'sy_alloc_test_move_all',
  'sy_alloc_moving_all', 'sy_tls_servername'];

/** The test-only names found in a .node: in its symbol table or anywhere in its bytes. */
function testOnlyNames(file) {
  const bytes = fs.readFileSync(file);
  const symbols = new Set(nm(['--defined-only'], file).map((f) => f[f.length - 1]));
  return TEST_ONLY.filter((name) => symbols.has(name) || bytes.includes(name));
}

test('the production .node carries no test-only code (_testAlloc, src/\'s test hooks)', { skip: ELF }, () => {
  assert.equal(binding._testAlloc, undefined, 'this suite runs against a production build, not a testing one');
  assert.equal(binding._testFree, undefined);
  assert.deepEqual(testOnlyNames(nativePath), []);
});

test('the testing build beside it carries them (the check above can see them)', { skip: ELF }, (t) => {
  // scripts/build.js --testing puts it in native/<platform>/testing/ under the same name.
  const twin = path.join(path.dirname(nativePath), 'testing', path.basename(nativePath));
  if (!fs.existsSync(twin)) {
    t.skip(`no testing build at ${twin}`);
    return;
  }
  // (src/'s hooks nothing in the addon calls may be dropped by --gc-sections.)
  const found = testOnlyNames(twin);
  for (const name of ['_testAlloc', '_testFree', 'sy_binding_testing_init']) assert.ok(found.includes(name), name);
});

test('the .node exports exactly the N-API entry points', { skip: ELF }, () => {
  const exported = nm(['-D', '--defined-only']).map((f) => f[f.length - 1]).sort();
  assert.deepEqual(exported, [...NAPI_ENTRY_POINTS].sort());
});

test('no allocator symbol is imported except the C library\'s own malloc family for the self-check probe', { skip: ELF }, () => {
  const undef = nm(['-D', '--undefined-only']).map((f) => f[f.length - 1].replace(/@.*$/, ''));
  // jemalloc is linked statically: nothing named je_/sy_je_ may be left for the dynamic linker.
  assert.deepEqual(undef.filter((s) => /je_/.test(s)), []);
  // The system build uses libc malloc for everything; the jemalloc build only
  // for the self-check's counter-probe (malloc/free).
  // OpenSSL names the C library's too: its default memory functions and
  // aligned allocation (malloc/realloc/free/posix_memalign, replaced by
  // CRYPTO_set_mem_functions before OpenSSL's first call), and calloc in
  // OPENSSL_INIT_new and OPENSSL_DIR_read, paths symphony never takes (no
  // configuration file, no CA directories). The self-check proves an
  // OpenSSL object is in jemalloc (tls.test.js). hiredis' default table
  // names malloc/calloc/realloc/strdup/free; the addon replaces it
  // (hiredisSetAllocators, src/bus/sy_redis_alloc.c) when it loads, and the
  // self-check proves a hiredis reader is in jemalloc (allocator.test.js).
  const allocs = undef.filter((s) => ['malloc', 'calloc', 'realloc', 'free', 'strdup', 'posix_memalign', 'aligned_alloc'].includes(s)).sort();
  if (expectedAllocator === 'jemalloc') {
    assert.ok(allocs.includes('malloc') && allocs.includes('free'));
    for (const a of allocs) assert.ok(['free', 'malloc', 'calloc', 'realloc', 'strdup', 'posix_memalign'].includes(a), `unexpected import ${a}`);
  } else {
    assert.ok(allocs.includes('malloc') && allocs.includes('free'));
  }
});

test('jemalloc is inside the default build and absent from the system build', { skip: ELF }, () => {
  const all = nm(['--defined-only']).map((f) => f[f.length - 1]);
  const je = all.filter((s) => /^sy_je_|je_malloc|jemalloc/.test(s));
  const bytes = fs.readFileSync(nativePath);
  if (expectedAllocator === 'jemalloc') {
    // A stripped build (a prebuilt binary) has no symbol table: its build
    // marker and jemalloc's own messages say what it carries.
    const stripped = nm([]).length === 0;
    if (!stripped) assert.ok(je.length > 100, `only ${je.length} jemalloc symbols found`);
    assert.ok(bytes.includes('<jemalloc>'));
    assert.match(bytes.toString('latin1'), /symphony-build: allocator=jemalloc-5\.3\.0/);
  } else {
    assert.deepEqual(je, []);
    assert.equal(bytes.includes('<jemalloc>'), false, 'the system build carries jemalloc\'s messages');
    assert.equal(bytes.includes('sy_je_'), false);
  }
});

test('OpenSSL is inside, hidden: no OpenSSL symbol imported or exported, no libssl/libcrypto needed', { skip: ELF }, () => {
  const dynamic = nm(['-D']).map((f) => f[f.length - 1].replace(/@.*$/, ''));
  // Node exports its own OpenSSL 3.0: one unresolved name here would bind to
  // it, and then OpenSSL's memory would no longer be ours.
  const openssl = /^(SSL_|SSL$|CRYPTO_|EVP_|OPENSSL_|OSSL_|BIO_|X509|PEM_|ERR_|RAND_|BN_|EC_|RSA_|ASN1_|TLS_|d2i_|i2d_|OBJ_|DTLS)/;
  assert.deepEqual(dynamic.filter((s) => openssl.test(s)), []);
  const dyn = execFileSync('readelf', ['-d', nativePath], { encoding: 'utf8' });
  assert.doesNotMatch(dyn, /Shared library: \[lib(ssl|crypto)\./);
  const bytes = fs.readFileSync(nativePath).toString('latin1');
  assert.match(bytes, /OpenSSL 3\.5\.\d+ /, "the private OpenSSL 3.5's version text");
});

test('the .node needs no C++ runtime and no libgcc_s', { skip: ELF }, () => {
  const dyn = execFileSync('readelf', ['-d', nativePath], { encoding: 'utf8' });
  const needed = [...dyn.matchAll(/\(NEEDED\)\s+Shared library: \[(.+?)\]/g)].map((m) => m[1]);
  for (const lib of needed) assert.match(lib, /^(libc\.so|ld-linux|libpthread|libm\.so)/, `unexpected NEEDED ${lib}`);
});

test('the .node is marked NODELETE, so a worker\'s exit never unmaps live allocator code', { skip: ELF }, () => {
  const dyn = execFileSync('readelf', ['-d', nativePath], { encoding: 'utf8' });
  assert.match(dyn, /FLAGS_1\)\s+Flags:.*NODELETE/);
});
