'use strict';
// The oldest glibc the glibc prebuilt binaries load on: one figure, used by
// scripts/prebuild.js (which checks each glibc artifact as it is made) and
// scripts/test-artifacts.js (which fails any artifact that needs more), and
// stated in docs/builds.md and the README (__test__/repo/docs.test.js holds them
// to it).
//
// It is 2.17: binding/glibc_floor.h binds the pthread functions (2.32/2.34
// when linked on Debian 12) to their oldest versions, and
// binding/glibc/compat.c supplies getentropy (2.25) and stat/fstat (2.33).
// fcntl() is not used: with node-gyp's _FILE_OFFSET_BITS=64 it would be
// fcntl64, which glibc has only from 2.28 on (src/sy_server.c uses dup and
// ioctl instead).

const { spawnSync } = require('node:child_process');

const GLIBC_FLOOR = '2.17';

function versionOf(s) {
  return s.split('.').map(Number);
}

/** a > b, for glibc versions as arrays of numbers. */
function versionAbove(a, b) {
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i] || 0; const y = b[i] || 0;
    if (x !== y) return x > y;
  }
  return false;
}

/** The GLIBC_ versions a file needs (readelf -V), highest last; and the symbols above the floor (readelf --dyn-syms). */
function glibcNeeds(file, readelf = 'readelf') {
  const v = spawnSync(readelf, ['-V', '-W', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (v.status !== 0) throw new Error(`${readelf} -V ${file} failed: ${v.error ? v.error.message : v.stderr}`);
  const versions = [...new Set([...v.stdout.matchAll(/Name: GLIBC_([0-9.]+)/g)].map((m) => m[1]))]
    .sort((a, b) => (versionAbove(versionOf(a), versionOf(b)) ? 1 : -1));
  const s = spawnSync(readelf, ['--dyn-syms', '-W', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const above = [...(s.stdout || '').matchAll(/\bUND\s+([A-Za-z0-9_]+)@GLIBC_([0-9.]+)/g)]
    .filter((m) => versionAbove(versionOf(m[2]), versionOf(GLIBC_FLOOR))).map((m) => `${m[1]}@GLIBC_${m[2]}`);
  return { versions, highest: versions.length ? versions[versions.length - 1] : null, above: [...new Set(above)] };
}

module.exports = { GLIBC_FLOOR, versionOf, versionAbove, glibcNeeds };
