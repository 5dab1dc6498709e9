'use strict';
// Finds and loads the native addon that fits this host.
//
// Order: $SYMPHONY_NATIVE (an explicit path: the load-path override), then
// the local builds in native/<platform>-<arch>/ (scripts/build.js), then the
// prebuilt binaries in prebuilds/<platform>-<arch>/ (scripts/prebuild.js),
// then build/Release/symphony.node (a plain node-gyp build).
// Within a folder: the allocator asked for ($SYMPHONY_ALLOCATOR, default
// 'jemalloc'), this host's libc, and for jemalloc the build with the smallest
// page that is at least the kernel's page. A build whose page is smaller than
// the kernel's is never loaded, not even when named by $SYMPHONY_NATIVE: it
// could not allocate at all there (jemalloc prints "Unsupported system page
// size" and the process crashes). On macOS the page comes from the CPU type
// (16 KiB on Apple Silicon, 4 KiB on Intel: lib/variants.js), the libc name
// is "darwin" (symphony.darwin.jemalloc-16k.node).

const path = require('node:path');
const fs = require('node:fs');
const { LoadError } = require('./errors');
const { platformDir, detectLibc, kernelPageSize, variantFileName, pageOfFile, LG_PAGES } = require('./variants');

const root = path.resolve(__dirname, '..');

function candidatePaths(env = process.env, kernelPage = kernelPageSize()) {
  if (env.SYMPHONY_NATIVE) return [path.resolve(env.SYMPHONY_NATIVE)];
  const allocator = env.SYMPHONY_ALLOCATOR || 'jemalloc';
  if (allocator !== 'jemalloc' && allocator !== 'system') {
    throw new LoadError(`SYMPHONY_ALLOCATOR must be 'jemalloc' or 'system', not '${allocator}'`, []);
  }
  const libc = detectLibc();
  const page = kernelPage || 4096;
  const names = allocator === 'system'
    ? [variantFileName({ libc, allocator })]
    : LG_PAGES.filter((lg) => (1 << lg) >= page).map((lgPage) => variantFileName({ libc, allocator, lgPage }));
  const dirs = [path.join(root, 'native', platformDir()), path.join(root, 'prebuilds', platformDir())];
  const out = [];
  for (const dir of dirs) for (const name of names) out.push(path.join(dir, name));
  out.push(path.join(root, 'build', 'Release', 'symphony.node'));
  return out;
}

function load(env = process.env) {
  const tried = [];
  const kernelPage = kernelPageSize();
  for (const file of candidatePaths(env, kernelPage)) {
    if (!fs.existsSync(file)) {
      tried.push({ path: file, error: 'not found' });
      continue;
    }
    const page = pageOfFile(file);
    if (page && kernelPage && page < kernelPage) {
      tried.push({ path: file, error: `built for ${page / 1024} KiB pages, the kernel's are ${kernelPage / 1024} KiB: not loaded` });
      continue;
    }
    try {
      const binding = require(file);
      return { binding, path: file };
    } catch (err) {
      tried.push({ path: file, error: err.message });
    }
  }
  const lines = tried.map((t) => `  ${t.path}: ${t.error}`).join('\n');
  throw new LoadError(
    `symphony: no native build could be loaded for ${platformDir()} (${detectLibc()}, ` +
    `kernel page ${kernelPage || 'unknown'} bytes). Tried:\n${lines}\n` +
    'Build one with `npm run build` (or `node scripts/build.js`).', tried);
}

module.exports = { load, candidatePaths };
