'use strict';
// The platform packages (lib/variants.js PLATFORMS, scripts/packages.js):
// one per prebuilt target, each saying where it runs; the published main
// package lists them all and carries no binary; the loader finds the one a
// package manager installed, after a local build, and says which package
// is missing when none is. (What npm, pnpm and yarn fetch from a registry:
// scripts/test-install.js, in npm run test:artifacts.)
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { PLATFORMS, platformPackageName, platformPackage } = require('../../lib/variants');
const { TARGETS } = require('../../scripts/prebuild');
const { manifestOf, publishedManifest } = require('../../scripts/packages');

const root = path.resolve(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

test('every prebuilt target has its platform package, and every package a target or a macOS build', () => {
  for (const [name, t] of Object.entries(TARGETS)) {
    const p = PLATFORMS.find((x) => x.os === t.os && x.cpu === t.arch && x.libc === t.libc);
    assert.ok(p, `no platform package for the prebuilt target ${name}`);
    assert.equal(`${p.os}-${p.cpu}`, name.replace(/-(glibc|musl)$/, ''), `${name}: its folder is prebuilds/${p.os}-${p.cpu}/`);
  }
  for (const p of PLATFORMS) {
    if (p.os === 'darwin') assert.equal(p.libc, 'darwin', p.name); // symphony.darwin.*.node (scripts/macos-gate.js)
    else assert.ok(Object.values(TARGETS).some((t) => t.os === p.os && t.arch === p.cpu && t.libc === p.libc), `${p.name}: no prebuilt target`);
  }
  assert.equal(new Set(PLATFORMS.map((p) => p.name)).size, PLATFORMS.length);
});

test('Windows x64: a platform package (win32-x64, no libc field), the loader\'s names and page, and "os" allows win32', () => {
  const w = platformPackage('win32', 'x64', 'win32');
  assert.ok(w, 'a win32-x64 platform package');
  assert.equal(w.name, 'win32-x64');
  const m = manifestOf(w, pkg);
  assert.deepEqual([m.os, m.cpu, m.libc], [['win32'], ['x64'], undefined]);
  assert.ok(m.files.includes('MINGW-W64-RUNTIME-NOTICES.txt'), 'the Windows package ships the mingw-w64 runtime\'s notices');
  assert.ok(!manifestOf(platformPackage('linux', 'x64', 'glibc'), pkg).files.includes('MINGW-W64-RUNTIME-NOTICES.txt'));
  assert.ok(pkg.os.includes('win32'), `package.json "os" lists win32 (${pkg.os.join(', ')})`);
  const { variantFileName, kernelPageSize, detectLibc } = require('../../lib/variants');
  assert.equal(kernelPageSize('win32', 'x64'), 4096);
  assert.equal(variantFileName({ libc: 'win32', allocator: 'jemalloc', lgPage: 12 }), 'symphony.win32.jemalloc-4k.node');
  if (process.platform !== 'win32') assert.notEqual(detectLibc(), 'win32');
  assert.equal(TARGETS['win32-x64'].lgPages.join(), '12');
});

test('a platform package says where it runs (os, cpu, libc on Linux) and ships its licences', () => {
  for (const p of PLATFORMS) {
    const m = manifestOf(p, pkg);
    assert.equal(m.name, `@symphony-ws/${p.name}`);
    assert.equal(m.version, pkg.version);
    assert.deepEqual(m.os, [p.os]);
    assert.deepEqual(m.cpu, [p.cpu]);
    if (p.os === 'linux') assert.deepEqual(m.libc, [p.libc]);
    else assert.equal(m.libc, undefined);
    assert.equal(m.license, pkg.license);
    for (const f of ['*.node', 'LICENSE', 'THIRD_PARTY_NOTICES.md']) assert.ok(m.files.includes(f), `${p.name} ships ${f}`);
    assert.equal(m.publishConfig.access, 'public', 'a scoped package is published public');
  }
});

test('the published main package lists every platform package at its own version; the repository\'s does not (npm ci works before they exist)', () => {
  const pub = publishedManifest(pkg);
  assert.deepEqual(pub.optionalDependencies, Object.fromEntries(PLATFORMS.map((p) => [platformPackageName(p), pkg.version])));
  assert.equal(pkg.optionalDependencies, undefined);
  assert.deepEqual({ ...pub, optionalDependencies: undefined }, { ...pkg, optionalDependencies: undefined });
});

test('npm pack of the main package lists no binary, and carries LICENSE and CHANGELOG.md', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const files = JSON.parse(r.stdout)[0].files.map((f) => f.path);
  assert.deepEqual(files.filter((f) => /\.(node|so|dylib|dll|a|o)$/.test(f)), []);
  for (const f of ['LICENSE', 'CHANGELOG.md', 'lib/loader.js', 'binding.gyp']) assert.ok(files.includes(f), f);
  assert.match(fs.readFileSync(path.join(root, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright \(c\) \d{4} symphony-ws contributors\n/);
});

/**
 * An installed project as a package manager lays it out:
 * node_modules/symphony-ws (this package's lib/ and package.json) and,
 * when withPackage, node_modules/@symphony-ws/<this host's target> with the
 * build the suites load, under its published name.
 */
function project(t, { withPackage, withLocalBuild = false }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-platform-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const main = path.join(dir, 'node_modules', 'symphony-ws');
  fs.cpSync(path.join(root, 'lib'), path.join(main, 'lib'), { recursive: true });
  fs.copyFileSync(path.join(root, 'package.json'), path.join(main, 'package.json'));
  const built = require('../..').allocator.nativePath;
  const host = platformPackage();
  if (withPackage) {
    const p = path.join(dir, 'node_modules', '@symphony-ws', host.name);
    fs.mkdirSync(p, { recursive: true });
    fs.writeFileSync(path.join(p, 'package.json'), JSON.stringify(manifestOf(host, pkg)));
    fs.copyFileSync(built, path.join(p, path.basename(built)));
  }
  if (withLocalBuild) {
    const n = path.join(main, 'native', `${process.platform}-${process.arch}`);
    fs.mkdirSync(n, { recursive: true });
    fs.copyFileSync(built, path.join(n, path.basename(built)));
  }
  return dir;
}

function nativePathIn(dir) {
  const env = { ...process.env };
  delete env.SYMPHONY_NATIVE;
  return spawnSync(process.execPath, ['-e', `try { console.log(require('symphony-ws').allocator.nativePath) }
    catch (e) { console.log(e.code + '\\n' + e.message) }`], { cwd: dir, env, encoding: 'utf8' });
}

const HOST = platformPackage() ? false : `no platform package for ${process.platform}-${process.arch}`;

test('the loader finds the platform package the package manager installed beside it', { skip: HOST }, (t) => {
  const dir = project(t, { withPackage: true });
  const r = nativePathIn(dir);
  assert.equal(r.stdout.trim(), path.join(fs.realpathSync(dir), 'node_modules', '@symphony-ws', platformPackage().name,
    path.basename(require('../..').allocator.nativePath)), r.stderr);
});

test('a local build (built from source, by choice or for want of a package) comes before the platform package', { skip: HOST }, (t) => {
  const dir = project(t, { withPackage: true, withLocalBuild: true });
  const r = nativePathIn(dir);
  assert.match(r.stdout.trim(), new RegExp(`node_modules/symphony-ws/native/${process.platform}-${process.arch}/`), r.stderr);
});

test('no platform package and no build: the error names the missing package and how to get it', { skip: HOST }, (t) => {
  const dir = project(t, { withPackage: false });
  const r = nativePathIn(dir);
  const name = platformPackageName(platformPackage());
  assert.match(r.stdout, /^ERR_SYMPHONY_LOAD\n/);
  assert.ok(r.stdout.includes(`${name}: not installed`), r.stdout);
  assert.ok(r.stdout.includes(`npm install ${name}`), r.stdout);
  assert.ok(r.stdout.includes('--build-from-source'), r.stdout);
});

test('scripts/packages.js refuses an unknown target or argument, naming it', () => {
  for (const [args, said] of [[['--targets=linux-sparc-gnu'], /unknown target linux-sparc-gnu \(known: linux-x64-gnu, /],
    [['--pakc'], /unknown argument --pakc/]]) {
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'packages.js'), ...args], { encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, said);
  }
});
