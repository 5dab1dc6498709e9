'use strict';
// The asks phase's server (bench/README.md, "asks"): clients that subscribe,
// publish and request, on symphony (symphony.v2) or on socket.io 4.8.
//
//   node bench/servers/asks-server.js --impl symphony|socketio [--auth token|hook]
//        [--secret HEX] [--threads 1] [--duration 600] [--port 0]
//
// symphony: idleTimeout 0 (the bench's raw clients answer no ping); a
// client's subscribe is authorized by
//   --auth token: options.tokens { keys: [{ alg: 'HS256', secret }] } and no
//                 onSubscribe: a subscribe whose token grants its topic goes
//                 live on the IO thread, with no call into JavaScript;
//   --auth hook:  onSubscribe: (id, topic) => topic.startsWith('room.'), at once.
// Both: onPublish (true for 'room.*') and onRequest (the request's data back).
// When new Server({ tokens }) or its listen() throws because this checkout
// has no tokens yet ("is not a known option", or a native build without
// them), stdout says {"skipped": "..."} and the process exits 0.
//
// socketio: socket.io 4.8 on Node's http server, websocket transport only,
// pings every 10 min (none during a run: symphony's arms send none either);
//   'join'    (room, ack): socket.join(room) when room is 'room.*'; ack(ok)
//   'publish' (room, data, ack): io.to(room).emit('m', data); ack(true)
//   'echo'    (data, ack): ack(data)
//
// stdin control lines, each answered by one JSON line on stderr {"ctl":word,...}:
//   mark   the counters (symphony: server.stats()'s ask and token counters;
//          socket.io: joins, rooms), connections, process.cpuUsage() (µs), RSS,
//          the V8 heap used, and the JS thread's garbage collections so far
//          (count and ms, all and major: perf_hooks 'gc' entries)
// stdout: {"port":N,"impl":...,"symphony":{root,native,allocator}} once listening;
// a final JSON line on exit.

const path = require('node:path');
const readline = require('node:readline');
const { PerformanceObserver, constants } = require('node:perf_hooks');

function parseArgs(argv) {
  const o = { impl: 'symphony', auth: 'hook', secret: '', threads: 1, duration: 600, port: 0 };
  for (let i = 0; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    if (!(k in o) || argv[i + 1] === undefined) throw new Error(`unknown option or no value: ${argv[i]}`);
    o[k] = typeof o[k] === 'string' ? argv[i + 1] : Number(argv[i + 1]);
  }
  if (o.impl === 'symphony' && !['token', 'hook'].includes(o.auth)) throw new Error(`--auth token|hook (got ${o.auth})`);
  if (o.auth === 'token' && !/^[0-9a-f]{32,}$/.test(o.secret)) throw new Error('--auth token needs --secret HEX (16 bytes or more)');
  return o;
}

const o = parseArgs(process.argv.slice(2));
const mono = () => process.hrtime.bigint();
const ROOM = 'room.';

// The JS thread's garbage collections (a storm allocates; a major GC of a
// large heap in the window is part of what it costs, and varies run to run).
const gc = { gcCount: 0, gcMs: 0, gcMajorCount: 0, gcMajorMs: 0 };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    gc.gcCount++;
    gc.gcMs += e.duration;
    if (e.detail && e.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      gc.gcMajorCount++;
      gc.gcMajorMs += e.duration;
    }
  }
}).observe({ entryTypes: ['gc'] });

function ctlOut(word, extra) {
  process.stderr.write(`${JSON.stringify({ ctl: word, mono_ns: String(mono()), ...extra })}\n`);
}

/** Whether err says this checkout cannot take options.tokens yet. */
function tokensMissing(err) {
  const m = String(err && err.message);
  return /not a known option/.test(m) || (err && err.code === 'ERR_SYMPHONY_TOKENS');
}

async function symphony() {
  const ROOT = process.env.BENCH_SYMPHONY_ROOT ? path.resolve(process.env.BENCH_SYMPHONY_ROOT) : path.join(__dirname, '..', '..');
  const { Server, allocator } = require(ROOT);
  const opts = {
    host: '127.0.0.1',
    port: o.port,
    threads: o.threads,
    idleTimeout: 0,
    onPublish: (id, topic) => topic.startsWith(ROOM),
    onRequest: (id, data) => data,
  };
  if (o.auth === 'hook') opts.onSubscribe = (id, topic) => topic.startsWith(ROOM);
  else opts.tokens = { keys: [{ alg: 'HS256', secret: Buffer.from(o.secret, 'hex') }] };
  let server;
  let port;
  try {
    server = new Server(opts);
    ({ port } = await server.listen());
  } catch (err) {
    if (o.auth === 'token' && tokensMissing(err)) {
      process.stdout.write(`${JSON.stringify({ skipped: `${err.code ? `${err.code}: ` : ''}${err.message}` })}\n`);
      if (server) await server.close().catch(() => {});
      process.exit(0);
    }
    throw err;
  }
  let errors = 0;
  let lastError = null;
  server.on('error', (err) => {
    errors++;
    lastError = `${err.code || ''} ${err.message}`;
  });
  process.stdout.write(`${JSON.stringify({ port, impl: 'symphony', auth: o.auth,
    symphony: { root: ROOT, native: allocator.nativePath, allocator: allocator.name } })}\n`);
  const KEYS = ['connections', 'messagesIn', 'messagesOut', 'askSubscribes', 'askPublishes', 'askRequests', 'tokenSubscribes',
    'tokenRefused', 'askRefused', 'askErrors', 'eventsLost', 'protocolErrors', 'topics'];
  return {
    mark() {
      const st = server.stats() || {};
      return { ...Object.fromEntries(KEYS.map((k) => [k, st[k] ?? null])), errors, lastError };
    },
    close: () => server.close(),
  };
}

async function socketio() {
  const http = require('node:http');
  const { Server } = require('socket.io');
  const httpServer = http.createServer();
  const io = new Server(httpServer, {
    transports: ['websocket'],
    serveClient: false,
    pingInterval: 600000,
    pingTimeout: 600000,
  });
  const c = { joins: 0, joinsRefused: 0, publishes: 0, echoes: 0, connects: 0 };
  io.on('connection', (socket) => {
    c.connects++;
    socket.on('join', (room, ack) => {
      const ok = typeof room === 'string' && room.startsWith(ROOM);
      if (ok) {
        socket.join(room);
        c.joins++;
      } else {
        c.joinsRefused++;
      }
      if (typeof ack === 'function') ack(ok);
    });
    socket.on('publish', (room, data, ack) => {
      const ok = typeof room === 'string' && room.startsWith(ROOM);
      if (ok) {
        io.to(room).emit('m', data);
        c.publishes++;
      }
      if (typeof ack === 'function') ack(ok);
    });
    socket.on('echo', (data, ack) => {
      c.echoes++;
      if (typeof ack === 'function') ack(data);
    });
  });
  await new Promise((resolve) => httpServer.listen(o.port, '127.0.0.1', resolve));
  const { port } = httpServer.address();
  const version = require('socket.io/package.json').version;
  process.stdout.write(`${JSON.stringify({ port, impl: 'socketio', version, symphony: null })}\n`);
  return {
    mark: () => ({ ...c, connections: io.engine.clientsCount, rooms: io.of('/').adapter.rooms.size, socketio: version }),
    close: () => new Promise((resolve) => {
      io.close(() => resolve());
      setTimeout(resolve, 2000).unref();
    }),
  };
}

async function main() {
  let impl;
  if (o.impl === 'symphony') impl = await symphony();
  else if (o.impl === 'socketio') impl = await socketio();
  else throw new Error(`--impl symphony|socketio (got ${o.impl})`);
  readline.createInterface({ input: process.stdin }).on('line', (line) => {
    const word = line.trim().split(/\s+/)[0];
    if (word === 'mark') {
      const cpu = process.cpuUsage(); // every thread of the process: JS, IO threads, V8's helpers
      ctlOut('mark', { ...impl.mark(), cpuUs: cpu.user + cpu.system, rssKiB: Math.round(process.memoryUsage.rss() / 1024),
        heapUsedKiB: Math.round(process.memoryUsage().heapUsed / 1024), ...gc });
    }
  });
  const stop = async () => {
    const last = impl.mark();
    await impl.close();
    process.stdout.write(`${JSON.stringify({ final: true, ...last })}\n`);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  setTimeout(stop, o.duration * 1000).unref();
}

main().catch((err) => {
  process.stderr.write(`asks-server: ${err.stack || err.message}\n`);
  process.exit(1);
});
