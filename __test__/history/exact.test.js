'use strict';
// The exactness argument of docs/history.md ("Why it is exact"), tested: two
// IO threads, the JS thread publishing to two topics without pause, while
// many symphony.v1 clients drop and resume over and over (the server
// terminating them, the client closing cleanly or dropping the socket, some
// before their replay has even arrived). One topic resumes at the accept
// (onUpgrade's topics), the other through server.subscribe(id, topic,
// { since }) after 'open'. At the end every client's offsets, across all its
// connections, are start..N once each, in order.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { startServer, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');
const { sinceQuery, parseFrame } = require('../helpers/v1');

test.afterEach(closeAll);

const CLIENTS = 24;
const CYCLES = 25; // resumes per client while publishing goes on
const MAX_PUBLISHES = 20000; // per topic, a bound on the publisher whatever the pace
const BATCH = 20; // publishes per topic per turn of the event loop
const TOPICS = ['x', 'y'];

test('replay then live: every offset once, in order, across resumes on both IO threads', { timeout: 60000 }, async () => {
  const { server, url } = await startServer({
    threads: 2,
    history: { size: MAX_PUBLISHES + 10, ttl: 0, maxBytes: 0 },
    maxBackpressure: 16 << 20, // never a slow consumer: a drop would be a gap of its own
    onUpgrade: (req) => ({ topics: ['x'], data: { url: req.url, since: req.since } }),
  });
  // Each connection's server id, by the number in its URL (k=): a
  // connection told to leave by the server before its 'open' came (the
  // publisher's end ends every connection) is terminated at its 'open'
  // (terminating by the client's last id would end its previous, closed
  // connection, and this one would wait for its close forever).
  const idOf = new Map(); // connection number -> its id
  const terminateAtOpen = new Set(); // connection numbers
  const errors = [];
  let laterSubscribes = 0;
  server.on('error', (e) => errors.push(e));
  server.on('open', (id, info) => {
    const k = Number(/[?&]k=(\d+)/.exec(info.data.url)[1]);
    idOf.set(k, id);
    // y: subscribed after the accept, resuming from the client's position.
    const y = info.data.since.find((s) => s.topic === 'y');
    const ok = y ? server.subscribe(id, 'y', { since: { epoch: y.epoch, offset: y.offset } }) : server.subscribe(id, 'y');
    if (ok) laterSubscribes++;
    if (terminateAtOpen.delete(k)) server.terminate(id);
  });

  // The publisher: BATCH messages per topic per turn of the event loop, until
  // every client has done its cycles (or the bound). payload = its offset.
  let published = 0;
  let stop = false;
  const publisherDone = new Promise((resolve) => {
    const tick = () => {
      if (stop || published >= MAX_PUBLISHES) { resolve(); return; }
      // A few per turn (the loop turns only as often as the sockets let it).
      for (let k = 0; k < BATCH && published < MAX_PUBLISHES; k++) {
        published++;
        for (const t of TOPICS) server.publish(t, `${t}:${published}`);
      }
      setImmediate(tick);
    };
    setImmediate(tick);
  });

  // Connections waiting for messages leave when the publisher stops.
  const pending = new Set();
  publisherDone.then(() => { for (const f of pending) f(); });

  const counts = { serverTerminate: 0, clientTerminate: 0, clientClose: 0, early: 0, resumedAtAccept: 0, resumedLater: 0 };
  let connections = 0;

  async function runClient(n) {
    const pos = new Map(); // topic -> { epoch, offset: BigInt }
    const got = new Map(TOPICS.map((t) => [t, []])); // topic -> offsets received (BigInt)
    const start = new Map(); // topic -> first position (offset before the first message)
    let problem = null;
    const connectOnce = (mode) => new Promise((resolve, reject) => {
      const since = [...pos].map(([topic, p]) => ({ topic, epoch: p.epoch, offset: p.offset }));
      const q = sinceQuery(since);
      const k = connections++;
      const ws = new WebSocket(`${url}/?c=${n}&k=${k}${q ? `&${q}` : ''}`, 'symphony.v1');
      const ids = new Map();
      let fresh = 0; // messages this connection brought
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        pending.delete(finish);
        if (mode === 'server') {
          counts.serverTerminate++;
          if (idOf.has(k)) server.terminate(idOf.get(k));
          else terminateAtOpen.add(k);
        }
        else if (mode === 'terminate') { counts.clientTerminate++; ws.terminate(); }
        else { counts.clientClose++; ws.close(); }
      };
      ws.on('message', (data, binary) => {
        const f = parseFrame(data, binary);
        if (f.kind === 'c' && f.notice.type === 'subscribed') {
          const no = f.notice;
          ids.set(no.id, no.topic);
          const had = pos.get(no.topic);
          if (had) {
            if (no.recovered !== true) problem ??= `client ${n}: ${no.topic} not recovered: ${JSON.stringify(no)}`;
            if (no.since !== String(had.offset) || no.epoch !== had.epoch) problem ??= `client ${n}: notice ${JSON.stringify(no)} for ${had.epoch}:${had.offset}`;
            if (no.topic === 'x') counts.resumedAtAccept++; else counts.resumedLater++;
          } else {
            if ('recovered' in no || 'since' in no) problem ??= `client ${n}: recovery fields without a position: ${JSON.stringify(no)}`;
            pos.set(no.topic, { epoch: no.epoch, offset: BigInt(no.offset) });
            start.set(no.topic, BigInt(no.offset));
          }
        } else if (f.kind === 'p') {
          const topic = ids.get(f.id);
          if (topic === undefined) { problem ??= `client ${n}: a message for unannounced id ${f.id}`; return; }
          if (f.offset === undefined) { problem ??= `client ${n}: ${topic} message without an offset`; return; }
          if (f.payload.toString() !== `${topic}:${f.offset}`) problem ??= `client ${n}: offset ${f.offset} carries ${f.payload}`;
          got.get(topic).push(f.offset);
          pos.get(topic).offset = f.offset;
          fresh++;
          // Leave once a few messages came (at random, some mid-replay).
          if (mode !== 'final' && fresh >= 1 + ((n * 7 + fresh) % 5) && ids.size === TOPICS.length) finish();
        } else {
          problem ??= `client ${n}: unexpected frame ${JSON.stringify(f)}`;
        }
      });
      ws.once('open', () => {
        // Some connections leave as soon as they are open: their notices
        // and replay may not have come yet.
        if (mode !== 'final' && mode !== 'server' && n % 3 === 0) { counts.early++; finish(); }
      });
      if (mode !== 'final') pending.add(finish);
      if (mode !== 'final' && stop) finish();
      ws.once('close', () => { pending.delete(finish); resolve(); });
      ws.once('error', (e) => { if (!done) reject(e); });
      if (mode === 'final') resolve(ws);
    });

    const modes = ['server', 'terminate', 'close'];
    for (let i = 0; i < CYCLES && published < MAX_PUBLISHES; i++) {
      const mode = modes[(n + i) % 3];
      await connectOnce(mode);
      // Wait for the server to see the close (the next connection is a new id).
      if (problem) break;
    }
    return { pos, got, start, get problem() { return problem; }, connectOnce };
  }

  const clients = await Promise.all(Array.from({ length: CLIENTS }, (_, n) => runClient(n)));
  stop = true;
  await publisherDone;
  const N = BigInt(published);
  for (const t of TOPICS) assert.equal(server.position(t).offset, published, `${t}: the last offset is the publish count`);
  // Every client resumes once more and reads up to N on both topics.
  for (const [n, c] of clients.entries()) assert.equal(c.problem, null, c.problem);
  const finals = await Promise.all(clients.map(async (c) => {
    const ws = await c.connectOnce('final');
    await waitFor(() => c.problem !== null || TOPICS.every((t) => c.pos.get(t) && c.pos.get(t).offset === N), 20000,
      'every client to reach the last offset');
    return ws;
  }));
  for (const ws of finals) ws.close();

  for (const [n, c] of clients.entries()) {
    assert.equal(c.problem, null, c.problem);
    for (const t of TOPICS) {
      const offs = c.got.get(t);
      const from = c.start.get(t) + 1n;
      assert.equal(BigInt(offs.length), N - from + 1n, `client ${n} ${t}: ${offs.length} messages for ${from}..${N}`);
      for (let i = 0; i < offs.length; i++) {
        if (offs[i] !== from + BigInt(i)) assert.fail(`client ${n} ${t}: position ${i} holds ${offs[i]}, expected ${from + BigInt(i)}`);
      }
    }
  }
  const s = server.stats();
  console.log(`# ${published} publishes per topic; ${JSON.stringify(counts)}; replays ${s.replays} replayed ${s.replayed} recovered ${s.recovered}`);
  assert.deepEqual(errors, []);
  // Both IO threads resumed clients, and replayed.
  for (const [i, th] of s.threads.entries()) {
    assert.ok(th.recovered > 0, `IO thread ${i} recovered no resume`);
    assert.ok(th.replays > 0, `IO thread ${i} replayed nothing`);
  }
  const failed = s.recoveryFailedEpoch + s.recoveryFailedTrimmed + s.recoveryFailedFuture + s.recoveryFailedTooLarge +
    s.recoveryFailedNoHistory + s.recoveryFailedMemory;
  assert.equal(failed, 0);
  assert.ok(counts.resumedAtAccept > CLIENTS && counts.resumedLater > CLIENTS, JSON.stringify(counts));
  assert.ok(counts.serverTerminate > 0 && counts.clientTerminate > 0 && counts.clientClose > 0, JSON.stringify(counts));
  assert.ok(laterSubscribes >= counts.resumedLater);
});
