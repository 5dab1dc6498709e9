'use strict';
// The one way the JS side builds a dependency: runs deps/<name>.sh (which
// fetches, checks and builds it, or finds it in the cache) and returns the
// build folder it prints last. Its progress goes to our stderr.

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

/**
 * The environment of a build for this host (no --host or --cc given) on
 * Linux glibc x64 or arm64: the prebuilt target's (scripts/prebuild.js):
 * CC gcc and binding/glibc_floor.h forced into every file. So npm install's,
 * npm test's and the prebuild's OpenSSL and jemalloc are one build each in
 * the cache (a clean machine, CI's, builds each once, not twice). A CC
 * other than gcc, or CFLAGS, given by the caller are kept as given.
 */
function hostEnv(args, env, { platform = process.platform, arch = process.arch, libc = null } = {}) {
  if (args.includes('--host') || args.includes('--cc') || platform !== 'linux') return env;
  if (!['x64', 'arm64'].includes(arch) || (env.CC && env.CC !== 'gcc') || env.CFLAGS !== undefined) return env;
  if ((libc || require('../lib/variants').detectLibc()) !== 'glibc') return env;
  return { ...env, CC: 'gcc', CFLAGS: `-include ${path.join(root, 'binding', 'glibc_floor.h')}` };
}

/** depDir('openssl', ['--host', h, '--cc', cc], env) -> the build folder. */
function depDir(name, args = [], env = process.env) {
  // On Windows, forward slashes: Git for Windows' bash reads D:/a/... and
  // its dirname then finds deps/lib.sh (a backslash is not its separator).
  const script = path.join(root, 'deps', `${name}.sh`).split(path.sep).join('/');
  const r = spawnSync('bash', [script, ...args], { cwd: root, env: hostEnv(args, env), stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.error) throw r.error;
  const dir = r.stdout.toString().trim().split('\n').pop();
  if (r.status !== 0 || !dir) throw new Error(`deps/${name}.sh ${args.join(' ')} exited with ${r.status ?? r.signal}`);
  return dir;
}

module.exports = { depDir, hostEnv };
