'use strict';
// The native limits per client address (maxConnectionsPerAddress,
// upgradeRatePerAddress) and per connection's inbound rate
// (maxMessagesPerSecond, maxBytesPerSecond; rateLimit 'pause' or 'close'),
// each against raw-socket attackers from their own loopback addresses
// (127.x.y.z, bound with localAddress) beside a bystander on the same IO
// thread (threads: 1) that must still be served; counters move, and the
// address table and memory come back once the attackers are gone.
const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { startServer, healthy, closeAll } = require('../helpers/server');
const { held, bystander, served } = require('../helpers/bystander');
const { request, frame, parseFrames, closeFrom, waitFor, statusOf } = require('../helpers/raw');

test.afterEach(closeAll);


/** A raw socket from localAddress that collects what the server sends. */
function connectFrom(port, localAddress) {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ port, host: '127.0.0.1', localAddress });
    const st = { sock, data: Buffer.alloc(0), ended: false, error: null };
    sock.on('data', (d) => { st.data = Buffer.concat([st.data, d]); });
    sock.on('error', (e) => { st.error = e; });
    sock.on('close', () => { st.ended = true; });
    sock.once('connect', () => resolve(st));
    sock.once('error', reject);
  });
}

/** An upgrade request from localAddress: the state with `head` (the
 * response head) and `body` (what followed it) once the head is in. */
async function upgradeFrom(port, localAddress) {
  const st = await connectFrom(port, localAddress);
  st.sock.write(request('/'));
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0 || st.ended, 5000, `a response to ${localAddress}`);
  const end = st.data.indexOf('\r\n\r\n');
  assert.ok(end >= 0, `${localAddress}: closed without a response (${st.error && st.error.code})`);
  st.head = st.data.subarray(0, end).toString('latin1');
  st.body = st.data.subarray(end + 4);
  st.data = st.body;
  return st;
}

test('maxConnectionsPerAddress: 503 before onUpgrade, at once, per address; a freed slot is taken again', async () => {
  const upgrades = [];
  const { server, port, url } = await startServer({
    threads: 1,
    maxConnectionsPerAddress: 3,
    onUpgrade: (req) => { upgrades.push(req.remoteAddress); return true; },
  });
  const by = await bystander(server, url, 'by');
  const base = held();
  const kept = [];
  for (let i = 0; i < 3; i++) {
    const st = await upgradeFrom(port, '127.0.0.2');
    assert.equal(statusOf(st.head), 101);
    kept.push(st);
  }
  // 50 more from the same address, all at once: each is answered 503 and
  // closed by the server without asking onUpgrade.
  const refused = await Promise.all(Array.from({ length: 50 }, () => upgradeFrom(port, '127.0.0.2')));
  for (const st of refused) {
    assert.equal(statusOf(st.head), 503);
    assert.match(st.head, /^Connection: close$/mi);
    assert.equal(st.body.toString().trim(), 'too many connections from this address');
  }
  await waitFor(() => refused.every((st) => st.ended), 5000, 'the server to close every refused socket');
  for (const st of refused) assert.equal(st.error, null, 'closed with a FIN, not a reset');
  assert.equal(server.stats().addressRejects, 50);
  assert.equal(upgrades.filter((a) => a === '127.0.0.2').length, 3, 'onUpgrade ran for the admitted only');
  assert.equal(server.stats().handshakeRejects, 0, 'refused before the request was read');
  // Another address is not affected.
  const other = await upgradeFrom(port, '127.0.0.3');
  assert.equal(statusOf(other.head), 101);
  await served(server, by, 'by', 'during the refusals');
  // Two addresses and the bystander's in the table.
  assert.equal(server.stats().addresses, 3);
  // One of the three closes: its address may connect once more, not twice.
  kept.pop().sock.destroy();
  await waitFor(() => server.stats().connections === 4, 5000, 'the close');
  const again = await upgradeFrom(port, '127.0.0.2');
  assert.equal(statusOf(again.head), 101);
  kept.push(again);
  assert.equal(statusOf((await upgradeFrom(port, '127.0.0.2')).head), 503);
  assert.equal(server.stats().addressRejects, 51);
  for (const st of [...kept, other]) st.sock.destroy();
  await waitFor(() => server.stats().connections === 1, 5000, 'the attackers gone');
  assert.equal(server.stats().addresses, 1, 'only the bystander\'s address is left');
  by.ws.terminate();
  await waitFor(() => server.stats().addresses === 0, 5000, 'an empty table');
  await waitFor(() => held() - base < 256 * 1024, 5000, 'the memory to come back');
});

test('IPv6: an address is its /64 (::1 here); the limit and the table work the same', async () => {
  const { server, port } = await startServer({ host: '::1', threads: 1, maxConnectionsPerAddress: 1 });
  const up = async () => {
    const sock = net.connect({ port, host: '::1' });
    const st = { sock, data: Buffer.alloc(0), ended: false };
    sock.on('data', (d) => { st.data = Buffer.concat([st.data, d]); });
    sock.on('close', () => { st.ended = true; });
    sock.on('error', () => {});
    sock.write(request('/'));
    await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0, 5000, 'a response over IPv6');
    return st;
  };
  const first = await up();
  assert.equal(statusOf(first.data.toString('latin1')), 101);
  const second = await up();
  assert.equal(statusOf(second.data.toString('latin1')), 503);
  await waitFor(() => second.ended, 5000, 'the refused socket closed');
  assert.equal(server.stats().addresses, 1);
  assert.equal(server.stats().addressRejects, 1);
  first.sock.destroy();
  await waitFor(() => server.stats().addresses === 0, 5000, 'an empty table');
});

test('upgradeRatePerAddress: 429 with Retry-After over the rate, counted; other addresses are not charged', async () => {
  const RATE = 5;
  const { server, port, url } = await startServer({ threads: 1, upgradeRatePerAddress: RATE });
  const by = await bystander(server, url, 'by');
  const t0 = Date.now();
  const N = 40;
  const all = await Promise.all(Array.from({ length: N }, () => upgradeFrom(port, '127.0.1.2')));
  const elapsed = (Date.now() - t0) / 1000;
  const ok = all.filter((st) => statusOf(st.head) === 101);
  const limited = all.filter((st) => statusOf(st.head) === 429);
  assert.equal(ok.length + limited.length, N, 'every attempt got 101 or 429');
  // A burst of RATE, then RATE a second: never more.
  assert.ok(ok.length >= RATE && ok.length <= RATE + Math.ceil(RATE * elapsed) + 1, `${ok.length} admitted in ${elapsed} s`);
  for (const st of limited) {
    const retry = /^Retry-After: (\d+)$/mi.exec(st.head);
    assert.ok(retry && Number(retry[1]) >= 1, `Retry-After in ${st.head}`);
    assert.equal(st.body.toString().trim(), 'too many new connections from this address');
  }
  await waitFor(() => limited.every((st) => st.ended), 5000, 'the refused sockets closed');
  assert.equal(server.stats().upgradeRateRejects, limited.length);
  // Another address still gets its whole burst.
  const others = await Promise.all(Array.from({ length: RATE }, () => upgradeFrom(port, '127.0.1.3')));
  for (const st of others) assert.equal(statusOf(st.head), 101);
  await served(server, by, 'by', 'after the burst');
  for (const st of [...ok, ...others]) st.sock.destroy();
  by.ws.terminate();
  // Once their rates are idle (about a second: the sweep frees them), the
  // table is empty.
  await waitFor(() => server.stats().addresses === 0, 5000, 'an empty table');
});

test('10,000 distinct addresses: the table grows with them and is empty again, its memory back', async () => {
  const { server, port } = await startServer({ threads: 1, maxConnectionsPerAddress: 1, upgradeRatePerAddress: 1 });
  const BATCH = 1000, ADDRS = 10000;
  /** Connects BATCH addresses from the n-th on, then closes them. */
  const batch = async (first) => {
    const socks = [];
    for (let k = 0; k < BATCH; k += 100) {
      socks.push(...await Promise.all(Array.from({ length: 100 }, (_, j) => {
        const n = first + k + j;
        return upgradeFrom(port, `127.${10 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`);
      })));
    }
    for (const st of socks) assert.equal(statusOf(st.head), 101);
    // Each address's entry is there while it is connected, and stays while
    // its rate (1/s) is not idle.
    const n = server.stats().addresses;
    assert.ok(n >= BATCH, `${n} entries with ${BATCH} connected`);
    for (const st of socks) st.sock.destroy();
    await waitFor(() => server.stats().connections === 0, 10000, 'the batch closed');
    return n;
  };
  // A first batch of other addresses grows what the thread keeps for
  // itself (its slot table): the baseline is taken after it.
  await batch(ADDRS);
  await waitFor(() => server.stats().addresses === 0, 10000, 'the table to empty after the warm-up');
  const base = held();
  let peak = 0;
  for (let b = 0; b < ADDRS; b += BATCH) peak = Math.max(peak, await batch(b));
  assert.equal(server.stats().addressRejects + server.stats().upgradeRateRejects, 0);
  const grown = held() - base;
  await waitFor(() => server.stats().addresses === 0, 10000, 'the table to empty (rates idle, swept)');
  await waitFor(() => held() - base < 32 * 1024, 5000, 'the table\'s memory to come back');
  console.log(`# address table: ${peak} entries at most, +${(grown / 1024).toFixed(0)} KiB held after the last batch, ` +
    `+${((held() - base) / 1024).toFixed(1)} KiB once empty`);
});

test('one port with node:http: sockets handed over by handleUpgrade are counted per address too', async () => {
  const http = require('node:http');
  const { Server } = require('../..');
  const feed = new Server({ noServer: true, maxConnectionsPerAddress: 1 });
  const web = http.createServer((req, res) => res.end('ok'));
  web.on('upgrade', (req, socket, head) => feed.handleUpgrade(req, socket, head));
  await new Promise((r) => web.listen(0, '127.0.0.1', r));
  const { port } = web.address();
  try {
    const first = await upgradeFrom(port, '127.0.3.2');
    assert.equal(statusOf(first.head), 101);
    const second = await upgradeFrom(port, '127.0.3.2');
    assert.equal(statusOf(second.head), 503);
    await waitFor(() => second.ended, 5000, 'the refused socket closed');
    assert.equal(feed.stats().addressRejects, 1);
    assert.equal(statusOf((await upgradeFrom(port, '127.0.3.3')).head), 101, 'another address');
    first.sock.destroy();
    await waitFor(() => feed.stats().addresses === 1, 5000, 'the first address gone');
  } finally {
    await feed.close();
    web.closeAllConnections();
    await new Promise((r) => web.close(r));
  }
});

/** count small text frames "0".."count-1", masked, in one buffer. */
function numbered(count) {
  return Buffer.concat(Array.from({ length: count }, (_, k) => frame(1, String(k))));
}

/** A raw attacker (upgraded) from addr, and its id on the server. */
async function attacker(server, port, addr) {
  const ids = [];
  const onOpen = (id) => ids.push(id);
  server.on('open', onOpen);
  const st = await upgradeFrom(port, addr);
  assert.equal(statusOf(st.head), 101);
  await waitFor(() => ids.length === 1, 5000, 'the attacker\'s open');
  server.off('open', onOpen);
  return { st, id: ids[0] };
}

test('maxMessagesPerSecond, pause: a flood is read at the rate, in order, nothing lost; the bystander is served', async () => {
  const RATE = 1000, BURST = 100, N = 2000;
  const { server, port, url } = await startServer({ threads: 1, maxMessagesPerSecond: RATE, messageBurst: BURST });
  const by = await bystander(server, url, 'by');
  const base = held();
  const a = await attacker(server, port, '127.0.2.2');
  const got = [];
  server.on('message', (id, data) => { if (id === a.id) got.push([process.hrtime.bigint(), data.toString()]); });
  const t0 = process.hrtime.bigint(); // before the first message can be charged
  a.st.sock.write(numbered(N));
  await waitFor(() => server.stats().rateWaits >= 1, 5000, 'the attacker paused');
  await served(server, by, 'by', 'while the attacker waits');
  await waitFor(() => got.length === N, 20000, `all ${N} messages`);
  assert.deepEqual(got.map(([, s]) => s), Array.from({ length: N }, (_, k) => String(k)), 'in order, none lost');
  // The invariant of the bucket: by any message, at most BURST plus RATE
  // per second since the flood was sent (+1 for the clock's millisecond).
  for (const [k, [t]] of got.entries()) {
    const allowed = BURST + Math.floor((RATE * Number(t - t0)) / 1e9) + 1;
    assert.ok(k + 1 <= allowed + 1, `message ${k} came ${Number(t - t0) / 1e6} ms after the first (allowed ${allowed})`);
  }
  assert.ok(server.stats().rateWaits >= 1);
  assert.equal(server.stats().rateCloses, 0);
  assert.equal(server.stats().connections, 2, 'nobody was closed');
  a.st.sock.destroy();
  await waitFor(() => server.stats().connections === 1, 5000, 'the attacker gone');
  await waitFor(() => held() - base < 256 * 1024, 5000, 'the memory to come back');
  assert.equal(await healthy(server, url), 'still here');
  by.ws.terminate();
});

test('maxMessagesPerSecond: control frames are not held back or charged; a client paused for data still gets its pongs once read', async () => {
  const { server, port } = await startServer({ threads: 1, maxMessagesPerSecond: 1, messageBurst: 1 });
  const a = await attacker(server, port, '127.0.2.5');
  const got = [];
  server.on('message', (id, data) => { if (id === a.id) got.push(data.toString()); });
  // One message (the burst), then pings: each answered, none counted.
  a.st.sock.write(Buffer.concat([frame(1, 'm0'), ...Array.from({ length: 5 }, (_, k) => frame(9, `p${k}`))]));
  await waitFor(() => parseFrames(a.st.data).filter((f) => f.opcode === 10).length === 5, 5000, 'five pongs');
  assert.deepEqual(got, ['m0']);
  assert.equal(server.stats().rateWaits, 0, 'pings did not pause it');
  // A second message waits for its token (about a second); a ping behind
  // it waits with it (the connection is not read), then both go through.
  a.st.sock.write(Buffer.concat([frame(1, 'm1'), frame(9, 'late')]));
  await waitFor(() => server.stats().rateWaits === 1, 5000, 'the pause');
  await waitFor(() => got.length === 2, 5000, 'the second message after its wait');
  await waitFor(() => parseFrames(a.st.data).some((f) => f.opcode === 10 && f.payload.toString() === 'late'), 5000, 'the late pong');
  assert.deepEqual(got, ['m0', 'm1']);
  a.st.sock.destroy();
});

test('maxBytesPerSecond, pause: large messages are held back by their bytes, delivered whole', async () => {
  const RATE = 256 * 1024, BURST = 64 * 1024, SIZE = 48 * 1024, N = 12;
  const { server, port, url } = await startServer({ threads: 1, maxBytesPerSecond: RATE, byteBurst: BURST });
  const by = await bystander(server, url, 'by');
  const a = await attacker(server, port, '127.0.2.3');
  const got = [];
  server.on('message', (id, data) => { if (id === a.id) got.push([process.hrtime.bigint(), data]); });
  const payloads = Array.from({ length: N }, (_, k) => Buffer.alloc(SIZE, 0x41 + k));
  const t0 = process.hrtime.bigint();
  a.st.sock.write(Buffer.concat(payloads.map((p) => frame(2, p))));
  await waitFor(() => server.stats().rateWaits >= 1, 5000, 'the attacker paused');
  await served(server, by, 'by', 'while the attacker waits');
  await waitFor(() => got.length === N, 20000, `all ${N} messages`);
  for (const [k, [, data]] of got.entries()) assert.ok(data.equals(payloads[k]), `message ${k} intact`);
  // Bytes delivered by any message: a frame is let in while the bucket has
  // room, so at most the burst, one message more, and the rate since the
  // messages were sent.
  for (const [k, [t]] of got.entries()) {
    const allowed = BURST + SIZE + (RATE * Number(t - t0)) / 1e9 + RATE / 1000;
    assert.ok((k + 1) * SIZE <= allowed, `${(k + 1) * SIZE} bytes by ${Number(t - t0) / 1e6} ms (allowed ${allowed})`);
  }
  assert.equal(server.stats().connections, 2);
  a.st.sock.destroy();
  by.ws.terminate();
});

test('rateLimit close: over the rate by more than the grace, close 1008 "rate limit exceeded", counted', async () => {
  const RATE = 100, GRACE = 500;
  const { server, port, url } = await startServer({ threads: 1, maxMessagesPerSecond: RATE, rateLimit: 'close', rateLimitGrace: GRACE });
  const by = await bystander(server, url, 'by');
  const base = held();
  const closes = [];
  server.on('close', (id, code, reason) => closes.push([code, String(reason)]));
  const a = await attacker(server, port, '127.0.2.4');
  let count = 0;
  server.on('message', (id) => { if (id === a.id) count++; });
  // Within the burst and the grace: delivered, nobody closed.
  const t0 = process.hrtime.bigint();
  a.st.sock.write(numbered(RATE));
  await waitFor(() => count === RATE, 5000, 'the burst delivered');
  assert.equal(server.stats().rateCloses, 0);
  // A flood: closed once it is more than the grace ahead.
  a.st.sock.write(numbered(10000));
  const c = await closeFrom(a.st, 10000);
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  assert.deepEqual([c.code, c.reason], [1008, 'rate limit exceeded']);
  await waitFor(() => closes.length === 1, 5000, 'the close event');
  assert.equal(closes[0][0], 1008);
  assert.equal(server.stats().rateCloses, 1);
  assert.equal(server.stats().rateWaits, 0, 'close does not pause');
  // What got through: the burst, the grace's worth, and the rate meanwhile
  // (+2: a frame is let in while there is any room, and the clock's
  // millisecond).
  const allowed = RATE + (RATE * GRACE) / 1000 + RATE * elapsed + 2;
  assert.ok(count <= allowed, `${count} messages delivered before the close in ${elapsed} s (allowed ${allowed})`);
  assert.ok(count >= RATE + (RATE * GRACE) / 1000, `${count}: the grace was given`);
  await served(server, by, 'by', 'after the close');
  a.st.sock.destroy();
  await waitFor(() => server.stats().connections === 1, 5000, 'the attacker gone');
  await waitFor(() => held() - base < 256 * 1024, 5000, 'the memory to come back');
  by.ws.terminate();
});

test('limit options: checked at new Server with errors that name them', () => {
  const { Server } = require('../..');
  const bad = [
    [{ maxConnectionsPerAddress: -1 }, RangeError, /maxConnectionsPerAddress/],
    [{ upgradeRatePerAddress: 1.5 }, RangeError, /upgradeRatePerAddress/],
    [{ addressPrefix: { v4: 33 } }, RangeError, /addressPrefix\.v4/],
    [{ addressPrefix: { v6: 65 } }, RangeError, /addressPrefix\.v6/],
    [{ addressPrefix: { v5: 1 } }, TypeError, /addressPrefix\.v5/],
    [{ addressPrefix: 24 }, TypeError, /addressPrefix/],
    [{ maxMessagesPerSecond: '10' }, TypeError, /maxMessagesPerSecond/],
    [{ maxMessagesPerSecond: 10, messageBurst: 601 }, RangeError, /messageBurst.*60 seconds/],
    [{ maxBytesPerSecond: 1, byteBurst: 0 }, RangeError, /byteBurst/],
    [{ rateLimit: 'drop' }, TypeError, /rateLimit/],
    [{ rateLimitGrace: 60001 }, RangeError, /rateLimitGrace/],
  ];
  for (const [options, type, message] of bad) {
    assert.throws(() => new Server(options), (err) => err instanceof type && message.test(err.message), JSON.stringify(options));
  }
  const s = new Server({ maxMessagesPerSecond: 10, messageBurst: 600, addressPrefix: { v6: 48 } });
  s.close();
});
