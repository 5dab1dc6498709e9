'use strict';
// History costs a connection nothing (docs/history.md, "What it costs": a
// flag in a byte that was padding): a parked plain connection holds the same
// bytes on a server with history on as with it off, measured as
// __test__/protocol/deflate.test.js measures deflate's cost.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');

/** The helper in a child process (a clean heap); resolves to its result. */
function parked(options) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'helpers', 'parked-bytes.js'), JSON.stringify(options)],
      { env: process.env, stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`exit ${code}: ${err}`))));
  });
}

test('a parked plain connection costs the same bytes with history on as off', { timeout: 90000 }, async () => {
  // Both at once: each child measures its own allocator.
  const [off, on] = await Promise.all([parked({}), parked({ history: true })]);
  process.stdout.write(`# allocated per parked connection: ${off.plain.toFixed(0)} B history off, ${on.plain.toFixed(0)} B history on ` +
    `(with deflate: ${off.deflate.toFixed(0)} B, ${on.deflate.toFixed(0)} B)\n`);
  assert.equal(off.deflateConnections, 200);
  assert.equal(on.deflateConnections, 200);
  assert.ok(Math.abs(on.plain - off.plain) <= 8, `${on.plain} vs ${off.plain} B per connection`);
  assert.ok(Math.abs(on.deflate - off.deflate) <= 8, `${on.deflate} vs ${off.deflate} B per connection with deflate`);
});
