'use strict';
// Every bad input a stranger can send, over a raw socket: each gets its exact
// answer, and a healthy connection opened afterwards still works.
const test = require('node:test');
const assert = require('node:assert/strict');
const { Server } = require('../..');
const { startServer, healthy, closeAll } = require('../helpers/server');
const { connect, open, request, frame, closeFrom, waitFor, statusOf, parseFrames } = require('../helpers/raw');

test.afterEach(closeAll);

// One server for the many short cases (not closed between tests).
let shared;
test.before(async () => {
  const server = new Server({ host: '127.0.0.1', threads: 2, maxPayload: 1024, handshakeTimeout: 1, maxHeaderSize: 2048 });
  const { port } = await server.listen();
  shared = { server, port, url: `ws://127.0.0.1:${port}` };
});
test.after(async () => { await shared.server.close(); });

async function httpStatus(raw) {
  const st = await connect(shared.port);
  st.sock.write(raw);
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0, 5000, 'a response');
  const head = st.data.toString('latin1');
  await waitFor(() => st.ended, 5000, 'the server to close the socket');
  return { status: statusOf(head), head };
}

const handshakeCases = [
  ['missing Sec-WebSocket-Key', request('/', { 'Sec-WebSocket-Key': null }), 400],
  ['Sec-WebSocket-Key not 16 bytes of base64', request('/', { 'Sec-WebSocket-Key': 'c2hvcnQ=' }), 400],
  ['Sec-WebSocket-Key not base64', request('/', { 'Sec-WebSocket-Key': '!!!!!!!!!!!!!!!!!!!!!!==' }), 400],
  ['missing Sec-WebSocket-Version', request('/', { 'Sec-WebSocket-Version': null }), 400],
  ['missing Host', request('/', { Host: null }), 400],
  ['POST instead of GET', request('/').replace(/^GET/, 'POST'), 405],
  ['request line over maxHeaderSize', `GET /${'a'.repeat(3000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414],
  ['HTTP/1.0 request', request('/').replace('HTTP/1.1', 'HTTP/1.0'), 505],
  ['headers over maxHeaderSize', request('/', { 'X-Big': 'a'.repeat(3000) }), 431],
  ['too many headers', request('/', Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`X-H${i}`, 'v']))), 431],
  ['garbage instead of HTTP', 'HELLO\x00\x01 WORLD\r\n\r\n', 400],
  ['bare LF line endings', request('/').replace(/\r\n/g, '\n'), 400],
];

for (const [name, raw, want] of handshakeCases) {
  test(`handshake: ${name} -> ${want}`, async () => {
    const r = await httpStatus(raw);
    assert.equal(r.status, want, r.head);
    assert.equal(await healthy(shared.server, shared.url), 'still here');
  });
}

test('handshake: wrong version -> 426 with Sec-WebSocket-Version: 13', async () => {
  const r = await httpStatus(request('/', { 'Sec-WebSocket-Version': '8' }));
  assert.equal(r.status, 426);
  assert.match(r.head, /\r\nSec-WebSocket-Version: 13\r\n/i);
  assert.equal(await healthy(shared.server, shared.url), 'still here');
});

test('handshake: an incomplete request is closed after handshakeTimeout', async () => {
  const before = shared.server.stats().timeouts;
  const st = await connect(shared.port);
  st.sock.write('GET / HTTP/1.1\r\nHost: x\r\n'); // never finished
  const t0 = Date.now();
  await waitFor(() => st.ended, 5000, 'the slowloris socket to be closed');
  assert.ok(Date.now() - t0 >= 500, 'closed too early');
  assert.equal(st.data.length, 0, 'no response is owed to an incomplete request');
  assert.ok(shared.server.stats().timeouts > before);
  assert.equal(await healthy(shared.server, shared.url), 'still here');
});

const frameCases = [
  ['unmasked client frame', () => frame(1, 'hi', { mask: false }), 1002],
  ['reserved opcode 3', () => frame(3, 'x'), 1002],
  ['reserved control opcode 0xB', () => frame(0xb, 'x'), 1002],
  ['RSV1 set', () => frame(1, 'x', { rsv: 4 }), 1002],
  ['control frame over 125 bytes', () => frame(9, Buffer.alloc(126)), 1002],
  ['fragmented control frame', () => frame(9, 'p', { fin: false }), 1002],
  ['continuation without a start', () => frame(0, 'x'), 1002],
  ['new data frame inside a fragmented message', () => Buffer.concat([frame(1, 'a', { fin: false }), frame(1, 'b')]), 1002],
  ['invalid UTF-8 in a text message', () => frame(1, Buffer.from([0x68, 0xc3, 0x28])), 1007],
  ['invalid UTF-8 across fragments', () => Buffer.concat([frame(1, Buffer.from([0xe2, 0x82]), { fin: false }), frame(0, Buffer.from([0x28]))]), 1007],
  ['UTF-8 surrogate (ED A0 80)', () => frame(1, Buffer.from([0xed, 0xa0, 0x80])), 1007],
  ['message over maxPayload', () => frame(2, Buffer.alloc(1025)), 1009],
  ['fragments adding up over maxPayload', () => Buffer.concat([frame(2, Buffer.alloc(600), { fin: false }), frame(0, Buffer.alloc(600))]), 1009],
  ['close frame with a 1-byte payload', () => frame(8, Buffer.from([3])), 1002],
  ['close code 1005 on the wire', () => frame(8, Buffer.from([0x03, 0xed])), 1002],
  ['close code 999', () => frame(8, Buffer.from([0x03, 0xe7])), 1002],
  ['close reason not UTF-8', () => frame(8, Buffer.from([0x03, 0xe8, 0xff])), 1007],
];

for (const [name, make, want] of frameCases) {
  test(`frame: ${name} -> ${want}`, async () => {
    const closes = [];
    const onClose = (id, code) => closes.push(code);
    shared.server.on('close', onClose);
    const st = await open(shared.port);
    assert.equal(statusOf(st.head), 101);
    st.sock.write(make());
    const c = await closeFrom(st);
    assert.equal(c.code, want, `reason: ${c.reason}`);
    assert.ok(c.reason.length > 0, 'the close frame says why');
    await waitFor(() => st.ended, 5000, 'the socket to be closed');
    await waitFor(() => closes.length === 1, 5000, 'the close event');
    assert.equal(closes[0], want);
    shared.server.off('close', onClose);
    assert.equal(await healthy(shared.server, shared.url), 'still here');
  });
}

test('frame: a valid close gets the same code back and the socket closed', async () => {
  const st = await open(shared.port);
  st.sock.write(frame(8, Buffer.from([0x0f, 0xa1, 0x6f, 0x6b]))); // 4001 "ok"
  const c = await closeFrom(st);
  assert.equal(c.code, 4001);
  await waitFor(() => st.ended, 5000, 'the socket to be closed');
});

test('frame: a frame split byte by byte is still understood', async () => {
  const got = [];
  const onMsg = (id, data) => got.push(data.toString());
  shared.server.on('message', onMsg);
  const st = await open(shared.port);
  const bytes = Buffer.concat([frame(1, 'split'), frame(2, Buffer.alloc(300, 1))]);
  for (const b of bytes) {
    st.sock.write(Buffer.from([b]));
    await new Promise((r) => setImmediate(r));
  }
  await waitFor(() => got.length === 2, 5000, 'both messages');
  assert.equal(got[0], 'split');
  assert.equal(got[1].length, 300);
  shared.server.off('message', onMsg);
  st.sock.destroy();
});

test('a client that vanishes without FIN is found by the idle timeout', async () => {
  const { server, port } = await startServer({ idleTimeout: 2 });
  const closes = [];
  server.on('close', (id, code) => closes.push(code));
  const st = await open(port);
  // A raw client never answers pings: the server pings at 1 s, gives up at 2 s.
  await waitFor(() => parseFrames(st.data).some((f) => f.opcode === 9), 5000, 'a ping');
  const c = await closeFrom(st, 5000);
  assert.equal(c.code, 1001);
  await waitFor(() => closes.length === 1, 5000, 'close event');
  assert.equal(closes[0], 1001);
  assert.equal(server.stats().timeouts, 1);
  st.sock.destroy();
});

for (const policy of ['drop', 'close']) {
  test(`slow consumer (${policy}): memory stays under the cap, counters say what happened`, async () => {
    const { allocator } = require('../..');
    const cap = 256 * 1024;
    const { server, port } = await startServer({ maxBackpressure: cap, slowConsumer: policy, closeTimeout: 1, threads: 1 });
    const opens = [];
    const closes = [];
    server.on('open', (id) => opens.push(id));
    server.on('close', (id, code) => closes.push(code));
    const st = await open(port);
    st.sock.pause(); // never reads: the kernel buffers fill, then our queue
    await waitFor(() => opens.length === 1);
    server.subscribe(opens[0], 'firehose');
    const base = allocator.stats().allocated;
    const payload = Buffer.alloc(16 * 1024, 0x61);
    let peak = 0;
    for (let i = 0; i < 2000; i++) {
      server.publish('firehose', payload);
      if (i % 100 === 99) {
        await new Promise((r) => setTimeout(r, 5));
        peak = Math.max(peak, allocator.stats().allocated - base);
      }
    }
    // Every publish handled by the IO thread: each one queued (messagesOut)
    // or dropped; or, for 'close', the connection closed for it.
    await waitFor(() => {
      const st = server.stats();
      peak = Math.max(peak, allocator.stats().allocated - base);
      return policy === 'drop' ? st.messagesOut + st.dropped === 2000 : st.slowCloses === 1;
    }, 10000, 'the IO thread to handle the publishes');
    peak = Math.max(peak, allocator.stats().allocated - base);
    const s = server.stats();
    // 2000 x 16 KiB = 32 MiB offered; the queue may hold at most cap (+ one
    // message), plus messages in flight in the command queue.
    assert.ok(peak < cap + 8 * 1024 * 1024, `native memory grew ${peak} bytes`);
    if (policy === 'drop') {
      assert.ok(s.dropped > 1000, `dropped ${s.dropped}`);
      assert.equal(s.slowCloses, 0);
      assert.equal(s.connections, 1);
      // Once the client reads again, its queue empties and 'drain' says so.
      const drained = new Promise((resolve) => server.once('drain', resolve));
      st.sock.resume();
      assert.equal(await drained, opens[0]);
    } else {
      assert.equal(s.slowCloses, 1);
      await waitFor(() => closes.length === 1, 5000, 'the slow consumer to be closed');
      assert.equal(closes[0], 1008);
      assert.equal(server.stats().connections, 0);
    }
    st.sock.destroy();
  });
}

// A per-process descriptor limit (ulimit -n) is POSIX's: Windows has none
// for sockets (net/sy_sock.h: no spare descriptor there).
const FD_LIMIT = process.platform === 'win32' ? 'Windows has no per-process descriptor limit to run out of' : false;

test('out of file descriptors: extra connections are closed at once, counted, and the server recovers', { timeout: 60000, skip: FD_LIMIT }, async () => {
  const { spawn } = require('node:child_process');
  const path = require('node:path');
  const root = path.resolve(__dirname, '..', '..');
  const code = `
    const { Server } = require(${JSON.stringify(root)});
    const s = new Server({ host: '127.0.0.1', threads: 2 });
    s.listen().then(({ port }) => console.log(JSON.stringify({ port })));
    process.stdin.on('data', (d) => {
      if (String(d).includes('stats')) console.log(JSON.stringify(s.stats()));
      else s.close().then(() => process.exit(0));
    });
  `;
  // A soft limit of 80 descriptors for the server process only.
  const child = spawn('bash', ['-c', `ulimit -n 80 && exec "${process.execPath}" -e '${code.replace(/'/g, "'\\''")}'`],
    { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { lines.push(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); }
  });
  await waitFor(() => lines.length === 1, 10000, 'the child server');
  const { port } = lines[0];
  const socks = [];
  for (let i = 0; i < 120; i++) socks.push(await connect(port));
  await waitFor(() => socks.filter((s) => s.ended).length >= 40, 10000, 'connections over the limit to be closed');
  child.stdin.write('stats\n');
  await waitFor(() => lines.length === 2, 5000, 'stats');
  assert.ok(lines[1].acceptRejects >= 40, `acceptRejects ${lines[1].acceptRejects}`);
  for (const s of socks) s.sock.destroy();
  // Descriptors are free again once the server has seen those sockets
  // close: a real client gets through. Until then a client is closed at
  // once (counted in acceptRejects), so try again until one is served.
  let st;
  for (const end = Date.now() + 10000; ;) {
    st = await open(port);
    if (statusOf(st.head) === 101 || Date.now() > end) break;
    st.sock.destroy();
  }
  assert.equal(statusOf(st.head), 101);
  st.sock.destroy();
  child.stdin.write('close\n');
  await new Promise((r) => child.once('exit', r));
});

test('frames pipelined with the upgrade request: the 101 still comes first, then the close', async () => {
  const st = await connect(shared.port);
  st.sock.write(Buffer.concat([Buffer.from(request('/')), frame(1, 'x', { mask: false })]));
  await waitFor(() => st.ended, 5000, 'the server to close');
  const end = st.data.indexOf('\r\n\r\n');
  assert.ok(end > 0, 'a response head');
  assert.equal(statusOf(st.data.subarray(0, end).toString('latin1')), 101);
  const frames = parseFrames(st.data.subarray(end + 4));
  assert.equal(frames.length, 1);
  assert.equal(frames[0].opcode, 8);
  assert.equal(frames[0].payload.readUInt16BE(0), 1002);
});

test('maxConnections: an upgrade over the limit gets 503; the others are served', async () => {
  const { server, port, url } = await startServer({ maxConnections: 1 });
  const first = await open(port);
  assert.equal(statusOf(first.head), 101);
  const r = await connect(port);
  r.sock.write(request('/'));
  await waitFor(() => r.ended, 5000, 'the refused socket to close');
  assert.equal(statusOf(r.data.toString('latin1')), 503);
  first.sock.destroy();
  await waitFor(() => server.stats().connections === 0, 5000, 'the first connection to close');
  assert.equal(await healthy(server, url), 'still here');
});
