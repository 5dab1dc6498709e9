#!/usr/bin/env node
'use strict';
// Makes the npm packages of a release: one platform package per target
// (@symphony-ws/<target>: lib/variants.js PLATFORMS) from the binaries in
// prebuilds/, and, with --pack, the tarballs of those and of the main
// package (pure JS: no binary), all at the main package's version.
//
//   node scripts/packages.js                      every target with binaries in prebuilds/
//   node scripts/packages.js --targets=linux-x64-gnu,linux-arm64-gnu
//   node scripts/packages.js --pack [--out=DIR] [--all]
//
// --all (a release): every platform of PLATFORMS must have its binaries, or
// nothing is packed: the main package names them all, and a name it lists
// that is never published fails yarn 1's install on every platform.
//
// Each platform package holds every build of its target (each page size and
// allocator: symphony.<libc>.<allocator>[-<page>k].node, as the loader names
// them), LICENSE, THIRD_PARTY_NOTICES.md (the licences of the libraries
// linked in, from prebuilds/<platform>-<arch>/) and a README, and says in its
// os, cpu and libc fields where it runs, so that npm, pnpm and yarn fetch
// only the one that fits. The main package is staged in DIR/symphony-ws/
// and names them all, at its own version, in optionalDependencies
// (publishedManifest(); the repository's package.json does not, so that
// `npm ci` works in a clone before they are published).
// The main package's repository (npm provenance checks it against the
// workflow's repository: release.yml sets it) is every package's. Writes DIR/<target>/ (default
// dist/npm/) and, with --pack, DIR/*.tgz; prints one JSON line:
// { version, packages: [{ name, dir, files, tarball, bytes }], main }.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS, platformPackageName, platformDir } = require('../lib/variants');

/** What the Windows DLL's package carries besides (scripts/prebuild.js writeMingwNotices). */
const MINGW_NOTICES = 'MINGW-W64-RUNTIME-NOTICES.txt';

const root = path.resolve(__dirname, '..');

function parseArgs(argv) {
  const opts = { targets: null, pack: false, all: false, out: path.join(root, 'dist', 'npm') };
  for (const arg of argv) {
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    if (m && m[1] === 'targets' && m[2]) {
      opts.targets = m[2].split(',').filter(Boolean);
      const known = PLATFORMS.map((p) => p.name);
      for (const t of opts.targets) if (!known.includes(t)) throw new Error(`packages: unknown target ${t} (known: ${known.join(', ')})`);
    } else if (m && (m[1] === 'pack' || m[1] === 'all') && m[2] === undefined) {
      opts[m[1]] = true;
    } else if (m && m[1] === 'out' && m[2]) {
      opts.out = path.resolve(m[2]);
    } else {
      throw new Error(`packages: unknown argument ${arg}`);
    }
  }
  return opts;
}

/** The binaries of a platform in prebuilds/ (its libc's files of its folder), sorted. */
function binariesOf(p) {
  const dir = path.join(root, 'prebuilds', platformDir(p.os, p.cpu));
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir).filter((f) => f.startsWith(`symphony.${p.libc}.`) && f.endsWith('.node')).sort()
    .map((f) => path.join(dir, f));
}

/** The package.json of a platform package. */
function manifestOf(p, main) {
  return {
    name: platformPackageName(p),
    version: main.version,
    description: `The native addon of ${main.name} for ${p.title}: prebuilt, with its private jemalloc. ` +
      `Installed by ${main.name} as an optional dependency; not meant to be required directly.`,
    license: main.license,
    ...(main.repository ? { repository: main.repository } : {}),
    os: [p.os],
    cpu: [p.cpu],
    ...(p.os === 'linux' ? { libc: [p.libc] } : {}),
    engines: main.engines,
    files: ['*.node', 'LICENSE', 'THIRD_PARTY_NOTICES.md', ...(p.os === 'win32' ? [MINGW_NOTICES] : []), 'README.md'],
    publishConfig: { access: 'public' },
  };
}

function readme(p, main, files) {
  return `# ${platformPackageName(p)}

The native addon of \`${main.name}\` for ${p.title},
version ${main.version}. \`npm install ${main.name}\` installs this package by itself on
${p.title} (it is one of ${main.name}'s optionalDependencies, with \`os\`, \`cpu\`${p.os === 'linux' ? ' and `libc`' : ''}
fields that tell the package manager where it fits); require \`${main.name}\`, never this.

Builds inside (the loader picks one by the kernel's page size and \`SYMPHONY_ALLOCATOR\`):
${files.map((f) => `- \`${path.basename(f)}\``).join('\n')}

Licence: ${main.license} (LICENSE); the libraries linked in: THIRD_PARTY_NOTICES.md.
`;
}

/**
 * The main package's package.json as published: the repository's, with
 * every platform package at its version in optionalDependencies. (Not in
 * the repository's own package.json: until a version is published, npm
 * could not lock them, and `npm ci` in a clone would fail.)
 */
function publishedManifest(main) {
  const optionalDependencies = Object.fromEntries(PLATFORMS.map((p) => [platformPackageName(p), main.version]));
  const out = {};
  for (const [k, v] of Object.entries(main)) {
    if (k === 'devDependencies') out.optionalDependencies = optionalDependencies; // before it, as npm orders them
    out[k] = v;
  }
  if (!out.optionalDependencies) out.optionalDependencies = optionalDependencies;
  return out;
}

/** The main package's files (as `npm pack` lists them) copied to dir, with publishedManifest(); returns dir. */
function stageMain(main, dir) {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`packages: npm pack --dry-run failed: ${r.error ? r.error.message : r.stderr}`);
  fs.rmSync(dir, { recursive: true, force: true });
  for (const f of JSON.parse(r.stdout)[0].files) {
    fs.mkdirSync(path.dirname(path.join(dir, f.path)), { recursive: true });
    fs.copyFileSync(path.join(root, f.path), path.join(dir, f.path));
  }
  fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(publishedManifest(main), null, 2)}\n`);
  return dir;
}

function npmPack(dir, dest) {
  const r = spawnSync('npm', ['pack', '--silent', '--pack-destination', dest], { cwd: dir, encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`packages: npm pack in ${dir} failed: ${r.error ? r.error.message : r.stderr}`);
  return path.join(dest, r.stdout.trim().split('\n').pop());
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  const mainPkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const chosen = opts.targets ? PLATFORMS.filter((p) => opts.targets.includes(p.name)) : PLATFORMS;
  const missing = chosen.filter((p) => binariesOf(p).length === 0).map((p) => `${p.name} (prebuilds/${platformDir(p.os, p.cpu)}/symphony.${p.libc}.*.node)`);
  if (opts.all && missing.length) throw new Error(`packages: --all, and no binary for ${missing.join(', ')}`);
  const made = [];
  for (const p of chosen) {
    const files = binariesOf(p);
    if (files.length === 0) {
      if (opts.targets) throw new Error(`packages: no ${p.name} binary in prebuilds/${platformDir(p.os, p.cpu)}/ (npm run prebuilds first)`);
      continue;
    }
    const notices = path.join(root, 'prebuilds', platformDir(p.os, p.cpu), 'THIRD_PARTY_NOTICES.md');
    if (!fs.existsSync(notices)) throw new Error(`packages: ${path.relative(root, notices)} is missing`);
    const dir = path.join(opts.out, p.name);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    for (const f of files) fs.copyFileSync(f, path.join(dir, path.basename(f)));
    fs.copyFileSync(notices, path.join(dir, 'THIRD_PARTY_NOTICES.md'));
    if (p.os === 'win32') {
      const mingw = path.join(root, 'prebuilds', platformDir(p.os, p.cpu), MINGW_NOTICES);
      if (!fs.existsSync(mingw)) throw new Error(`packages: ${path.relative(root, mingw)} is missing (scripts/prebuild.js writes it)`);
      fs.copyFileSync(mingw, path.join(dir, MINGW_NOTICES));
    }
    fs.copyFileSync(path.join(root, 'LICENSE'), path.join(dir, 'LICENSE'));
    fs.writeFileSync(path.join(dir, 'README.md'), readme(p, mainPkg, files));
    fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(manifestOf(p, mainPkg), null, 2)}\n`);
    const entry = { name: platformPackageName(p), dir: path.relative(root, dir), files: files.map((f) => path.basename(f)) };
    if (opts.pack) {
      const tgz = npmPack(dir, opts.out);
      Object.assign(entry, { tarball: path.relative(root, tgz), bytes: fs.statSync(tgz).size });
    }
    console.error(`packages: ${entry.name}@${mainPkg.version}: ${entry.files.join(', ')}` +
      `${entry.bytes ? ` (${path.basename(entry.tarball)}, ${(entry.bytes / 1048576).toFixed(2)} MiB)` : ''}`);
    made.push(entry);
  }
  if (made.length === 0) throw new Error('packages: no binary in prebuilds/ (npm run prebuilds first)');
  let mainTgz = null;
  if (opts.pack) {
    const dir = stageMain(mainPkg, path.join(opts.out, mainPkg.name));
    const tgz = npmPack(dir, opts.out);
    mainTgz = { name: mainPkg.name, tarball: path.relative(root, tgz), bytes: fs.statSync(tgz).size };
    console.error(`packages: ${mainPkg.name}@${mainPkg.version}: ${path.basename(tgz)}, ${(mainTgz.bytes / 1048576).toFixed(2)} MiB`);
  }
  console.log(JSON.stringify({ version: mainPkg.version, packages: made, main: mainTgz }));
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}

module.exports = { manifestOf, binariesOf, publishedManifest, npmPack, MINGW_NOTICES };
