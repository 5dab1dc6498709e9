'use strict';
// Running a command from the release scripts (test-artifacts, test-install):
// sh() never throws, mustSh() throws with the command's output.

const { spawnSync } = require('node:child_process');

/** spawnSync with text output (64 MiB at most, 10 min unless opts.timeout): { status, stdout, stderr, out, error }, out = stdout + stderr. */
function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, timeout: 600000, ...opts });
  const stdout = r.stdout || '';
  const stderr = r.stderr || '';
  return { status: r.status, stdout, stderr, out: `${stdout}${stderr}`, error: r.error };
}

/** sh(), and its stdout; throws when the command could not run or exited non-zero. */
function mustSh(cmd, args, opts) {
  const r = sh(cmd, args, opts);
  if (r.error || r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.error ? r.error.message : `status ${r.status}`}):\n${r.out}`);
  }
  return r.stdout;
}

module.exports = { sh, mustSh };
