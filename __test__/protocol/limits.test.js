'use strict';
// Limits against raw-socket attackers that make the server work without
// sending data: control floods that never read their replies, endless
// fragments, control frames at line rate. Each case runs on one IO thread
// (threads: 1) beside a healthy bystander that must still be served, and
// checks that memory comes back once the attackers are gone.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const { startServer, healthy, closeAll } = require('../helpers/server');
const { held, bystander, served } = require('../helpers/bystander');
const { open, frame, parseFrames, closeFrom, waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

const MiB = 1024 * 1024;

/** n pings whose payloads are their numbers (4 bytes), masked with a zero
 * key (a valid mask), built at once. */
function numberedPings(n) {
  const out = Buffer.alloc(n * 10);
  for (let k = 0; k < n; k++) {
    out[k * 10] = 0x89;
    out[k * 10 + 1] = 0x84;
    out.writeUInt32BE(k, k * 10 + 6);
  }
  return out;
}

/** Raw attackers, opened and seen by the server (their ids, in order). */
async function attackers(server, port, n) {
  const ids = [];
  const onOpen = (id) => ids.push(id);
  server.on('open', onOpen);
  const socks = [];
  for (let i = 0; i < n; i++) socks.push(await open(port));
  await waitFor(() => ids.length === n, 5000, 'the attackers\' open events');
  server.off('open', onOpen);
  return socks.map((st, i) => ({ st, id: ids[i] }));
}

test('ping flood without reading: pongs are charged what they cost, only the newest is kept, reading stops', async (t) => {
  // controlRate off: this case is about what a flood costs in memory.
  const { server, port, url } = await startServer({ threads: 1, controlRate: 0 });
  const by = await bystander(server, url, 'by');
  await served(server, by, 'by', 'before');
  const N = 4, PINGS = 200000;
  const atk = await attackers(server, port, N);
  // A failure part way must leave nothing behind: the watch below and these
  // sockets would keep this file's process alive after its last test, and
  // the whole run would wait for it for ever (the file's afterEach closes
  // the server all the same).
  let watch = null;
  t.after(() => {
    clearInterval(watch);
    for (const a of atk) a.st.sock.destroy();
    by.ws.terminate();
  });
  // Fill each attacker's socket and send queue with data first: from now on
  // nothing the server queues to them leaves.
  for (const a of atk) { a.st.sock.pause(); server.subscribe(a.id, 'fill'); }
  // A burst first: every publish reaches all of them (dropped counts them
  // together).
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const full = () => server.stats().dropped >= 8 * N;
  for (let i = 0; i < 1000 && !full(); i++) {
    server.publish('fill', chunk);
    if (i % 4 === 3) await new Promise((r) => setImmediate(r));
  }
  await waitFor(full, 10000, 'the attackers\' queues to fill (publishes dropped for each)');
  // Drops alone do not say the sockets are full: publishes that reach the
  // IO thread in one turn are queued before its writes, so they pass
  // maxBackpressure (and are dropped) even when the kernel, whose send
  // buffer TCP autotuning grows to megabytes, then takes the whole queue.
  // The pongs would then be written as they come and no attacker would be
  // paused for them (seen under load: controlWaits stayed 0 while every
  // ping was read). What says so: a publish made after a round trip
  // through the IO thread (the bystander's write ends a turn, the
  // attackers' writes with it) dropped for every attacker, its queue still
  // near maxBackpressure after a write. Bounded by the bytes it can take
  // (the kernel's largest send and receive buffers, and the queue), never
  // by time.
  const sysMax = (f) => { try { return Number(fs.readFileSync(f, 'utf8').trim().split(/\s+/)[2]); } catch { return 32 * MiB; } };
  const room = sysMax('/proc/sys/net/ipv4/tcp_wmem') + sysMax('/proc/sys/net/ipv4/tcp_rmem') + 2 * MiB;
  let probes = 0;
  for (let sent = 0; ; sent += 9 * chunk.length, probes++) {
    const before = server.stats().dropped;
    server.publish('fill', chunk);
    await served(server, by, 'by', 'a fill publish');
    if (server.stats().dropped - before === N) break;
    assert.ok(sent < room, `after ${sent} bytes each, a publish still reached an attacker`);
    for (let k = 0; k < 8; k++) server.publish('fill', chunk);
    await served(server, by, 'by', 'more fill'); // their drops counted before the next probe's
  }
  await served(server, by, 'by', 'after the fill');
  const base = held();
  let peak = 0;
  watch = setInterval(() => { peak = Math.max(peak, held() - base); }, 5);
  // 200,000 pings each, numbered, in one write; never read.
  const pings = numberedPings(PINGS);
  for (const a of atk) a.st.sock.write(pings);
  // Each attacker's replies back up behind its full socket: its second ping
  // replaces a pong that cannot leave, and it is not read again. That is
  // one read (64 KiB) of each, four reads of the IO thread, not the 8 MB:
  // 10 s is that many times over even on a loaded machine.
  await waitFor(() => server.stats().controlWaits >= N, 10000, 'every attacker to be paused for its control replies');
  const lat = [];
  for (let i = 0; i < 5; i++) lat.push(await served(server, by, 'by', `during the flood (${i})`));
  peak = Math.max(peak, held() - base);
  clearInterval(watch);
  console.log(`# ping flood: ${N} x ${PINGS} pings, server allocator +${(peak / MiB).toFixed(2)} MiB at peak; ` +
    `bystander publish round trips ${lat.map((x) => x.toFixed(1)).join(', ')} ms; fill probes before one was dropped for every attacker: ${probes}`);
  assert.ok(peak < 20 * MiB, `the server held +${(peak / MiB).toFixed(1)} MiB under the flood`);
  assert.equal(server.stats().connections, N + 1, 'nobody was closed');
  // The attackers read again: their queues drain, the rest of their pings
  // is read, and the last pong each gets answers its last ping. Each frame
  // is parsed once, as it comes, and only the pongs are kept: the
  // attackers' megabytes of fill gathered into one growing buffer (a copy
  // of all of it per chunk) and parsed whole at every poll cost this
  // process, the attackers' reader, seconds of CPU, which on a busy
  // machine held the drain past the wait below.
  for (const a of atk) {
    a.pongs = [];
    let rest = a.st.data;
    a.st.sock.removeAllListeners('data');
    a.st.sock.on('data', (d) => {
      rest = rest.length > 0 ? Buffer.concat([rest, d]) : d;
      const frames = parseFrames(rest);
      if (frames.length === 0) return;
      for (const f of frames) if (f.opcode === 10) a.pongs.push(f.payload.readUInt32BE(0));
      const last = frames[frames.length - 1].payload;
      rest = rest.subarray(last.byteOffset - rest.byteOffset + last.length);
    });
  }
  for (const a of atk) { server.unsubscribe(a.id, 'fill'); a.st.sock.resume(); }
  for (const [i, a] of atk.entries()) {
    await waitFor(() => a.pongs.at(-1) === PINGS - 1, 10000, `attacker ${i}: a pong for its last ping`);
    assert.ok(a.pongs.length < PINGS / 10, `attacker ${i} got ${a.pongs.length} pongs for ${PINGS} pings`);
  }
  await served(server, by, 'by', 'after the flood');
  // Memory comes back once they are gone.
  for (const a of atk) a.st.sock.destroy();
  await waitFor(() => server.stats().connections === 1, 5000, 'the attackers\' close');
  await waitFor(() => held() - base < 1 * MiB, 5000, 'the memory to come back');
  assert.equal(await healthy(server, url), 'still here');
  by.ws.terminate();
});

test('close() settles by closeDeadline while attackers flood pings and never read', async (t) => {
  // The state the flood above was in when it failed half way: attackers
  // that never read, publishes dropped for them, pings still being read,
  // a bystander beside them.
  // Whatever the peers do, close() ends their connections at the deadline
  // and settles.
  const closeDeadline = 500;
  const { server, port, url } = await startServer({ threads: 1, controlRate: 0, closeDeadline });
  const by = await bystander(server, url, 'by');
  const atk = await attackers(server, port, 4);
  t.after(() => { for (const a of atk) a.st.sock.destroy(); });
  for (const a of atk) { a.st.sock.pause(); server.subscribe(a.id, 'fill'); }
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  for (let i = 0; i < 1000 && server.stats().dropped < 8 * atk.length; i++) {
    server.publish('fill', chunk);
    if (i % 4 === 3) await new Promise((r) => setImmediate(r));
  }
  await waitFor(() => server.stats().dropped >= 8 * atk.length, 10000, 'publishes dropped for the attackers');
  const pings = numberedPings(200000);
  for (const a of atk) a.st.sock.write(pings);
  const codes = [];
  server.on('close', (id, code) => codes.push(code));
  const byClosed = new Promise((resolve) => by.ws.once('close', resolve));
  // Bounded so that a close that never settles fails here rather than
  // hanging the run: the deadline plus room for a loaded machine.
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('close() did not settle within closeDeadline + 10 s')), closeDeadline + 10000);
  });
  await Promise.race([server.close(), late]).finally(() => clearTimeout(timer));
  assert.equal(await byClosed, 1001, 'the bystander was told 1001');
  assert.equal(codes.length, atk.length + 1, 'a close event for each connection');
  assert.equal(server.stats(), null, 'the server is inert');
});

/** An attacker writes `bytes` (in chunks, while the socket is open) and is
 * closed 1008 with `reason`; the bystander is served meanwhile, the counter
 * says so, and memory comes back. */
async function closedFor(server, port, url, bytes, reason, counter) {
  const by = await bystander(server, url, 'by');
  await served(server, by, 'by', 'before');
  const base = held();
  const closes = [];
  const onClose = (id, code) => closes.push(code);
  server.on('close', onClose);
  const [a] = await attackers(server, port, 1);
  const CHUNK = 64 * 1024;
  let i = 0;
  const pump = () => {
    while (i < bytes.length && !a.st.ended && !a.st.sock.destroyed) {
      const ok = a.st.sock.write(bytes.subarray(i, i + CHUNK));
      i += CHUNK;
      if (!ok) { a.st.sock.once('drain', pump); return; }
    }
  };
  pump();
  const ms = await served(server, by, 'by', 'during the attack');
  const c = await closeFrom(a.st, 10000);
  assert.equal(c.code, 1008);
  assert.equal(c.reason, reason);
  await waitFor(() => closes.length === 1, 5000, 'the attacker\'s close event');
  assert.equal(closes[0], 1008);
  assert.equal(server.stats()[counter], 1);
  assert.equal(server.stats().protocolErrors, 0);
  await served(server, by, 'by', 'after the attack');
  a.st.sock.destroy();
  server.off('close', onClose);
  await waitFor(() => server.stats().connections === 1, 5000, 'the attacker gone');
  await waitFor(() => held() - base < 256 * 1024, 5000, 'the memory to come back');
  assert.equal(await healthy(server, url), 'still here');
  by.ws.terminate();
  return ms;
}

/** n empty masked frames of `first` then continuation opcodes (fin on the last only when fin). */
function emptyFrames(n, opcodeFirst, opcodeRest, finLast) {
  const out = Buffer.alloc(n * 6);
  for (let k = 0; k < n; k++) {
    out[k * 6] = (k === 0 ? opcodeFirst : opcodeRest) | (finLast && k === n - 1 ? 0x80 : 0);
    out[k * 6 + 1] = 0x80;
  }
  return out;
}

test('100,000 empty fragments in one message: close 1008 at maxFragments (default max(1,024, maxPayload / 64): 16,384)', async () => {
  const { server, port, url } = await startServer({ threads: 1 });
  const ms = await closedFor(server, port, url, emptyFrames(100000, 1, 0, true), 'too many fragments', 'fragmentCloses');
  console.log(`# fragments: bystander publish round trip during the attack ${ms.toFixed(1)} ms`);
});

test('maxFragments: a message of exactly maxFragments frames is delivered; one more is refused', async () => {
  const { server, port } = await startServer({ threads: 1, maxFragments: 8 });
  const got = [];
  server.on('message', (id, data) => got.push(data.toString()));
  const closes = [];
  server.on('close', (id, code) => closes.push(code));
  const st = await open(port);
  const parts = Array.from({ length: 8 }, (_, k) => frame(k === 0 ? 1 : 0, String(k), { fin: k === 7 }));
  st.sock.write(Buffer.concat(parts));
  // Pings between fragments are not fragments.
  st.sock.write(Buffer.concat([frame(1, 'a', { fin: false }), frame(9), ...Array.from({ length: 7 }, (_, k) => frame(0, 'b', { fin: k === 6 }))]));
  await waitFor(() => got.length === 2, 5000, 'two messages');
  assert.deepEqual(got, ['01234567', 'abbbbbbb']);
  st.sock.write(Buffer.concat(Array.from({ length: 9 }, (_, k) => frame(k === 0 ? 2 : 0, 'x', { fin: k === 8 }))));
  const c = await closeFrom(st);
  assert.deepEqual([c.code, c.reason], [1008, 'too many fragments']);
  await waitFor(() => closes.length === 1, 5000, 'the close event');
  assert.equal(got.length, 2, 'the message over the limit is not delivered');
  assert.equal(server.stats().fragmentCloses, 1);
  st.sock.destroy();
  // 0: no limit.
  const { server: s2, port: p2 } = await startServer({ threads: 1, maxFragments: 0 });
  const got2 = [];
  s2.on('message', (id, data) => got2.push(data.length));
  const st2 = await open(p2);
  st2.sock.write(emptyFrames(5000, 2, 0, true));
  await waitFor(() => got2.length === 1, 5000, 'the 5,000-fragment message with maxFragments: 0');
  assert.equal(s2.stats().fragmentCloses, 0);
  st2.sock.destroy();
});

test('pings at line rate: close 1008 over controlRate (default 100/s)', async () => {
  const { server, port, url } = await startServer({ threads: 1 });
  const ms = await closedFor(server, port, url, emptyFrames(200000, 0x89, 0x89, false), 'too many control frames', 'controlRateCloses');
  console.log(`# control rate: bystander publish round trip during the attack ${ms.toFixed(1)} ms`);
});

test('controlRate: a burst of controlRate pings is answered, then the rate holds; pongs count too', async () => {
  const { server, port } = await startServer({ threads: 1, controlRate: 20 });
  const st = await open(port);
  const pongOf = (payload) => waitFor(() => parseFrames(st.data).some((f) => f.opcode === 10 && f.payload.toString() === payload), 5000, `the pong of ${payload}`);
  // 20 at once (one read: their pongs replace each other, the last one goes).
  st.sock.write(Buffer.concat(Array.from({ length: 20 }, (_, k) => frame(9, `a${k}`))));
  await pongOf('a19');
  // After the burst: 20/s. 5 frames 300 ms later fit (6 tokens back); a
  // burst of 30 more does not.
  await new Promise((r) => setTimeout(r, 300));
  st.sock.write(Buffer.concat([frame(9, 'b0'), frame(10, 'unsolicited'), frame(9, 'b1'), frame(10), frame(9, 'b2')]));
  await pongOf('b2');
  assert.equal(server.stats().controlRateCloses, 0);
  st.sock.write(Buffer.concat(Array.from({ length: 30 }, () => frame(9))));
  const c = await closeFrom(st);
  assert.deepEqual([c.code, c.reason], [1008, 'too many control frames']);
  assert.equal(server.stats().controlRateCloses, 1);
  st.sock.destroy();
});
