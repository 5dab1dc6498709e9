'use strict';
// Strict close ordering (what Autobahn|Testsuite's --strict asks): messages
// that arrived before a protocol error or the client's close frame reach JS
// first, and what JS sends while handling them goes out before our close
// frame; a stuck JS thread cannot keep such a socket open (the wait is
// bounded). And invalid UTF-8 fails the connection as soon as its bytes
// arrive, also inside a frame still arriving in pieces.
const test = require('node:test');
const assert = require('node:assert/strict');
const { startServer, closeAll } = require('../helpers/server');
const { open, frame, parseFrames, closeFrom, waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

/** An echo server (the 'message' handler replies at once). */
async function echoServer(options) {
  const s = await startServer(options);
  s.server.on('message', (id, data, isBinary) => s.server.send(id, data, { binary: isBinary }));
  return s;
}

/** The frames a raw client got until the server's close frame, as [opcode, text]. */
async function framesUntilClose(st) {
  await closeFrom(st);
  return parseFrames(st.data).map((f) => [f.opcode, f.opcode === 8 ? f.payload.readUInt16BE(0) : f.payload.toString()]);
}

test('a message before a protocol error is echoed before the 1002 close', async () => {
  const { port } = await echoServer();
  const cases = [
    ['a reserved opcode', frame(3, 'x')],
    ['an unmasked frame', frame(1, 'x', { mask: false })],
    ['a fragmented ping', frame(9, 'x', { fin: false })],
    ['a continuation without a start', frame(0, 'x')],
    ['RSV bits without an extension', frame(1, 'x', { rsv: 4 })],
  ];
  for (const [what, bad] of cases) {
    const st = await open(port);
    st.sock.write(Buffer.concat([frame(1, 'first'), frame(2, 'second'), bad, frame(9, 'after')]));
    assert.deepEqual(await framesUntilClose(st), [[1, 'first'], [2, 'second'], [8, 1002]], what);
    await waitFor(() => st.ended, 5000, `${what}: the socket closed`);
  }
});

test('a message before invalid UTF-8 or an oversized message is echoed before the close', async () => {
  const { port } = await echoServer({ maxPayload: 1000 });
  const st = await open(port);
  st.sock.write(Buffer.concat([frame(1, 'ok'), frame(1, Buffer.from([0xc3, 0x28]))]));
  assert.deepEqual(await framesUntilClose(st), [[1, 'ok'], [8, 1007]]);
  const st2 = await open(port);
  st2.sock.write(Buffer.concat([frame(1, 'ok'), frame(2, Buffer.alloc(1001))]));
  assert.deepEqual(await framesUntilClose(st2), [[1, 'ok'], [8, 1009]]);
});

test('the client\'s close after its messages: the replies, then the close echo', async () => {
  const { server, port } = await echoServer();
  const events = [];
  server.on('message', (id, data) => events.push(`message ${data}`));
  server.on('close', (id, code) => events.push(`close ${code}`));
  const st = await open(port);
  const close = Buffer.from([0x03, 0xe8, ...Buffer.from('bye')]); // 1000 "bye"
  st.sock.write(Buffer.concat([frame(1, 'one'), frame(1, 'two'), frame(8, close)]));
  assert.deepEqual(await framesUntilClose(st), [[1, 'one'], [1, 'two'], [8, 1000]]);
  await waitFor(() => events.length === 3, 5000, 'the close event');
  assert.deepEqual(events, ['message one', 'message two', 'close 1000']);
  // Without a message before it the close is answered at once, as always.
  const st2 = await open(port);
  st2.sock.write(frame(8, Buffer.from([0x0f, 0xa0])));
  assert.deepEqual(await framesUntilClose(st2), [[8, 4000]]);
});

test('an empty close frame (no code: 1005) is echoed empty, at once and after the replies', async () => {
  const { server, port } = await echoServer();
  const codes = [];
  server.on('close', (id, code) => codes.push(code));
  for (const before of [[], [frame(1, 'one')]]) {
    const st = await open(port);
    st.sock.write(Buffer.concat([...before, frame(8)]));
    await closeFrom(st);
    const frames = parseFrames(st.data).map((f) => [f.opcode, f.payload.length ? f.payload.toString() : '']);
    assert.deepEqual(frames, [...(before.length ? [[1, 'one']] : []), [8, '']]);
  }
  await waitFor(() => codes.length === 2, 5000, 'the close events');
  assert.deepEqual(codes, [1005, 1005]);
});

test('a stuck JS thread: the close does not wait for it beyond the bound, and a late reply is refused', async () => {
  const { server, port } = await startServer();
  const results = [];
  server.on('message', (id, data) => {
    const until = Date.now() + 3000; // longer than the wait for JS (1 s, checked once a second)
    while (Date.now() < until) { /* a stuck handler */ }
    results.push(server.send(id, data));
  });
  const st = await open(port);
  st.sock.write(Buffer.concat([frame(1, 'stuck'), frame(3, 'bad')]));
  await waitFor(() => results.length === 1, 10000, 'the handler');
  assert.equal(results[0], false, 'the connection was closed while JS was stuck');
  assert.deepEqual(await framesUntilClose(st), [[8, 1002]]);
});

test('invalid UTF-8 fails the connection as soon as it arrives, inside a frame still arriving', async () => {
  const { server, port } = await startServer();
  const got = [];
  server.on('message', (id, data) => got.push(data.toString()));
  // A 200-byte text frame of which only the first 20 bytes are sent; byte 10 is invalid.
  const payload = Buffer.alloc(200, 'a');
  payload[10] = 0xff;
  const whole = frame(1, payload);
  const st = await open(port);
  st.sock.write(whole.subarray(0, 6 + 20)); // header (2 + 4 mask) + 20 payload bytes
  assert.deepEqual(await closeFrom(st), { code: 1007, reason: 'invalid UTF-8 in text message' });
  // The same in a continuation frame of a fragmented text message, and in a
  // sequence cut between frames (valid so far: no close).
  const st2 = await open(port);
  const cont = frame(0, payload);
  st2.sock.write(Buffer.concat([frame(1, 'héllo ', { fin: false }), cont.subarray(0, 6 + 20)]));
  assert.deepEqual(await closeFrom(st2), { code: 1007, reason: 'invalid UTF-8 in text message' });
  const st3 = await open(port);
  const euro = Buffer.from('x€y'); // e2 82 ac in the middle
  const f3 = frame(1, euro);
  st3.sock.write(f3.subarray(0, 6 + 2)); // 'x' and the first byte of '€'
  await new Promise((r) => setTimeout(r, 200));
  assert.equal(parseFrames(st3.data).length, 0, 'a valid prefix is not an error');
  st3.sock.write(f3.subarray(6 + 2));
  await waitFor(() => got.includes('x€y'), 5000, 'the message whole');
  st3.sock.destroy();
});
