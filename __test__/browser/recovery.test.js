'use strict';
// Recovery in a real browser, through a network that misbehaves. Headless
// Chromium loads a page that imports client/symphony-client.mjs as one file
// and follows the topic 'feed' of a symphony server with history (2 IO
// threads), through a TCP proxy (helpers/cut-proxy.js) that, over and over,
// cuts the connection (both sides destroyed, at once or after a random
// number of bytes: mid-frame, mid-handshake, mid-replay) and holds its bytes
// for a while (then lets them through, or cuts with them still held), while
// the server publishes ~1,000 messages/s carrying a sequence number and now
// and then terminates the connection itself. The page must see every
// sequence number once, in order, from the first to the last published, with
// every resume recovered; with permessage-deflate as well. Then the resumes
// that cannot recover: a restarted server (a new epoch) and a resume older
// than the history, each answered with recovered: false, a snapshot from the
// application (server.send), then live messages with no gap after it.
//
// Chaos is drawn from a seeded PRNG: RECOVERY_SEED=<n> replays a run's
// choices (the network's timing is still the machine's). On a failure the
// message holds what the page saw (its sequence numbers as runs, its
// recoveries and states), the proxy's log and the server's.
// Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const { Server } = require('../..');
const { openPage, WAITS } = require('../helpers/browser-page');
const { CutProxy } = require('../helpers/cut-proxy');
const { seeded, Publisher, runs, notARun } = require('../helpers/chaos');

const RATE = 1000; // messages per second
const CUTS = 30; // connections cut per chaos run (proxy cuts and terminates)
const CHAOS_MS = 9000; // a chaos run ends at CUTS cuts or after this long
const T = { timeout: 30000 };
const NOTE = 'symphony recovery test: a payload long enough to be compressed, and compressible: '
  + 'bid ask bid ask bid ask bid ask';

const seed = Number(process.env.RECOVERY_SEED) || (Date.now() % 1e9);
const { random, between } = seeded(seed);

// The page: start(url) (re)starts a client that records everything it sees
// in S; until(cond, ms, what) resolves once cond() holds, checked at each of
// the client's events (no polling), or rejects with a summary.
const page = `<!doctype html><html><head><meta charset="utf-8"><title>symphony recovery</title>
<script type="module">
import { SymphonyClient } from '/symphony-client.mjs';
${WAITS}
window.S = null;
window.start = (url) => {
  if (window.client) window.client.close();
  // last: the last sequence number received; epochs: [index of the first
  // message in it, epoch]; bad: offsets that did not follow (on a topic
  // whose offsets are its sequence numbers).
  const S = window.S = { seqs: [], last: 0, epochs: [], directs: [], recovered: [], subscribed: [], states: [], opens: 0, bad: [], errors: [] };
  const client = window.client = new SymphonyClient(url, { backoff: { min: 10, max: 100 } });
  client.on('message', (topic, data, info) => {
    if (topic === null) {
      S.directs.push({ data, at: S.seqs.length });
    } else {
      const seq = JSON.parse(data).seq;
      S.seqs.push(seq);
      S.last = seq;
      if (S.epochs.length === 0 || S.epochs.at(-1)[1] !== info.epoch) S.epochs.push([S.seqs.length - 1, info.epoch, info.offset]);
      else if (info.offset !== S.offset + 1) S.bad.push({ at: S.seqs.length - 1, after: S.offset, offset: info.offset });
      S.offset = info.offset;
    }
    wake();
  });
  client.on('subscribed', (topic, info) => { S.subscribed.push({ topic, epoch: info.epoch, offset: info.offset, at: S.seqs.length }); });
  client.on('recovered', (topic, ok, info) => {
    S.recovered.push({ topic, ok, reason: info.reason ?? null, since: info.since, offset: info.offset, epoch: info.epoch, at: S.seqs.length });
    wake();
  });
  client.on('state', (state, info) => {
    if (state === 'open') S.opens++;
    S.states.push(state === 'reconnecting' ? 'reconnecting ' + info.code + ' +' + info.delay + 'ms' : state);
    wake();
  });
  client.on('error', (err) => { if (S.errors.length < 20) S.errors.push(err.code + ': ' + err.message); });
  return true;
};
window.summary = () => {
  const S = window.S;
  if (!S) return 'not started';
  return JSON.stringify({ count: S.seqs.length, last: S.last, opens: S.opens, state: window.client.state,
    recovered: S.recovered.slice(-5), directs: S.directs.length, states: S.states.slice(-8), stats: window.client.stats() });
};
window.ready = true;
</script></head><body>recovery</body></html>`;

/** A symphony server with history whose onUpgrade subscribes to 'feed'; what it saw, in log. */
async function startFeed(options = {}, port = 0) {
  const server = new Server({
    host: '127.0.0.1', port, threads: 2, history: { size: 5000, ttl: 60 },
    onUpgrade: () => ({ topics: ['feed'] }),
    ...options,
  });
  const log = { opens: [], recoveries: [], errors: [], current: null, terminates: 0 };
  server.on('open', (id, info) => {
    log.opens.push({ id, protocol: info.protocol, compression: info.compression, recovery: info.recovery });
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
  await tab.evaluate(`start(${JSON.stringify(`ws://127.0.0.1:${proxy.port}/feed`)})`);
}

/** Waits in the page until `cond` (an expression over S and client) holds. */
function until(cond, ms, what) {
  return tab.evaluate(`until(() => ${cond}, ${ms}, ${JSON.stringify(what)})`, { timeout: ms + 2000 });
}

/** What the page saw, and the proxy's and the server's logs, for a failure's message. */
async function dump(proxy, feeds) {
  let seen;
  try {
    seen = await tab.evaluate(`(() => { const S = window.S; return S && { ...S, seqs: undefined, runs: null, count: S.seqs.length,
      states: S.states.slice(-40), recovered: S.recovered.slice(-20), stats: client.stats(), positions: client.positions() }; })()`);
    const seqs = await tab.evaluate('window.S ? window.S.seqs : []');
    if (seen) seen.runs = runs(seqs);
  } catch (err) {
    seen = `(could not read the page: ${err.message})`;
  }
  return `\nseed ${seed} (RECOVERY_SEED=${seed} to replay the choices)`
    + `\npage saw:${seen && typeof seen === 'object'
      ? Object.entries(seen).map(([k, v]) => `\n  ${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('') : ` ${seen}`}`
    + `\npage console: ${tab.console.slice(-20).join('\n')}`
    + `\nproxy: ${proxy ? `${proxy.cuts} cuts; log: ${proxy.log.slice(-40).join('; ')}` : '-'}`
    + feeds.map((f, i) => `\nserver ${i}: ${f.log.opens.length} opens, recoveries ${JSON.stringify(f.log.recoveries.slice(-10))}, errors ${JSON.stringify(f.log.errors)}`).join('');
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
    await tab.evaluate('window.client && window.client.close(), true').catch(() => {});
  }
}

/** The next 'open' of feed's server (bounded). */
function nextOpen(feed, ms = 5000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { feed.server.off('open', on); reject(new Error(`no connection opened at the server within ${ms} ms`)); }, ms);
    const on = (id) => { clearTimeout(timer); feed.server.off('open', on); resolve(id); };
    feed.server.on('open', on);
  });
}

async function chaos({ compression }) {
  const feed = await startFeed({ compression });
  const proxy = new CutProxy(feed.port);
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: NOTE, every: 4 });
  const counts = { drop: 0, mid: 0, hold: 0, 'hold-drop': 0, terminate: 0, handshake: 0, replay: 0 };
  const t0 = performance.now();
  let terminates = 0;
  await explained(proxy, [feed], async () => {
    const opened = nextOpen(feed);
    await startPage(proxy);
    await opened;
    await until("client.state === 'open'", 5000, 'the first connection');
    pub.start();
    await until('S.seqs.length >= 50', 5000, 'the first 50 messages');

    let replayNext = false;
    while (proxy.cuts + terminates < CUTS && performance.now() - t0 < CHAOS_MS) {
      if (replayNext) {
        // Cut (or terminate) as soon as the server has the connection:
        // while its replay is on its way.
        replayNext = false;
        const id = await nextOpen(feed);
        if (random() < 0.5) proxy.cut();
        else if (feed.server.terminate(id)) terminates++;
        continue;
      }
      const count = await tab.evaluate('S.seqs.length');
      await until(`client.state === 'open' && S.seqs.length >= ${count + between(1, 150)}`, 5000, 'the page open, and receiving');
      const modes = ['drop', 'mid', 'hold', 'hold-drop', 'terminate', 'handshake', 'replay'];
      const mode = modes[Math.floor(random() * modes.length)];
      counts[mode]++;
      if (mode === 'drop') {
        proxy.cut();
      } else if (mode === 'mid') {
        await proxy.cutAfter(between(1, 4000));
      } else if (mode === 'hold') {
        await proxy.hold(between(20, 300), false);
      } else if (mode === 'hold-drop') {
        await proxy.hold(between(20, 200), true);
      } else if (mode === 'terminate') {
        if (feed.log.current !== null && feed.server.terminate(feed.log.current)) terminates++;
      } else if (mode === 'handshake') {
        // The 101 is ~170 B, the subscribed notice ~120 B: the next
        // connection is cut in one of them, or early in the replay.
        proxy.armNext(between(0, 600));
        proxy.cut();
      } else {
        replayNext = true;
        proxy.cut();
      }
    }
    const chaosMs = performance.now() - t0;

    // Calm: the page reconnects, then the last messages are published.
    await until("client.state === 'open' && S.recovered.length > 0", 5000, 'the page open again');
    await until(`S.last >= ${pub.seq}`, 5000, 'the page caught up');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 10000, `the last message published (${last})`);
    const S = await tab.evaluate('({ ...S, stats: client.stats() })');

    const wrong = notARun(S.seqs, 1, last);
    assert.equal(wrong, null, `the page's sequence numbers: 1 to ${last}, each once, in order; runs: ${runs(S.seqs)}`);
    assert.equal(S.epochs.length, 1, `one epoch: ${JSON.stringify(S.epochs)}`);
    assert.deepEqual(S.bad, [], 'offsets follow each other (and are the sequence numbers)');
    assert.equal(S.epochs[0][2], 1);
    assert.deepEqual(S.directs, [], 'no direct message');
    assert.equal(S.stats.duplicates, 0, 'the client dropped no duplicate (the server sent none)');
    assert.equal(S.stats.malformed + S.stats.unknown, 0, 'no malformed or unknown frame');
    assert.ok(S.recovered.length > 0, 'resumed at least once');
    assert.deepEqual(S.recovered.filter((r) => !r.ok), [], 'every resume recovered (client)');
    const late = feed.log.opens.slice(1);
    assert.deepEqual(feed.log.recoveries.filter((r) => !r.recovered), [], 'every resume recovered (server)');
    assert.ok(late.every((o) => o.recovery.length === 1 && o.recovery[0].recovered === true && o.recovery[0].topic === 'feed'),
      'each later open says: feed recovered');
    // Each open of the page after the first brings a resume, unless it was
    // cut between its 101 and its subscribed notice.
    assert.ok(S.recovered.length <= S.opens - 1 && S.recovered.length >= S.opens - 1 - proxy.armedCuts,
      `${S.recovered.length} recoveries for ${S.opens} opens (${proxy.armedCuts} cut in their handshake)`);
    // The client offers symphony.v1 and symphony.v2; this server takes v2 (v1 and the client's asks).
    assert.ok(feed.log.opens.every((o) => o.protocol === 'symphony.v2'));
    if (compression) {
      assert.ok(feed.log.opens.every((o) => o.compression === true), 'permessage-deflate negotiated on every connection');
      assert.ok(feed.server.stats().compressed > 0, 'and used');
    }
    const cuts = proxy.cuts + terminates;
    assert.ok(cuts >= 10, `at least 10 cuts in ${Math.round(chaosMs)} ms (${cuts})`);
    const st = feed.server.stats();
    const line = `${compression ? 'deflate' : 'plain'}: ${last} messages, ${cuts} cuts (${proxy.cuts} by the proxy, `
      + `${terminates} terminates; modes ${JSON.stringify(counts)}), ${proxy.holds} holds, ${S.opens} opens, `
      + `${S.recovered.length} recoveries, ${st.replayed} messages replayed, chaos ${Math.round(chaosMs)} ms, `
      + `total ${Math.round(performance.now() - t0)} ms`;
    console.log(`# ${line}`);
  });
  await proxy.close();
  proxies.delete(proxy);
  servers.delete(feed.server);
  await feed.server.close();
}

test('cut, held and terminated ~30 times at 1,000 messages/s: every message once, in order, every resume recovered', T, async () => {
  await chaos({ compression: false });
});

test('the same with permessage-deflate negotiated by Chromium', T, async () => {
  await chaos({ compression: true });
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

/** The page's messages around a failed resume: before it, between it and the snapshot, after the snapshot. */
function split(S) {
  assert.equal(S.recovered.length, 1, `one resume: ${JSON.stringify(S.recovered)}`);
  assert.equal(S.directs.length, 1, `one direct message (the snapshot): ${JSON.stringify(S.directs)}`);
  const r = S.recovered[0];
  const d = S.directs[0];
  assert.ok(d.at >= r.at, 'the snapshot arrives after the resume\'s notice');
  return { r, snap: JSON.parse(d.data), before: S.seqs.slice(0, r.at), between: S.seqs.slice(r.at, d.at), after: S.seqs.slice(d.at) };
}

test('a restarted server (new epoch, same port): recovered false "epoch", the snapshot, then live', T, async () => {
  let feed = await startFeed();
  const first = feed;
  const proxy = new CutProxy(feed.port);
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: NOTE, every: 4 });
  let second = null;
  await explained(proxy, [first], async () => {
    const opened = nextOpen(feed);
    await startPage(proxy);
    await opened;
    pub.start();
    await until('S.seqs.length >= 200', 5000, '200 messages');
    const epochA = feed.server.position('feed').epoch;
    // The restart: the old server closes (the page gets 1001 and retries),
    // publishes wait for the new one, on the same port.
    feed = null;
    servers.delete(first.server);
    await first.server.close();
    second = await startFeed({}, first.port);
    const sent = snapshots(second, pub);
    const failed = once(second.server, 'recovery');
    feed = second;
    await failed;
    const snapSeq = sent[0].seq;
    await until(`S.last >= ${snapSeq + 200}`, 5000, '200 live messages after the snapshot');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 5000, `the last message published (${last})`);
    const S = await tab.evaluate('({ ...S, stats: client.stats(), positions: client.positions() })');

    const { r, snap, before, between: mid, after } = split(S);
    assert.deepEqual({ ok: r.ok, reason: r.reason }, { ok: false, reason: 'epoch' });
    assert.deepEqual(sent, [{ snapshot: 'feed', seq: snapSeq, reason: 'epoch' }]);
    assert.deepEqual(snap, sent[0], 'the page got the snapshot as sent (topic null)');
    assert.equal(notARun(before, 1, before.at(-1)), null, 'before the restart: 1, 2, 3, ...');
    assert.ok(mid.every((s, i) => s <= snapSeq && (i === 0 || s > mid[i - 1])), `between the notice and the snapshot: what the snapshot holds (${runs(mid)})`);
    assert.equal(notARun(after, snapSeq + 1, last), null, `after the snapshot: ${snapSeq + 1} to ${last}; runs: ${runs(after)}`);
    const epochB = second.server.position('feed').epoch;
    assert.notEqual(epochB, epochA);
    assert.deepEqual(S.epochs.map((e) => e[1]), [epochA, epochB], `two epochs: ${JSON.stringify(S.epochs)}`);
    assert.deepEqual(S.bad, [], 'offsets follow each other within each epoch');
    assert.deepEqual(S.positions, { feed: { epoch: epochB, offset: second.server.position('feed').offset } });
    assert.deepEqual(second.log.recoveries.map((x) => [x.topic, x.recovered, x.reason]), [['feed', false, 'epoch']]);
    assert.equal(S.stats.duplicates, 0);
    console.log(`# epoch: resumed from ${epochA}:${r.since}, snapshot at ${snapSeq}, ${before.length} before, ${mid.length} between, ${after.length} after`);
  });
  await proxy.close();
  proxies.delete(proxy);
  if (second) {
    servers.delete(second.server);
    await second.server.close();
  }
});

test('a resume older than the history (size 20): recovered false "trimmed", the snapshot, then live', T, async () => {
  const feed = await startFeed({ history: { size: 20, ttl: 60 } });
  const proxy = new CutProxy(feed.port);
  proxies.add(proxy);
  await proxy.listen();
  const pub = new Publisher(() => feed, { rate: RATE, note: NOTE, every: 4 });
  await explained(proxy, [feed], async () => {
    const sent = snapshots(feed, pub);
    const opened = nextOpen(feed);
    await startPage(proxy);
    await opened;
    pub.now(10);
    await until('S.last >= 10', 5000, 'the first 10 messages');
    // Cut, then 50 more published before the page can be back: its
    // position (10) is then older than the 20 kept (41 to 60). The
    // reconnect's upgrade waits for this JS turn (onUpgrade).
    const failed = once(feed.server, 'recovery');
    assert.equal(proxy.cut(), 1);
    pub.now(50);
    await failed;
    pub.start();
    await until('S.last >= 300', 5000, 'live messages after the snapshot');
    pub.stop();
    const last = pub.seq;
    await until(`S.last >= ${last}`, 5000, `the last message published (${last})`);
    const S = await tab.evaluate('({ ...S, stats: client.stats(), positions: client.positions() })');

    const { r, snap, before, between: mid, after } = split(S);
    assert.deepEqual({ ok: r.ok, reason: r.reason, since: r.since, offset: r.offset }, { ok: false, reason: 'trimmed', since: 10, offset: 60 });
    assert.deepEqual(sent, [{ snapshot: 'feed', seq: 60, reason: 'trimmed' }]);
    assert.deepEqual(snap, sent[0]);
    assert.equal(notARun(before, 1, 10), null, `before the cut: 1 to 10 (${runs(before)})`);
    assert.deepEqual(mid, [], 'nothing between the notice and the snapshot');
    assert.equal(notARun(after, 61, last), null, `after the snapshot: 61 to ${last}; runs: ${runs(after)}`);
    assert.equal(S.epochs.length, 1);
    assert.deepEqual(S.bad, [{ at: 10, after: 10, offset: 61 }], 'the one jump in offsets: the messages the snapshot stands for');
    assert.deepEqual(S.positions, { feed: { epoch: feed.server.position('feed').epoch, offset: last } });
    assert.equal(S.stats.duplicates, 0);
    assert.equal(feed.server.stats().recoveryFailedTrimmed, 1);
  });
  await proxy.close();
  proxies.delete(proxy);
  servers.delete(feed.server);
  await feed.server.close();
});
