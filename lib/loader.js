'use strict';
// Finds and loads the native addon that fits this host.
//
// Order: $SYMPHONY_NATIVE (an explicit path: the load-path override), then
// the local builds in native/<platform>-<arch>/ (scripts/build.js: they
// exist only when this package was built from source, because it was asked
// to be or because no platform package fitted), then the platform package
// (@symphony-ws/<target>, an optional dependency the package manager
// installed for this host: lib/variants.js PLATFORMS), then prebuilt
// binaries in prebuilds/<platform>-<arch>/ (scripts/prebuild.js, in a
// checkout; the published package carries none), then
// build/Release/symphony.node (a plain node-gyp build).
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
const {
  platformDir, detectLibc, kernelPageSize, variantFileName, pageOfFile, LG_PAGES, platformPackage, platformPackageName,
} = require('./variants');

const root = path.resolve(__dirname, '..');

/**
 * This host's platform package: { name, dir } with dir its folder when it is
 * installed (resolved as Node resolves a dependency of this package: beside
 * it in node_modules with npm and yarn, in its own node_modules with pnpm),
 * dir null when it is not; null when no platform package exists for this host.
 */
function installedPlatformPackage() {
  const p = platformPackage();
  if (p === null) return null;
  const name = platformPackageName(p);
  try {
    return { name, dir: path.dirname(require.resolve(`${name}/package.json`, { paths: [root] })) };
  } catch {
    return { name, dir: null };
  }
}

/** The files to try, in order; pkg: installedPlatformPackage(), when the caller has it already. */
function candidatePaths(env = process.env, kernelPage = kernelPageSize(), pkg = env.SYMPHONY_NATIVE ? null : installedPlatformPackage()) {
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
  const dirs = [path.join(root, 'native', platformDir()), ...(pkg && pkg.dir ? [pkg.dir] : []),
    path.join(root, 'prebuilds', platformDir())];
  const out = [];
  for (const dir of dirs) for (const name of names) out.push(path.join(dir, name));
  out.push(path.join(root, 'build', 'Release', 'symphony.node'));
  return out;
}

function load(env = process.env) {
  const tried = [];
  const kernelPage = kernelPageSize();
  const pkg = env.SYMPHONY_NATIVE ? null : installedPlatformPackage();
  if (pkg && pkg.dir === null) {
    tried.push({ path: pkg.name, error: 'not installed (an optional dependency: installs with --omit=optional, ' +
      '--no-optional or a lockfile made on another platform leave it out)' });
  }
  for (const file of candidatePaths(env, kernelPage, pkg)) {
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
      return { binding, path: file, platformPackage: pkg };
    } catch (err) {
      tried.push({ path: file, error: err.message });
    }
  }
  const lines = tried.map((t) => `  ${t.path}: ${t.error}`).join('\n');
  throw new LoadError(
    `symphony: no native build could be loaded for ${platformDir()} (${detectLibc()}, ` +
    `kernel page ${kernelPage || 'unknown'} bytes). Tried:\n${lines}\n` +
    `${pkg && pkg.dir === null ? `Install ${pkg.name} (npm install ${pkg.name}), or build` : 'Build'} one from source with ` +
    '`npm rebuild symphony-ws --build-from-source` (in a clone: `npm run build`).', tried);
}

module.exports = { load, candidatePaths };
