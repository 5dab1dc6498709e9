'use strict';
// What the two Pusher servers under test (soketi-server.js and
// pusher-server.js) share: the command line the runner's ServerProc passes
// (--port, --threads, --duration, --stats-interval; the fan-out options are
// taken and ignored: a Pusher server's traffic comes from its HTTP API),
// the app (BENCH_PUSHER_APP=id:key:secret), a free loopback port when
// --port is 0 (Soketi needs a number), the stats lines (one a second on
// stderr, with `connections` when the server can tell) and the stop.

const net = require('node:net');
const { line, memoryKiB } = require('./harness');

function parseArgs(argv) {
  const o = { port: 0, threads: 2, duration: 3600, 'stats-interval': 1 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const v = argv[i + 1];
    i++;
    const k = a.slice(2);
    o[k] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
  }
  return o;
}

function app() {
  const s = process.env.BENCH_PUSHER_APP || 'bench:bench-key:bench-secret';
  const [id, key, secret] = s.split(':');
  if (!id || !key || !secret) throw new Error(`BENCH_PUSHER_APP must be id:key:secret (got ${s})`);
  return { id, key, secret };
}

/** A port free on 127.0.0.1 now (listen on 0, close). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once 127.0.0.1:port accepts a TCP connection (Soketi's start()
 * resolves before its uWS listen socket is up), or rejects after `seconds`. */
async function accepting(port, seconds = 20) {
  const t1 = Date.now() + seconds * 1000;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > t1) throw new Error(`nothing listens on 127.0.0.1:${port} after ${seconds} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Stats lines every `interval` s; counters() gives { connections, ... }
 * (null where the server cannot tell). Returns the timer. */
function statsLines(interval, counters, memory = memoryKiB) {
  const t0 = process.hrtime.bigint();
  const timer = setInterval(() => {
    const t = Number(process.hrtime.bigint() - t0) / 1e9;
    let c = {};
    try {
      c = counters();
    } catch {
      c = {};
    }
    line({ t: Math.round(t * 1000) / 1000, connections: null, ...c, ...memory() });
  }, Math.max(0.1, interval) * 1000);
  timer.unref();
  return timer;
}

/** Exits at --duration (the runner's bound) whatever happens. */
function bound(seconds) {
  setTimeout(() => process.exit(0), Math.max(1, seconds) * 1000).unref();
}

module.exports = { parseArgs, app, freePort, accepting, statsLines, bound };
