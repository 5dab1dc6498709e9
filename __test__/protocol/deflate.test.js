'use strict';
// permessage-deflate (RFC 7692): negotiation as the server answers it, one
// compression per publish shared by every subscriber that negotiated it,
// the frames on the wire (read raw and inflated with Node's zlib), client
// messages compressed as browsers and zlib do, and every bad input a
// stranger can send with compression on: each gets its close code and
// costs the connection beside it nothing. The bomb's memory bound is
// measured in the system testing build (npm test runs this suite there too).
const test = require('node:test');
const assert = require('node:assert/strict');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Server } = require('../..');
const { startServer, client, nextMessage, closed, healthy, closeAll } = require('../helpers/server');
const { open, frame, parseFrames, closeFrom, waitFor } = require('../helpers/raw');
const { binding, isTestingBuild } = require('../helpers/testing');

test.afterEach(closeAll);

const ANSWER = 'permessage-deflate; server_no_context_takeover; client_no_context_takeover';
const extensionOf = (head) => (/\r\nSec-WebSocket-Extensions: ([^\r]*)/i.exec(head) || [])[1] ?? null;

/** A message compressed as a browser does: raw DEFLATE, sync flush, 00 00 ff ff stripped (RFC 7692 7.2.1). */
function browserDeflate(data) {
  const out = zlib.deflateRawSync(data, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
  assert.deepEqual([...out.subarray(-4)], [0, 0, 0xff, 0xff]);
  return out.subarray(0, out.length - 4);
}

/** What a receiver does (7.2.2): append 00 00 ff ff and inflate. */
function receiverInflate(payload) {
  return zlib.inflateRawSync(Buffer.concat([payload, Buffer.from([0, 0, 0xff, 0xff])]),
    { finishFlush: zlib.constants.Z_SYNC_FLUSH });
}

function json(bytes, seed = 1) {
  const rows = [];
  let s = seed;
  while (JSON.stringify(rows).length < bytes) {
    s = (s * 1103515245 + 12345) % 2147483648;
    rows.push({ sym: `S${s % 97}`, px: (s % 100000) / 100, qty: s % 5000, side: s % 2 ? 'buy' : 'sell' });
  }
  return JSON.stringify(rows).slice(0, bytes);
}

test('negotiation: the answer to each offer (declined offers leave the connection open without compression)', async () => {
  const { port } = await startServer({ compression: true });
  const cases = [
    ['permessage-deflate; client_max_window_bits', ANSWER], // what browsers send
    ['permessage-deflate', ANSWER],
    ['permessage-deflate; server_no_context_takeover; client_no_context_takeover', ANSWER],
    ['permessage-deflate; server_max_window_bits=10', `${ANSWER}; server_max_window_bits=10`],
    ['permessage-deflate; server_max_window_bits="9"; client_max_window_bits=12', `${ANSWER}; server_max_window_bits=9`],
    ['x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=7, permessage-deflate', ANSWER],
    ['permessage-deflate; bogus', null],
    ['permessage-deflate; server_max_window_bits', null],
    ['permessage-deflate; server_max_window_bits=16', null],
    ['permessage-deflate; client_no_context_takeover; client_no_context_takeover', null],
    ['deflate-frame', null],
    [null, null],
  ];
  for (const [offer, answer] of cases) {
    const st = await open(port, '/', offer === null ? {} : { 'Sec-WebSocket-Extensions': offer });
    assert.match(st.head, /^HTTP\/1\.1 101 /, `offer ${offer}`);
    assert.equal(extensionOf(st.head), answer, `offer ${offer}`);
    st.sock.destroy();
  }
  // Compression off (the default): never answered.
  const off = await startServer();
  const st = await open(off.port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
  assert.match(st.head, /^HTTP\/1\.1 101 /);
  assert.equal(extensionOf(st.head), null);
  st.sock.destroy();
});

test('one compression per publish, whatever the subscribers and threads; each gets what it negotiated', async () => {
  const { server, url } = await startServer({
    threads: 2,
    compression: { threshold: 64 },
    onUpgrade: (req) => ({ topics: ['t'], compress: !req.url.includes('plain') }),
  });
  const opened = [];
  server.on('open', (id, info) => opened.push(info.compression));
  const deflating = await Promise.all([1, 2, 3, 4].map(() => client(url, undefined, { perMessageDeflate: true })));
  const noOffer = await client(url, undefined, { perMessageDeflate: false });
  const declined = await client(`${url}/plain`, undefined, { perMessageDeflate: true });
  await waitFor(() => opened.length === 6, 5000, 'six opens');
  assert.deepEqual(opened.filter(Boolean).length, 4);
  for (const ws of deflating) assert.match(ws.extensions, /^permessage-deflate/);
  assert.equal(noOffer.extensions, '');
  assert.equal(declined.extensions, '');
  await waitFor(() => server.stats().deflateConnections === 4, 5000, 'deflateConnections 4');
  assert.deepEqual(server.stats().threads.map((t) => t.deflateConnections).sort(), [2, 2], 'both threads have deflate subscribers');

  const all = [...deflating, noOffer, declined];
  const messages = [json(20000), crypto.randomBytes(3000), Buffer.alloc(5000, 'abc'), 'hi', json(1000)];
  for (const m of messages) {
    const got = all.map(nextMessage);
    assert.equal(server.publish('t', m), 6);
    for (const { data, isBinary } of await Promise.all(got)) {
      assert.equal(isBinary, typeof m !== 'string');
      assert.deepEqual(data, Buffer.from(m));
    }
  }
  const s = server.stats();
  // json 20000, random 3000 (did not shrink: still one try), abc 5000, json 1000; 'hi' is under the threshold.
  assert.equal(s.compressed, 4);
  assert.ok(s.compressBytesOut < s.compressBytesIn / 2, `${s.compressBytesOut} of ${s.compressBytesIn}`);
  assert.ok(s.compressMicros >= 0);
  for (const ws of all) ws.close();
  await Promise.all(all.map(closed));
  await waitFor(() => server.stats().deflateConnections === 0, 5000, 'deflateConnections back to 0');
});

test('on the wire: RSV1 frames that zlib inflates; plain below the threshold, for compress: false, for what does not shrink, and past a client\'s window', async () => {
  const { server, port } = await startServer({ compression: { threshold: 100 }, onUpgrade: () => ({ topics: ['t'] }) });
  const st = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
  const small = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate; server_max_window_bits=9' });
  const big = json(1000), mid = json(400);
  const random = crypto.randomBytes(1000);
  await waitFor(() => server.publish('t', big) === 2, 5000, 'subscribers');
  server.publish('t', big, { compress: false });
  server.publish('t', json(99));
  server.publish('t', random);
  server.publish('t', mid);
  const want = [
    [true, big], [false, big], [false, json(99)], [false, random], [true, mid],
  ];
  const frames = await waitFor(() => { const f = parseFrames(st.data); return f.length === 5 && f; }, 5000, 'five frames');
  frames.forEach((f, i) => {
    assert.equal(f.rsv1, want[i][0], `frame ${i} rsv1`);
    assert.equal(f.fin, true);
    assert.equal(f.opcode, typeof want[i][1] === 'string' ? 1 : 2);
    const data = f.rsv1 ? receiverInflate(f.payload) : f.payload;
    assert.deepEqual(data, Buffer.from(want[i][1]), `frame ${i}`);
    if (f.rsv1) assert.ok(f.payload.length < Buffer.byteLength(want[i][1]));
  });
  // server_max_window_bits=9: 1000 B could reach back past 512 B: plain; 400 B goes compressed.
  const sf = await waitFor(() => { const f = parseFrames(small.data); return f.length === 5 && f; }, 5000, 'five frames');
  assert.deepEqual(sf.map((f) => f.rsv1), [false, false, false, false, true]);
  assert.deepEqual(zlib.inflateRawSync(Buffer.concat([sf[4].payload, Buffer.from([0, 0, 0xff, 0xff])]),
    { windowBits: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH }), Buffer.from(mid));
  st.sock.destroy();
  small.sock.destroy();
});

test('client messages compressed as browsers, zlib and the BFINAL form send them, whole and fragmented', async () => {
  const { server, port } = await startServer({ compression: true });
  const got = [];
  server.on('message', (id, data, isBinary) => got.push({ data, isBinary }));
  const st = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
  const text = json(50000), bin = Buffer.alloc(200000, 'xyz');
  const z = browserDeflate(text);
  st.sock.write(frame(1, z, { rsv: 4 }));
  // Fragmented: RSV1 on the first frame only.
  const zb = browserDeflate(bin);
  const third = Math.floor(zb.length / 3);
  st.sock.write(Buffer.concat([
    frame(2, zb.subarray(0, third), { fin: false, rsv: 4 }),
    frame(9, 'ping between fragments'),
    frame(0, zb.subarray(third, 2 * third), { fin: false }),
    frame(0, zb.subarray(2 * third)),
  ]));
  // RFC 7692 7.2.3.4: a final block, then one 0x00 byte.
  const final = Buffer.concat([zlib.deflateRawSync('héllo wörld héllo wörld'), Buffer.from([0])]);
  st.sock.write(frame(1, final, { rsv: 4 }));
  // An empty message compressed (a single 0x00: an empty stored block's header, stripped).
  st.sock.write(frame(1, browserDeflate(''), { rsv: 4 }));
  // And an uncompressed one on the same connection.
  st.sock.write(frame(1, 'plain'));
  await waitFor(() => got.length === 5, 5000, 'five messages');
  assert.deepEqual(got.map((m) => m.isBinary), [false, true, false, false, false]);
  assert.equal(got[0].data.toString(), text);
  assert.deepEqual(got[1].data, bin);
  assert.equal(got[2].data.toString(), 'héllo wörld héllo wörld');
  assert.equal(got[3].data.length, 0);
  assert.equal(got[4].data.toString(), 'plain');
  assert.equal(server.stats().inflated, 4);
  assert.equal(server.stats().protocolErrors, 0);
  st.sock.destroy();
});

test('bad compressed input: each gets its close code, the connection beside it is untouched, nothing leaks', async () => {
  const { server, port, url } = await startServer({ compression: true, maxPayload: 64 * 1024 });
  const zeros = browserDeflate(Buffer.alloc(1 << 20)); // 1 MiB of zeros in ~1 KB
  const cases = [
    ['corrupt DEFLATE data', [frame(1, Buffer.from([0xff, 0xff, 0xff, 0xff]), { rsv: 4 })], 1007],
    ['data after a final block', [frame(1, Buffer.concat([zlib.deflateRawSync('a'), zlib.deflateRawSync('b')]), { rsv: 4 })], 1007],
    ['invalid UTF-8 once inflated', [frame(1, browserDeflate(Buffer.from([0x68, 0xc3, 0x28])), { rsv: 4 })], 1007],
    ['RSV1 on a ping', [frame(9, 'x', { rsv: 4 })], 1002],
    ['RSV1 on a close', [frame(8, Buffer.from([3, 232]), { rsv: 4 })], 1002],
    ['RSV1 on a continuation', [frame(1, browserDeflate('ab'), { fin: false, rsv: 4 }), frame(0, 'c', { rsv: 4 })], 1002],
    ['RSV2', [frame(1, 'x', { rsv: 2 })], 1002],
    ['a bomb past maxPayload (1 MiB of zeros, 64 KiB allowed)', [frame(2, zeros, { rsv: 4 })], 1009],
    ['compressed frames past maxPayload before inflating', [frame(2, crypto.randomBytes(70 * 1024), { rsv: 4 })], 1009],
  ];
  const before = server.stats();
  for (const [what, frames, code] of cases) {
    const bystander = await client(url, undefined, { perMessageDeflate: true });
    const st = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
    st.sock.write(Buffer.concat(frames));
    assert.equal((await closeFrom(st)).code, code, what);
    await waitFor(() => st.ended, 5000, `${what}: the server closes the socket`);
    const echo = nextMessage(bystander);
    bystander.send(json(2000)); // compressed by ws
    const ids = [];
    server.once('message', (id, data) => { ids.push(id); server.send(id, data); });
    assert.equal((await echo).data.toString(), json(2000), `${what}: the bystander`);
    bystander.close();
    await closed(bystander);
  }
  // RSV1 where deflate was not negotiated (the server offers it, this client did not ask).
  const st = await open(port, '/');
  st.sock.write(frame(1, browserDeflate('hello'), { rsv: 4 }));
  assert.equal((await closeFrom(st)).code, 1002);
  const after = server.stats();
  assert.equal(after.protocolErrors - before.protocolErrors, cases.length + 1);
  assert.equal(await healthy(server, url), 'still here');
});

test('the 1 GiB bomb: closed with 1009; inflating it costs maxPayload, not its size', async () => {
  // 1 GiB of zeros as 1,024 copies of a full-flushed 1 MiB block (no match
  // reaches across a full flush), ~1 MB in all, sent as one frame.
  const chunk = zlib.deflateRawSync(Buffer.alloc(1 << 20), { finishFlush: zlib.constants.Z_FULL_FLUSH });
  const bomb = Buffer.concat(Array(1024).fill(chunk)).subarray(0, chunk.length * 1024 - 4);
  const maxPayload = 2 << 20;
  assert.ok(bomb.length < maxPayload, `${bomb.length} B`);
  const { server, port, url } = await startServer({ compression: true, maxPayload, threads: 1 });
  const st = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
  const { allocator } = require('../..');
  const base = allocator.stats().allocated;
  if (isTestingBuild) binding._testAllocPeak();
  st.sock.write(frame(2, bomb, { rsv: 4 }));
  assert.deepEqual(await closeFrom(st, 30000), { code: 1009, reason: 'message too big' });
  const peak = isTestingBuild ? binding._testAllocPeak() : -1;
  if (peak >= 0) {
    // The compressed frame itself (received into a buffer of its size)
    // plus at most maxPayload of output.
    const bound = maxPayload + bomb.length + 128 * 1024;
    process.stdout.write(`# bomb ${bomb.length} B -> 1 GiB: peak ${peak - base} B over the start (bound ${bound})\n`);
    assert.ok(peak - base <= bound, `peak ${peak - base} B > ${bound}`);
  }
  await waitFor(() => st.ended, 5000, 'the socket closed');
  assert.equal(await healthy(server, url), 'still here');
});

test('options and arguments: bad values are refused with the option named', async () => {
  assert.throws(() => new Server({ compression: 'yes' }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.compression/ });
  assert.throws(() => new Server({ compression: { level: 0 } }), { name: 'RangeError', message: /options\.compression\.level/ });
  assert.throws(() => new Server({ compression: { level: 10 } }), { name: 'RangeError', message: /options\.compression\.level/ });
  assert.throws(() => new Server({ compression: { threshold: -1 } }), { name: 'RangeError', message: /options\.compression\.threshold/ });
  assert.throws(() => new Server({ compression: { windowBits: 9 } }), { message: /options\.compression\.windowBits/ });
  const s = new Server({ compression: true });
  assert.deepEqual(s.options.compression, { threshold: 128, level: 6 });
  assert.equal(new Server().options.compression, false);
  assert.throws(() => s.publish('t', 'x', { compress: 1 }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.compress/ });
  assert.throws(() => s.send(1, 'x', { compress: 'no' }), { code: 'ERR_INVALID_ARG_TYPE', message: /options\.compress/ });
  await s.close();
  // onUpgrade answering a bad compress: refused with 500, the error reported.
  const { server, port } = await startServer({ compression: true, onUpgrade: () => ({ compress: 'no' }) });
  const errors = [];
  server.on('error', (e) => errors.push(e));
  const st = await open(port, '/', { 'Sec-WebSocket-Extensions': 'permessage-deflate' });
  assert.match(st.head, /^HTTP\/1\.1 500 /);
  assert.match(errors[0].message, /compress/);
});

test('no deflate state per connection: parked connections cost the same with it negotiated; libdeflate\'s memory is ours', async () => {
  const { allocator } = require('../..');
  const check = allocator.selfCheck();
  assert.equal(check.ok, true, JSON.stringify(check));
  assert.equal(check.deflateRouted, true);
  assert.equal(check.deflateIsJemalloc, allocator.name === 'jemalloc');
  // In a child process: a clean heap, no other test freeing memory meanwhile.
  const r = spawnSync(process.execPath, [path.join(__dirname, '..', 'helpers', 'parked-bytes.js')],
    { encoding: 'utf8', timeout: 60000, env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const { plain, deflate, deflateConnections } = JSON.parse(r.stdout);
  assert.equal(deflateConnections, 200);
  process.stdout.write(`# allocated per parked connection: ${plain.toFixed(0)} B plain, ${deflate.toFixed(0)} B with deflate\n`);
  assert.ok(Math.abs(deflate - plain) <= 8, `${deflate} vs ${plain} B per connection`);
});
