'use strict';
// A fan-out server under test, on symphony's public API: every connection
// is subscribed to topic t<n % topics> when it opens; each topic gets `rate`
// binary messages per second of `size` bytes, each starting with the
// little-endian process.hrtime.bigint() time at which it was due (t0 + (n+1) /
// rate: the clock loadgen reads as CLOCK_MONOTONIC), so latency is due-time
// latency and includes any queueing behind earlier messages. Stops by itself after `duration` s.
//
//   node bench/servers/fanout-server.js [--port 0] [--threads 2] [--topics 1]
//        [--size 256] [--rate 100] [--duration 30] [--max-backpressure B]
//        [--stats-interval 0] [--payload binary|json] [--deflate 0|1]
//        [--threshold 128] [--seq 0|1] [--bus-url redis://127.0.0.1:P]
//        [--handles 1|0] [--slow-consumer drop|close|conflate] [--all-topics-from N]
//        [--history-size N] [--history-ttl S]
//
// Each option can also come from the environment: PORT, THREADS, TOPICS,
// SIZE, RATE, DURATION, MAX_BACKPRESSURE, STATS_INTERVAL (the command line
// wins).
// BENCH_SYMPHONY_ROOT=DIR loads symphony from DIR (its lib/ and its native
// builds: a baseline checkout) instead of this repository.
// BENCH_LIMITS=1 turns every native limit per address and per connection on
// (LIMITS below), each set high enough never to refuse or pause anyone: what
// the limits cost when they hold nobody back (the arm `--arm-env
// limits=BENCH_LIMITS=1`; docs/limits.md).
// stdout: {"port":N,"symphony":{root,native,allocator}} once listening (what
// was loaded, from where); on exit one JSON line with what was
// published, server.stats() (taken just before close) and memory (the
// process and symphony's allocator, after close).
// stderr, every --stats-interval seconds (0: never): one JSON line with open
// connections, messages out, RSS, the JS heap and the allocator's counters
// (and, where the build has them, its permessage-deflate counters).
//
// --payload json publishes a ~630 B JSON trade message per topic as text
// (json-trade.js; its first field is the due time, {"ts":N,),
// instead of `size` binary bytes. --deflate 1 turns permessage-deflate on
// (compression: { threshold: --threshold, level: 6 }): each publish is
// compressed once for every subscriber that negotiated it.
//
// --bus-url makes the server one node of a fan-out over Redis (symphony's
// `bus: { url }` option): its publishes reach every node's subscribers. Each
// change of the bus's state is printed on stderr at once as
// {"busEvent":"connecting"|"up"|"down","mono_ns":"...","error":...}, and the
// stats lines carry server.stats().bus. --seq 1 puts a per-topic sequence
// number after the due time (loadgen --seq checks it). The runner's control
// lines ("ctl rate R", "ctl mark": harness.js handleControl)
// change the rate and read the counters.
// --history-size N (N > 0) gives every topic history { size: N, ttl:
// --history-ttl } (with --bus-url: numbered by Redis, docs/bus.md "History
// across nodes"); clients that do not ask for symphony.v1 get the payloads
// as without it, so loadgen --seq checks them the same way. "ctl mark" then
// carries the last sequence number published per topic (`seq`).
// The command line, the schedule, the stats and control lines and the final
// line are harness.js's, shared with ws-server.js and uws-server.js.

const { benchTls } = require('./pki');
const { serve, symphonyRoot, createPayloads, memoryKiB, busEvent } = require('./harness');

const ROOT = symphonyRoot();
const { Server, allocator } = require(ROOT);

// symphony's permessage-deflate counters, copied into the stats lines when
// the build has them.
const DEFLATE_STATS = ['deflateConnections', 'compressed', 'compressBytesIn', 'compressBytesOut', 'compressMicros'];

/** The memory fields, with symphony's allocator: its counters, and the pages
 * in use or not yet given back over every arena (what the memory policy
 * controls; jemalloc's `resident` also counts its metadata, whose radix tree
 * leaves it books as wholly resident though most pages are never touched). */
function memory() {
  const arenas = allocator.arenaStats();
  const pages = arenas ? arenas.reduce((sum, r) => sum + r.active + r.dirty + r.muzzy, 0) : null;
  return memoryKiB({ name: allocator.name, ...allocator.stats(), pages });
}

const LIMITS = {
  maxConnectionsPerAddress: 1000000,
  upgradeRatePerAddress: 1000000,
  maxMessagesPerSecond: 1000000,
  maxBytesPerSecond: 2 ** 32,
};

serve('fanout-server', async (o, run) => {
  const server = new Server({
    host: '127.0.0.1',
    port: o.port,
    threads: o.threads,
    maxBackpressure: o['max-backpressure'],
    slowConsumer: o['slow-consumer'],
    tls: benchTls(), // BENCH_TLS=ecdsa|rsa: wss:// on symphony's private OpenSSL
    ...(o.deflate ? { compression: { threshold: o.threshold, level: 6 } } : {}),
    ...(o['bus-url'] ? { bus: { url: o['bus-url'] } } : {}),
    ...(process.env.BENCH_LIMITS === '1' ? LIMITS : {}),
    ...(o['history-size'] > 0 ? { history: { size: o['history-size'], ttl: o['history-ttl'] } } : {}),
  });
  if (o['bus-url']) {
    // A build without the bus would ignore the option and serve alone: no run.
    if (!server.bus || typeof server.bus.on !== 'function') throw new Error('this symphony build has no bus (server.bus is not an EventEmitter)');
    for (const ev of ['connecting', 'up', 'down']) server.bus.on(ev, (err) => busEvent(ev, err && err.message ? err.message : null));
  }
  const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
  let opened = 0;
  let subscribeFailed = 0;
  const closes = {};
  server.on('open', (id) => {
    const all = o['all-topics-from'] > 0 && opened + 1 >= o['all-topics-from'];
    for (const t of all ? topics : [topics[opened % o.topics]]) if (!server.subscribe(id, t)) subscribeFailed++;
    opened++;
  });
  server.on('close', (id, code) => {
    closes[code] = (closes[code] || 0) + 1;
  });

  const { port } = await server.listen();
  process.stdout.write(`${JSON.stringify({ port, symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);

  // publish() copies the payload: the binary one is one buffer, rewritten.
  const { binary, payloadFor, seqs } = createPayloads(o, false);
  // Topic handles (server.topic(name): no lookup per publish) where the
  // build has them and --handles is 1 (the default).
  const handles = o.handles && typeof server.topic === 'function' ? topics.map((name) => server.topic(name)) : null;
  const opts = { binary };
  const deflateStats = (st) => Object.fromEntries(DEFLATE_STATS.filter((k) => k in st).map((k) => [k, st[k]]));
  return {
    // the sum of publish() results: subscribers targeted
    publish: (g, dueNs) => (handles ? handles[g].publish(payloadFor(g, dueNs), opts) : server.publish(topics[g], payloadFor(g, dueNs), opts)),
    statsLine() {
      const st = server.stats();
      if (!st) return null;
      return { connections: st.connections, messagesOut: st.messagesOut, dropped: st.dropped, slowCloses: st.slowCloses,
        conflated: st.conflated, reclaims: st.reclaims,
        reclaimMoved: st.reclaimMoved, reclaimMaxUs: st.reclaimMaxMicros, reclaimUs: st.reclaimMicros, ...deflateStats(st),
        ...(st.bus ? { bus: st.bus } : {}), ...memory() };
    },
    mark() {
      const st = server.stats() || {};
      return { connections: st.connections, messagesOut: st.messagesOut, dropped: st.dropped, slowCloses: st.slowCloses,
        conflated: st.conflated, bus: st.bus || null, seq: seqs() };
    },
    stats: () => server.stats(),
    close: () => server.close(),
    report: () => ({ opened, subscribeFailed, closes }),
    memory,
  };
});
