'use strict';
// One source of truth: client/symphony-client.cjs is what
// scripts/client-cjs.js makes from the .mjs (never edited by hand), and the
// two give the same API. The .mjs is browser-ready: no import of anything.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { generate, mjsPath, cjsPath } = require('../../scripts/client-cjs');

test('the committed .cjs is what scripts/client-cjs.js generates from the .mjs', () => {
  const want = generate(fs.readFileSync(mjsPath, 'utf8'));
  assert.ok(fs.readFileSync(cjsPath, 'utf8') === want, 'client/symphony-client.cjs is out of date: run node scripts/client-cjs.js');
});

test('the generator refuses what it cannot convert mechanically', () => {
  assert.throws(() => generate("import x from 'y';\nexport const a = 1;\n"), /only "export class\|function\|const NAME"/);
  assert.throws(() => generate('export default 1;\n'), /only/);
  assert.throws(() => generate('const a = 1;\n'), /exports nothing/);
});

test('the .mjs is one self-contained file: no import, no require, no Node built-in', () => {
  const src = fs.readFileSync(mjsPath, 'utf8');
  assert.doesNotMatch(src, /^\s*import\b/m);
  assert.doesNotMatch(src, /\bimport\s*\(/);
  assert.doesNotMatch(src, /\brequire\s*\(/);
  assert.doesNotMatch(src, /\b(process|Buffer|__dirname|module\.exports)\b/);
});

test('CommonJS and ES module: the same exports, the same API', async () => {
  const cjs = require('symphony-ws/client');
  const esm = await import('symphony-ws/client');
  const names = (m) => Object.keys(m).filter((k) => k !== 'default').sort();
  assert.deepEqual(names(cjs), ['AskError', 'PROTOCOL', 'PROTOCOL_V2', 'Subscription', 'SymphonyClient', 'connect']);
  assert.deepEqual(names(esm), names(cjs));
  assert.equal(esm.PROTOCOL, 'symphony.v1');
  assert.equal(cjs.PROTOCOL, esm.PROTOCOL);
  const methods = (C) => {
    const out = [];
    for (let p = C.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
      out.push(...Object.getOwnPropertyNames(p).filter((n) => n !== 'constructor' && !n.startsWith('_')));
    }
    return out.sort();
  };
  assert.deepEqual(methods(esm.SymphonyClient), methods(cjs.SymphonyClient));
  assert.deepEqual(methods(cjs.SymphonyClient), ['close', 'off', 'on', 'once', 'positions', 'publish', 'request', 'send', 'state',
    'stats', 'subscribe', 'subscriptions', 'transport', 'transportReason', 'url'].sort());
  assert.deepEqual(methods(esm.Subscription), methods(cjs.Subscription));
  assert.deepEqual(methods(cjs.Subscription), ['off', 'on', 'once', 'state', 'unsubscribe']);
  // package.json's "exports" resolve to the two files.
  assert.equal(require.resolve('symphony-ws/client'), cjsPath);
  assert.equal(typeof cjs.connect, 'function');
  assert.equal(typeof esm.connect, 'function');
});
