'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const symphony = require('../..');
const { expectedAllocator, runNode } = require('../helpers/build');
const { binding, isTestingBuild, needsTestingBuild } = require('../helpers/testing');

const { allocator } = symphony;
const isJemalloc = expectedAllocator === 'jemalloc';

test('the build asked for is the one loaded, and its self-check passes', () => {
  assert.equal(allocator.name, expectedAllocator);
  const check = allocator.selfCheck();
  assert.equal(check.ok, true, JSON.stringify(check));
  assert.equal(check.allocator, expectedAllocator);
  assert.equal(check.libcIsJemalloc, false, 'a libc block must never be reported as jemalloc\'s');
  // hiredis (the Redis bus) allocates through sy_alloc: a reader it makes is ours.
  assert.equal(check.redisRouted, true);
  assert.equal(check.redisIsJemalloc, isJemalloc);
  if (isJemalloc) {
    assert.equal(check.jemallocLinked, true);
    assert.equal(check.oursIsJemalloc, true);
    assert.equal(typeof check.oursArena, 'number');
    assert.match(allocator.version, /^5\.3\.0-/);
  } else {
    assert.equal(check.jemallocLinked, false);
    assert.equal(check.oursIsJemalloc, false);
  }
});

test('pageSize is jemalloc\'s compiled page (4 KiB on x86_64)', () => {
  if (!isJemalloc) {
    assert.equal(allocator.pageSize, null);
    return;
  }
  if (process.arch === 'x64') assert.equal(allocator.pageSize, 4096);
  assert.equal(allocator.config.pageSize, allocator.pageSize);
});

test('config reports the options in force', () => {
  const cfg = allocator.config;
  if (!isJemalloc) {
    assert.equal(cfg, null);
    return;
  }
  assert.equal(typeof cfg.narenas, 'number');
  assert.ok(cfg.narenas >= 1);
  assert.equal(typeof cfg.dirtyDecayMs, 'number');
  assert.equal(typeof cfg.muzzyDecayMs, 'number');
  assert.equal(typeof cfg.backgroundThread, 'boolean');
  assert.match(cfg.builtinConf, /muzzy_decay_ms:0/);
  if (!process.env.SY_JE_MALLOC_CONF) assert.equal(cfg.envConf, null);
});

test('stats() follows native allocations and frees', needsTestingBuild, () => {
  const before = allocator.stats();
  for (const k of ['allocated', 'active', 'resident', 'mapped', 'retained', 'metadata']) {
    assert.ok(k in before, k);
    if (isJemalloc) assert.equal(typeof before[k], 'number', k);
  }
  assert.equal(typeof before.allocated, 'number');
  const n = 8 << 20;
  const ids = [];
  for (let i = 0; i < 8; i++) ids.push(binding._testAlloc(n / 8));
  const during = allocator.stats();
  assert.ok(during.allocated - before.allocated >= n, `allocated grew by ${during.allocated - before.allocated}`);
  if (isJemalloc) assert.ok(during.active - before.active >= n);
  for (const id of ids) assert.equal(binding._testFree(id), true);
  assert.equal(binding._testFree(ids[0]), false, 'a second free of the same block is refused');
  const after = allocator.stats();
  assert.ok(Math.abs(after.allocated - before.allocated) < 64 * 1024,
    `allocated back to ${after.allocated} from ${before.allocated}`);
});

test('purge() gives freed pages back (resident drops)', needsTestingBuild, () => {
  if (!isJemalloc) {
    assert.equal(allocator.purge(), false);
    assert.equal(allocator.stats().resident, null);
    return;
  }
  // 64 KiB blocks stay in the arena as dirty pages when freed (unlike huge
  // blocks, which jemalloc returns at once), so only purge() releases them.
  const ids = [];
  for (let i = 0; i < 1024; i++) ids.push(binding._testAlloc(64 * 1024));
  for (const id of ids) binding._testFree(id);
  const dirty = allocator.stats();
  assert.equal(allocator.purge(), true);
  const purged = allocator.stats();
  assert.ok(dirty.resident - purged.resident >= 48 << 20,
    `resident ${dirty.resident} -> ${purged.resident} after purge`);
});

test('200 MB of JS Buffers do not show in symphony\'s allocator', () => {
  const before = allocator.stats();
  let keep = [];
  for (let i = 0; i < 200; i++) keep.push(Buffer.alloc(1 << 20, i));
  const during = allocator.stats();
  keep = null;
  if (global.gc) global.gc();
  const after = allocator.stats();
  for (const s of [during, after]) {
    assert.ok(Math.abs(s.allocated - before.allocated) < 4096, `allocated moved ${s.allocated - before.allocated}`);
    if (isJemalloc) {
      assert.ok(Math.abs(s.resident - before.resident) < (1 << 20), `resident moved ${s.resident - before.resident}`);
    }
  }
  assert.equal(keep, null);
});

test('setDecay and backgroundThread change the running configuration', () => {
  if (!isJemalloc) {
    assert.equal(allocator.setDecay({ dirtyMs: 0, muzzyMs: 0 }), false);
    assert.equal(allocator.backgroundThread(false), false);
    return;
  }
  const cfg = allocator.config;
  assert.equal(allocator.setDecay({ dirtyMs: 1234, muzzyMs: 0 }), true);
  assert.equal(allocator.config.dirtyDecayMs, 1234);
  assert.equal(allocator.setDecay({ dirtyMs: cfg.dirtyDecayMs, muzzyMs: cfg.muzzyDecayMs }), true);
  assert.equal(allocator.config.dirtyDecayMs, cfg.dirtyDecayMs);
  assert.equal(allocator.backgroundThread(true), true);
  assert.equal(allocator.config.backgroundThread, true);
  assert.equal(allocator.backgroundThread(false), true);
  assert.equal(allocator.config.backgroundThread, false);
});

test('report() is jemalloc\'s own statistics, as text or parsed JSON; cached is part of allocated', () => {
  const st = allocator.stats();
  if (!isJemalloc) {
    assert.equal(allocator.report(), null);
    assert.equal(allocator.report({ json: true }), null);
    assert.equal(st.cached, 0, 'no caches of ours in the system build');
    return;
  }
  const text = allocator.report();
  assert.match(text, /___ Begin jemalloc statistics ___/);
  assert.match(text, new RegExp(`Version: "${allocator.version}"`));
  const json = allocator.report({ json: true });
  assert.equal(json.jemalloc.version, allocator.version);
  assert.equal(json.jemalloc.config.lg_page ?? Math.log2(json.jemalloc.arenas.page), Math.log2(allocator.pageSize));
  const listed = Object.keys(json.jemalloc['stats.arenas']).filter((k) => k !== 'merged').map(Number);
  for (const a of allocator.arenaStats()) assert.ok(listed.includes(a.arena), `arena ${a.arena} in the report`);
  assert.ok(st.cached >= 0 && st.cached <= st.allocated, `cached ${st.cached} within allocated ${st.allocated}`);
  assert.throws(() => allocator.report(null), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => allocator.report({ json: 'yes' }), { name: 'TypeError', message: /opts\.json/ });
});

test('allocator arguments are checked', () => {
  assert.throws(() => allocator.setDecay(), { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
  assert.throws(() => allocator.setDecay({ dirtyMs: 'x' }), { name: 'TypeError', message: /opts\.dirtyMs/ });
  assert.throws(() => allocator.setDecay({ dirtyMs: -2, muzzyMs: 0 }), { name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  assert.throws(() => allocator.setDecay({ dirtyMs: 0, muzzyMs: 1.5 }), { name: 'RangeError', message: /opts\.muzzyMs/ });
  assert.throws(() => allocator.backgroundThread(1), { name: 'TypeError', message: /enabled/ });
  // The native layer checks on its own too.
  assert.throws(() => binding.allocator.setDecay('1', 0), { name: 'TypeError', message: /dirtyMs/ });
  assert.throws(() => binding.allocator.setDecay(1), { code: 'ERR_MISSING_ARGS' });
  if (isTestingBuild) assert.throws(() => binding._testAlloc(-1), { name: 'RangeError', message: /bytes/ });
});

test('SY_JE_MALLOC_CONF changes the configuration; plain MALLOC_CONF does not', () => {
  const code = 'const a=require(".").allocator; console.log(JSON.stringify({c:a.config, ok:a.selfCheck().ok}))';
  const r = runNode(code, { SY_JE_MALLOC_CONF: 'dirty_decay_ms:777,narenas:3', MALLOC_CONF: 'dirty_decay_ms:555' });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.ok, true);
  if (!isJemalloc) {
    assert.equal(out.c, null);
    return;
  }
  assert.equal(out.c.dirtyDecayMs, 777);
  assert.equal(out.c.narenas, 3);
  assert.equal(out.c.envConf, 'dirty_decay_ms:777,narenas:3');
  const plain = runNode(code, { MALLOC_CONF: 'dirty_decay_ms:555', SY_JE_MALLOC_CONF: '' });
  assert.equal(plain.status, 0, plain.stderr);
  assert.notEqual(JSON.parse(plain.stdout).c.dirtyDecayMs, 555);
});

test('an invalid SY_JE_MALLOC_CONF is reported and does not crash', () => {
  // A 1 MiB block too where the testing build can make one.
  const code = 'const a=require(".").allocator; const b=require("./lib/native").binding; if (b._testAlloc) b._testAlloc(1<<20);' +
    'console.log(JSON.stringify({ok:a.selfCheck().ok, c:a.config}))';
  const r = runNode(code, { SY_JE_MALLOC_CONF: 'no_such_option:1,dirty_decay_ms:banana' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).ok, true);
  if (isJemalloc) assert.match(r.stderr, /Invalid conf pair/);
});
