'use strict';
// symphony-ws/client in Node is one copy of the client whether it is
// imported or required: `import` resolves to client/node.mjs, which
// re-exports the CommonJS build's classes, so an AskError from one is
// `instanceof` the other's. A bundler or browser (the "browser" condition)
// gets client/symphony-client.mjs, the one self-contained file.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const root = path.resolve(__dirname, '..', '..');

test('import and require of symphony-ws/client give the same classes (AskError instanceof across both)', async () => {
  const cjs = require('symphony-ws/client');
  const esm = await import('symphony-ws/client');
  for (const name of ['AskError', 'Subscription', 'SymphonyClient', 'connect', 'PROTOCOL', 'PROTOCOL_V2']) {
    assert.equal(esm[name], cjs[name], name);
  }
  const err = new esm.AskError('closed', 'the client was closed');
  assert.ok(err instanceof cjs.AskError);
  assert.ok(new cjs.AskError('closed', 'x') instanceof esm.AskError);
});

test('the "browser" condition resolves symphony-ws/client to the one-file ES module', () => {
  const code = "import('symphony-ws/client').then((m) => console.log(import.meta.resolve('symphony-ws/client'), typeof m.SymphonyClient))";
  const r = spawnSync(process.execPath, ['--conditions=browser', '--input-type=module', '-e', code], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const [url, type] = r.stdout.trim().split(' ');
  assert.equal(url, `file://${path.join(root, 'client', 'symphony-client.mjs')}`);
  assert.equal(type, 'function');
});
