'use strict';
// The third-party notices (scripts/notices.js): every library linked into
// the addon (binding.gyp's 'libraries') has one; the committed
// THIRD_PARTY_NOTICES.md is the licence texts of the release tarballs that
// deps/*.sh pin, at their versions (read from the deps cache); the npm package
// carries it; the build the suites load has its copy beside it.
//
// The release workflow runs the suites against a prebuilt artifact on
// machines that never fetched the deps (no deps cache): there the checks
// against the cache's tarballs are skipped (scripts/test-artifacts.js made
// them where the artifact was built), and the artifact's copy is checked.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const notices = require('../../scripts/notices');
const { allocator } = require('../..');

const root = path.resolve(__dirname, '..', '..');
const committed = () => fs.readFileSync(path.join(root, notices.FILE), 'utf8');
// Every library as the deps cache's tarballs have it (read once: OpenSSL's is 50 MB).
let cached = null;
const fromCache = () => (cached ??= notices.LIBRARIES.map((lib) => notices.fromTarball(lib)));

/** False (the test skipped) when the suites test a prebuilt artifact on a machine without the deps cache. */
function haveCache(t) {
  const cache = process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');
  if (notices.LIBRARIES.every((lib) => fs.existsSync(path.join(cache, notices.pinned(lib).tarball)))) return true;
  const artifact = process.env.SYMPHONY_NATIVE && path.resolve(process.env.SYMPHONY_NATIVE).startsWith(path.join(root, 'prebuilds', path.sep));
  if (!artifact) return true; // a build from this checkout: its tarballs must be there (fromTarball says which is not)
  t.skip(`testing the prebuilt ${process.env.SYMPHONY_NATIVE} without the deps cache (${cache})`);
  return false;
}

test('notices: every library binding.gyp links has a notice, and every release deps/ pins is one of them', () => {
  const gyp = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8');
  assert.deepEqual(notices.unnoticed(gyp), []);
  // The check itself: one more static library, and it is named.
  const more = gyp.replace("'libraries': [", "'libraries': ['<(sy_zstd_dir)/libzstd.a', ");
  assert.deepEqual(notices.unnoticed(more), ['sy_zstd_dir']);
  // deps/darwin-toolchain.sh pins a build tool (the macOS gate's compiler),
  // not a library linked into the addon.
  const pinning = fs.readdirSync(path.join(root, 'deps')).filter((f) => f.endsWith('.sh') && f !== 'darwin-toolchain.sh')
    .filter((f) => /^[A-Z]+_VERSION=/m.test(fs.readFileSync(path.join(root, 'deps', f), 'utf8'))).sort();
  assert.deepEqual(notices.LIBRARIES.map((l) => l.script).sort(), pinning);
});

test(`notices: the committed ${notices.FILE} is the licence files of the pinned tarballs (node scripts/notices.js)`, (t) => {
  if (!haveCache(t)) return;
  const have = committed();
  assert.ok(have === notices.render(fromCache()), `${notices.FILE} is stale: run node scripts/notices.js`);
  for (const lib of notices.LIBRARIES) {
    const { version, sha256 } = notices.pinned(lib);
    const section = have.split(/\n(?=## )/).find((s) => s.startsWith(`## ${lib.name} ${version}\n`));
    assert.ok(section, `a section for ${lib.name} ${version}`);
    assert.ok(section.includes(sha256), `${lib.name}: the tarball's sha256`);
    assert.ok(section.split('\n').filter((l) => l.trim()).length > 8, `${lib.name}: its licence text`);
    assert.match(have, new RegExp(`^\\| ${lib.name} \\| ${version.replace(/\./g, '\\.')} \\| ${lib.licence} \\|`, 'm'));
  }
});

// (On the committed file --check passes exactly when the test above does: the same comparison.)
test('notices: --check fails on a stale copy, naming its library', (t) => {
  if (!haveCache(t)) return;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-notices-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stale = path.join(dir, notices.FILE);
  const { version } = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'hiredis'));
  fs.writeFileSync(stale, committed().replace(`## hiredis ${version}`, '## hiredis 1.1.0'));
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'notices.js'), '--check', `--file=${stale}`], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /is stale \(hiredis\): run node scripts\/notices\.js/);
});

/** A cache holding a made-up libdeflate release tarball with these files (name -> text). */
function fakeCache(t, files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-notices-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const { version, tarball } = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'libdeflate'));
  const top = path.join(dir, 'src', `libdeflate-${version}`);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(top, name)), { recursive: true });
    fs.writeFileSync(path.join(top, name), text);
  }
  const cache = path.join(dir, 'cache');
  fs.mkdirSync(path.join(cache, 'build', `libdeflate-${version}-x86_64-linux-gnu-0123456789ab`), { recursive: true });
  const r = spawnSync('tar', ['-czf', path.join(cache, tarball), '-C', path.join(dir, 'src'), `libdeflate-${version}`]);
  assert.equal(r.status, 0, String(r.stderr));
  return { dir, cache, build: path.join(cache, 'build', `libdeflate-${version}-x86_64-linux-gnu-0123456789ab`) };
}

const MIT = 'Copyright 2016 Eric Biggers\n\nPermission is hereby granted, free of charge, to any person\n';

test('notices: written beside a build from the tarball its build folder came from, with its sources\' other copyrights', (t) => {
  const { dir, build } = fakeCache(t, {
    COPYING: MIT,
    'lib/a.c': '/*\n * Copyright 2016 Eric Biggers\n * Copyright (c) 2030, Ann Example <ann at example dot org>,\n *                     Bob Example\n *\n */\n',
    'lib/x86/b.h': '// Copyright 2031 Carol Example\n',
    'programs/c.c': '/* Copyright 2032 Not Compiled In */\n',
  });
  const dest = path.join(dir, 'native');
  const file = notices.writeBeside(dest, { sy_libdeflate_dir: build });
  assert.equal(file, path.join(dest, notices.FILE));
  const text = fs.readFileSync(file, 'utf8');
  const { version } = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'libdeflate'));
  assert.match(text, new RegExp(`^## libdeflate ${version.replace(/\./g, '\\.')}$`, 'm'));
  assert.match(text, /^\| libdeflate \| .* \| MIT \|/m);
  assert.doesNotMatch(text, /## (jemalloc|OpenSSL|hiredis) /, 'only what was linked');
  assert.ok(text.includes(MIT.trimEnd()), 'the licence file, unchanged');
  // The block between that sentence and the licence text.
  const extra = `${text.split('Copyright notices in its sources')[1].split('\n````\n')[0]}\n`;
  assert.ok(extra.includes('Copyright (c) 2030, Ann Example <ann at example dot org>, Bob Example\n'), extra);
  assert.ok(extra.includes('Copyright 2031 Carol Example\n'), extra);
  assert.ok(!extra.includes('2016 Eric Biggers'), 'not what the licence file already names');
  assert.ok(!extra.includes('Not Compiled In'), 'not a file outside the library\'s sources');
});

test('notices: a build folder of another version, a tarball without its licence file or with another licence, is refused', (t) => {
  const lib = notices.LIBRARIES.find((l) => l.name === 'libdeflate');
  const { version } = notices.pinned(lib);
  const bsd = fakeCache(t, { COPYING: 'Redistribution and use in source and binary forms, with or without\n' });
  assert.throws(() => notices.writeBeside(path.join(bsd.dir, 'out'), { sy_libdeflate_dir: bsd.build }), /is not a MIT licence text/);
  const none = fakeCache(t, { 'README.md': MIT });
  assert.throws(() => notices.fromTarball(lib, none.cache), new RegExp(`libdeflate-${version.replace(/\./g, '\\.')}\\.tar\\.gz has no COPYING`));
  const older = path.join(none.cache, 'build', 'libdeflate-1.19-x86_64-linux-gnu-0123456789ab');
  assert.throws(() => notices.writeBeside(path.join(none.dir, 'out'), { sy_libdeflate_dir: older }), /is not a build of libdeflate-/);
  assert.ok(!fs.existsSync(path.join(none.dir, 'out', notices.FILE)), 'nothing written');
});

test('notices: the npm package carries them (npm pack --dry-run)', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  const files = JSON.parse(r.stdout)[0].files.map((f) => f.path);
  for (const f of [notices.FILE, 'scripts/notices.js', 'scripts/build.js']) assert.ok(files.includes(f), `the package has ${f}`);
});

test('notices: the build the suites load has its copy beside it, for the libraries its folder\'s builds link', () => {
  // native/<platform>-<arch>/ (scripts/build.js), or prebuilds/ (scripts/prebuild.js) with SYMPHONY_NATIVE.
  const dir = path.dirname(allocator.nativePath);
  const builds = fs.readdirSync(dir).filter((f) => f.endsWith('.node'));
  const file = path.join(dir, notices.FILE);
  assert.ok(fs.existsSync(file), `${file} is missing: the build writes it (node scripts/build.js)`);
  const have = fs.readFileSync(file, 'utf8');
  if (builds.some((f) => f.includes('.jemalloc-'))) {
    // All four libraries: the committed file itself (checked against the tarballs above).
    assert.ok(have === committed(), `${file} differs from ${notices.FILE}: rebuild (node scripts/build.js)`);
  } else {
    assert.equal(have, notices.render(fromCache().filter((e) => e.lib.name !== 'jemalloc')));
  }
});

test('notices: the README names each bundled library at its pinned version, and the notices', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
  for (const lib of notices.LIBRARIES) {
    const { version } = notices.pinned(lib);
    assert.ok(readme.includes(`${lib.name} ${version}`), `README.md: ${lib.name} ${version}`);
  }
  assert.ok(readme.includes(`(${notices.FILE})`), `README.md links ${notices.FILE}`);
});
