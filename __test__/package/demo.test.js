'use strict';
// npm start: the showcase server answers a real client, serves its page,
// /stats and /metrics on the WebSocket's own port, and stops on SIGTERM
// (the page in a real browser: showcase.test.js).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn } = require('node:child_process');
const WebSocket = require('ws');
const { waitFor } = require('../helpers/raw');

test('the demo server (examples/server.js) welcomes a client, serves HTTP on the same port, and exits cleanly', async () => {
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'examples', 'server.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '1' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    await waitFor(() => /listening on ws:\/\/127\.0\.0\.1:(\d+)/.test(out), 10000, 'the demo to listen');
    const port = /listening on ws:\/\/127\.0\.0\.1:(\d+)/.exec(out)[1];
    assert.match(out, new RegExp(`page on http://127\\.0\\.0\\.1:${port}/`));
    const ws = new WebSocket(`ws://127.0.0.1:${port}/?topic=room`);
    const first = await new Promise((resolve, reject) => { ws.once('message', (d) => resolve(d.toString())); ws.once('error', reject); });
    assert.equal(first, 'welcome to room');
    // What a client sends is published to its topic, itself included.
    const echo = new Promise((resolve) => ws.once('message', (d) => resolve(d.toString())));
    ws.send('hello room');
    assert.equal(await echo, 'hello room');
    // The page, its numbers and the metrics, through node:http on the same port.
    const page = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(await page.text(), /<body data-ws-port="">/);
    let stats;
    for (const start = Date.now(); Date.now() - start < 5000; await new Promise((r) => setTimeout(r, 100))) {
      stats = await (await fetch(`http://127.0.0.1:${port}/stats`)).json();
      if (stats.samples.at(-1).connections === 1) break;
    }
    assert.equal(stats.threads, 1);
    assert.equal(stats.samples.at(-1).connections, 1, 'the client shows in /stats within 5 s');
    assert.ok(stats.samples.length <= 60);
    assert.ok(stats.samples.at(-1).allocated > 0);
    assert.match(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(), /^symphony_connections\{thread="0"\} 1$/m);
    assert.equal((await fetch(`http://127.0.0.1:${port}/nope`)).status, 404);
    const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const closed = new Promise((resolve) => ws.once('close', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await closed, 1001);
    assert.deepEqual(await exited, { code: 0, signal: null });
  } finally {
    child.kill('SIGKILL');
  }
});

test('the demo over wss:// and the page over https:// (TLS_CERT/TLS_KEY); SIGHUP reloads the certificate files for both', async () => {
  const fs = require('node:fs');
  const os = require('node:os');
  const tls = require('node:tls');
  const https = require('node:https');
  const { pki } = require('../helpers/pki');
  const p = pki();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'symphony-demo-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  fs.writeFileSync(cert, p.a.cert);
  fs.writeFileSync(key, p.a.key);
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'examples', 'server.js')], {
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', THREADS: '1', TLS_CERT: cert, TLS_KEY: key },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    // A TLS socket cannot be handed over: two ports, symphony's own TLS
    // listener for wss:// (on PORT, as before) and Node's https for the page.
    const line = /listening on wss:\/\/127\.0\.0\.1:(\d+)\/\?topic=ticker .*page on https:\/\/127\.0\.0\.1:(\d+)\//;
    await waitFor(() => line.test(out), 10000, 'the demo to listen');
    const [, port, pagePort] = line.exec(out);
    assert.notEqual(port, pagePort);
    const get = (pathname) => new Promise((resolve, reject) => {
      https.get({ port: pagePort, host: '127.0.0.1', path: pathname, ca: p.ca, servername: 'localhost' }, (res) => {
        let body = '';
        res.on('data', (d) => { body += d; });
        res.on('end', () => resolve(body));
      }).once('error', reject);
    });
    assert.match(await get('/'), new RegExp(`<body data-ws-port="${port}">`), 'the page knows the wss:// port');
    assert.equal(JSON.parse(await get('/stats')).threads, 1);
    const cn = (to = port) => new Promise((resolve, reject) => {
      const s = tls.connect({ port: to, host: '127.0.0.1', ca: p.ca, servername: 'localhost' }, () => {
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
    assert.equal(await cn(pagePort), 'symphony-b', 'the page\'s certificate too');
    // A bad file keeps the certificate being served.
    fs.writeFileSync(key, p.strayKey);
    child.kill('SIGHUP');
    await waitFor(() => /reload failed, still serving the old certificate: .*does not match/.test(out), 10000, 'the failed reload');
    assert.equal(await cn(), 'symphony-b');
    assert.equal(await cn(pagePort), 'symphony-b');
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
