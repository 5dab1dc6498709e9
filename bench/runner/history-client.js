'use strict';
// The history phase's clients (one process of several): N sockets to
// bench/servers/history-server.js, each subscribed to topic t<i % topics>
// (i: its global index), each checking that its topic's sequence numbers
// (and, for symphony.v1, the offsets) arrive once each, in order, across a
// cut and a resume.
//
//   node bench/runner/history-client.js --impl symphony|socketio --port P
//        --count N --first I --topics 10 --local 127.0.0.2 [--pending 200] [--fresh-ms 250]
//
// symphony: the `ws` package, subprotocol symphony.v1, frames parsed by hand
// (docs/protocol.md): 'p<id>,<offset>\n<payload>' and 'c<JSON>' notices; a
// reconnect sends sy.since=<epoch>:<offset>:<topic>. socket.io:
// socket.io-client 4.8 (websocket transport, reconnection off: the runner says
// when), which keeps its own pid/offset and sends them on reconnect.
//
// stdin lines: connect | cut | reconnect <seq per topic, comma-separated> [port] | mark | exit.
// reconnect with a port resumes on that server (another node over the same
// Redis, issue 24): symphony sends its sy.since there; socket.io's manager
// is pointed there and sends its pid/offset.
// stdout: one JSON line per command when it is done ({"ev":...}); times are
// process.hrtime.bigint() (CLOCK_MONOTONIC ns, the runner's clock too).

const readline = require('node:readline');

const o = { impl: 'symphony', port: 0, count: 100, first: 0, topics: 10, local: '127.0.0.1', pending: 200, 'fresh-ms': 250 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in o)) throw new Error(`unknown option ${process.argv[i]}`);
  o[k] = typeof o[k] === 'number' ? Number(process.argv[i + 1]) : process.argv[i + 1];
}
const FRESH_NS = o['fresh-ms'] * 1e6;
const monoN = () => {
  const [s, ns] = process.hrtime();
  return s * 1e9 + ns;
};
const out = (ev, x) => process.stdout.write(`${JSON.stringify({ ev, t: String(process.hrtime.bigint()), ...x })}\n`);

// ---- per-client state and the checks -----------------------------------------------

const clients = [];
for (let k = 0; k < o.count; k++) {
  const i = o.first + k;
  clients.push({
    i, g: i % o.topics, topic: `t${i % o.topics}`, sock: null, open: false, closed: true,
    lastSeq: 0, epoch: null, offset: 0, msgs: 0, gaps: 0, dups: 0, offGaps: 0, offDups: 0,
    connT: 0, caughtT: 0, liveT: 0, replayedHere: 0, target: 0, resuming: false, notRecovered: 0, reason: null,
  });
}
const tot = { msgs: 0, gaps: 0, dups: 0, offGaps: 0, offDups: 0, notRecovered: 0, reasons: {}, replayed: 0, connectErrors: 0, recoveredFlag: 0 };

/** A message with sequence number s and due time dueNs (Number, ns). */
function onSeq(c, s, dueNs) {
  c.msgs++;
  tot.msgs++;
  if (c.lastSeq > 0) {
    if (s <= c.lastSeq) {
      c.dups++;
      tot.dups++;
      return;
    }
    if (s !== c.lastSeq + 1) {
      c.gaps += s - c.lastSeq - 1;
      tot.gaps += s - c.lastSeq - 1;
    }
  }
  c.lastSeq = s;
  if (c.resuming) {
    if (dueNs < c.connT) {
      c.replayedHere++;
      tot.replayed++;
    }
    if (!c.caughtT && s >= c.target) c.caughtT = monoN();
    if (c.caughtT && !c.liveT) {
      const t = monoN();
      if (t - dueNs < FRESH_NS) c.liveT = t;
    }
  }
}

/** '000000000123|<dueNs>|xxx' from byte p of buf. */
function parsePayload(buf, p) {
  let s = 0;
  let k = p;
  for (; k < buf.length && buf[k] !== 0x7c; k++) s = s * 10 + (buf[k] - 48);
  let d = 0;
  for (k++; k < buf.length && buf[k] !== 0x7c; k++) d = d * 10 + (buf[k] - 48);
  return [s, d];
}

// ---- symphony.v1 -----------------------------------------------------------------------

function symphonyConnect(c, done) {
  const WebSocket = require('ws');
  let url = `ws://127.0.0.1:${o.port}/?t=${c.topic}`;
  if (c.epoch) url += `&sy.since=${encodeURIComponent(`${c.epoch}:${c.offset}:${c.topic}`)}`;
  const ws = new WebSocket(url, ['symphony.v1'], { localAddress: o.local, perMessageDeflate: false });
  c.sock = ws;
  let settled = false;
  const settle = (ok) => {
    if (!settled) {
      settled = true;
      done(ok);
    }
  };
  ws.on('open', () => {
    if (ws.protocol !== 'symphony.v1') {
      tot.connectErrors++;
      ws.terminate();
      return;
    }
    c.open = true;
    c.closed = false;
    c.connT = monoN();
    settle(true);
  });
  ws.on('message', (buf) => {
    const kind = buf[0];
    if (kind === 0x70) { // 'p<id>,<offset>\n<payload>'
      let k = 1;
      while (buf[k] !== 0x2c && buf[k] !== 0x0a) k++;
      let off = 0;
      if (buf[k] === 0x2c) for (k++; buf[k] !== 0x0a; k++) off = off * 10 + (buf[k] - 48);
      if (c.offset > 0) {
        if (off <= c.offset) {
          c.offDups++;
          tot.offDups++;
        } else if (off !== c.offset + 1) {
          c.offGaps += off - c.offset - 1;
          tot.offGaps += off - c.offset - 1;
        }
      }
      if (off > c.offset) c.offset = off;
      const [s, d] = parsePayload(buf, k + 1);
      onSeq(c, s, d);
    } else if (kind === 0x63) { // 'c<JSON>'
      const n = JSON.parse(buf.toString('utf8', 1));
      if (n.type === 'subscribed') {
        if (n.epoch && c.epoch && n.epoch !== c.epoch) tot.reasons.epochChanged = (tot.reasons.epochChanged || 0) + 1;
        if (n.recovered === false) {
          c.notRecovered++;
          tot.notRecovered++;
          tot.reasons[n.reason] = (tot.reasons[n.reason] || 0) + 1;
          c.offset = Number(n.offset);
        } else if (n.recovered === true) {
          tot.recoveredFlag++;
        } else {
          c.offset = Number(n.offset); // a first subscription: live from here
        }
        c.epoch = n.epoch || null;
      }
    }
  });
  ws.on('error', () => {
    tot.connectErrors++;
    settle(false);
  });
  ws.on('close', () => {
    if (c.sock !== ws) return;
    c.open = false;
    c.closed = true;
    settle(false);
  });
}

// ---- socket.io ---------------------------------------------------------------------------

function socketioConnect(c, done) {
  let settled = false;
  const settle = (ok) => {
    if (!settled) {
      settled = true;
      done(ok);
    }
  };
  if (!c.sock) {
    const { io } = require('socket.io-client');
    const s = io(`ws://127.0.0.1:${o.port}`, {
      transports: ['websocket'], reconnection: false, forceNew: true, query: { t: c.topic }, localAddress: o.local,
      autoConnect: false, timeout: 60000,
    });
    c.sock = s;
    s.on('m', (p) => {
      // p: '000000000123|<dueNs>|xxx' (string)
      let sq = 0;
      let k = 0;
      for (; k < p.length && p.charCodeAt(k) !== 124; k++) sq = sq * 10 + (p.charCodeAt(k) - 48);
      let d = 0;
      for (k++; k < p.length && p.charCodeAt(k) !== 124; k++) d = d * 10 + (p.charCodeAt(k) - 48);
      onSeq(c, sq, d);
    });
    s.on('disconnect', () => {
      c.open = false;
      c.closed = true;
    });
  }
  const s = c.sock;
  const onConnect = () => {
    s.off('connect_error', onErr);
    c.open = true;
    c.closed = false;
    c.connT = monoN();
    if (c.resuming) {
      if (s.recovered) tot.recoveredFlag++;
      else {
        c.notRecovered++;
        tot.notRecovered++;
        tot.reasons['not-recovered'] = (tot.reasons['not-recovered'] || 0) + 1;
      }
    }
    settle(true);
  };
  const onErr = () => {
    s.off('connect', onConnect);
    tot.connectErrors++;
    settle(false);
  };
  s.once('connect', onConnect);
  s.once('connect_error', onErr);
  s.connect();
}

const connectOne = o.impl === 'socketio' ? socketioConnect : symphonyConnect;

// ---- commands ----------------------------------------------------------------------------

/** Opens every client that is not open, at most `pending` handshakes at once;
 * a failed one is tried again (bounded). Resolves when all are open. */
function openAll() {
  return new Promise((resolve) => {
    const queue = clients.filter((c) => !c.open);
    let inflight = 0;
    let failures = 0;
    let left = queue.length;
    if (left === 0) resolve(0);
    const next = () => {
      while (inflight < o.pending && queue.length) {
        const c = queue.shift();
        inflight++;
        connectOne(c, (ok) => {
          inflight--;
          if (ok) {
            if (--left === 0) resolve(failures);
          } else if (++failures < 5 * clients.length) {
            if (o.impl === 'symphony') c.sock = null;
            setTimeout(() => {
              queue.push(c);
              next();
            }, 100);
            return;
          } else if (--left === 0) resolve(failures);
          next();
        });
      }
    };
    next();
  });
}

function snapshot() {
  let open = 0;
  let caught = 0;
  let live = 0;
  let maxCaught = 0;
  let maxLive = 0;
  let maxConn = 0;
  const caughtTs = [];
  const liveTs = [];
  for (const c of clients) {
    if (c.open) open++;
    if (c.caughtT) {
      caught++;
      maxCaught = Math.max(maxCaught, c.caughtT);
      caughtTs.push(c.caughtT);
    }
    if (c.liveT) {
      live++;
      maxLive = Math.max(maxLive, c.liveT);
      liveTs.push(c.liveT);
    }
    if (c.resuming) maxConn = Math.max(maxConn, c.connT);
  }
  const pct = (a, q) => {
    if (!a.length) return 0;
    a.sort((x, y) => x - y);
    return a[Math.min(a.length - 1, Math.floor(q * a.length))];
  };
  const mem = process.memoryUsage();
  return { n: clients.length, open, caught, live, maxConnNs: String(maxConn), maxCaughtNs: String(maxCaught), maxLiveNs: String(maxLive),
    p50LiveNs: String(pct(liveTs, 0.5)), p99LiveNs: String(pct(liveTs, 0.99)), p50CaughtNs: String(pct(caughtTs, 0.5)),
    ...tot, reasons: { ...tot.reasons }, rssKiB: Math.round(mem.rss / 1024) };
}

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const [word, arg, arg2] = line.trim().split(/\s+/);
  if (word === 'connect') {
    const failures = await openAll();
    out('connected', { failures, ...snapshot() });
  } else if (word === 'cut') {
    for (const c of clients) {
      c.resuming = false;
      if (!c.sock) continue;
      if (o.impl === 'symphony') c.sock.terminate();
      else c.sock.io.engine.close(); // a transport close: recoverable (a disconnect() would end the session)
    }
    const t1 = Date.now() + 10000;
    while (clients.some((c) => c.open) && Date.now() < t1) await new Promise((r) => setTimeout(r, 20));
    out('cut', snapshot());
  } else if (word === 'reconnect') {
    const targets = (arg || '').split(',').map(Number);
    if (arg2) o.port = Number(arg2);
    for (const c of clients) {
      if (arg2 && o.impl === 'socketio' && c.sock) c.sock.io.uri = `ws://127.0.0.1:${o.port}`;
      c.resuming = true;
      c.caughtT = 0;
      c.liveT = 0;
      c.target = targets[c.g] || 0;
      if (o.impl === 'symphony') c.sock = null;
    }
    const failures = await openAll();
    out('reconnected', { failures, ...snapshot() });
  } else if (word === 'mark') {
    out('mark', snapshot());
  } else if (word === 'exit') {
    for (const c of clients) {
      if (!c.sock) continue;
      if (o.impl === 'symphony') c.sock.terminate();
      else c.sock.close();
    }
    out('exit', snapshot());
    setTimeout(() => process.exit(0), 100);
  }
});
out('ready', { pid: process.pid });
