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

test('the demo over wss:// (TLS_CERT/TLS_KEY), and SIGHUP reloads the certificate files', async () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const tls = require('node:tls');
  const { pki } = require('./helpers/pki');
  const p = pki();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-demo-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  fs.writeFileSync(cert, p.a.cert);
  fs.writeFileSync(key, p.a.key);
  const child = spawn(process.execPath, [path.join(__dirname, '..', 'examples', 'server.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '1', TLS_CERT: cert, TLS_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    await waitFor(() => /listening on wss:\/\/127\.0\.0\.1:(\d+)/.test(out), 10000, 'the demo to listen');
    const port = /listening on wss:\/\/127\.0\.0\.1:(\d+)/.exec(out)[1];
    const cn = () => new Promise((resolve, reject) => {
      const s = tls.connect({ port, host: '127.0.0.1', ca: p.ca, servername: 'localhost' }, () => {
        resolve(s.getPeerCertificate().subject.CN);
        s.end();
      });
      s.once('error', reject);
    });
    const ws = new WebSocket(`wss://127.0.0.1:${port}/?topic=room`, { ca: p.ca });
    const first = await new Promise((resolve, reject) => { ws.once('message', (d) => resolve(d.toString())); ws.once('error', reject); });
    assert.equal(first, 'welcome to room');
    assert.equal(await cn(), 'symphony-a');
    fs.writeFileSync(cert, p.b.cert);
    fs.writeFileSync(key, p.b.key);
    child.kill('SIGHUP');
    await waitFor(() => /certificates reloaded/.test(out), 10000, 'the reload');
    assert.equal(await cn(), 'symphony-b');
    // A bad file keeps the certificate being served.
    fs.writeFileSync(key, p.strayKey);
    child.kill('SIGHUP');
    await waitFor(() => /reload failed, still serving the old certificate: .*does not match/.test(out), 10000, 'the failed reload');
    assert.equal(await cn(), 'symphony-b');
    const echo = new Promise((resolve) => ws.once('message', (d) => resolve(d.toString())));
    ws.send('still here');
    assert.equal(await echo, 'still here');
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.kill('SIGTERM');
    assert.deepEqual(await exited, { code: 0, signal: null });
  } finally {
    child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
