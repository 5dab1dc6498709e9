'use strict';
// Preloaded into the server under test (node --require) by the runner: a
// switch for its traffic, so one process can be measured parked (no
// traffic), then with the same connections active, and so the soak's
// "quiet" trough can stop the traffic. The server scripts publish at a fixed
// offered rate from the moment they listen; they are not changed. While the
// gate is off, a publish does nothing and returns 0 (the script's timer keeps
// running and keeps its schedule, so turning the gate on is not a burst).
//
// Control: lines on stdin, "traffic on" / "traffic off". Each change is
// acknowledged on stderr as {"gate":"on"|"off","t":<server seconds>}; at exit
// {"gate":"exit","gated":N,"passed":M} counts the publish calls.
// A line "ctl WORD ARGS..." is handed to the server script as
// process.emit('bench-control', WORD, [ARGS...]) (the bus phase: "ctl rate R"
// sets the publishing rate, "ctl mark" asks for its counters); the script
// answers on stderr with a JSON line {"ctl":WORD,...}. A script that does not
// listen gets {"ctl":WORD,"error":"..."} from here.
// BENCH_TRAFFIC=off starts with the gate off. BENCH_GATE=symphony|ws|uws says
// which API to gate (symphony: Server#publish; ws: WebSocket#send; uws: the
// publish of every App made through uWebSockets.js's App(), loaded from
// BENCH_UWS_PATH).

const path = require('node:path');
const { symphonyRoot, line: jsonLine } = require('./harness');

let on = process.env.BENCH_TRAFFIC !== 'off';
let gated = 0;
let passed = 0;
const t0 = process.hrtime.bigint();
const secs = () => Math.round(Number(process.hrtime.bigint() - t0) / 1e6) / 1e3;

function wrap(proto, name, offValue) {
  const orig = proto[name];
  if (typeof orig !== 'function') throw new Error(`traffic-gate: no ${name}() to gate`);
  proto[name] = function gatedCall(...args) {
    if (!on) {
      gated++;
      // ws's send(data, options, cb): honour the callback as a real send would.
      const cb = args.find((a) => typeof a === 'function');
      if (cb) process.nextTick(cb);
      return offValue;
    }
    passed++;
    return orig.apply(this, args);
  };
}

const target = process.env.BENCH_GATE || 'symphony';
if (target === 'symphony') {
  // The same module the server script loads (BENCH_SYMPHONY_ROOT: a baseline
  // checkout), or the gate would wrap a Server class the script never uses.
  const { Server, Topic } = require(path.join(symphonyRoot(), 'lib', 'server.js'));
  wrap(Server.prototype, 'publish', 0);
  // Topic handles (server.topic(name)), in builds that have them.
  if (Topic) wrap(Topic.prototype, 'publish', 0);
} else if (target === 'ws') {
  const { WebSocket } = require(require.resolve('ws', { paths: [path.join(__dirname, '..')] }));
  wrap(WebSocket.prototype, 'send', undefined);
} else if (target === 'uws') {
  // The module object the server script gets too (require's cache).
  const uws = require(path.resolve(process.env.BENCH_UWS_PATH || '.'));
  const App = uws.App;
  uws.App = (...args) => {
    const app = App(...args);
    wrap(app, 'publish', false);
    return app;
  };
} else if (target !== 'none') {
  throw new Error(`traffic-gate: BENCH_GATE must be symphony, ws, uws or none (got ${target})`);
}

let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf('\n')) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (line === 'traffic on' || line === 'traffic off') {
      on = line === 'traffic on';
      jsonLine({ gate: on ? 'on' : 'off', t: secs() });
    } else if (line.startsWith('ctl ')) {
      const [word, ...args] = line.slice(4).trim().split(/\s+/);
      if (process.listenerCount('bench-control') === 0) {
        jsonLine({ ctl: word, error: 'the server script takes no control lines' });
      } else {
        process.emit('bench-control', word, args);
      }
    }
  }
});
process.stdin.on('error', () => {});
process.stdin.unref(); // never keeps the server alive
process.on('exit', () => {
  jsonLine({ gate: 'exit', t: secs(), gated, passed });
});
