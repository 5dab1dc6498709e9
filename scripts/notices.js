#!/usr/bin/env node
'use strict';
// The third-party notices: every library linked statically into the addon
// (binding.gyp's 'libraries'), its exact version and its licence text, as
// THIRD_PARTY_NOTICES.md.
//
//   node scripts/notices.js            writes THIRD_PARTY_NOTICES.md (the committed one)
//   node scripts/notices.js --check    exits 1, naming what differs, when it is stale
//   node scripts/notices.js --check --file=F   the same for another copy
//
// The version and sha256 of each library come from its deps/<name>.sh (what
// the build pins); its licence text from the licence file of that release
// tarball, read from the deps cache (deps/cache, or SYMPHONY_CACHE_DIR), so
// the notices cannot drift from what is built; with the copyright lines of
// its sources that the licence file does not name. The build writes the same
// file beside the .node files it makes, from the tarballs of the build
// folders it linked (scripts/build.js into native/, scripts/prebuild.js into
// prebuilds/): writeBeside(). __test__/package/notices.test.js checks them all.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const FILE = 'THIRD_PARTY_NOTICES.md';

// Each bundled library: its deps/ script, the binding.gyp variable naming its
// build folder, its licence (SPDX id), the licence file at the root of its
// release tarball, and the files of the tarball (its sources, or OpenSSL's
// README) whose copyright lines are listed beside the licence text when the
// licence file does not name those holders itself.
const LIBRARIES = [
  { name: 'jemalloc', script: 'jemalloc.sh', gyp: 'sy_jemalloc_dir', licence: 'BSD-2-Clause', file: 'COPYING',
    home: 'https://jemalloc.net/', use: 'the allocator of symphony\'s native memory', only: 'the jemalloc builds (`*.jemalloc-*.node`)',
    sources: /^(?:src\/[^/]+\.c|include\/jemalloc\/.+\.h(?:\.in)?)$/ },
  { name: 'OpenSSL', script: 'openssl.sh', gyp: 'sy_openssl_dir', licence: 'Apache-2.0', file: 'LICENSE.txt',
    home: 'https://www.openssl.org/', use: 'TLS (`wss://`, the bus\' `rediss://`)', sources: /^README\.md$/ },
  { name: 'libdeflate', script: 'libdeflate.sh', gyp: 'sy_libdeflate_dir', licence: 'MIT', file: 'COPYING',
    home: 'https://github.com/ebiggers/libdeflate', use: 'permessage-deflate', sources: /^(?:lib\/.+\.[ch]|[^/]+\.h)$/ },
  { name: 'hiredis', script: 'hiredis.sh', gyp: 'sy_hiredis_dir', licence: 'BSD-3-Clause', file: 'COPYING',
    home: 'https://github.com/redis/hiredis', use: 'the Redis bus', sources: /^(?!test\.c$)[^/]+\.[ch]$/ },
  { name: 'yyjson', script: 'yyjson.sh', gyp: 'sy_yyjson_dir', licence: 'MIT', file: 'LICENSE',
    home: 'https://github.com/ibireme/yyjson', use: 'reading JSON (what clients ask, token claims)', sources: /^src\/yyjson\.[ch]$/ },
];

// A phrase every text of that licence has: a licence file that is not the
// licence named above is refused.
const LICENCE_MARK = {
  'BSD-2-Clause': /Redistribution and use in source and binary forms/,
  'BSD-3-Clause': /Neither the name of/,
  MIT: /Permission is hereby granted, free of charge/,
  'Apache-2.0': /Apache License\s+Version 2\.0/,
};

/** What deps/<script> pins: { version, sha256, tarball (its file name in the cache) }. */
function pinned(lib) {
  const text = fs.readFileSync(path.join(root, 'deps', lib.script), 'utf8');
  const version = /^([A-Z]+)_VERSION=(\S+)$/m.exec(text);
  const sha = /^[A-Z]+_SHA256=([0-9a-f]{64})$/m.exec(text);
  const tarball = /^tarball="\$cache\/([^"]+)"$/m.exec(text);
  if (!version || !sha || !tarball) throw new Error(`notices: deps/${lib.script} has no *_VERSION=, *_SHA256= or tarball="$cache/..." line`);
  return { version: version[2], sha256: sha[1], tarball: tarball[1].split(`\${${version[1]}_VERSION}`).join(version[2]) };
}

/** symphony's patches applied to a library (deps/patches/<name>/), by file name. */
function patches(lib) {
  const dir = path.join(root, 'deps', 'patches', lib.script.replace(/\.sh$/, ''));
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.patch')).sort() : [];
}

function checkedText(lib, text, where) {
  if (!LICENCE_MARK[lib.licence].test(text)) throw new Error(`notices: ${where} is not a ${lib.licence} licence text`);
  return text.replace(/\r\n/g, '\n').replace(/^(?:[ \t]*\n)+/, '').replace(/\s+$/, '');
}

/** The "Copyright ..." lines of C sources or Markdown, a line ending in ',' joined with the next. */
function copyrightLines(text) {
  const out = [];
  let open = false;
  for (const raw of text.split('\n')) {
    const line = raw.replace(/^\s*(?:\/\/+|\/?\*+|#+)?\s*/, '').replace(/\s*(?:\*\/)?\s*$/, '').replace(/\s+/g, ' ');
    if (/^Copyright\b.*\d{4}/i.test(line)) out.push(line);
    else if (open && line) out[out.length - 1] += ` ${line}`;
    open = (/^Copyright\b/i.test(line) || open) && line.endsWith(',');
  }
  return out;
}

function cacheDir() {
  return process.env.SYMPHONY_CACHE_DIR || path.join(root, 'deps', 'cache');
}

/**
 * lib as the cache's release tarball has it (deps/<name>.sh fetched and
 * checked it): { lib, version, sha256, tarball, text (its licence file),
 * copyrights (those of its sources the licence file does not name) }.
 */
function fromTarball(lib, cache = cacheDir()) {
  const pin = pinned(lib);
  const tarball = path.join(cache, pin.tarball);
  if (!fs.existsSync(tarball)) {
    throw new Error(`notices: no ${tarball}: build first (npm install, or node scripts/build.js), which fetches it`);
  }
  const tar = (args) => {
    const r = spawnSync('tar', args, { encoding: 'utf8', maxBuffer: 256 << 20 });
    if (r.status !== 0) throw new Error(`notices: tar ${args.join(' ')} failed: ${r.stderr || r.error}`);
    return r.stdout;
  };
  const members = tar(['-tf', tarball]).split('\n').filter((m) => m && !m.endsWith('/'));
  const inside = (m) => m.split('/').slice(1).join('/');
  const licence = members.find((m) => inside(m) === lib.file);
  if (!licence) throw new Error(`notices: ${pin.tarball} has no ${lib.file}`);
  const sources = members.filter((m) => lib.sources.test(inside(m)));
  // One more pass over the tarball for all of them (OpenSSL's is 50 MB).
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-notices-'));
  let text;
  let found;
  try {
    tar(['-xf', tarball, '-C', tmp, licence, ...sources]);
    text = checkedText(lib, fs.readFileSync(path.join(tmp, licence), 'utf8'), `${pin.tarball}:${licence}`);
    found = sources.flatMap((m) => copyrightLines(fs.readFileSync(path.join(tmp, m), 'utf8')));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const named = text.replace(/\s+/g, ' ');
  const copyrights = [...new Set(found)].filter((c) => !named.includes(c)).sort();
  return { lib, ...pin, text, copyrights };
}

/** The deps cache a build folder of lib is in ($cache/build/<stem>-<host>-<key>); another version is refused. */
function cacheOf(lib, dir) {
  const stem = pinned(lib).tarball.replace(/\.tar\.[a-z0-9]+$/, '');
  if (!path.basename(dir).startsWith(`${stem}-`) || path.basename(path.dirname(dir)) !== 'build') {
    throw new Error(`notices: ${dir} is not a build of ${stem} (deps/${lib.script})`);
  }
  return path.dirname(path.dirname(dir));
}

/** THIRD_PARTY_NOTICES.md for these entries (fromTarball), in LIBRARIES' order. */
function render(entries) {
  const list = LIBRARIES.map((lib) => entries.find((e) => e.lib === lib)).filter(Boolean);
  const out = [];
  out.push('# Third-party notices', '');
  out.push('symphony-ws itself is MIT-licensed. Its native addon (the `.node` files in',
    '`prebuilds/`, and those built from source into `native/`) links these',
    'libraries statically; their code ships inside it, under their own licences.',
    'Each is built from its upstream release tarball, sha256-pinned in',
    '`deps/<name>.sh`; the texts below are the licence files of those tarballs,',
    'unchanged, and the copyright lines of their sources that those files do',
    'not name. The same notices lie beside the `.node` files.', '');
  out.push('| library | version | licence | upstream | used for | in |', '|---|---|---|---|---|---|');
  for (const e of list) {
    out.push(`| ${e.lib.name} | ${e.version} | ${e.lib.licence} | ${e.lib.home} | ${e.lib.use} | ${e.lib.only || 'every build'} |`);
  }
  out.push('');
  const patched = list.filter((e) => patches(e.lib).length);
  if (patched.length) {
    const named = patched.map((e) => `${e.lib.name} (${patches(e.lib).map((p) => `\`${e.lib.script.replace(/\.sh$/, '')}/${p}\``).join(', ')})`);
    out.push(`Modified: ${patched.length > 1 ? 'these are' : 'this is'} built with symphony's patches, in \`deps/patches/\``,
      'of the npm package (each says what it changes and why):', '', ...named.map((n) => `- ${n}`), '');
  }
  out.push('Not bundled, so not noticed here: Node.js, the runtime that loads the addon,',
    'and the C library (glibc or musl), which the addon links dynamically. The',
    'few libgcc routines linked in by `-static-libgcc` are under the GCC Runtime',
    'Library Exception, which asks for no notice.', '');
  out.push('Generated by `scripts/notices.js` from the release tarballs.');
  for (const e of list) {
    out.push('', `## ${e.lib.name} ${e.version}`, '');
    out.push(`${e.lib.licence}, from \`${e.lib.file}\` in \`${e.tarball}\` (sha256 \`${e.sha256}\`), ${e.lib.home}`, '');
    if (e.copyrights.length) {
      out.push(`Copyright notices in its ${e.lib.name === 'OpenSSL' ? 'README' : 'sources'} besides those of \`${e.lib.file}\`, under the same licence:`, '');
      out.push('````text', ...e.copyrights, '````', '');
    }
    if ([e.text, ...e.copyrights].some((t) => t.includes('````'))) throw new Error(`notices: ${e.lib.name}'s texts hold a code fence`);
    out.push('````text', e.text, '````');
  }
  return `${out.join('\n')}\n`;
}

/** binding.gyp's build-folder variables in 'libraries' that no LIBRARIES entry notices. */
function unnoticed(gypText = fs.readFileSync(path.join(root, 'binding.gyp'), 'utf8'), libraries = LIBRARIES) {
  const linked = new Set();
  for (const m of gypText.matchAll(/'libraries':\s*\[([^\]]*)\]/g)) {
    for (const v of m[1].matchAll(/<\((\w+)\)/g)) linked.add(v[1]);
  }
  if (linked.size === 0) throw new Error('notices: no library folder in binding.gyp\'s \'libraries\'');
  return [...linked].filter((v) => !libraries.some((l) => l.gyp === v));
}

/**
 * Writes the notices of the libraries linked from dirs ({ gyp variable:
 * build folder }) into destDir, from the tarballs those folders were built from.
 */
function writeBeside(destDir, dirs) {
  const entries = LIBRARIES.filter((lib) => dirs[lib.gyp]).map((lib) => fromTarball(lib, cacheOf(lib, dirs[lib.gyp])));
  const dest = path.join(destDir, FILE);
  fs.mkdirSync(destDir, { recursive: true });
  fs.writeFileSync(`${dest}.tmp-${process.pid}`, render(entries));
  fs.renameSync(`${dest}.tmp-${process.pid}`, dest);
  return dest;
}

/** The committed notices as they should be: every library, from the cache's tarballs. */
function expected() {
  return render(LIBRARIES.map((lib) => fromTarball(lib)));
}

function main() {
  const check = process.argv.includes('--check');
  const fileArg = process.argv.find((a) => a.startsWith('--file='));
  const file = fileArg ? path.resolve(fileArg.slice(7)) : path.join(root, FILE);
  for (const a of process.argv.slice(2)) if (a !== '--check' && a !== fileArg) throw new Error(`notices: unknown argument ${a}`);
  const missing = unnoticed();
  if (missing.length) throw new Error(`notices: binding.gyp links ${missing.join(', ')}, which scripts/notices.js (LIBRARIES) does not notice`);
  const want = expected();
  if (!check) {
    fs.writeFileSync(file, want);
    console.error(`notices: wrote ${path.relative(root, file)}`);
    return;
  }
  const have = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  if (have === want) return;
  const stale = LIBRARIES.filter((lib) => {
    const head = want.split('\n').find((l) => l.startsWith(`## ${lib.name} `));
    const section = (t) => t.split(/\n(?=## )/).find((s) => s.startsWith(head));
    return section(have) !== section(want);
  }).map((l) => l.name);
  throw new Error(`notices: ${path.relative(root, file)} is stale${stale.length ? ` (${stale.join(', ')})` : ''}: run node scripts/notices.js`);
}

if (require.main === module) {
  try {
    main();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}

module.exports = { FILE, LIBRARIES, pinned, fromTarball, render, unnoticed, writeBeside };
