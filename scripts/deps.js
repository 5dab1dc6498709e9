'use strict';
// The one way the JS side builds a dependency: runs deps/<name>.sh (which
// fetches, checks and builds it, or finds it in the cache) and returns the
// build folder it prints last. Its progress goes to our stderr.

const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');

/** depDir('openssl', ['--host', h, '--cc', cc], env) -> the build folder. */
function depDir(name, args = [], env = process.env) {
  const script = path.join(root, 'deps', `${name}.sh`);
  const r = spawnSync('bash', [script, ...args], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.error) throw r.error;
  const dir = r.stdout.toString().trim().split('\n').pop();
  if (r.status !== 0 || !dir) throw new Error(`deps/${name}.sh ${args.join(' ')} exited with ${r.status ?? r.signal}`);
  return dir;
}

module.exports = { depDir };
