'use strict';
// Limits against raw-socket attackers that make the server work without
// sending data: control floods that never read their replies, endless
// fragments, control frames at line rate. Each case runs on one IO thread
// (threads: 1) beside a healthy bystander that must still be served, and
// checks that memory comes back once the attackers are gone.
const test = require('node:test');
const assert = require('node:assert/strict');
const { allocator } = require('../..');
const { startServer, client, nextMessage, healthy, closeAll } = require('../helpers/server');
const { open, frame, parseFrames, closeFrom, waitFor } = require('../helpers/raw');

test.afterEach(closeAll);

// What symphony holds: allocated less jemalloc's thread caches (as
// __test__/memory reads it).
const held = () => { const a = allocator.stats(); return a.allocated - a.cached; };
const MiB = 1024 * 1024;

/** A bystander: a ws client subscribed to `topic`, on the same IO thread. */
async function bystander(server, url, topic) {
  const ids = [];
  const onOpen = (id) => ids.push(id);
  server.on('open', onOpen);
  const ws = await client(url);
  await waitFor(() => ids.length > 0, 5000, 'the bystander\'s open event');
  server.off('open', onOpen);
  server.subscribe(ids[0], topic);
  return { ws, id: ids[0] };
}

/** The bystander receives a publish while the attack goes on (waits for the
 * event, bounded); returns how long it took, for the log. */
async function served(server, by, topic, what) {
  const t0 = process.hrtime.bigint();
  const got = nextMessage(by.ws);
  server.publish(topic, `tick ${t0}`);
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: the bystander got no publish within 5 s`)), 5000); });
  const m = await Promise.race([got, late]).finally(() => clearTimeout(timer));
  assert.equal(m.data.toString(), `tick ${t0}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

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

test('ping flood without reading: pongs are charged what they cost, only the newest is kept, reading stops', async () => {
  const { server, port, url } = await startServer({ threads: 1 });
  const by = await bystander(server, url, 'by');
  await served(server, by, 'by', 'before');
  const N = 4, PINGS = 200000;
  const atk = await attackers(server, port, N);
  // Fill each attacker's socket and send queue with data first: from now on
  // nothing the server queues to them leaves.
  for (const a of atk) { a.st.sock.pause(); server.subscribe(a.id, 'fill'); }
  // Every publish reaches all of them, so once each has dropped a few, all
  // are full (dropped counts them together).
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const full = () => server.stats().dropped >= 8 * N;
  for (let i = 0; i < 1000 && !full(); i++) {
    server.publish('fill', chunk);
    if (i % 4 === 3) await new Promise((r) => setImmediate(r));
  }
  await waitFor(full, 10000, 'the attackers\' queues to fill (publishes dropped for each)');
  await served(server, by, 'by', 'after the fill');
  const base = held();
  let peak = 0;
  const watch = setInterval(() => { peak = Math.max(peak, held() - base); }, 5);
  // 200,000 pings each, numbered, in one write; never read.
  const pings = numberedPings(PINGS);
  for (const a of atk) a.st.sock.write(pings);
  // Each attacker's replies back up behind its full socket: it is not read.
  await waitFor(() => server.stats().controlWaits >= N, 10000, 'every attacker to be paused for its control replies');
  const lat = [];
  for (let i = 0; i < 5; i++) lat.push(await served(server, by, 'by', `during the flood (${i})`));
  peak = Math.max(peak, held() - base);
  clearInterval(watch);
  console.log(`# ping flood: ${N} x ${PINGS} pings, server allocator +${(peak / MiB).toFixed(2)} MiB at peak; ` +
    `bystander publish round trips ${lat.map((x) => x.toFixed(1)).join(', ')} ms`);
  assert.ok(peak < 20 * MiB, `the server held +${(peak / MiB).toFixed(1)} MiB under the flood`);
  assert.equal(server.stats().connections, N + 1, 'nobody was closed');
  // The attackers read again: their queues drain, the rest of their pings
  // is read, and the last pong each gets answers its last ping.
  for (const a of atk) { server.unsubscribe(a.id, 'fill'); a.st.sock.resume(); }
  for (const [i, a] of atk.entries()) {
    await waitFor(() => {
      const pongs = parseFrames(a.st.data).filter((f) => f.opcode === 10);
      return pongs.length > 0 && pongs[pongs.length - 1].payload.readUInt32BE(0) === PINGS - 1;
    }, 10000, `attacker ${i}: a pong for its last ping`);
    const pongs = parseFrames(a.st.data).filter((f) => f.opcode === 10).length;
    assert.ok(pongs < PINGS / 10, `attacker ${i} got ${pongs} pongs for ${PINGS} pings`);
  }
  await served(server, by, 'by', 'after the flood');
  // Memory comes back once they are gone.
  for (const a of atk) a.st.sock.destroy();
  await waitFor(() => server.stats().connections === 1, 5000, 'the attackers\' close');
  await waitFor(() => held() - base < 1 * MiB, 5000, 'the memory to come back');
  assert.equal(await healthy(server, url), 'still here');
  by.ws.terminate();
});
