'use strict';
// One C format for the core and the binding, written down in .clang-format
// (clang-format 14, Debian's `clang-format`, which .ci/run installs): every
// file of src/ and binding/ is as clang-format leaves it. To fix a file:
// `clang-format -i FILE`.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');

function cFiles(dir) {
  const out = [];
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.[ch]$/.test(e.name)) out.push(p);
    }
  };
  walk(path.join(root, dir));
  return out;
}

/** The files clang-format would change (with the first lines of its complaint). */
function unformatted(files) {
  const r = spawnSync('clang-format', ['--dry-run', '--Werror', ...files], { cwd: root, encoding: 'utf8' });
  if (r.error) throw new Error(`clang-format cannot run (${r.error.code}): install Debian's clang-format (.ci/run does)`);
  const bad = new Set();
  for (const m of r.stderr.matchAll(/^(\S+?):\d+:\d+: (?:error|warning)/gm)) bad.add(path.relative(root, m[1]));
  return { status: r.status, bad: [...bad] };
}

test('.clang-format is there, and every C file of src/ and binding/ follows it', () => {
  assert.ok(fs.existsSync(path.join(root, '.clang-format')));
  const files = [...cFiles('src'), ...cFiles('binding')];
  assert.ok(files.length > 40, `only ${files.length} C files found`);
  const { status, bad } = unformatted(files);
  assert.deepEqual(bad, [], 'run clang-format -i on these');
  assert.equal(status, 0);
});

test('the check fails on a file that does not follow it', () => {
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'sy-format-'));
  try {
    fs.copyFileSync(path.join(root, '.clang-format'), path.join(dir, '.clang-format'));
    const f = path.join(dir, 'bad.c');
    fs.writeFileSync(f, 'int  f( int x ){\nreturn x;}\n');
    const r = spawnSync('clang-format', ['--dry-run', '--Werror', f], { encoding: 'utf8' });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /bad\.c:\d+:\d+/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
