'use strict';
// The `ws` peer arm: the same fan-out server as bench/servers/fanout-server.js, on
// the `ws` package (with `bufferutil`) instead of symphony. Same command
// line, environment variables and output lines, so the runner and loadgen
// drive both alike: every connection is subscribed to topic t<n % topics>
// when it opens; each topic gets `rate` binary messages per second of `size`
// bytes, each starting with the little-endian process.hrtime.bigint() of its
// publication (the clock loadgen reads as CLOCK_MONOTONIC). Stops by itself
// after `duration` s.
//
//   node bench/servers/ws-server.js [--port 0] [--threads 2] [--topics 1]
//        [--size 256] [--rate 100] [--duration 30] [--max-backpressure B]
//        [--stats-interval 0] [--payload binary|json] [--deflate 0|1]
//        [--threshold 128]
//
// Each option can also come from the environment: PORT, THREADS, TOPICS,
// SIZE, RATE, DURATION, MAX_BACKPRESSURE, STATS_INTERVAL (the command line
// wins). --threads is accepted and reported but means nothing here: ws runs
// every connection on the one JS thread.
// stdout: {"port":N} once listening; on exit one JSON line with what was
// published, the server's counters in the shape of symphony's
// server.stats() (taken just before close; counters ws cannot know are
// null, and there are no per-thread entries) and memory (after close).
// stderr, every --stats-interval seconds (0: never): one JSON line with open
// connections, messages out, RSS, the JS heap; the allocator fields that
// fanout-server.js fills from symphony's allocator are null here.
//
// --payload json and --deflate as in fanout-server.js. ws compresses each
// send on its own (per connection, on its zlib threads): with --deflate 1
// perMessageDeflate is { threshold: --threshold, level 6,
// serverNoContextTakeover, clientNoContextTakeover } (the same threshold,
// level and wire format as symphony's, so the two compare); with
// BENCH_WS_DEFLATE=defaults it is `true`, ws's defaults (threshold 1024 B,
// context takeover when the client does not ask otherwise: loadgen asks for
// server_no_context_takeover, which ws honours).
//
// How it is written: the way a typical ws service does fan-out, on purpose.
// A WebSocketServer without client tracking;
// per-topic Sets of sockets; publishing builds one Buffer per message and
// calls ws.send(buf, { binary: true }) for each subscriber (ws frames it per
// socket; with no masking the payload Buffer is not copied, so each message
// gets a fresh Buffer rather than one rewritten in place, which would change
// the timestamps of messages still queued). No pre-framed
// Sender.frame()/sendFrame() trick: few services do that, and the runner's
// traffic gate (traffic-gate.js) switches traffic off by wrapping
// WebSocket#send. The slow-consumer policy mirrors symphony's default
// ('drop'): a message that would take a connection's queued bytes
// (ws.bufferedAmount) over --max-backpressure is skipped for that
// connection, unless its queue is empty. No heartbeat of our own (symphony
// pings a connection after 60 s without client traffic; ws does nothing
// unless told).
//
// --bus-url redis://...: the ws-redis peer arm of the bus phase, one node of
// a fan-out over Redis built the way Node users build it by hand today
// (redis-relay.js: the `redis` npm client, a publishing and a
// subscribing client, a channel per topic subscribed while the topic has
// local subscribers). This node's schedule then PUBLISHes to Redis only;
// every message that arrives on a channel, its own included, is sent to the
// topic's local sockets as above. --seq, the busEvent lines and the control
// lines as in fanout-server.js (the frame they share: harness.js).

const https = require('node:https');
const { WebSocketServer, WebSocket } = require('ws');
const { benchTls } = require('./pki');
const { serve, createPayloads, memoryKiB, peerStats, CLOSE_DEADLINE_MS } = require('./harness');
const { relayFor } = require('./redis-relay');

/** ws's perMessageDeflate option for --deflate (see above). */
function deflateOption(o) {
  if (!o.deflate) return false;
  if (process.env.BENCH_WS_DEFLATE === 'defaults') return true;
  return { threshold: o.threshold, zlibDeflateOptions: { level: 6 }, serverNoContextTakeover: true, clientNoContextTakeover: true };
}

// Whether ws found bufferutil, and whether that is the native addon or its
// JS fallback (ws loads it itself, from the same node_modules).
function bufferutilState() {
  if (process.env.WS_NO_BUFFER_UTIL) return 'disabled';
  try {
    const bu = require('bufferutil');
    let fallback = null;
    try {
      fallback = require('bufferutil/fallback');
    } catch {
      // no fallback module: then it is the native one
    }
    return bu === fallback ? 'fallback' : 'native';
  } catch {
    return 'absent';
  }
}

serve('ws-server', async (o, run) => {
  const maxBackpressure = o['max-backpressure'];
  const topics = Array.from({ length: o.topics }, () => new Set());

  let opened = 0;
  let closed = 0;
  let messagesIn = 0;
  let bytesIn = 0;
  let messagesOut = 0;
  let dropped = 0;
  let protocolErrors = 0;
  let handshakeRejects = 0;
  let bytesOutClosed = 0; // socket bytes written by connections already closed
  const closes = {};

  // dueNs: when the message was due (t0 + (n + 1) / rate), as in fanout-server.js,
  // so that this synchronous send loop is measured the same way.
  // ws keeps the Buffer queued: a fresh one per message.
  const { binary, payloadFor } = createPayloads(o, true);
  // ws.send() for every subscriber of the set; returns how many it reached.
  function sendTo(set, buf) {
    let n = 0;
    for (const ws of set) {
      if (ws.readyState !== WebSocket.OPEN) continue;
      const queued = ws.bufferedAmount;
      if (queued > 0 && queued + buf.length > maxBackpressure) {
        dropped++;
        continue;
      }
      // ws.send() returns undefined; `false` can only come from a wrapper
      // that did not send (a traffic gate that is off), which is not counted.
      if (ws.send(buf, { binary }) !== false) n++;
    }
    messagesOut += n;
    return n;
  }

  // Publishes that arrive from Redis, this node's own included (connected
  // before the server exists: the WebSocketServer listens at once).
  const relay = await relayFor(o, topics.map((_, g) => `t${g}`), (g, buf) => {
    run.deliveries += sendTo(topics[g], buf);
  });

  // BENCH_TLS=ecdsa|rsa: wss:// on Node's own TLS (an https server).
  const cert = benchTls();
  const httpsServer = cert ? https.createServer({ cert: cert.cert, key: cert.key }) : null;
  const wss = new WebSocketServer({
    ...(httpsServer ? { server: httpsServer } : { host: '127.0.0.1', port: o.port }),
    perMessageDeflate: deflateOption(o),
    clientTracking: false, // the topic Sets are the tracking
  });
  wss.on('wsClientError', (err, socket) => {
    handshakeRejects++;
    if (socket.writable) socket.end(`HTTP/1.1 ${err.statusCode || 400} Bad Request\r\nConnection: close\r\n\r\n`);
    socket.destroy();
  });
  wss.on('error', (err) => {
    process.stderr.write(`ws-server: ${err && err.message}\n`);
  });

  wss.on('connection', (ws) => {
    const g = opened % o.topics;
    const topic = topics[g];
    topic.add(ws);
    if (relay && topic.size === 1) relay.subscribe(g);
    opened++;
    const socket = ws._socket; // to read bytesWritten after close
    ws.on('message', (data) => {
      messagesIn++;
      bytesIn += data.length;
    });
    ws.on('error', () => {
      protocolErrors++; // ws closes the connection itself (1002, 1007, 1009 ...)
    });
    ws.on('close', (code) => {
      topic.delete(ws);
      if (relay && topic.size === 0) relay.unsubscribe(g);
      closed++;
      closes[code] = (closes[code] || 0) + 1;
      if (socket) bytesOutClosed += socket.bytesWritten;
    });
  });

  const listener = httpsServer || wss;
  await new Promise((resolve, reject) => {
    listener.once('listening', resolve);
    listener.once('error', reject);
    if (httpsServer) httpsServer.listen(o.port, '127.0.0.1');
  });
  const { port } = listener.address();
  process.stdout.write(`${JSON.stringify({ port })}\n`);

  function connections() {
    let n = 0;
    for (const set of topics) n += set.size;
    return n;
  }

  // The counters in the shape of symphony's server.stats(). bytesOut: bytes
  // written to the sockets (handshake responses and frames), as symphony
  // counts them.
  function stats() {
    let bytesOut = bytesOutClosed;
    let nonEmpty = 0;
    for (const set of topics) {
      if (set.size > 0) nonEmpty++;
      for (const ws of set) if (ws._socket) bytesOut += ws._socket.bytesWritten;
    }
    return peerStats({ connections: connections(), opened, closed, messagesIn, bytesIn, messagesOut, bytesOut, dropped,
      slowCloses: 0, handshakeRejects, protocolErrors, topics: nonEmpty, bus: relay ? relay.stats() : null });
  }

  // As symphony's server.close(): stop accepting, send 1001 to every
  // client, wait up to CLOSE_DEADLINE_MS for their replies, then drop the rest.
  async function closeAll() {
    const left = [];
    for (const set of topics) for (const ws of set) left.push(ws);
    const gone = left.map((ws) => new Promise((resolve) => {
      if (ws.readyState === WebSocket.CLOSED) resolve();
      else ws.once('close', resolve);
    }));
    // The listening socket closes now; the callback comes once every
    // accepted socket is gone too (they still count for the http server).
    const listenerClosed = new Promise((resolve) => wss.close(() => (httpsServer ? httpsServer.close(() => resolve()) : resolve())));
    for (const ws of left) if (ws.readyState === WebSocket.OPEN) ws.close(1001, 'server closing');
    let deadline;
    await Promise.race([Promise.all(gone), new Promise((resolve) => { deadline = setTimeout(resolve, CLOSE_DEADLINE_MS); })]);
    clearTimeout(deadline);
    for (const ws of left) if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
    await Promise.all(gone);
    // Sockets still in their HTTP handshake would hold it open: bounded.
    let bound;
    await Promise.race([listenerClosed, new Promise((resolve) => { bound = setTimeout(resolve, 1000); })]);
    clearTimeout(bound);
    if (relay) await relay.close();
  }

  return {
    // with a relay to Redis only: the local sockets get it when it comes back
    publish: (g, dueNs) => (relay ? relay.publish(g, payloadFor(g, dueNs)) : sendTo(topics[g], payloadFor(g, dueNs))),
    statsLine: () => ({ connections: connections(), messagesOut, dropped, ...memoryKiB() }),
    mark: () => ({ connections: connections(), messagesOut, dropped, bus: relay ? relay.stats() : null }),
    stats,
    close: closeAll,
    report: () => ({ opened, subscribeFailed: 0, closes }),
    memory: () => memoryKiB(),
    extra: () => ({ ws: { version: require('ws/package.json').version, bufferutil: bufferutilState(), perMessageDeflate: deflateOption(o),
      redis: relay ? relay.version : null } }),
  };
});
