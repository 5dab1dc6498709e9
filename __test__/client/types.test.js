'use strict';
// client/symphony-client.d.ts compiles as users write against it: a page
// (ES module, DOM library) and a Node CommonJS project with ws (no DOM), both
// importing 'symphony-ws/client' by name, strict (tsc --noEmit).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');
const tsc = require.resolve('typescript/bin/tsc', { paths: [root] });

for (const config of ['tsconfig.json', 'tsconfig.node.json']) {
  test(`types: tsc -p __test__/client/types/${config}`, { timeout: 120000 }, () => {
    const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'types', config)], { cwd: root, encoding: 'utf8' });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  });
}
