'use strict';
// Event streams (Server-Sent Events) in a real browser, through a network
// that misbehaves. Headless Chromium loads a page that follows the topic
// 'feed' of a symphony server with history with nothing but the browser's
// own EventSource (`new EventSource(url)`, `addEventListener('feed', ...)`),
// through a TCP proxy (helpers/cut-proxy.js) that, over and over, cuts the
// connection (both sides destroyed, at once, after a random number of bytes
// of the stream, right after the response's head, while the server replays
// what was missed) or holds its bytes for a while, and the server now and
// then terminates the stream itself, while the server publishes messages
// carrying a sequence number. EventSource reconnects by itself (retry: 1000
// ms, from the server) sending Last-Event-ID, the id of the last event it
// got; the server replays from history what the page missed. The page must
// see every sequence number once, in order, from the first to the last
// published; the server must have seen every reconnect as an event stream
// (transport 'sse') resuming from Last-Event-ID, each recovered. Then the
// resumes that cannot recover: a restarted server (a new epoch) and a
// position older than the history, each reported recovered: false (on the
// server and in the page's sy.notice), a snapshot from the application
// (server.send, a "message" event), then live messages with no gap after it.
//
// The page is served from another origin (helpers/browser-page.js), so the
// server answers with Access-Control-Allow-Origin (onUpgrade's headers).
// The proxy never cuts inside the response's head: Chromium answers a head
// cut after its first byte (and before its last CRLF) by failing the
// EventSource for good (readyState CLOSED, no reconnect), as it does a
// response that is not a 200 text/event-stream; a stream cut at its first
// byte or anywhere after its head is retried.
//
// Chaos is drawn from a seeded PRNG: EVENTSOURCE_SEED=<n> replays a run's
// choices (the network's timing is still the machine's). On a failure the
// message holds what the page saw (its sequence numbers as runs, its
// notices and states), the proxy's log and the server's.
// Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Server } = require('../..');
const { openPage, WAITS } = require('../helpers/browser-page');
const { CutProxy } = require('../helpers/cut-proxy');
const { seeded, Publisher, runs, notARun } = require('../helpers/chaos');

const RATE = 300; // messages per second
const CUTS = 10; // connections cut per chaos run (proxy cuts and terminates); each costs EventSource's 1 s retry
const CHAOS_MS = 25000; // a chaos run ends at CUTS cuts or after this long
const CORS = { 'Access-Control-Allow-Origin': '*' };

const seed = Number(process.env.EVENTSOURCE_SEED) || (Date.now() % 1e9);
const { random, between } = seeded(seed);

// The page: start(url) (re)starts an EventSource that records everything it
// sees in S; until(cond, ms, what) resolves once cond() holds, checked at
// each of its events (no polling), or rejects with a summary.
const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony event stream</title>
<script>
${WAITS}
window.S = null;
window.es = null;
window.start = (url) => {
  if (window.es) window.es.close();
  // epochs: [index of the first message in it, epoch, offset]; bad: offsets
  // that did not follow (the topic's offsets are its sequence numbers).
  const S = window.S = { seqs: [], last: 0, lastId: '', epochs: [], bad: [], offset: 0, opens: 0, errors: 0, streams: 0,
    notices: [], directs: [], closes: [], states: [], odd: [] };
  const es = window.es = new EventSource(url);
  es.onopen = () => { S.opens++; S.states.push('open'); wake(); };
  es.onerror = () => { S.errors++; S.states.push(es.readyState === EventSource.CLOSED ? 'CLOSED' : 'error'); wake(); };
  es.addEventListener('sy.open', () => { S.streams++; wake(); });
  es.addEventListener('sy.notice', (e) => { S.notices.push({ ...JSON.parse(e.data), at: S.seqs.length, id: e.lastEventId }); wake(); });
  es.addEventListener('sy.close', (e) => { S.closes.push(e.data); wake(); });
  es.addEventListener('message', (e) => { S.directs.push({ data: e.data, at: S.seqs.length }); wake(); });
  es.addEventListener('feed', (e) => {
    const seq = JSON.parse(e.data).seq;
    S.seqs.push(seq);
    S.last = seq;
    S.lastId = e.lastEventId;
    const m = /^sy\\.since=([0-9a-f]{16}):([0-9]+):feed$/.exec(e.lastEventId);
    if (m === null) {
      if (S.odd.length < 20) S.odd.push({ at: S.seqs.length - 1, id: e.lastEventId });
    } else {
      const epoch = m[1];
      const offset = Number(m[2]);
      if (S.epochs.length === 0 || S.epochs.at(-1)[1] !== epoch) S.epochs.push([S.seqs.length - 1, epoch, offset]);
      else if (offset !== S.offset + 1) S.bad.push({ at: S.seqs.length - 1, after: S.offset, offset });
      S.offset = offset;
    }
    wake();
  });
  return true;
};
window.summary = () => {
  const S = window.S;
  if (!S) return 'not started';
  return JSON.stringify({ count: S.seqs.length, last: S.last, lastId: S.lastId, readyState: window.es.readyState, opens: S.opens,
    errors: S.errors, notices: S.notices.slice(-3), states: S.states.slice(-8) });
};
window.ready = true;
</script></head><body>event stream</body></html>`;

/**
 * A symphony server with history whose onUpgrade subscribes to 'feed' and
 * allows the page's origin; what it saw, in log: each request (transport,
 * positions from Last-Event-ID), each open (transport, resumes decided at
 * the accept), each 'recovery'.
 */
async function startFeed(options = {}, port = 0) {
  const log = { upgrades: [], opens: [], recoveries: [], errors: [], current: null };
  const server = new Server({
    host: '127.0.0.1', port, threads: 2, history: { size: 5000, ttl: 60 },
    onUpgrade: (req) => {
      log.upgrades.push({ transport: req.transport, since: req.since, lastEventId: req.headers['last-event-id'] ?? null });
      return { topics: ['feed'], headers: CORS };
    },
    ...options,
  });
  server.on('open', (id, info) => {
    log.opens.push({ id, transport: info.transport, recovery: info.recovery });
    log.current = id;
  });
  server.on('recovery', (id, topic, r) => log.recoveries.push({ id, topic, ...r }));
  server.on('close', (id) => { if (log.current === id) log.current = null; });
  server.on('error', (err) => log.errors.push(String(err)));
  await server.listen();
  servers.add(server);
  return { server, log, port: server.address().port };
}

let opened, tab;
const servers = new Set();
const proxies = new Set();

test.before(async () => {
  opened = await openPage(page);
  tab = opened.tab;
});

test.after(async () => {
  if (opened) await opened.close();
  for (const p of proxies) await p.close();
  await Promise.all([...servers].map((s) => s.close()));
});

async function startPage(proxy) {
  await tab.evaluate(`start(${JSON.stringify(`http://127.0.0.1:${proxy.port}/feed`)})`);
}

/** Waits in the page until `cond` (an expression over S and es) holds. */
function until(cond, ms, what) {
  return tab.evaluate(`until(() => ${cond}, ${ms}, ${JSON.stringify(what)})`, { timeout: ms + 2000 });
}

/** What the page saw, and the proxy's and the servers' logs, for a failure's message. */
async function dump(proxy, feeds) {
  let seen;
  try {
    seen = await tab.evaluate(`(() => { const S = window.S; return S && { ...S, seqs: undefined, runs: null, count: S.seqs.length,
      readyState: es.readyState, notices: S.notices.slice(-20), states: S.states.slice(-40), directs: S.directs.slice(-5) }; })()`);
    const seqs = await tab.evaluate('window.S ? window.S.seqs : []');
    if (seen) seen.runs = runs(seqs);
  } catch (err) {
    seen = `(could not read the page: ${err.message})`;
  }
  return `\nseed ${seed} (EVENTSOURCE_SEED=${seed} to replay the choices)`
    + `\npage saw:${seen && typeof seen === 'object'
      ? Object.entries(seen).map(([k, v]) => `\n  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('') : ` ${seen}`}`
    + `\npage console: ${tab.console.slice(-20).join('\n')}`
    + `\nproxy: ${proxy ? `${proxy.accepted} connections, ${proxy.cuts} cuts; log: ${proxy.log.slice(-60).join('; ')}` : '-'}`
    + feeds.map((f, i) => `\nserver ${i}: ${f.log.upgrades.length} requests (last: ${JSON.stringify(f.log.upgrades.slice(-3))}), `
      + `${f.log.opens.length} opens, recoveries ${JSON.stringify(f.log.recoveries.slice(-10))}, errors ${JSON.stringify(f.log.errors)}`).join('');
}

/** Runs body; a failure's message gets what the page, the proxy and the servers saw. */
async function explained(proxy, feeds, body) {
  try {
    await body();
  } catch (err) {
    // In the stack too: the reporter prints an error by its stack.
    const seen = await dump(proxy, feeds);
    err.message += seen;
    if (typeof err.stack === 'string') err.stack += `\n${seen}`;
    throw err;
  } finally {
    await tab.evaluate('window.es && window.es.close(), true').catch(() => {});
  }
}

/** The next 'open' of feed's server (bounded). */
function nextOpen(feed, ms = 5000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { feed.server.off('open', on); reject(new Error(`no stream opened at the server within ${ms} ms`)); }, ms);
    const on = (id) => { clearTimeout(timer); feed.server.off('open', on); resolve(id); };
    feed.server.on('open', on);
  });
}

async function done(feed, proxy) {
  await proxy.close();
  proxies.delete(proxy);
  servers.delete(feed.server);
  await feed.server.close();
}

test(`EventSource cut and terminated ${CUTS} times at ${RATE} messages/s: every message once, in order, every reconnect resumed from Last-Event-ID`, { timeout: 60000 }, async () => {
  const feed = await startFeed();
  const proxy = new CutProxy(feed.port, { heads: true });
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: 'symphony event stream test', every: 5 });
  const counts = { drop: 0, mid: 0, hold: 0, terminate: 0, handshake: 0, replay: 0 };
  const t0 = performance.now();
  let terminates = 0;
  await explained(proxy, [feed], async () => {
    const first = nextOpen(feed);
    await startPage(proxy);
    await first;
    await until('es.readyState === EventSource.OPEN && S.notices.length === 1', 5000, 'the stream open, subscribed');
    pub.start();
    await until('S.seqs.length >= 50', 5000, 'the first 50 messages');

    // Each cut costs at least EventSource's retry (1 s): at most CUTS of
    // them, each after the page was open again and received more.
    let replayNext = false;
    while (proxy.cuts + terminates < CUTS && performance.now() - t0 < CHAOS_MS) {
      if (replayNext) {
        // Cut as soon as the server has the stream: while its replay is on its way.
        replayNext = false;
        await nextOpen(feed);
        proxy.cut();
        continue;
      }
      const count = await tab.evaluate('S.seqs.length');
      await until(`es.readyState === EventSource.OPEN && S.seqs.length >= ${count + between(1, 150)}`, 5000, 'the page open, and receiving');
      const modes = ['drop', 'mid', 'hold', 'terminate', 'handshake', 'replay'];
      const mode = modes[Math.floor(random() * modes.length)];
      counts[mode]++;
      if (mode === 'drop') {
        proxy.cut();
      } else if (mode === 'mid') {
        await proxy.cutAfter(between(1, 3000));
      } else if (mode === 'hold') {
        await proxy.hold(between(20, 300));
      } else if (mode === 'terminate') {
        if (feed.log.current !== null && feed.server.terminate(feed.log.current)) terminates++;
      } else if (mode === 'handshake') {
        // After the head: retry (~14 B), sy.open (~80 B), the subscribed
        // notice (~200 B), then the replay.
        proxy.armNext(between(0, 500));
        proxy.cut();
      } else {
        replayNext = true;
        proxy.cut();
      }
    }
    const chaosMs = performance.now() - t0;

    // Every cut is followed by the page's next request (EventSource retries
    // after 1 s), at the server: waited for before the calm below, which a
    // page that has not yet seen its last cut would pass at once.
    while (feed.log.opens.length < proxy.cuts + terminates + 1) await nextOpen(feed, 8000);

    // Calm: the page reconnects, then the last messages are published.
    await until(`es.readyState === EventSource.OPEN && S.last >= ${pub.seq}`, 8000, 'the page open again, caught up');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 8000, `the last message published (${last})`);
    const S = await tab.evaluate('({ ...S, readyState: es.readyState })');

    const wrong = notARun(S.seqs, 1, last);
    assert.equal(wrong, null, `the page's sequence numbers: 1 to ${last}, each once, in order; runs: ${runs(S.seqs)}`);
    assert.deepEqual(S.odd, [], 'every feed event has an id with the stream\'s one position');
    assert.equal(S.epochs.length, 1, `one epoch: ${JSON.stringify(S.epochs)}`);
    assert.deepEqual(S.bad, [], 'offsets follow each other (and are the sequence numbers)');
    assert.equal(S.epochs[0][2], 1);
    assert.deepEqual(S.directs, [], 'no direct message');
    assert.ok(S.opens >= 2, `the page reopened (${S.opens} opens)`);

    // The page's notices: the first subscribes, each later one is a resume that recovered.
    const [sub, ...resumes] = S.notices;
    assert.equal(sub.type, 'subscribed');
    assert.equal(sub.since, undefined, 'the first stream resumes nothing');
    assert.ok(resumes.length >= 1, 'resumed at least once');
    assert.deepEqual(resumes.filter((n) => n.type !== 'subscribed' || n.recovered !== true || n.topic !== 'feed'), [],
      'each later notice: feed, recovered');

    // The server: every request an event stream; every one after the first
    // with Last-Event-ID (its positions in req.since); every open an event
    // stream; every resume recovered.
    const { upgrades, opens, recoveries } = feed.log;
    const epoch = feed.server.position('feed').epoch;
    assert.ok(upgrades.every((u) => u.transport === 'sse'), 'every request an event stream');
    assert.deepEqual(upgrades[0].since, [], 'the first request has no Last-Event-ID');
    assert.equal(upgrades[0].lastEventId, null);
    const later = upgrades.slice(1);
    assert.ok(later.length >= CUTS, `a request after each cut (${later.length})`);
    assert.deepEqual(later.filter((u) => !(u.lastEventId && u.since.length === 1 && u.since[0].topic === 'feed' && u.since[0].epoch === epoch)), [],
      'each later request: Last-Event-ID, feed\'s position in this epoch');
    assert.ok(opens.every((o) => o.transport === 'sse'), 'every open an event stream');
    assert.equal(opens.length, upgrades.length, 'every request opened');
    assert.equal(opens.length, proxy.accepted, 'one stream per connection');
    assert.ok(opens.slice(1).every((o) => o.recovery.length === 1 && o.recovery[0].recovered === true && o.recovery[0].topic === 'feed'),
      'each later open says: feed recovered');
    assert.equal(recoveries.length, opens.length - 1, 'a recovery for each later open');
    assert.deepEqual(recoveries.filter((r) => !r.recovered), [], 'every resume recovered (server)');
    // The page saw each resume's notice, unless its stream was cut before it.
    assert.ok(resumes.length <= recoveries.length && resumes.length >= recoveries.length - proxy.earlyCuts,
      `${resumes.length} resumes seen by the page for ${recoveries.length} at the server (${proxy.earlyCuts} cut in their first 600 B)`);
    const cuts = proxy.cuts + terminates;
    assert.ok(cuts >= CUTS, `${CUTS} cuts in ${Math.round(chaosMs)} ms (${cuts})`);
    const st = feed.server.stats();
    console.log(`# ${last} messages, ${cuts} cuts (${proxy.cuts} by the proxy, ${terminates} terminates; modes ${JSON.stringify(counts)}), `
      + `${proxy.holds} holds, ${opens.length} streams, ${S.opens} page opens, ${recoveries.length} recoveries, ${st.replayed} messages replayed, `
      + `chaos ${Math.round(chaosMs)} ms, total ${Math.round(performance.now() - t0)} ms, seed ${seed}`);
  });
  pub.stop();
  await done(feed, proxy);
});

/**
 * The application's part of a resume that failed: on 'recovery' with
 * recovered false, a snapshot (what it published so far) by server.send.
 */
function snapshots(feed, pub) {
  const sent = [];
  feed.server.on('recovery', (id, topic, r) => {
    if (r.recovered) return;
    const snap = { snapshot: topic, seq: pub.seq, reason: r.reason };
    assert.ok(feed.server.send(id, JSON.stringify(snap)));
    sent.push(snap);
  });
  return sent;
}

/** The page's messages around the failed resume (its last notice): before it, between it and the snapshot, after the snapshot. */
function split(S) {
  const r = S.notices.at(-1);
  assert.equal(S.notices.filter((n) => n.since !== undefined).length, 1, `one resume: ${JSON.stringify(S.notices)}`);
  assert.equal(S.directs.length, 1, `one direct message (the snapshot): ${JSON.stringify(S.directs)}`);
  const d = S.directs[0];
  assert.ok(d.at >= r.at, 'the snapshot arrives after the resume\'s notice');
  return { r, snap: JSON.parse(d.data), before: S.seqs.slice(0, r.at), between: S.seqs.slice(r.at, d.at), after: S.seqs.slice(d.at) };
}

test('a restarted server (new epoch, same port): the stream resumes with Last-Event-ID, recovered false "epoch", the snapshot, then live', { timeout: 30000 }, async () => {
  let feed = await startFeed();
  const first = feed;
  const proxy = new CutProxy(feed.port, { heads: true });
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: 'symphony event stream test', every: 5 });
  let second = null;
  await explained(proxy, [first], async () => {
    const opening = nextOpen(feed);
    await startPage(proxy);
    await opening;
    await until('es.readyState === EventSource.OPEN && S.notices.length === 1', 5000, 'the stream open, subscribed');
    pub.start();
    await until('S.seqs.length >= 100', 5000, '100 messages');
    const epochA = feed.server.position('feed').epoch;
    // The restart: the old server closes (the stream gets sy.close and
    // ends; EventSource retries), publishes wait for the new one, on the
    // same port.
    feed = null;
    servers.delete(first.server);
    await first.server.close();
    second = await startFeed({}, first.port);
    const sent = snapshots(second, pub);
    const failed = once(second.server, 'recovery');
    feed = second;
    await failed;
    const snapSeq = sent[0].seq;
    await until(`S.last >= ${snapSeq + 100}`, 8000, '100 live messages after the snapshot');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 5000, `the last message published (${last})`);
    const S = await tab.evaluate('S');

    const { r, snap, before, between: mid, after } = split(S);
    assert.deepEqual({ type: r.type, topic: r.topic, recovered: r.recovered, reason: r.reason }, { type: 'subscribed', topic: 'feed', recovered: false, reason: 'epoch' });
    assert.ok(S.closes.length >= 1 && JSON.parse(S.closes[0]).code === 1001, `the old server's sy.close: ${JSON.stringify(S.closes)}`);
    assert.deepEqual(sent, [{ snapshot: 'feed', seq: snapSeq, reason: 'epoch' }]);
    assert.deepEqual(snap, sent[0], 'the page got the snapshot as sent (a "message" event)');
    assert.equal(notARun(before, 1, before.at(-1)), null, `before the restart: 1, 2, 3, ... (${runs(before)})`);
    assert.ok(mid.every((s, i) => s <= snapSeq && (i === 0 || s > mid[i - 1])), `between the notice and the snapshot: what the snapshot holds (${runs(mid)})`);
    assert.equal(notARun(after, snapSeq + 1, last), null, `after the snapshot: ${snapSeq + 1} to ${last}; runs: ${runs(after)}`);
    const epochB = second.server.position('feed').epoch;
    assert.notEqual(epochB, epochA);
    assert.deepEqual(S.epochs.map((e) => e[1]), [epochA, epochB], `two epochs: ${JSON.stringify(S.epochs)}`);
    assert.deepEqual(S.bad, [], 'offsets follow each other within each epoch');
    assert.equal(S.odd.length, 0);
    // The new server: event streams, the resume from the old epoch's position.
    const u = second.log.upgrades;
    assert.ok(u.length >= 1 && u.every((x) => x.transport === 'sse' && x.since.length === 1 && x.since[0].epoch === epochA),
      `requests with Last-Event-ID in the old epoch: ${JSON.stringify(u)}`);
    assert.equal(u[0].since[0].offset, before.at(-1), 'the position of the last message the page got');
    assert.deepEqual(second.log.recoveries.map((x) => [x.topic, x.recovered, x.reason]), [['feed', false, 'epoch']]);
    assert.ok(second.log.opens.every((o) => o.transport === 'sse'));
    console.log(`# epoch: resumed from ${epochA}:${u[0].since[0].offset}, snapshot at ${snapSeq}, ${before.length} before, ${mid.length} between, ${after.length} after`);
  });
  pub.stop();
  await proxy.close();
  proxies.delete(proxy);
  if (second) {
    servers.delete(second.server);
    await second.server.close();
  }
});

test('a resume older than the history (size 20): recovered false "trimmed", the snapshot, then live', { timeout: 30000 }, async () => {
  const feed = await startFeed({ history: { size: 20, ttl: 60 } });
  const proxy = new CutProxy(feed.port, { heads: true });
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: 'symphony event stream test', every: 5 });
  await explained(proxy, [feed], async () => {
    const sent = snapshots(feed, pub);
    const opening = nextOpen(feed);
    await startPage(proxy);
    await opening;
    await until('es.readyState === EventSource.OPEN && S.notices.length === 1', 5000, 'the stream open, subscribed');
    pub.now(10);
    await until('S.last >= 10', 5000, 'the first 10 messages');
    // Cut, then 50 more published before the page can be back (EventSource
    // waits its retry, 1 s): its position (10) is then older than the 20
    // kept (41 to 60).
    const failed = once(feed.server, 'recovery');
    assert.equal(proxy.cut(), 1);
    pub.now(50);
    await failed;
    pub.start();
    await until('S.last >= 200', 5000, 'live messages after the snapshot');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 5000, `the last message published (${last})`);
    const S = await tab.evaluate('S');

    const { r, snap, before, between: mid, after } = split(S);
    assert.deepEqual({ type: r.type, topic: r.topic, recovered: r.recovered, reason: r.reason, since: r.since, offset: r.offset },
      { type: 'subscribed', topic: 'feed', recovered: false, reason: 'trimmed', since: '10', offset: '60' });
    assert.deepEqual(sent, [{ snapshot: 'feed', seq: 60, reason: 'trimmed' }]);
    assert.deepEqual(snap, sent[0]);
    assert.equal(notARun(before, 1, 10), null, `before the cut: 1 to 10 (${runs(before)})`);
    assert.deepEqual(mid, [], 'nothing between the notice and the snapshot');
    assert.equal(notARun(after, 61, last), null, `after the snapshot: 61 to ${last}; runs: ${runs(after)}`);
    assert.equal(S.epochs.length, 1);
    assert.deepEqual(S.bad, [{ at: 10, after: 10, offset: 61 }], 'the one jump in offsets: the messages the snapshot stands for');
    const epoch = feed.server.position('feed').epoch;
    assert.deepEqual(feed.log.upgrades.map((u) => [u.transport, u.since]),
      [['sse', []], ['sse', [{ topic: 'feed', epoch, offset: 10 }]]], 'the resume: Last-Event-ID at 10');
    assert.deepEqual(feed.log.recoveries.map((x) => [x.topic, x.recovered, x.reason]), [['feed', false, 'trimmed']]);
    assert.equal(feed.server.stats().recoveryFailedTrimmed, 1);
  });
  pub.stop();
  await done(feed, proxy);
});
