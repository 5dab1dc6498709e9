'use strict';
// How native builds are named, and the facts about this host that choose one.
// Used by the loader at require() time and by scripts/build.js; reads only
// files (no child process), and never loads an addon.

const fs = require('node:fs');

const AT_PAGESZ = 6;

/** The folder name of this platform's builds, e.g. "linux-x64". */
function platformDir(platform = process.platform, arch = process.arch) {
  return `${platform}-${arch}`;
}

/** 'glibc' or 'musl' (Linux); the platform name elsewhere. */
function detectLibc() {
  if (process.platform !== 'linux') return process.platform;
  const header = process.report && typeof process.report.getReport === 'function'
    ? process.report.getReport().header : null;
  if (header && header.glibcVersionRuntime) return 'glibc';
  return 'musl';
}

/**
 * The kernel's page size in bytes, from the aux vector (AT_PAGESZ) in
 * /proc/self/auxv; null when it cannot be read.
 */
function kernelPageSize() {
  let buf;
  try {
    buf = fs.readFileSync('/proc/self/auxv');
  } catch {
    return null;
  }
  const word = process.arch === 'ia32' || process.arch === 'arm' ? 4 : 8;
  for (let off = 0; off + 2 * word <= buf.length; off += 2 * word) {
    const type = word === 8 ? Number(buf.readBigUInt64LE(off)) : buf.readUInt32LE(off);
    if (type === 0) break;
    if (type === AT_PAGESZ) {
      return word === 8 ? Number(buf.readBigUInt64LE(off + word)) : buf.readUInt32LE(off + word);
    }
  }
  return null;
}

/** File name of one build: symphony.<libc>.<allocator>[-<page>k].node */
function variantFileName({ libc, allocator, lgPage }) {
  const page = allocator === 'jemalloc' ? `-${(1 << lgPage) / 1024}k` : '';
  return `symphony.${libc}.${allocator}${page}.node`;
}

/** lg2 page sizes of the jemalloc builds that may exist, smallest first. */
const LG_PAGES = [12, 14, 16];

module.exports = { platformDir, detectLibc, kernelPageSize, variantFileName, LG_PAGES };
