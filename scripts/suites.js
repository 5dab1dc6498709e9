'use strict';
// The node:test suites of __test__/, for scripts/test.js and
// scripts/test-artifacts.js. The suites sit in folders by area
// (__test__/core/, memory/, bus/, ...), so the search recurses, as
// `node --test __test__/` does.

const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const testDir = path.join(root, '__test__');

/** Every suite file matching re (default: *.test.js, *.test.mjs), relative to the root, sorted. */
function suites(re = /\.test\.m?js$/) {
  const out = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (re.test(e.name)) out.push(path.relative(root, p));
    }
  };
  walk(testDir);
  return out.sort();
}

/**
 * Whether a suite (a path relative to the root) loads `module` (a path
 * relative to the root, without its extension): every relative require() or
 * import in it is resolved from the suite's own folder, so a suite in any
 * folder, written with any quotes, is found.
 */
function loads(suite, module) {
  const text = fs.readFileSync(path.join(root, suite), 'utf8');
  const want = path.join(root, module);
  const re = /\b(?:require\s*\(\s*|import\s*\(\s*|from\s+|import\s+)(['"`])(\.{1,2}\/[^'"`]+)\1/g;
  for (const m of text.matchAll(re)) {
    const p = path.resolve(path.dirname(path.join(root, suite)), m[2]);
    if (p === want || p === `${want}.js`) return true;
  }
  return false;
}

module.exports = { suites, loads };
