'use strict';
// The uWebSockets.js peer arm: the same fan-out server as
// bench/servers/fanout-server.js on uWS's pub/sub (ws.subscribe, app.publish), same
// command line, environment variables and output lines as bench/servers/ws-server.js.
//
//   BENCH_UWS_PATH=DIR node bench/servers/uws-server.js [--port 0] [--threads 2]
//        [--topics 1] [--size 256] [--rate 100] [--duration 30]
//        [--max-backpressure B] [--stats-interval 0] [--payload binary|json]
//        [--deflate 0|1] [--threshold 128]
//
// uWebSockets.js is not a dependency of symphony and is never installed by
// it: it is loaded from BENCH_UWS_PATH (the runner's --uws-path), a folder
// holding its package (uws.js and its .node binaries), and this script
// refuses to start without it.
//
// uWS's way, on purpose: one App on the JS thread (--threads is reported
// but means nothing: uWS runs one event loop here), every connection
// subscribed to its topic in `open`, one app.publish(topic, message, isBinary,
// compress) per message. --deflate 1 is compression: uWS.SHARED_COMPRESSOR
// (one zlib deflate stream for the whole loop, no per-connection state;
// uWS answers server_no_context_takeover); uWS has no size threshold, so
// --threshold means nothing here and is reported. maxBackpressure is
// --max-backpressure and closeOnBackpressureLimit is off: a slow subscriber
// is skipped, as with symphony's default 'drop'.
// stdout / stderr: as bench/servers/ws-server.js (the counters uWS cannot tell are
// null; messagesOut counts subscribers reached by publish, from
// app.numSubscribers).
//
// --bus-url redis://...: the uws-redis peer arm of the bus phase, as
// ws-server.js's ws-redis (bench/servers/redis-relay.js): this node's schedule
// PUBLISHes to Redis only, and every message that arrives on a channel is
// app.publish()ed to the topic's local subscribers.

const path = require('node:path');
const v8 = require('node:v8');
const { parseOptions, createSchedule, createPayloads, handleControl } = require('./server-cli');

const CLOSE_DEADLINE_MS = 2000; // as symphony's closeDeadline default

function loadUws() {
  const dir = process.env.BENCH_UWS_PATH;
  if (!dir) throw Object.assign(new Error('set BENCH_UWS_PATH to the uWebSockets.js folder (the runner\'s --uws-path)'), { usage: true });
  return require(path.resolve(dir));
}

async function main() {
  const o = parseOptions(process.argv.slice(2), process.env);
  const uWS = loadUws();
  const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
  const live = new Map(); // socket -> its topic index (close() at the end, the relay's interest)
  const local = new Array(o.topics).fill(0); // local subscribers per topic
  let relay = null; // --bus-url: set before the server listens
  let published = 0;
  let deliveries = 0;
  let relayed = 0;
  let opened = 0;
  let closed = 0;
  let messagesIn = 0;
  let bytesIn = 0;
  const closes = {};

  const app = uWS.App();
  app.ws('/*', {
    compression: o.deflate ? uWS.SHARED_COMPRESSOR : uWS.DISABLED,
    maxPayloadLength: 64 * 1024,
    maxBackpressure: o['max-backpressure'],
    closeOnBackpressureLimit: false,
    open: (ws) => {
      const g = opened % o.topics;
      ws.subscribe(topics[g]);
      live.set(ws, g);
      if (relay && ++local[g] === 1) relay.subscribe(g);
      opened++;
    },
    message: (ws, message) => {
      messagesIn++;
      bytesIn += message.byteLength;
    },
    close: (ws, code) => {
      const g = live.get(ws);
      live.delete(ws);
      if (relay && g !== undefined && --local[g] === 0) relay.unsubscribe(g);
      closed++;
      closes[code] = (closes[code] || 0) + 1;
    },
  });

  if (o['bus-url']) {
    const { createRelay } = require('./redis-relay');
    relay = await createRelay({
      url: o['bus-url'],
      prefix: o['bus-prefix'],
      topics,
      onMessage: (g, buf) => {
        if (app.publish(topics[g], buf, true, false)) deliveries += app.numSubscribers(topics[g]);
        relayed++;
      },
      onEvent: (ev, error) => {
        process.stderr.write(`${JSON.stringify({ busEvent: ev, mono_ns: String(process.hrtime.bigint()), error })}\n`);
      },
    });
  }

  const listenSocket = await new Promise((resolve, reject) => {
    app.listen('127.0.0.1', o.port, (token) => (token ? resolve(token) : reject(new Error(`uws-server: cannot listen on port ${o.port}`))));
  });
  const port = uWS.us_socket_local_port(listenSocket);
  process.stdout.write(`${JSON.stringify({ port, uws: { path: path.resolve(process.env.BENCH_UWS_PATH) } })}\n`);

  // uWS copies what it sends; the relay's client may hold a Buffer until written: fresh ones
  const { binary, payloadFor } = createPayloads(o, !!relay);
  const schedule = createSchedule(o);
  const t0 = schedule.t0;
  let stopping = false;

  function publishDue() {
    if (stopping) return;
    for (const [g, dueNs] of schedule.duePairs()) {
      const topic = topics[g];
      if (relay) { // to Redis only: the local subscribers get it when it comes back
        relay.publish(g, payloadFor(g, dueNs));
        published++;
        continue;
      }
      // publish returns false when the traffic gate is off (or no subscriber)
      if (app.publish(topic, payloadFor(g, dueNs), binary, true)) deliveries += app.numSubscribers(topic);
      published++;
    }
  }
  const timer = setInterval(publishDue, 1);

  function stats() {
    return {
      connections: live.size,
      opened,
      closed,
      messagesIn,
      bytesIn,
      messagesOut: deliveries,
      bytesOut: null,
      dropped: null,
      slowCloses: null,
      handshakeRejects: null,
      protocolErrors: null,
      timeouts: null,
      oomCloses: null,
      eventsLost: null,
      acceptRejects: null,
      topics: o.topics,
      threads: null,
      bus: relay ? { ...relay.stats(), relayed } : null,
    };
  }
  handleControl(schedule, () => {
    const st = stats();
    return { published, deliveries, connections: st.connections, messagesOut: deliveries, dropped: null, bus: st.bus };
  });

  function memory() {
    let m;
    try {
      m = process.memoryUsage();
    } catch {
      m = { rss: null, heapUsed: v8.getHeapStatistics().used_heap_size, external: null };
    }
    const kib = (n) => (n === null || n === undefined ? null : Math.round(n / 1024));
    return { rssKiB: kib(m.rss), heapUsedKiB: kib(m.heapUsed), externalKiB: kib(m.external), allocator: null,
      allocatedKiB: null, activeKiB: null, residentKiB: null, retainedKiB: null };
  }
  const sampler = o['stats-interval'] > 0 ? setInterval(() => {
    const t = Number(process.hrtime.bigint() - t0) / 1e9;
    process.stderr.write(`${JSON.stringify({ t: Math.round(t * 10) / 10, connections: live.size, messagesOut: deliveries, ...memory() })}\n`);
  }, o['stats-interval'] * 1000) : null;

  // As symphony's close(): stop listening, 1001 to every client, wait up to
  // CLOSE_DEADLINE_MS, then drop the rest.
  async function closeAll() {
    uWS.us_listen_socket_close(listenSocket);
    for (const ws of [...live.keys()]) ws.end(1001, 'server closing');
    const t1 = Date.now() + CLOSE_DEADLINE_MS;
    while (live.size > 0 && Date.now() < t1) await new Promise((resolve) => setTimeout(resolve, 20));
    for (const ws of [...live.keys()]) ws.close();
    if (relay) await relay.close();
  }

  async function stop(reason) {
    if (stopping) return;
    stopping = true;
    clearInterval(timer);
    clearInterval(sampler);
    clearTimeout(deadline);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const st = stats();
    await closeAll();
    process.stdout.write(`${JSON.stringify({
      reason,
      seconds,
      options: o,
      opened,
      subscribeFailed: 0,
      closes,
      published,
      publishedPerSecond: published / seconds,
      deliveries,
      maxBatchPerTopic: schedule.maxBatch,
      skipped: schedule.skipped,
      stats: st,
      memoryAfterClose: memory(),
      uws: { path: path.resolve(process.env.BENCH_UWS_PATH), compression: o.deflate ? 'SHARED_COMPRESSOR' : 'DISABLED',
        redis: relay ? relay.version : null },
    })}\n`);
    process.exit(0); // uWS's loop does not end by itself
  }
  const deadline = setTimeout(() => stop('duration'), o.duration * 1000);
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`uws-server: ${err && err.usage ? err.message : err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
