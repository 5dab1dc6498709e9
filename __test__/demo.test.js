'use strict';
// npm start: the demo server answers a real client and stops on SIGTERM.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const WebSocket = require('ws');
const { waitFor } = require('./helpers/raw');

test('the demo server (examples/server.js) welcomes a client and exits cleanly', async () => {
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'examples', 'server.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '1' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  await waitFor(() => /listening on ws:\/\/127\.0\.0\.1:(\d+)/.test(out), 10000, 'the demo to listen');
  const port = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(out)[1];
  const ws = new WebSocket(`ws://127.0.0.1:${port}/?topic=room`);
  const first = await new Promise((resolve, reject) => { ws.once('message', (d) => resolve(d.toString())); ws.once('error', reject); });
  assert.equal(first, 'welcome to room');
  // What a client sends is published to its topic, itself included.
  const echo = new Promise((resolve) => ws.once('message', (d) => resolve(d.toString())));
  ws.send('hello room');
  assert.equal(await echo, 'hello room');
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
  child.kill('SIGTERM');
  assert.equal(await closed, 1001);
  assert.deepEqual(await exited, { code: 0, signal: null });
});
