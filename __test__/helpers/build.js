'use strict';
// Which native build the suite runs against (SYMPHONY_ALLOCATOR picks it, as
// in production), and small helpers shared by the suites.
const { spawnSync } = require('node:child_process');

const expectedAllocator = process.env.SYMPHONY_ALLOCATOR || 'jemalloc';

/** Runs a snippet of JS in a fresh Node process with extra environment. */
function runNode(code, env = {}, args = []) {
  const r = spawnSync(process.execPath, [...args, '-e', code], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60000,
  });
  return { status: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

module.exports = { expectedAllocator, runNode };
