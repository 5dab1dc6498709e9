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

const PT_INTERP = 3;

/**
 * The ELF interpreter (dynamic loader) that runs this Node, read from the
 * program headers of process.execPath: /lib/ld-musl-*.so.1 on musl,
 * /lib64/ld-linux-*.so.2 (or /lib/ld-linux-*) on glibc. null when it cannot
 * be read (a static Node, another format).
 */
function elfInterpreter(file = process.execPath) {
  let fd;
  try {
    fd = fs.openSync(file, 'r');
    const head = Buffer.alloc(64);
    if (fs.readSync(fd, head, 0, 64, 0) < 52 || head.readUInt32BE(0) !== 0x7f454c46) return null;
    const is64 = head[4] === 2;
    const le = head[5] === 1;
    const u16 = (b, o) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
    const u32 = (b, o) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
    const uw = (b, o) => (is64 ? Number(le ? b.readBigUInt64LE(o) : b.readBigUInt64BE(o)) : u32(b, o));
    const phoff = uw(head, is64 ? 0x20 : 0x1c);
    const phentsize = u16(head, is64 ? 0x36 : 0x2a);
    const phnum = u16(head, is64 ? 0x38 : 0x2c);
    if (phnum === 0 || phnum > 256 || phentsize < (is64 ? 56 : 32)) return null;
    const ph = Buffer.alloc(phentsize * phnum);
    fs.readSync(fd, ph, 0, ph.length, phoff);
    for (let i = 0; i < phnum; i++) {
      const o = i * phentsize;
      if (u32(ph, o) !== PT_INTERP) continue;
      const off = uw(ph, o + (is64 ? 8 : 4));
      const size = uw(ph, o + (is64 ? 32 : 16));
      if (size === 0 || size > 4096) return null;
      const buf = Buffer.alloc(size);
      fs.readSync(fd, buf, 0, size, off);
      return buf.toString('latin1').replace(/\0.*$/s, '');
    }
    return null;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * 'glibc' or 'musl' (Linux); the platform name elsewhere. Read from Node's
 * own ELF interpreter (no child process, no report: process.report.getReport()
 * is slow, and crashes Node under qemu with 64 KiB pages); process.report
 * only when the interpreter says neither.
 */
function detectLibc() {
  if (process.platform !== 'linux') return process.platform;
  const interp = elfInterpreter();
  if (interp && /ld-musl-/.test(interp)) return 'musl';
  if (interp && /ld-linux/.test(interp)) return 'glibc';
  const header = process.report && typeof process.report.getReport === 'function'
    ? process.report.getReport().header : null;
  if (header && header.glibcVersionRuntime) return 'glibc';
  return 'musl';
}

/**
 * macOS's page size for this process, a fact of the platform and the CPU
 * type of the running Node, not a file to read (macOS has no /proc): an
 * arm64 process runs on 16 KiB pages on every Apple Silicon Mac (vm_page_size,
 * sysctl hw.pagesize: 16384), an x86_64 one on 4 KiB (Intel Macs, and
 * Rosetta 2 gives translated processes 4 KiB pages). Chosen over asking
 * sysctl(8) (a child process at require() time) or a native call (the
 * addon is what this chooses, so it cannot be loaded to ask). Should a
 * future Mac differ, jemalloc itself refuses a page larger than its build's
 * ("Unsupported system page size"): the loader then says so, nothing
 * corrupts.
 */
const DARWIN_PAGE = { arm64: 16384, x64: 4096 };

/**
 * Windows' page size: 4 KiB on x64 (GetSystemInfo's dwPageSize; the 64 KiB
 * figure is the allocation granularity, not the page). Windows has no
 * /proc either, and the addon cannot be loaded to ask: a fact of the CPU.
 */
const WINDOWS_PAGE = { x64: 4096, arm64: 4096 };

/**
 * The kernel's page size in bytes: on Linux from the aux vector (AT_PAGESZ)
 * in /proc/self/auxv, on macOS and Windows by the CPU type (DARWIN_PAGE,
 * WINDOWS_PAGE); null when it cannot be told.
 */
function kernelPageSize(platform = process.platform, arch = process.arch) {
  if (platform === 'darwin') return DARWIN_PAGE[arch] || null;
  if (platform === 'win32') return WINDOWS_PAGE[arch] || null;
  let buf;
  try {
    buf = fs.readFileSync('/proc/self/auxv');
  } catch {
    return null;
  }
  const word = arch === 'ia32' || arch === 'arm' ? 4 : 8;
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

/** The jemalloc page a file's name says it was built for, in bytes; null if none. */
function pageOfFile(file) {
  const m = /\.jemalloc-(\d+)k\.node$/.exec(file);
  return m ? Number(m[1]) * 1024 : null;
}

/** lg2 page sizes of the jemalloc builds that may exist, smallest first. */
const LG_PAGES = [12, 14, 16];

/** The npm scope of the platform packages. */
const PLATFORM_SCOPE = '@symphony-ws';

/**
 * The platform packages: one npm package per target, holding every build of
 * that target (each page size and allocator), named as napi-rs, @swc/core
 * and lightningcss name theirs. The main package lists them all in
 * optionalDependencies; their os, cpu and libc fields (written from this
 * table by scripts/packages.js) let the package manager fetch only the one
 * that fits. Their binaries come from prebuilds/<os>-<cpu>/ (platformDir),
 * `libc` is the libc segment of those files' names (variantFileName): the
 * C library on Linux, the platform's name elsewhere (detectLibc).
 */
const PLATFORMS = [
  { name: 'linux-x64-gnu', os: 'linux', cpu: 'x64', libc: 'glibc', title: 'Linux x64 (glibc)' },
  { name: 'linux-x64-musl', os: 'linux', cpu: 'x64', libc: 'musl', title: 'Linux x64 (musl: Alpine)' },
  { name: 'linux-arm64-gnu', os: 'linux', cpu: 'arm64', libc: 'glibc', title: 'Linux arm64 (glibc)' },
  { name: 'linux-arm64-musl', os: 'linux', cpu: 'arm64', libc: 'musl', title: 'Linux arm64 (musl: Alpine)' },
  { name: 'darwin-arm64', os: 'darwin', cpu: 'arm64', libc: 'darwin', title: 'macOS arm64 (Apple Silicon)' },
  { name: 'darwin-x64', os: 'darwin', cpu: 'x64', libc: 'darwin', title: 'macOS x64 (Intel)' },
  { name: 'win32-x64', os: 'win32', cpu: 'x64', libc: 'win32', title: 'Windows x64' },
];

/** The full name of a platform package, e.g. "@symphony-ws/linux-x64-gnu". */
function platformPackageName(p) {
  return `${PLATFORM_SCOPE}/${p.name}`;
}

/** The platform package for this host (or the one given), or null when there is none. */
function platformPackage(platform = process.platform, arch = process.arch, libc = detectLibc()) {
  return PLATFORMS.find((p) => p.os === platform && p.cpu === arch && p.libc === libc) || null;
}

module.exports = {
  platformDir, detectLibc, elfInterpreter, kernelPageSize, variantFileName, pageOfFile, LG_PAGES,
  PLATFORMS, platformPackageName, platformPackage,
};
