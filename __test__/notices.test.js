'use strict';
// The third-party notices (scripts/notices.js): every library linked into
// the addon (binding.gyp's 'libraries') has one; the committed
// THIRD_PARTY_NOTICES.md is the licence texts of the release tarballs that
// deps/*.sh pin, at their versions (read from the deps cache); the npm package
// carries it; the builds in native/ have their own copy beside them.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const notices = require('../scripts/notices');
const { platformDir } = require('../lib/variants');

const root = path.resolve(__dirname, '..');
const committed = () => fs.readFileSync(path.join(root, notices.FILE), 'utf8');

test('notices: every library binding.gyp links has a notice, and every release deps/ pins is one of them', () => {
  const gyp = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8');
  assert.deepEqual(notices.unnoticed(gyp), []);
  // The check itself: one more static library, and it is named.
  const more = gyp.replace("'libraries': [", "'libraries': ['<(sy_zstd_dir)/libzstd.a', ");
  assert.deepEqual(notices.unnoticed(more), ['sy_zstd_dir']);
  const pinning = fs.readdirSync(path.join(root, 'deps')).filter((f) => f.endsWith('.sh'))
    .filter((f) => /^[A-Z]+_VERSION=/m.test(fs.readFileSync(path.join(root, 'deps', f), 'utf8'))).sort();
  assert.deepEqual(notices.LIBRARIES.map((l) => l.script).sort(), pinning);
});

test(`notices: the committed ${notices.FILE} is the licence files of the pinned tarballs (node scripts/notices.js)`, () => {
  const have = committed();
  assert.ok(have === notices.expected(), `${notices.FILE} is stale: run node scripts/notices.js`);
  for (const lib of notices.LIBRARIES) {
    const { version, sha256 } = notices.pinned(lib);
    const section = have.split(/\n(?=## )/).find((s) => s.startsWith(`## ${lib.name} ${version}\n`));
    assert.ok(section, `a section for ${lib.name} ${version}`);
    assert.ok(section.includes(sha256), `${lib.name}: the tarball's sha256`);
    assert.ok(section.split('\n').filter((l) => l.trim()).length > 8, `${lib.name}: its licence text`);
    assert.match(have, new RegExp(`^\\| ${lib.name} \\| ${version.replace(/\./g, '\\.')} \\| ${lib.licence} \\|`, 'm'));
  }
});

test('notices: --check passes on the committed file and names the library of a stale one', (t) => {
  const ok = spawnSync(process.execPath, [path.join(root, 'scripts', 'notices.js'), '--check'], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-notices-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const stale = path.join(dir, notices.FILE);
  const { version } = notices.pinned(notices.LIBRARIES.find((l) => l.name === 'hiredis'));
  fs.writeFileSync(stale, committed().replace(`## hiredis ${version}`, '## hiredis 1.1.0'));
  const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'notices.js'), '--check', `--file=${stale}`], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /is stale \(hiredis\): run node scripts\/notices\.js/);
});

test('notices: a build folder of another version, or a licence file of another licence, is refused', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-notices-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const je = notices.LIBRARIES.find((l) => l.name === 'jemalloc');
  const { version } = notices.pinned(je);
  const other = path.join(dir, 'jemalloc-4.5.0-x86_64-linux-gnu-lg12-abc');
  const same = path.join(dir, `jemalloc-${version}-x86_64-linux-gnu-lg12-abc`);
  for (const d of [other, same]) {
    fs.mkdirSync(d);
    fs.writeFileSync(path.join(d, 'COPYING'), 'Permission is hereby granted, free of charge, to any person\n');
  }
  assert.throws(() => notices.fromBuildDir(je, other), /is not a build of jemalloc-5\.3\.0/);
  assert.throws(() => notices.fromBuildDir(je, same), /is not a BSD-2-Clause licence text/);
});

test('notices: the npm package carries them (npm pack --dry-run)', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', timeout: 120000 });
  assert.equal(r.status, 0, r.stderr);
  const files = JSON.parse(r.stdout)[0].files.map((f) => f.path);
  for (const f of [notices.FILE, 'scripts/notices.js', 'scripts/build.js']) assert.ok(files.includes(f), `the package has ${f}`);
});

test('notices: the builds in native/ have theirs beside them, for the libraries they link', () => {
  const dir = path.join(root, 'native', platformDir());
  const builds = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.node')) : [];
  assert.ok(builds.length > 0, `no build in ${dir}: node scripts/build.js`);
  const file = path.join(dir, notices.FILE);
  assert.ok(fs.existsSync(file), `${file} is missing: node scripts/build.js writes it (rebuild)`);
  // jemalloc only where a jemalloc build is; the others are in every build.
  const linked = notices.LIBRARIES.filter((lib) => lib.name !== 'jemalloc' || builds.some((f) => f.includes('.jemalloc-')));
  assert.equal(fs.readFileSync(file, 'utf8'), notices.render(linked.map((lib) => notices.fromTarball(lib))));
});

test('notices: the README names each bundled library at its pinned version, and the notices', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
  for (const lib of notices.LIBRARIES) {
    const { version } = notices.pinned(lib);
    assert.ok(readme.includes(`${lib.name} ${version}`), `README.md: ${lib.name} ${version}`);
  }
  assert.ok(readme.includes(`(${notices.FILE})`), `README.md links ${notices.FILE}`);
});
