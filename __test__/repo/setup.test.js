'use strict';
// The two commands on a fresh machine: `npm run setup` (scripts/setup.js)
// installs the system packages of scripts/system-deps.js, the one list that
// .ci/run uses too, or says the line that does; `npm test` (scripts/test.js)
// checks them before anything else and stops at once with the whole list.
// A machine with nothing is stood in for by an empty PATH.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { PACKAGES, installLine } = require('../../scripts/system-deps');

const root = path.resolve(__dirname, '..', '..');
const read = (file) => fs.readFileSync(path.join(root, file), 'utf8');

/** Runs a script of scripts/ with an empty PATH; resolves { status, out }. */
function bare(script, args = []) {
  const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-empty-path-'));
  const child = spawn(process.execPath, [path.join(root, 'scripts', script), ...args], {
    cwd: root, env: { PATH: empty, HOME: os.tmpdir() }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  return new Promise((resolve) => child.once('close', (status) => {
    fs.rmSync(empty, { recursive: true, force: true });
    resolve({ status, out });
  }));
}

const testPkgs = PACKAGES.filter((e) => e.group === 'test').map((e) => e.pkg);
const byCommand = PACKAGES.filter((e) => e.group === 'test' && e.cmds).map((e) => e.pkg);

test('system-deps: one entry per package, each with a reason, a group and a way to tell it is there', () => {
  assert.equal(new Set(PACKAGES.map((e) => e.pkg)).size, PACKAGES.length);
  for (const e of PACKAGES) {
    assert.ok(e.why && ['test', 'ci'].includes(e.group), e.pkg);
    assert.ok((e.cmds && e.cmds.length) || (e.files && e.files.length), `${e.pkg}: no command or file to look for`);
  }
  for (const pkg of ['chromium', 'haproxy', 'redis-server', 'valgrind', 'clang-format']) assert.ok(testPkgs.includes(pkg), pkg);
});

test('.ci/run installs the system packages through scripts/setup.js, not a list of its own', () => {
  const ci = read('.ci/run');
  assert.match(ci, /^node scripts\/setup\.js --all$/m);
  assert.doesNotMatch(ci, /apt-get install/);
  for (const e of PACKAGES) assert.doesNotMatch(ci, new RegExp(`\\b(?:for pkg in|install).*\\b${e.pkg}\\b`), e.pkg);
  assert.equal(JSON.parse(read('package.json')).scripts.setup, 'node scripts/setup.js');
});

test('npm test on a machine without the packages: stops at once with the whole list and the line that installs them', async () => {
  const { status, out } = await bare('test.js');
  assert.equal(status, 1, out);
  assert.doesNotMatch(out, /^=== /m, 'no step started');
  for (const pkg of byCommand) assert.match(out, new RegExp(`^  ${pkg} `, 'm'), `${pkg} is listed`);
  assert.ok(out.includes('npm run setup'), out);
  const line = out.split('\n').find((l) => l.includes('apt-get install'));
  assert.ok(line, out);
  for (const pkg of byCommand) assert.ok(line.split(' ').includes(pkg), `the line installs ${pkg}: ${line}`);
});

test('npm run setup without root or apt-get: lists what is missing and prints the one line, exit 1', async () => {
  const { status, out } = await bare('setup.js');
  assert.equal(status, 1, out);
  const line = out.split('\n').find((l) => l.includes('apt-get install'));
  assert.equal(line.trim(), installLine(PACKAGES.filter((e) => e.group === 'test' && out.includes(`  ${e.pkg} `)).map((e) => e.pkg)));
  for (const pkg of byCommand) assert.ok(line.includes(` ${pkg}`), pkg);
  const all = await bare('setup.js', ['--all', '--check']);
  assert.equal(all.status, 1);
  assert.match(all.out, /^ {2}qemu-user /m, '--all: the gates\' packages too');
});

test('README\'s "Working on symphony" shows npm run setup before npm install and npm test', () => {
  const readme = read('README.md');
  const at = readme.indexOf('## Working on symphony');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at))[1];
  const cmds = block.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter(Boolean);
  assert.deepEqual(cmds.slice(0, 3), ['npm run setup', 'npm install', 'npm test']);
});
