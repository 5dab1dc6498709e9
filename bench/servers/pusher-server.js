'use strict';
// symphony speaking the Pusher Channels protocol v7 (issue 45), the server
// of the pusher phases' symphony-pusher arm: one app, as Soketi's default
// app (BENCH_PUSHER_APP=id:key:secret), and the two limits soketi-server.js
// raises on Soketi raised alike (LIMITS).
//
//   BENCH_PUSHER_APP=id:key:secret node bench/servers/pusher-server.js --port 0 --threads 1
//
// stdout: {"port":N,"symphony":{root,native,allocator}} once listening (the
// runner checks the build as for fanout-server.js); stderr: a stats line a
// second (connections from server.stats(), the allocator's counters).
//
// Written against the API issue 45 adds, new Server({ pusher: { apps: [{
// id, key, secret }] } }). A build without it is detected and named: the
// script prints {"unavailable":"symphony has no pusher option ..."} on
// stdout and exits with code 3 (the runner reports the arm as not
// available instead of failing the run). Detected two ways: the
// constructor refuses the option, or the server it makes does not answer a
// Pusher connection (/app/<key>?protocol=7) with
// pusher:connection_established within 10 s.

const net = require('node:net');
const crypto = require('node:crypto');
const { symphonyRoot, memoryKiB } = require('./harness');
const { parseArgs, app, statsLines, bound } = require('./pusher-common');

const ROOT = symphonyRoot();
const { Server, allocator } = require(ROOT);

const UNAVAILABLE = 3;

// The limits soketi-server.js raises on Soketi, raised alike here (the
// option's names, docs/pusher.md): members per presence channel (Pusher's
// 100 by default; the storm's --pusher-members may ask for more) and
// events per /batch_events.
const LIMITS = {
  maxPresenceMembers: Number(process.env.BENCH_PRESENCE_MAX_MEMBERS || 100000),
  maxBatchSize: 100,
};

function unavailable(why) {
  process.stdout.write(`${JSON.stringify({ unavailable: `symphony has no pusher option (${why})` })}\n`);
  process.exit(UNAVAILABLE);
}

/** Does the server at port speak Pusher? A raw WebSocket handshake to
 * /app/<key>?protocol=7..., then its first text frame must name
 * pusher:connection_established. */
function speaksPusher(port, key) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    const done = (v) => {
      clearTimeout(timer);
      s.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => done(false), 10000);
    s.on('error', () => done(false));
    s.on('connect', () => {
      s.write(`GET /app/${key}?protocol=7&client=js&version=8.4.0 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`
        + 'Upgrade: websocket\r\nConnection: Upgrade\r\n'
        + `Sec-WebSocket-Key: ${crypto.randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    });
    s.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      if (buf.includes('pusher:connection_established')) done(true);
      else if (buf.length > 65536) done(false);
    });
    s.on('close', () => done(false));
  });
}

function memory() {
  return memoryKiB({ name: allocator.name, ...allocator.stats() });
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const a = app();
  let server;
  try {
    server = new Server({ host: '127.0.0.1', port: o.port, threads: o.threads, pusher: { apps: [a], ...LIMITS } });
  } catch (err) {
    if (/pusher/i.test(String(err && err.message)) || (err && /OPTION|UNKNOWN/.test(String(err.code)))) {
      unavailable(`new Server() refused it: ${err.code || ''} ${err.message}`.trim());
    }
    throw err;
  }
  const { port } = await server.listen();
  if (!(await speaksPusher(port, a.key))) {
    await Promise.resolve(server.close && server.close()).catch(() => {});
    unavailable('a connection to /app/<key>?protocol=7 got no pusher:connection_established');
  }
  process.stdout.write(`${JSON.stringify({ port, symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);
  statsLines(o['stats-interval'], () => {
    const st = typeof server.stats === 'function' ? server.stats() : null;
    return { connections: st && Number.isFinite(st.connections) ? st.connections : null };
  }, memory);
  const stop = () => {
    Promise.resolve(server.close()).then(() => process.exit(0), () => process.exit(1));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  bound(o.duration);
}

main().catch((err) => {
  process.stderr.write(`pusher-server: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
