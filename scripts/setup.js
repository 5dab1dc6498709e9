#!/usr/bin/env node
'use strict';
// npm run setup: installs the system packages that npm test needs (the list
// is scripts/system-deps.js) with apt-get on Debian or Ubuntu: as root, or
// through sudo when run from a terminal (sudo asks for the password);
// otherwise prints what is missing and the one line that installs it, and
// exits 1. Nothing to do: says so, exits 0.
//
//   node scripts/setup.js          the packages npm test needs
//   node scripts/setup.js --all    and those of .ci/run's prebuilds and gates
//   node scripts/setup.js --check  only say what is missing (exit 1 if any)

const { spawnSync } = require('node:child_process');
const { missing, installLine, onPath } = require('./system-deps');

const groups = process.argv.includes('--all') ? ['test', 'ci'] : ['test'];
const checkOnly = process.argv.includes('--check');

function list(entries) {
  return entries.map((e) => `  ${e.pkg.padEnd(22)} ${e.why}`).join('\n');
}

const need = missing(groups);
if (need.length === 0) {
  console.log(`setup: every system package ${groups.includes('ci') ? '(tests, prebuilds and gates)' : 'the tests need'} is there`);
  process.exit(0);
}
const names = need.map((e) => e.pkg);
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const sudo = !root && onPath('sudo') && process.stdin.isTTY;
if (checkOnly || !(root || sudo) || !onPath('apt-get')) {
  console.error(`setup: missing system packages:\n${list(need)}\n`);
  if (!checkOnly) {
    console.error(onPath('apt-get')
      ? 'setup: not root (and no terminal for sudo), so not installing them; run:'
      : 'setup: no apt-get here (these are Debian\'s names; install the same tools with your system\'s packages):');
  } else {
    console.error('install them with:');
  }
  console.error(`\n  ${installLine(names)}\n`);
  process.exit(1);
}
console.log(`setup: installing ${names.join(' ')}${sudo ? ' (through sudo)' : ''}`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
for (const args of [['update', '-q'], ['install', '-y', '-q', '--no-install-recommends', ...names]]) {
  const r = sudo
    ? spawnSync('sudo', ['DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args], { stdio: 'inherit' })
    : spawnSync('apt-get', args, { stdio: 'inherit', env });
  if (r.status !== 0) {
    console.error(`setup: apt-get ${args[0]} failed (${r.error ? r.error.message : `exit ${r.status ?? r.signal}`})`);
    process.exit(1);
  }
}
const still = missing(groups);
if (still.length > 0) {
  console.error(`setup: installed, but still not found (PATH?):\n${list(still)}`);
  process.exit(1);
}
console.log('setup: done');
