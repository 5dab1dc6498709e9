'use strict';
// A real browser: headless Chromium (Debian's package, which .ci/run installs)
// loads a page from a local http server and opens a WebSocket to a symphony
// server with compression on. permessage-deflate must be negotiated, every
// message either way must arrive byte for byte, and the server's counters must
// show that it really compressed and inflated. Fails (does not skip) when
// chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const { launch } = require('../helpers/chromium');
const { html, servePage } = require('../helpers/browser-page');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

const sha256 = (b) => crypto.createHash('sha256').update(b).digest('hex');
const T = { timeout: 20000 };
const THRESHOLD = 128; // compression: true's threshold (lib/server.js)

/** after - before, for each numeric counter of stats(). */
function delta(before, after) {
  const d = {};
  for (const k of Object.keys(after)) if (typeof after[k] === 'number') d[k] = after[k] - before[k];
  return d;
}

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
  web = await servePage(html);
  ({ server, url } = await startServer({ compression: true, maxPayload: 4 << 20 }));
  server.on('message', (conn, data, isBinary) => echoes.push({ conn, data, isBinary }));
  browser = await launch();
  page = await browser.newPage(web.url);
});

test.after(async () => {
  if (browser) await browser.close();
  await closeAll();
  if (web) await web.close();
});

test('Chromium offers permessage-deflate and accepts the server\'s answer', T, async () => {
  const sent = page.record('Network.webSocketWillSendHandshakeRequest');
  const answered = page.record('Network.webSocketHandshakeResponseReceived');
  await page.send('Network.enable');
  const opened = new Promise((resolve) => server.once('open', (conn, info) => resolve({ conn, info })));
  const info = await page.evaluate(`open(${JSON.stringify(`${url}/`)})`);
  const open = await opened;
  id = open.conn;
  assert.equal(open.info.compression, true, 'the open event says the connection compresses');
  assert.ok(server.subscribe(id, 'browser'));

  assert.equal(sent.length, 1, 'one handshake seen by DevTools');
  assert.match(sent[0].request.headers['Sec-WebSocket-Extensions'], /^permessage-deflate\b/);
  assert.equal(answered[0].response.headers['Sec-WebSocket-Extensions'],
    'permessage-deflate; server_no_context_takeover; client_no_context_takeover');
  assert.equal(info.extensions, 'permessage-deflate; server_no_context_takeover; client_no_context_takeover');
  assert.equal(server.stats().deflateConnections, 1);
});

test('published and sent messages arrive byte for byte, and come back the same', T, async () => {
  // packs: shrinks when compressed (the 20 B one is under the threshold; random bytes do not).
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

  // The IO thread counts a write's bytes once the write returns, which may
  // be after the page has them: wait until the last write is counted (every
  // frame has a header of 2 bytes at least).
  let d;
  await waitFor(() => {
    d = delta(before, server.stats());
    return d.bytesOut - 20 - d.compressBytesOut >= 2 * msgs.length;
  }, 5000, 'every byte written counted in bytesOut');
  assert.equal(d.messagesOut, msgs.length);
  const packed = msgs.filter((m) => Buffer.byteLength(m.data) >= THRESHOLD);
  assert.equal(packed.length, msgs.length - 1);
  assert.equal(d.compressed, packed.length, 'each message from the threshold up went to the compressor, once');
  assert.equal(d.compressBytesIn, packed.reduce((n, m) => n + Buffer.byteLength(m.data), 0));
  assert.ok(d.compressBytesOut < d.compressBytesIn / 4, `and shrank (${d.compressBytesIn} B to ${d.compressBytesOut} B)`);
  // What went out: the 20 B one as it is, the others as they came out of the
  // compressor (the random bytes kept plain), and a 2-10 B header each.
  const headers = d.bytesOut - 20 - d.compressBytesOut;
  assert.ok(headers >= 2 * msgs.length && headers <= 10 * msgs.length, `${d.bytesOut} B written`);
  assert.equal(d.messagesIn, msgs.length);
  assert.ok(d.inflated >= msgs.filter((m) => m.packs).length, 'Chromium compressed its echoes');
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

  const d = delta(before, server.stats());
  assert.equal(d.messagesIn, 4);
  assert.equal(d.bytesIn, 2 + 16 + Buffer.byteLength(big) + (200 << 10));
  assert.ok(d.inflated >= 2 && d.inflated <= 4, `the two 200 KiB messages were inflated (${d.inflated} inflated)`);
  assert.ok(d.inflateBytesIn > 0 && d.inflateBytesIn < (400 << 10) / 20, `they came compressed (${d.inflateBytesIn} B)`);
  assert.equal(server.stats().protocolErrors, 0);
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
