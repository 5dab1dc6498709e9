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
// ws-server.js's ws-redis (redis-relay.js): this node's schedule
// PUBLISHes to Redis only, and every message that arrives on a channel is
// app.publish()ed to the topic's local subscribers. The frame the three
// servers share (command line, schedule, stats, control and final lines):
// harness.js.

const path = require('node:path');
const { serve, createPayloads, memoryKiB, peerStats, CLOSE_DEADLINE_MS } = require('./harness');
const { relayFor } = require('./redis-relay');

function loadUws() {
  const dir = process.env.BENCH_UWS_PATH;
  if (!dir) throw Object.assign(new Error('set BENCH_UWS_PATH to the uWebSockets.js folder (the runner\'s --uws-path)'), { usage: true });
  return require(path.resolve(dir));
}

serve('uws-server', async (o, run) => {
  const uWS = loadUws();
  const topics = Array.from({ length: o.topics }, (_, g) => `t${g}`);
  const live = new Map(); // socket -> its topic index (close() at the end, the relay's interest)
  const local = new Array(o.topics).fill(0); // local subscribers per topic
  let relay = null; // --bus-url: set before the server listens
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

  relay = await relayFor(o, topics, (g, buf) => {
    if (app.publish(topics[g], buf, true, false)) run.deliveries += app.numSubscribers(topics[g]);
  });

  const listenSocket = await new Promise((resolve, reject) => {
    app.listen('127.0.0.1', o.port, (token) => (token ? resolve(token) : reject(new Error(`uws-server: cannot listen on port ${o.port}`))));
  });
  const port = uWS.us_socket_local_port(listenSocket);
  process.stdout.write(`${JSON.stringify({ port, uws: { path: path.resolve(process.env.BENCH_UWS_PATH) } })}\n`);

  // uWS copies what it sends; the relay's client may hold a Buffer until written: fresh ones
  const { binary, payloadFor } = createPayloads(o, !!relay);

  function stats() {
    return peerStats({ connections: live.size, opened, closed, messagesIn, bytesIn, messagesOut: run.deliveries,
      topics: o.topics, bus: relay ? relay.stats() : null });
  }

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

  return {
    publish(g, dueNs) {
      // with a relay to Redis only: the local subscribers get it when it comes back
      if (relay) return relay.publish(g, payloadFor(g, dueNs));
      // publish returns false when the traffic gate is off (or no subscriber)
      return app.publish(topics[g], payloadFor(g, dueNs), binary, true) ? app.numSubscribers(topics[g]) : 0;
    },
    statsLine: () => ({ connections: live.size, messagesOut: run.deliveries, ...memoryKiB() }),
    mark: () => ({ connections: live.size, messagesOut: run.deliveries, dropped: null, bus: relay ? relay.stats() : null }),
    stats,
    close: closeAll,
    report: () => ({ opened, subscribeFailed: 0, closes }),
    memory: () => memoryKiB(),
    extra: () => ({ uws: { path: path.resolve(process.env.BENCH_UWS_PATH), compression: o.deflate ? 'SHARED_COMPRESSOR' : 'DISABLED',
      redis: relay ? relay.version : null } }),
    exit: true, // uWS's loop does not end by itself
  };
});
