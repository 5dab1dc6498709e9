'use strict';
// A real browser: headless Chromium (Debian's package, which .ci/run installs)
// loads a page from a local http server and opens a WebSocket to a symphony
// server with compression on. permessage-deflate must be negotiated, every
// message either way must arrive byte for byte, and the server's counters must
// show that it really compressed and inflated. Fails (does not skip) when
// chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const crypto = require('node:crypto');
const { launch } = require('./helpers/chromium');
const { html } = require('./helpers/browser-page');
const { startServer, closeAll } = require('./helpers/server');
const { waitFor } = require('./helpers/raw');

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');
const T = { timeout: 20000 };

/** JSON of about `size` bytes, with non-ASCII text in it. */
function json(size) {
  const rows = [];
  for (let i = 0; JSON.stringify(rows).length < size; i++) {
    rows.push({ id: i, sym: `SYM${i % 97}`, px: 100 + (i * 7919 % 1000) / 100, note: 'café €5 ✓' });
  }
  return JSON.stringify(rows);
}

let web, browser, page, server, url, id;
const echoes = []; // { data, isBinary } of every message event, in order

test.before(async () => {
  web = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(html);
  });
  await new Promise((resolve) => web.listen(0, '127.0.0.1', resolve));
  ({ server, url } = await startServer({ compression: true, maxPayload: 4 << 20 }));
  server.on('message', (conn, data, isBinary) => echoes.push({ conn, data, isBinary }));
  browser = await launch();
  page = await browser.newPage(`http://127.0.0.1:${web.address().port}/`);
});

test.after(async () => {
  if (browser) await browser.close();
  await closeAll();
  if (web) await new Promise((resolve) => web.close(resolve));
});

test('Chromium offers permessage-deflate and accepts the server\'s answer', T, async () => {
  const sent = page.record('Network.webSocketWillSendHandshakeRequest');
  const answered = page.record('Network.webSocketHandshakeResponseReceived');
  await page.send('Network.enable');
  const opened = new Promise((resolve) => server.once('open', resolve));
  const info = await page.evaluate(`open(${JSON.stringify(`${url}/`)})`);
  id = await opened;
  assert.ok(server.subscribe(id, 'browser'));

  assert.equal(sent.length, 1, 'one handshake seen by DevTools');
  assert.match(sent[0].request.headers['Sec-WebSocket-Extensions'], /^permessage-deflate\b/);
  assert.equal(answered[0].response.headers['Sec-WebSocket-Extensions'],
    'permessage-deflate; server_no_context_takeover; client_no_context_takeover');
  assert.equal(info.extensions, 'permessage-deflate; server_no_context_takeover; client_no_context_takeover');
  assert.equal(server.stats().deflateConnections, 1);
});

test('published and sent messages arrive byte for byte, and come back the same', T, async () => {
  // packs: worth compressing (the 20 B one is too short, random bytes do not shrink).
  const msgs = [
    { data: 'short: 20 B, as is.!', binary: false, packs: false },
    { data: json(600), binary: false, packs: true },
    { data: json(64 << 10), binary: false, packs: true },
    { data: `${'0123456789abcdef'.repeat(1 << 16).slice(1)}é`, binary: false, packs: true }, // 1 MiB + 1 B of UTF-8
    { data: crypto.randomBytes(64 << 10), binary: true, packs: false },
    { data: Buffer.alloc(256 << 10, 'compressible bytes '), binary: true, packs: true },
  ];
  assert.equal(Buffer.byteLength(msgs[0].data), 20);
  const before = server.stats();
  for (const m of msgs) assert.equal(server.publish('browser', m.data, { binary: m.binary }), 1);
  const direct = { data: json(10 << 10), binary: false, packs: true };
  assert.ok(server.send(id, direct.data));
  msgs.push(direct);

  const got = await page.evaluate(`take(${msgs.length})`);
  assert.deepEqual(got, msgs.map((m) => ({ binary: m.binary, length: Buffer.byteLength(m.data), sha256: sha256(m.data) })),
    'what the page received (type, length, SHA-256)');
  await waitFor(() => echoes.length >= msgs.length, 10000, 'the page\'s echoes');
  assert.equal(echoes.length, msgs.length);
  msgs.forEach((m, i) => {
    assert.equal(echoes[i].conn, id);
    assert.equal(echoes[i].isBinary, m.binary, `echo ${i}: type`);
    assert.ok(echoes[i].data.equals(Buffer.from(m.data)), `echo ${i}: bytes`);
  });
  echoes.length = 0;

  const after = server.stats();
  assert.ok(after.compressed - before.compressed >= msgs.filter((m) => m.packs).length,
    'the compressible messages were compressed');
  assert.ok(after.compressBytesOut - before.compressBytesOut < (after.compressBytesIn - before.compressBytesIn) / 4,
    'and shrank');
  assert.ok(after.inflated - before.inflated >= 4, 'Chromium compressed its echoes of the big ones');
});

test('messages the page sends arrive byte for byte, inflated', T, async () => {
  const big = `${'{"op":"order","qty":12,"note":"naïve"} '.repeat(5300)}`.slice(0, 200 << 10);
  const bigBytes = Buffer.alloc(200 << 10, 'binary but compressible ');
  const small = crypto.randomBytes(16);
  const before = server.stats();
  await page.evaluate(`sendText('hi'); sendBase64('${small.toString('base64')}'); `
    + `sendText(${JSON.stringify(big)}); sendBase64('${bigBytes.toString('base64')}')`);
  await waitFor(() => echoes.length >= 4, 10000, 'the page\'s messages');
  await new Promise((resolve) => setTimeout(resolve, 50)); // anything extra would show now
  assert.deepEqual(echoes.map((e) => [e.isBinary, e.data.length]),
    [[false, 2], [true, 16], [false, Buffer.byteLength(big)], [true, 200 << 10]]);
  assert.equal(echoes[0].data.toString(), 'hi');
  assert.ok(echoes[1].data.equals(small));
  assert.equal(echoes[2].data.toString(), big);
  assert.ok(echoes[3].data.equals(bigBytes));

  const after = server.stats();
  assert.ok(after.inflated - before.inflated >= 2, 'the two 200 KiB messages were inflated');
  const wire = after.inflateBytesIn - before.inflateBytesIn;
  assert.ok(wire > 0 && wire < (400 << 10) / 20, `they came compressed (${wire} B on the wire)`);
  assert.equal(after.protocolErrors, 0);
});

test('the connection is still open, and closing the server closes it with 1001', T, async () => {
  assert.equal(await page.evaluate('ws.readyState'), 1);
  await closeAll();
  const closed = await page.evaluate(`new Promise((resolve) => {
    if (ws.readyState === WebSocket.CLOSED) resolve(closed);
    else ws.addEventListener('close', () => resolve(closed));
  })`);
  assert.equal(closed.code, 1001);
});
