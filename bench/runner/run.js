#!/usr/bin/env node
'use strict';
// The benchmark runner (npm run bench). See bench/README.md.
//
//   node bench/runner/run.js [--quick | --full] [--phases parked,soak,cpu,handshakes,json,bus,publish]
//        [--arms jemalloc,system,system-arena2,ws,jemalloc-tls,ws-tls,jemalloc-deflate,...]
//        [--arm-env NAME=K=V,...] [--repeats 3] [--fixed-order] [--cpus LIST|none]
//        [--baseline DIR] [--uws-path DIR] [...]
//
// Results go to bench/results/YYYY-MM-DD-<what>/ (--name WHAT, or said by the
// phases, preset and repeats; or --out DIR).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { prepareCompare } = require('./compare');
const { BUILTIN, selectArms, order, baselineCheckout, describeCheckout, checkoutLabel, wrongBuild, phasesOf, uwsCheckout, REPO } = require('./arms');
const { ServerProc, LOADGEN } = require('./procs');
const { redisVersion } = require('./redis');
const { fdLimits, fdCount } = require('./sample');
const phases = require('./phases');
const report = require('./report');
const { writeHistory } = require('./history-report');
const { writeSlow } = require('./slow-report');
const { writePresence } = require('./presence-report');
const { writeAsks } = require('./asks-report');
const { writeSse } = require('./sse-report');
const { writePusher } = require('./pusher-report');
const { ensureSoketi } = require('./pusher-peers');
const { now, sleep, resultsName, freeDir, fmt, fmtRange, finite, loadgenMakeVars } = require('./util');

const BENCH = path.join(__dirname, '..');
const PUSHER_PHASES = ['pusher-fanout', 'pusher-idle', 'pusher-http', 'pusher-presence'];
const ALL_PHASES = ['parked', 'soak', 'cpu', 'handshakes', 'json', 'bus', 'publish', 'history', 'slow', 'presence', 'asks', 'sse', ...PUSHER_PHASES];
// bus (issue 12: several processes over Redis) and publish (issue 14:
// publish-heavy, N topics x 1 subscriber, with a capacity sweep) are opt-in:
// --phases bus, --phases publish; so are slow and presence (issue 26: joins
// and leaves across nodes, what they and the queries cost Redis) and asks
// (clients' subscribes by token and by hook against socket.io; round trips)
// and sse (issue 34: event streams against WebSocket, a node:http hub and
// better-sse; parked memory of both transports) and the four pusher phases
// (issue 45: the Pusher protocol against Soketi 1.6; bench/runner/pusher.js)
// history (issue 23: a reconnect storm with recovery, against socket.io) is in
// the default run.
const DEFAULT_PHASES = ['parked', 'soak', 'cpu', 'handshakes', 'json', 'history'];

const USAGE = `usage: node bench/runner/run.js [options]        (npm run bench -- [options])

Presets (populations and holds; other options override them):
  --quick                small populations, < 5 min on 2 cores (repeats 1 unless --repeats)
  (default)              ~19k <-> 1.9k connections, 3 cycles, capped to the server's open-file limit
  --full                 100k <-> 10k, 5 cycles (refused when the open-file limit is too low)

Selection:
  --phases LIST          parked,soak,cpu,handshakes,json,bus,publish,history,slow,presence,asks,sse,
                         pusher-fanout,pusher-idle,pusher-http,pusher-presence
                         (default: the first five and history; bus, publish, slow, presence,
                         asks, sse and the pusher phases are opt-in)
  --arms LIST            jemalloc,system,system-arena2,ws,jemalloc-tls,ws-tls,jemalloc-deflate,
                         ws-deflate,ws-deflate-defaults,uws,uws-deflate,symphony-bus,
                         symphony-local,ws-redis,uws-redis (default: all; the soak runs the
                         symphony arms without TLS; handshakes only the TLS arms; json jemalloc,
                         ws, uws and the *-deflate arms, which run nothing else; bus only the
                         last four, which run nothing else; publish jemalloc, ws and uws;
                         presence sy-presence and sy-nopresence, which run nothing else; asks
                         asks-token, asks-hook, asks-socketio, asks-rt-symphony, asks-rt-socketio;
                         sse sse-symphony, sse-symphony-ws, sse-node, sse-better; the pusher
                         phases symphony-pusher and soketi, Soketi installed on demand into
                         bench/out/peers/soketi)
  --uws-path DIR         uWebSockets.js to load for the uws arms (a folder with its package;
                         never a dependency): without it they are left out
  --arm-env NAME=K=V,... an extra arm: the default build plus that environment (repeatable),
                         e.g. --arm-env decay1s=SY_JE_MALLOC_CONF=dirty_decay_ms:1000;
                         BENCH_SYMPHONY_ROOT=DIR makes it another checkout's build (several
                         commits in one run: a bisection)
  --repeats N            runs of each arm per phase (default 3; --quick: 1)
  --fixed-order          A A A B B B instead of interleaving A B C A B C
  --baseline DIR         also run the symphony of another checkout (DIR's lib/ and native/
                         builds: npm install there first), same server script and load: arm
                         base-jemalloc after jemalloc, base-jemalloc-tls after jemalloc-tls
                         (whichever run; the gates still compare jemalloc with system)
  --compare REF          the same against a commit of this repository, checked out and built
                         in bench/out/compare/<commit> (kept for the next run); by default
                         --phases cpu,publish --arms jemalloc,base-jemalloc --publish-sweep none,
                         and the results folder compare-<commit>. Prints each figure's ratio
                         with its spread (per repeat: each run against its twin beside it)

Machine:
  --cpus LIST|none       pin the server to these CPUs (taskset) in every phase, loadgen to the
                         others; default: the cpu, json and publish phases pin the server to
                         CPU 0 and loadgen to the rest, other phases are not pinned; none: never pin
  --threads N            server IO threads (default 2)
  --cpu-threads N        server IO threads in the cpu, json and publish phases (default: the
                         number of server CPUs)
  --sample-hz H          /proc samples per second (default 4)
  --loadgen-max N        connections per loadgen process (default: from the open-file limit)

Populations and timing:
  --connections N        shorthand: parked levels N/2,N; soak peak N, trough N/10; cpu N
  --parked-levels A,B    parked populations (default: cap/2,cap)
  --sse-connections N    sse phase (opt-in): SSE (or WebSocket) clients of the fan-out, over 10
                         topics (default 10000; quick 1000)
  --sse-rate R           sse phase: messages/s per topic, 256 B each (default 10: 10,000 deliveries/s
                         per 1,000 connections)
  --sse-window S         sse phase: the measured window (default 20; quick 5)
  --sse-memory-connections N  sse phase: parked connections of the memory run, SSE and WebSocket
                         (default 10000; quick 1000)
  --pusher-subscribers N pusher-fanout: subscribers per channel, 10 channels (default 1000; quick 100)
  --pusher-rate R        pusher-fanout: events/s per channel, 256 B (default 10: 100,000 deliveries/s)
  --pusher-window S      pusher-fanout and pusher-http: the measured window (default 20 and 10; quick 5 and 3)
  --pusher-idle-connections N  pusher-idle: subscribed idle connections (default 10000; quick 1000)
  --pusher-rooms N  --pusher-members M   pusher-presence: N presence channels × M members joining
                         at once (default 100 × 100; quick 10 × 100)
  --pusher-sockets N     pusher-http: requests in flight (default 8; quick 4)
  --peak P --trough T    soak populations          --cycles C    soak cycles
  --churn F              soak churn, share of open connections per second (default 0.01)
  --cpu-connections C    --cpu-window S            --cpu-shapes 256x10,4096x2 (bytes x msg/s/conn)
  --json-connections C   --json-rate R (msg/s per connection, default 2)  --json-window S
  --handshakes N         TLS handshakes per key type (ECDSA P-256, RSA 2048; default 5000)
  --bus-connections N    bus phase: connections per server process (default 19000; quick 300)
  --bus-nodes N          bus phase: server processes (default 3)
  --bus-topics N         bus phase: topics, each subscribed on every node (default 10)
  --bus-rate D           bus phase: deliveries/s in total at the CPU point (default 100000;
                         quick 9000); the latency point is D/2
  --bus-window S         bus phase: measured window per rate point (default 20; quick 5)
  --bus-outage S         bus phase: seconds Redis stays down (kill -9) before it is started
                         again (default 3; quick 1; 0: no restart step)
  --bus-threads N        bus phase: IO threads per symphony process (default 1)
  --redis-server PATH    bus phase: the redis-server binary (default: redis-server on PATH)
  --publish-connections N  publish phase: connections = topics, one subscriber each
                         (default 10000; quick 1000)
  --publish-rates A,B    publish phase: the named points, publishes/s in total (default
                         50000,100000; quick 5000,10000); the gates compare at the largest
  --publish-sweep LIST|none  publish phase: the capacity sweep, publishes/s, ascending (default
                         50000,60000,...,100000,115000,130000,150000; quick: the named points);
                         none: only the named points, no capacity
  --publish-refine N     publish phase: bisections after the sweep's first failure (default 1)
  --publish-window S     publish phase: measured window per point (default 15; quick 3)
  --publish-p99 MS       publish phase: the latency bound of the capacity (default 50)
  --history-clients N    history phase: symphony clients (default 10000; quick 1000), 10 topics
  --history-peer-clients N  history phase: clients of the socket.io arm and of sy-history-peer
                         (default 2000; quick 500)
  --history-rate R       history phase: live msg/s per topic (default 10)
  --history-outage-rate R  history phase: msg/s per topic while the clients are away (default 100)
  --history-outage S     history phase: seconds the clients are away (default 5)
  --history-size N       history phase: symphony's history size per topic (default 2000)
  --history-window S     history phase: the live window (default 10; quick 4)
  --slow-normal N        slow phase (opt-in): normal connections (default 10000; quick 500)
  --slow-clients N       slow phase: slow connections on every topic, reading 10% of it (default 100; quick 20)
  --slow-window S        slow phase: the measured window (default 30; quick 10)
  --slow-settle S        slow phase: traffic before the window (default 40; quick 30)
  --presence-connections N  presence phase (opt-in): connections over the 3 nodes (default 20000;
                         quick 2000)
  --presence-rooms N     presence phase: rooms, each connection in one (default 100; quick 10)
  --presence-queries K   presence phase: calls of server.presence / server.bus.subscribers per
                         measurement (default 500; quick 200)
  --presence-hold S      presence phase: seconds every entry is held (the renewals; default 6)
  --presence-ttl MS      presence phase: options.presence.ttl (default 15000: a renewal every 5 s)
  --asks-connections N   asks phase (opt-in): connections of the subscribe storm (default 20000,
                         capped to what one server process holds; quick 2000)
  --asks-subs K          asks phase: subscribes per connection, all at once (default 5)
  --asks-rooms R         asks phase: rooms the subscribes go to (default 1000; quick 100)
  --asks-round-trips N   asks phase: timed round trips of each kind, one at a time (default 5000;
                         quick 2000), after N/4 of warm-up
  --peak-hold S --trough-hold S --active S --ramp R (connections/s)
  --settle S             idle and settle times of the parked and cpu phases

Output:
  --name WHAT            results folder bench/results/YYYY-MM-DD-WHAT (the UTC date; WHAT:
                         lower-case words joined by - or .; default: the phases, the preset
                         and the repeats, e.g. default-3x, cpu-publish-3x, parked-quick-1x;
                         -2, -3 ... appended when the folder is there)
  --out DIR              results folder, exactly DIR (instead of --name)
  --rebuild DIR          write DIR/report.md and its charts again from DIR/results.json
  --help
`;

// ---- options -------------------------------------------------------------------

function parseArgs(argv) {
  const o = { armEnv: [] };
  const flags = new Set(['quick', 'full', 'fixed-order', 'help']);
  for (let i = 0; i < argv.length; i++) {
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(argv[i]);
    if (!m) throw new Error(`unexpected argument ${argv[i]}`);
    const [, k, inline] = m;
    if (flags.has(k)) {
      o[k] = true;
      continue;
    }
    const v = inline !== undefined ? inline : argv[++i];
    if (v === undefined) throw new Error(`--${k} needs a value`);
    if (k === 'arm-env') o.armEnv.push(v);
    else o[k] = v;
  }
  const known = new Set(['armEnv', 'quick', 'full', 'fixed-order', 'help', 'phases', 'arms', 'arm-env', 'repeats', 'cpus', 'threads',
    'cpu-threads', 'sample-hz', 'loadgen-max', 'connections', 'parked-levels', 'peak', 'trough', 'cycles', 'churn',
    'cpu-connections', 'cpu-window', 'handshakes', 'cpu-shapes', 'peak-hold', 'trough-hold', 'active', 'ramp', 'settle', 'out', 'name', 'rebuild',
    'baseline', 'compare', 'uws-path', 'json-connections', 'json-rate', 'json-window', 'bus-connections', 'bus-nodes', 'bus-topics',
    'bus-rate', 'bus-window', 'bus-outage', 'bus-threads', 'redis-server', 'publish-connections', 'publish-rates', 'publish-sweep',
    'publish-refine', 'publish-window', 'publish-p99', 'history-clients', 'history-peer-clients', 'history-rate', 'history-outage-rate',
    'history-outage', 'history-size', 'history-window', 'slow-normal', 'slow-clients', 'slow-window', 'slow-settle',
    'presence-connections', 'presence-rooms', 'presence-queries', 'presence-hold', 'presence-ttl',
    'asks-connections', 'asks-subs', 'asks-rooms', 'asks-round-trips', 'sse-connections', 'sse-rate', 'sse-window',
    'sse-memory-connections', 'pusher-subscribers', 'pusher-rate', 'pusher-window', 'pusher-idle-connections', 'pusher-rooms',
    'pusher-members', 'pusher-sockets']);
  for (const k of Object.keys(o)) if (!known.has(k)) throw new Error(`unknown option --${k}`);
  if (o.quick && o.full) throw new Error('--quick and --full exclude each other');
  if (o.out !== undefined && o.name !== undefined) throw new Error('--out and --name exclude each other');
  return o;
}

function int(o, k, min, max) {
  if (o[k] === undefined) return undefined;
  const v = Number(o[k]);
  if (!Number.isInteger(v) || v < min || v > max) throw new Error(`--${k} must be an integer ${min}..${max} (got ${o[k]})`);
  return v;
}

function num(o, k, min, max) {
  if (o[k] === undefined) return undefined;
  const v = Number(o[k]);
  if (!Number.isFinite(v) || v < min || v > max) throw new Error(`--${k} must be a number ${min}..${max} (got ${o[k]})`);
  return v;
}

function list(o, k, allowed) {
  if (o[k] === undefined) return null;
  const v = o[k].split(',').map((s) => s.trim()).filter(Boolean);
  if (allowed) for (const x of v) if (!allowed.includes(x)) throw new Error(`--${k}: unknown ${x} (one of ${allowed.join(', ')})`);
  if (v.length === 0) throw new Error(`--${k} is empty`);
  return v;
}

/** The preset's configuration, before the fd-limit cap. */
function preset(name) {
  const shapes = [{ name: '256 B × 10/s', size: 256, rate: 10 }, { name: '4096 B × 2/s', size: 4096, rate: 2 }];
  if (name === 'quick') {
    return {
      parked: { levels: [500, 1000], idle: 2, settle: 2, active: 4, rate: 2, size: 256, topics: 10, ramp: 5000, measure: 1 },
      cpu: { connections: 1000, shapes, settle: 1, window: 5, topics: 10, ramp: 5000 },
      handshakes: { connections: 1500, pending: 64, bound: 60 },
      json: { connections: 1000, rate: 2, topics: 10, idle: 2, parked: 2, settle: 1, window: 5, ramp: 5000 },
      soak: { peak: 2000, trough: 200, cycles: 2, peakHold: 3, troughHold: 7, afterDrop: 5, freshHold: 5, quietHold: 4,
        zeroHold: 4, handoffHold: 120, churn: 0.02, rate: 1, size: 256, topics: 10, ramp: 4000, measure: 1 },
      bus: { nodes: 3, connections: 300, topics: 10, size: 256, rate: 9000, ramp: 2000, threads: 1, upBound: 15,
        parked: 1, settle: 1, window: 5, outage: 1, resubBound: 10, afterRestart: 3, redisServer: 'redis-server' },
      publish: { connections: 1000, topics: 1000, size: 256, points: [5000, 10000], sweep: [5000, 10000], refine: 0,
        warmup: 1, settle: 1, window: 3, ramp: 5000, p99BoundMs: 50, minDeliveredPct: 99, drainBound: 10 },
      history: { clients: 1000, peerClients: 500, topics: 10, rate: 10, outageRate: 100, outage: 5, size: 2000, ttl: 60, payload: 80,
        settle: 2, window: 4, resumeBound: 120, tail: 2, pending: 200, freshMs: 250, fillTopics: 10, fillPerTopic: 10000 },
      slow: { normal: 500, slow: 20, topics: 50, rate: 2, size: 4096, maxBackpressure: 256 * 1024, readPct: 10, ramp: 5000,
        settle: 30, window: 10, quiet: 2, catchupBound: 60 },
      presence: { connections: 2000, nodes: 3, rooms: 10, perProc: 5000, pending: 256, ttl: 15000, threads: 1, hold: 6, queries: 200,
        concurrency: 16, openBound: 60, stall: 5 },
      asks: { connections: 2000, subs: 5, rooms: 100, perProc: 5000, pending: 256, openBound: 60, stormBound: 60, settle: 1, idle: 1,
        rtCount: 2000, rtWarmup: 500, rtSize: 64 },
      sse: { connections: 1000, topics: 10, size: 256, rate: 10, ramp: 5000, settle: 1, window: 5, drain: 1, drainBound: 20,
        memory: { connections: 1000, idle: 2, settle: 2, ramp: 5000 } },
      pusher: {
        fanout: { channels: 10, subscribers: 100, rate: 10, size: 256, sockets: 16, ramp: 5000, settle: 1, window: 5, drain: 1, drainBound: 20 },
        idle: { connections: 1000, channels: 100, idle: 2, settle: 2, ramp: 5000 },
        http: { channels: 10, size: 256, sockets: 4, warmup: 1, window: 3 },
        presence: { rooms: 10, members: 100, idle: 1, settleBound: 60 },
      },
      measure: 1,
    };
  }
  const big = name === 'full';
  return {
    parked: { levels: big ? [50000, 100000] : [9500, 19000], idle: 5, settle: 5, active: 15, rate: 1, size: 256, topics: 10, ramp: big ? 5000 : 2000, measure: 2 },
    cpu: { connections: 10000, shapes, settle: 3, window: 20, topics: 10, ramp: 2000 },
    handshakes: { connections: 5000, pending: 64, bound: 120 },
    json: { connections: 10000, rate: 2, topics: 10, idle: 5, parked: 5, settle: 3, window: 20, ramp: 2000 },
    soak: { peak: big ? 100000 : 19000, trough: big ? 10000 : 1900, cycles: big ? 5 : 3, peakHold: 20, troughHold: 30, afterDrop: 10,
      freshHold: 30, quietHold: 30, zeroHold: 30, handoffHold: 300, churn: 0.01, rate: 1, size: 256, topics: 10, ramp: big ? 5000 : 2000, measure: 2 },
    // 3 × 19,000: what three processes hold under a 20,000 open-file limit (the same in --full)
    bus: { nodes: 3, connections: 19000, topics: 10, size: 256, rate: 100000, ramp: 2000, threads: 1, upBound: 20,
      parked: 3, settle: 3, window: 20, outage: 3, resubBound: 15, afterRestart: 5, redisServer: 'redis-server' },
    // issue 14: 10,000 topics x 1 subscriber, 256 B; the named points and the capacity sweep (publishes/s in total)
    publish: { connections: 10000, topics: 10000, size: 256, points: [50000, 100000],
      sweep: [50000, 60000, 70000, 80000, 90000, 100000, 115000, 130000, 150000], refine: 1,
      warmup: 3, settle: 3, window: 15, ramp: 2000, p99BoundMs: 50, minDeliveredPct: 99, drainBound: 10 },
    // issue 23: 10 topics; live `rate`/s per topic (1M deliveries/s, the issue's 100/s x 10,000, is past 2 vCPUs);
    // the outage at 100/s per topic for 5 s: ~500 missed per client; socket.io at `peerClients`
    history: { clients: 10000, peerClients: 2000, topics: 10, rate: 10, outageRate: 100, outage: 5, size: 2000, ttl: 60, payload: 80,
      settle: 3, window: 10, resumeBound: 240, tail: 3, pending: 200, freshMs: 250, fillTopics: 100, fillPerTopic: 5000 },
    // slow clients among normal ones: 50 topics of 2 msg/s × 4 KiB (200 normal subscribers each: 20,000
    // deliveries/s, what 2 shared vCPUs serve with loadgen beside); the slow ones on every topic (410 KB/s),
    // reading 10% of it; maxBackpressure 256 KiB (the newest message of 50 topics is 200 KiB)
    slow: { normal: 10000, slow: 100, topics: 50, rate: 2, size: 4096, maxBackpressure: 256 * 1024, readPct: 10, ramp: 2000,
      settle: 40, window: 30, quiet: 2, catchupBound: 120 },
    // issue 26: 20,000 connections over 3 nodes, 100 rooms of 200 members; presence' default ttl (renewal every 5 s);
    // hold 6 s: every node renews every room at least once
    presence: { connections: 20000, nodes: 3, rooms: 100, perProc: 5000, pending: 256, ttl: 15000, threads: 1, hold: 6, queries: 500,
      concurrency: 16, openBound: 120, stall: 10 },
    // clients' asks: a storm of 20,000 connections × 5 subscribes (capped to one server process' open-file limit)
    // over 1,000 rooms; round trips one at a time
    asks: { connections: 20000, subs: 5, rooms: 1000, perProc: 5000, pending: 256, openBound: 120, stormBound: 120, settle: 2, idle: 2,
      rtCount: 5000, rtWarmup: 1250, rtSize: 64 },
    // issue 34: event streams; the cpu phase's fan-out shape (10 topics, 256 B, 10/s per connection) over SSE and
    // WebSocket on one symphony server, a node:http hub and better-sse; parked memory of both transports
    sse: { connections: 10000, topics: 10, size: 256, rate: 10, ramp: 2000, settle: 3, window: 20, drain: 2, drainBound: 60,
      memory: { connections: 10000, idle: 5, settle: 5, ramp: 2000 } },
    // issue 45: the Pusher protocol against Soketi 1.6: 10 channels × 1,000 subscribers, 256 B, 10 events/s per
    // channel (100,000 deliveries/s); 10,000 subscribed idle connections; HTTP publishes in a closed loop; a join
    // storm of 100 presence channels × 100 members (Pusher's own member limit per channel)
    pusher: {
      fanout: { channels: 10, subscribers: 1000, rate: 10, size: 256, sockets: 16, ramp: 2000, settle: 3, window: 20, drain: 2, drainBound: 60 },
      idle: { connections: 10000, channels: 100, idle: 5, settle: 5, ramp: 2000 },
      http: { channels: 10, size: 256, sockets: 8, warmup: 3, window: 10 },
      presence: { rooms: 100, members: 100, idle: 2, settleBound: 120 },
    },
    measure: 2,
  };
}

function parseShapes(s) {
  return s.split(',').map((x) => {
    const m = /^(\d+)x(\d+(?:\.\d+)?)$/.exec(x.trim());
    if (!m) throw new Error(`--cpu-shapes wants SIZExRATE,... (got ${x})`);
    return { name: `${m[1]} B × ${m[2]}/s`, size: Number(m[1]), rate: Number(m[2]) };
  });
}

// ---- machine -------------------------------------------------------------------

function machine() {
  const read = (f) => {
    try {
      return fs.readFileSync(f, 'utf8');
    } catch {
      return '';
    }
  };
  const cpu = (/^model name\s*:\s*(.+)$/m.exec(read('/proc/cpuinfo')) || [])[1] || os.cpus()[0]?.model || '?';
  const thp = (/\[(\w+)\]/.exec(read('/sys/kernel/mm/transparent_hugepage/enabled')) || [])[1] || '?';
  return {
    cpu: cpu.trim(),
    nproc: os.cpus().length,
    memMiB: Math.round(os.totalmem() / 1048576),
    kernel: os.release(),
    node: process.version,
    thp,
    loadavg: os.loadavg().map((x) => x.toFixed(2)).join(' '),
    host: os.hostname(),
  };
}

function hasTaskset() {
  try {
    execFileSync('taskset', ['-c', '0', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function loadgenHelp() {
  try {
    return execFileSync(LOADGEN, ['--help'], { encoding: 'utf8' });
  } catch (e) {
    return `${e.stdout || ''}${e.stderr || ''}`;
  }
}

/** make -C bench: builds bench/out/loadgen, or rebuilds it when any of its
 * sources (loadgen's and the src/ parsers it compiles in) changed; nothing
 * when it is up to date. A stale loadgen would measure with old code. */
function ensureLoadgen(log) {
  const out = execFileSync('make', ['-C', BENCH, '--no-print-directory', ...loadgenMakeVars()],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (/\bcc\b|gcc|clang/.test(out)) log('loadgen built (make -C bench)');
}

/** Starts one idle server to read its open-file limit and descriptors in use. */
async function probeServer(arm) {
  const s = await ServerProc.start({ arm, threads: 2, topics: 1, size: 64, rate: 0, duration: 30, statsInterval: 0, traffic: 'off' });
  const wrong = wrongBuild(arm, s.loaded);
  if (wrong) {
    await s.stop(10);
    throw new Error(wrong);
  }
  await sleep(0.5);
  const lim = fdLimits(s.pid);
  const fds = fdCount(s.pid);
  await s.stop(10);
  return { soft: lim.soft, hard: lim.hard, idleFds: fds };
}

// ---- recorder -------------------------------------------------------------------

class Recorder {
  constructor(dir) {
    this.dir = dir;
    this.samples = fs.createWriteStream(path.join(dir, 'samples.jsonl'));
    this.stats = fs.createWriteStream(path.join(dir, 'server-stats.jsonl'));
    this.events = fs.createWriteStream(path.join(dir, 'events.jsonl'));
    this.log = fs.createWriteStream(path.join(dir, 'run.log'));
  }

  static id(info) {
    return [info.phase, info.arm, info.repeat, info.part || info.shape].filter((x) => x !== undefined).join('/');
  }

  sample(info, server, s) {
    this.samples.write(`${JSON.stringify({ run: Recorder.id(info), pid: server.pid, t: +s.t.toFixed(3), ts: +(s.t - server.t0).toFixed(3),
      rssKiB: s.rssKiB, swapKiB: s.swapKiB, fpKiB: s.fpKiB, cpuS: s.cpuS, userS: s.userS, sysS: s.sysS, minflt: s.minflt, threads: s.threads })}\n`);
  }

  stat(info, server, st) {
    this.stats.write(`${JSON.stringify({ run: Recorder.id(info), pid: server.pid, ts: +(st.rt - server.t0).toFixed(3), ...st })}\n`);
  }

  event(info, e) {
    this.events.write(`${JSON.stringify({ run: Recorder.id(info), ...e })}\n`);
  }

  async close() {
    await Promise.all([this.samples, this.stats, this.events, this.log].map((s) => new Promise((r) => s.end(r))));
  }
}

// ---- main -----------------------------------------------------------------------

async function main() {
  const o = parseArgs(process.argv.slice(2));
  if (o.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (o.rebuild) return rebuild(path.resolve(o.rebuild));
  if (o.compare !== undefined) {
    // --compare REF: REF built beside the working tree is the baseline; by
    // default the cpu and publish phases, this code's arm and its twin.
    if (o.baseline !== undefined) throw new Error('--compare and --baseline exclude each other');
    const ref = prepareCompare(o.compare, (line) => process.stderr.write(`[bench] ${line}\n`));
    o.baseline = ref.dir;
    if (o.phases === undefined) o.phases = 'cpu,publish';
    if (o.arms === undefined) o.arms = 'jemalloc,base-jemalloc';
    if (o['publish-sweep'] === undefined) o['publish-sweep'] = 'none';
    if (o.name === undefined && o.out === undefined) o.name = `compare-${ref.commit.slice(0, 7)}`;
  }
  const presetName = o.quick ? 'quick' : o.full ? 'full' : 'default';
  const cfg = preset(presetName);
  const phaseList = list(o, 'phases', ALL_PHASES) || DEFAULT_PHASES.slice();
  const baseline = o.baseline !== undefined ? baselineCheckout(o.baseline) : null;
  const uws = o['uws-path'] !== undefined ? uwsCheckout(o['uws-path']) : null;
  const { arms: selected, notes: armNotes } = selectArms(list(o, 'arms'), o.armEnv, baseline, uws, phaseList);
  // Without --arms, the arms that run none of the phases asked for are left
  // out (the bus phase's arms run nothing else, and no other arm runs it).
  const arms = o.arms === undefined ? selected.filter((a) => phasesOf(a).some((p) => phaseList.includes(p))) : selected;
  if (o.arms === undefined) {
    // nor a note on an arm left out (no --uws-path) that would not have run anyway
    for (let i = armNotes.length - 1; i >= 0; i--) {
      const m = /^arm (\S+) left out/.exec(armNotes[i]);
      if (m && BUILTIN[m[1]] && !phasesOf(BUILTIN[m[1]]).some((p) => phaseList.includes(p))) armNotes.splice(i, 1);
    }
  }
  const idle = selected.filter((a) => !arms.includes(a)).map((a) => a.name);
  if (idle.length) armNotes.push(`arms that run none of the phases ${phaseList.join(', ')} left out: ${idle.join(', ')}`);
  if (arms.length === 0) throw new Error(`no arm runs the phases ${phaseList.join(', ')}`);
  const repeats = int(o, 'repeats', 1, 100) ?? (o.quick ? 1 : 3);
  // checked now, the folder made only once the run is ready to start
  const runName = o.out ? null : resultsName({ name: o.name, phases: phaseList, defaultPhases: DEFAULT_PHASES, preset: presetName, repeats });
  const nproc = os.cpus().length;

  // population overrides
  const N = int(o, 'connections', 2, 1e6);
  if (N !== undefined) {
    cfg.parked.levels = [Math.floor(N / 2), N];
    cfg.soak.peak = N;
    cfg.soak.trough = Math.max(1, Math.round(N / 10));
    cfg.cpu.connections = N;
    cfg.json.connections = N;
    cfg.publish.connections = cfg.publish.topics = N;
  }
  const lv = list(o, 'parked-levels');
  if (lv) {
    cfg.parked.levels = lv.map(Number);
    if (cfg.parked.levels.some((x, i) => !Number.isInteger(x) || x < 1 || (i && x <= cfg.parked.levels[i - 1]))) {
      throw new Error('--parked-levels wants increasing positive integers');
    }
  }
  cfg.soak.peak = int(o, 'peak', 2, 1e6) ?? cfg.soak.peak;
  cfg.soak.trough = int(o, 'trough', 1, 1e6) ?? cfg.soak.trough;
  if (cfg.soak.trough >= cfg.soak.peak) throw new Error('--trough must be below --peak');
  cfg.soak.cycles = int(o, 'cycles', 1, 100) ?? cfg.soak.cycles;
  cfg.soak.churn = num(o, 'churn', 0, 1) ?? cfg.soak.churn;
  cfg.soak.peakHold = num(o, 'peak-hold', 1, 3600) ?? cfg.soak.peakHold;
  cfg.soak.troughHold = num(o, 'trough-hold', 1, 3600) ?? cfg.soak.troughHold;
  if (cfg.soak.troughHold < cfg.soak.afterDrop + cfg.soak.measure) cfg.soak.afterDrop = Math.max(1, cfg.soak.troughHold - cfg.soak.measure - 1);
  cfg.parked.active = num(o, 'active', 1, 3600) ?? cfg.parked.active;
  const settle = num(o, 'settle', 0.5, 600);
  if (settle !== undefined) {
    cfg.parked.idle = cfg.parked.settle = cfg.cpu.settle = cfg.json.idle = cfg.json.parked = cfg.json.settle = cfg.publish.settle = settle;
  }
  cfg.json.connections = int(o, 'json-connections', 1, 1e6) ?? cfg.json.connections;
  cfg.json.rate = num(o, 'json-rate', 0.1, 1000) ?? cfg.json.rate;
  cfg.json.window = num(o, 'json-window', 2, 3600) ?? cfg.json.window;
  cfg.cpu.connections = int(o, 'cpu-connections', 1, 1e6) ?? cfg.cpu.connections;
  cfg.cpu.window = num(o, 'cpu-window', 2, 3600) ?? cfg.cpu.window;
  cfg.handshakes.connections = int(o, 'handshakes', 10, 1e6) ?? cfg.handshakes.connections;
  if (o['cpu-shapes']) cfg.cpu.shapes = parseShapes(o['cpu-shapes']);
  cfg.bus.connections = int(o, 'bus-connections', 10, 1e6) ?? cfg.bus.connections;
  cfg.bus.nodes = int(o, 'bus-nodes', 2, 16) ?? cfg.bus.nodes;
  cfg.bus.topics = int(o, 'bus-topics', 1, 10000) ?? cfg.bus.topics;
  cfg.bus.rate = num(o, 'bus-rate', 10, 1e8) ?? cfg.bus.rate;
  cfg.bus.window = num(o, 'bus-window', 2, 3600) ?? cfg.bus.window;
  cfg.bus.outage = num(o, 'bus-outage', 0, 600) ?? cfg.bus.outage;
  cfg.bus.threads = int(o, 'bus-threads', 1, 64) ?? cfg.bus.threads;
  if (o['redis-server']) cfg.bus.redisServer = o['redis-server'];
  if (cfg.bus.connections < cfg.bus.topics) throw new Error('--bus-connections must be at least --bus-topics (every topic subscribed on every node)');
  const pc = int(o, 'publish-connections', 1, 1e6);
  if (pc !== undefined) cfg.publish.connections = cfg.publish.topics = pc;
  const rateList = (k) => {
    const v = list(o, k);
    if (!v) return null;
    if (v.length === 1 && v[0] === 'none') return [];
    const r = v.map(Number);
    if (r.some((x) => !Number.isInteger(x) || x < 1 || x > 1e7)) throw new Error(`--${k} wants publishes/s in total, integers 1..10000000`);
    return [...new Set(r)].sort((a, b) => a - b);
  };
  const pr = rateList('publish-rates');
  if (pr) {
    if (!pr.length) throw new Error('--publish-rates needs at least one rate');
    cfg.publish.points = pr;
    if (o['publish-sweep'] === undefined && o.quick) cfg.publish.sweep = pr.slice();
  }
  const ps = rateList('publish-sweep');
  if (ps) cfg.publish.sweep = ps;
  cfg.publish.refine = int(o, 'publish-refine', 0, 10) ?? cfg.publish.refine;
  cfg.publish.window = num(o, 'publish-window', 1, 3600) ?? cfg.publish.window;
  cfg.publish.p99BoundMs = num(o, 'publish-p99', 0.1, 1e5) ?? cfg.publish.p99BoundMs;
  cfg.history.clients = int(o, 'history-clients', 10, 1e6) ?? cfg.history.clients;
  cfg.history.peerClients = int(o, 'history-peer-clients', 10, 1e6) ?? cfg.history.peerClients;
  cfg.history.rate = num(o, 'history-rate', 0.1, 1e5) ?? cfg.history.rate;
  cfg.history.outageRate = num(o, 'history-outage-rate', 0.1, 1e5) ?? cfg.history.outageRate;
  cfg.history.outage = num(o, 'history-outage', 0.5, 55) ?? cfg.history.outage;
  cfg.history.size = int(o, 'history-size', 600, 1e7) ?? cfg.history.size;
  cfg.history.window = num(o, 'history-window', 1, 3600) ?? cfg.history.window;
  cfg.slow.normal = int(o, 'slow-normal', 1, 1e6) ?? cfg.slow.normal;
  cfg.slow.slow = int(o, 'slow-clients', 1, 10000) ?? cfg.slow.slow;
  cfg.slow.window = num(o, 'slow-window', 1, 3600) ?? cfg.slow.window;
  cfg.slow.settle = num(o, 'slow-settle', 0, 3600) ?? cfg.slow.settle;
  cfg.presence.connections = int(o, 'presence-connections', 3, 1e6) ?? cfg.presence.connections;
  cfg.presence.rooms = int(o, 'presence-rooms', 1, 1e5) ?? cfg.presence.rooms;
  cfg.presence.queries = int(o, 'presence-queries', 1, 1e6) ?? cfg.presence.queries;
  cfg.presence.hold = num(o, 'presence-hold', 0.5, 3600) ?? cfg.presence.hold;
  cfg.presence.ttl = int(o, 'presence-ttl', 1000, 86400000) ?? cfg.presence.ttl;
  // the hold sees every node renew every room at least once
  if (o['presence-hold'] === undefined) cfg.presence.hold = Math.max(cfg.presence.hold, cfg.presence.ttl / 3000 + 1);
  if (cfg.presence.rooms > cfg.presence.connections) throw new Error('--presence-rooms must be at most --presence-connections');
  cfg.asks.connections = int(o, 'asks-connections', 1, 1e6) ?? cfg.asks.connections;
  cfg.asks.subs = int(o, 'asks-subs', 1, 1024) ?? cfg.asks.subs;
  cfg.asks.rooms = int(o, 'asks-rooms', 1, 1e6) ?? cfg.asks.rooms;
  const rt = int(o, 'asks-round-trips', 10, 1e7);
  if (rt !== undefined) {
    cfg.asks.rtCount = rt;
    cfg.asks.rtWarmup = Math.ceil(rt / 4);
  }
  cfg.sse.connections = int(o, 'sse-connections', 10, 1e6) ?? cfg.sse.connections;
  cfg.sse.rate = num(o, 'sse-rate', 0.1, 1e5) ?? cfg.sse.rate;
  cfg.sse.window = num(o, 'sse-window', 1, 3600) ?? cfg.sse.window;
  cfg.sse.memory.connections = int(o, 'sse-memory-connections', 10, 1e6) ?? cfg.sse.memory.connections;
  cfg.pusher.fanout.subscribers = int(o, 'pusher-subscribers', 1, 1e5) ?? cfg.pusher.fanout.subscribers;
  cfg.pusher.fanout.rate = num(o, 'pusher-rate', 0.1, 1e4) ?? cfg.pusher.fanout.rate;
  const pw = num(o, 'pusher-window', 1, 3600);
  if (pw !== undefined) cfg.pusher.fanout.window = cfg.pusher.http.window = pw;
  cfg.pusher.idle.connections = int(o, 'pusher-idle-connections', 2, 1e6) ?? cfg.pusher.idle.connections;
  cfg.pusher.presence.rooms = int(o, 'pusher-rooms', 1, 1e5) ?? cfg.pusher.presence.rooms;
  cfg.pusher.presence.members = int(o, 'pusher-members', 1, 1e5) ?? cfg.pusher.presence.members;
  cfg.pusher.http.sockets = int(o, 'pusher-sockets', 1, 1000) ?? cfg.pusher.http.sockets;
  if (cfg.asks.rooms < cfg.asks.subs) throw new Error('--asks-rooms must be at least --asks-subs (a connection subscribes to different rooms)');
  const ramp = num(o, 'ramp', 1, 1e6);
  if (ramp) cfg.parked.ramp = cfg.cpu.ramp = cfg.soak.ramp = cfg.json.ramp = cfg.bus.ramp = cfg.publish.ramp = ramp;
  cfg.cpu.rampTrafficOff = true; // the cpu phase ramps with the traffic gate off
  cfg.threads = int(o, 'threads', 1, 64) ?? 2;
  cfg.sampleHz = num(o, 'sample-hz', 0.5, 50) ?? 4;
  cfg.maxPending = 256;

  // CPUs
  const taskset = hasTaskset();
  let pinAll = null;
  if (o.cpus !== undefined && o.cpus !== 'none') {
    if (!taskset) throw new Error('--cpus needs taskset (util-linux), which is not usable here');
    const cpus = o.cpus.split(',').flatMap((r) => {
      const [a, b] = r.split('-').map(Number);
      return b === undefined ? [a] : Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
    if (cpus.some((c) => !Number.isInteger(c) || c < 0 || c >= nproc)) throw new Error(`--cpus: CPUs are 0..${nproc - 1}`);
    const rest = Array.from({ length: nproc }, (_, i) => i).filter((c) => !cpus.includes(c));
    pinAll = { server: cpus.join(','), loadgen: rest.length ? rest.join(',') : null, n: cpus.length };
  }
  const noPin = { server: null, loadgen: null, n: nproc };
  const cpuPin = o.cpus === 'none' ? noPin : pinAll || (taskset && nproc >= 2
    ? { server: '0', loadgen: Array.from({ length: nproc - 1 }, (_, i) => i + 1).join(','), n: 1 } : noPin);
  const pinFor = (phase) => (['cpu', 'json', 'publish', 'history', 'asks', 'sse', ...PUSHER_PHASES].includes(phase) ? cpuPin : pinAll || noPin);
  // The bus phase: Redis and the redis npm client, checked before anything runs.
  const busArms = phaseList.includes('bus') ? arms.filter((a) => phasesOf(a).includes('bus')) : [];
  let redis = null;
  if (busArms.some((a) => a.bus) || phaseList.includes('presence')) {
    redis = redisVersion(cfg.bus.redisServer);
    if (!redis) throw new Error(`the bus and presence phases need ${cfg.bus.redisServer} (Debian: apt-get install redis-server; or --redis-server PATH)`);
  }
  if (busArms.some((a) => a.bus === 'relay')) {
    try {
      require.resolve('redis', { paths: [BENCH] });
    } catch {
      throw new Error('the ws-redis and uws-redis arms need the redis npm client (a devDependency: npm install)');
    }
  }
  cfg.cpuThreads = int(o, 'cpu-threads', 1, 64) ?? (cpuPin.server ? cpuPin.n : cfg.threads);
  const pinningNote = o.cpus === 'none' ? 'none (--cpus none)'
    : pinAll ? `server on CPU ${pinAll.server}, loadgen on ${pinAll.loadgen || 'the same CPUs (no other CPU)'} in every phase (taskset)`
      : cpuPin.server ? `cpu, json, publish, history, asks, sse and pusher phases: server on CPU ${cpuPin.server}, loadgen on CPU ${cpuPin.loadgen} (taskset); parked and soak not pinned`
        : `not pinned (${taskset ? `${nproc} CPU` : 'taskset not available'})`;

  // Logging (into run.log too, once the folder exists)
  let rec = null;
  const early = [];
  const log = (line) => {
    const s = `[bench ${fmt(now(), 0).padStart(5)} s] ${line}`;
    process.stderr.write(`${s}\n`);
    if (rec) rec.log.write(`${s}\n`);
    else early.push(s);
  };

  ensureLoadgen(log);
  // The pusher phases' peer: Soketi, installed on demand (bench/runner/pusher-peers.js).
  for (const [i, a] of arms.entries()) {
    if (a.peer !== 'soketi') continue;
    const sk = await ensureSoketi(log);
    arms[i] = { ...a, env: { ...a.env, BENCH_SOKETI_DIR: sk.dir }, what: `${a.what}; Soketi ${sk.version}` };
  }
  const help = loadgenHelp();
  const canSoak = /--schedule/.test(help) && /--churn/.test(help) && /--events/.test(help);
  const notes = [...armNotes];
  if (phaseList.includes('soak') && !canSoak) {
    throw new Error('the soak phase needs loadgen --schedule/--churn/--events, which this build of bench/out/loadgen lacks '
      + '(make -C bench; or run --phases parked,cpu)');
  }

  // Populations: what the server's open-file limit allows. (A baseline arm
  // is started once too: a checkout that cannot serve fails here, not later.)
  // (the history phase's arms run another script: the probe is the default build's fanout-server.js)
  const probeArm = arms.find((a) => a.allocator && !a.impl) || arms.find((a) => !a.impl) || BUILTIN.jemalloc;
  const probe = await probeServer(probeArm);
  const baseArm = arms.find((a) => a.root);
  if (baseArm && baseArm !== probeArm) await probeServer(baseArm);
  const self = fdLimits('self');
  const soakPeak = phaseList.includes('soak') ? cfg.soak.peak : 0;
  const busPerNode = phaseList.includes('bus') ? cfg.bus.connections : 0;
  const pubConns = phaseList.includes('publish') ? cfg.publish.connections : 0;
  const presPerNode = phaseList.includes('presence') ? Math.ceil(cfg.presence.connections / cfg.presence.nodes) : 0;
  const reserve = Math.max(200, Math.ceil(0.03 * Math.max(soakPeak, ...cfg.parked.levels, cfg.cpu.connections, cfg.json.connections, busPerNode, pubConns, presPerNode)));
  const serverCap = probe.soft - probe.idleFds - reserve;
  const lgHard = self.hard;
  cfg.shardMax = int(o, 'loadgen-max', 10, 1e6) ?? Math.max(100, lgHard - 8 - reserve);
  let populationNote = `the server's open-file limit is ${fmt(probe.soft)} (hard ${fmt(probe.hard)}), ${probe.idleFds} in use at idle; `
    + `with ${reserve} kept spare for churn and closing sockets, one server process holds at most ${fmt(serverCap)} connections`;
  const wanted = Math.max(phaseList.includes('parked') ? cfg.parked.levels[cfg.parked.levels.length - 1] : 0, soakPeak,
    phaseList.includes('cpu') ? cfg.cpu.connections : 0, phaseList.includes('json') ? cfg.json.connections : 0, busPerNode, pubConns, presPerNode,
    phaseList.includes('sse') ? Math.max(cfg.sse.connections, cfg.sse.memory.connections) : 0,
    phaseList.includes('pusher-fanout') ? cfg.pusher.fanout.channels * cfg.pusher.fanout.subscribers : 0,
    phaseList.includes('pusher-idle') ? cfg.pusher.idle.connections : 0,
    phaseList.includes('pusher-presence') ? cfg.pusher.presence.rooms * cfg.pusher.presence.members : 0);
  if (presetName === 'full' && wanted > serverCap) {
    throw new Error(`--full needs ${fmt(wanted)} connections in one server process, but its open-file limit allows ${fmt(serverCap)} here `
      + `(soft ${probe.soft}, hard ${probe.hard}; raising it needs CAP_SYS_RESOURCE or a higher hard limit: ulimit -Hn). `
      + 'Run the default preset, which caps the population to fit.');
  }
  const capped = [];
  const cap = (v, what) => {
    if (v > serverCap) {
      capped.push(`${what} ${fmt(v)} → ${fmt(serverCap)}`);
      return serverCap;
    }
    return v;
  };
  if (phaseList.includes('parked')) {
    const top = cfg.parked.levels[cfg.parked.levels.length - 1];
    if (top > serverCap) {
      cfg.parked.levels = cfg.parked.levels.map((x) => Math.floor((x * serverCap) / top));
      capped.push(`parked levels scaled to ${cfg.parked.levels.map((x) => fmt(x)).join(', ')}`);
    }
  }
  if (phaseList.includes('soak')) {
    const p = cap(cfg.soak.peak, 'soak peak');
    if (p !== cfg.soak.peak) cfg.soak.trough = Math.max(1, Math.round(p / 10));
    cfg.soak.peak = p;
  }
  if (phaseList.includes('cpu')) cfg.cpu.connections = cap(cfg.cpu.connections, 'cpu connections');
  if (phaseList.includes('json')) cfg.json.connections = cap(cfg.json.connections, 'json connections');
  if (phaseList.includes('bus')) cfg.bus.connections = cap(cfg.bus.connections, 'bus connections per process');
  if (phaseList.includes('publish')) {
    const p = cap(cfg.publish.connections, 'publish connections (= topics)');
    cfg.publish.connections = cfg.publish.topics = p;
  }
  if (phaseList.includes('asks')) {
    // A fixed population, opened once, no churn: 100 descriptors kept spare, not the reserve for churn.
    const asksCap = probe.soft - probe.idleFds - 100;
    if (cfg.asks.connections > asksCap) {
      capped.push(`asks connections ${fmt(cfg.asks.connections)} → ${fmt(asksCap)} (100 descriptors spare)`);
      cfg.asks.connections = asksCap;
    }
  }
  if (phaseList.includes('sse')) {
    cfg.sse.connections = cap(cfg.sse.connections, 'sse connections');
    cfg.sse.memory.connections = cap(cfg.sse.memory.connections, 'sse parked connections');
  }
  if (phaseList.includes('pusher-fanout')) {
    const f = cfg.pusher.fanout;
    const n = cap(f.channels * f.subscribers, 'pusher-fanout subscribers');
    f.subscribers = Math.floor(n / f.channels);
  }
  if (phaseList.includes('pusher-idle')) cfg.pusher.idle.connections = cap(cfg.pusher.idle.connections, 'pusher-idle connections');
  if (phaseList.includes('pusher-presence')) {
    const pr = cfg.pusher.presence;
    const n = cap(pr.rooms * pr.members, 'pusher-presence members');
    pr.rooms = Math.max(1, Math.floor(n / pr.members));
  }
  if (phaseList.includes('presence') && presPerNode > serverCap) {
    cfg.presence.connections = serverCap * cfg.presence.nodes;
    capped.push(`presence connections ${fmt(presPerNode * cfg.presence.nodes)} → ${fmt(cfg.presence.connections)}`);
  }
  populationNote += capped.length ? `; **capped**: ${capped.join('; ')}.` : `; the populations asked for (largest ${fmt(wanted)}) fit, nothing capped.`;
  if (cfg.shardMax < wanted) populationNote += ` loadgen is sharded: at most ${fmt(cfg.shardMax)} connections per process.`;
  cfg.sources = Math.min(64, Math.max(4, Math.ceil(Math.max(wanted, 1) / 3000)));
  cfg.measure = cfg.measure || 2;
  cfg.parked.measure = cfg.parked.measure || cfg.measure;
  cfg.soak.measure = cfg.soak.measure || cfg.measure;

  const outDir = o.out ? path.resolve(o.out) : freeDir(path.join(BENCH, 'results'), runName);
  const meta = {
    preset: presetName,
    command: `node bench/runner/run.js ${process.argv.slice(2).join(' ')}`.trim(),
    date: new Date().toISOString(),
    machine: machine(),
    repeats,
    fixedOrder: !!o['fixed-order'],
    phases: phaseList,
    arms: arms.map((a) => ({ name: a.name, what: a.what, env: a.env, script: path.relative(BENCH, a.script), soak: a.soak,
      phases: phasesOf(a), deflate: a.deflate || null,
      root: a.gate === 'symphony' ? a.root || REPO : null, baselineOf: a.baselineOf || null })),
    source: describeCheckout(REPO),
    baseline,
    uws,
    redis,
    notes,
    populationNote,
    pinningNote,
    probe,
    cpus: cpuPin,
    cfg,
    outDir,
  };
  fs.mkdirSync(outDir, { recursive: true });
  rec = new Recorder(outDir);
  for (const l of early) rec.log.write(`${l}\n`);
  fs.writeFileSync(path.join(outDir, 'config.json'), `${JSON.stringify(meta, null, 2)}\n`);
  log(`${presetName} preset → ${path.relative(process.cwd(), outDir) || outDir}`);
  log(`arms: ${arms.map((a) => a.name).join(', ')}; phases: ${phaseList.join(', ')}; repeats ${repeats}; ${meta.fixedOrder ? 'fixed order' : 'interleaved'}`);
  log(`code: ${REPO} (${checkoutLabel(meta.source)})${baseline ? `; baseline: ${baseline.dir} (${checkoutLabel(baseline)})` : ''}`);
  if (uws) log(`uWebSockets.js: ${uws.dir} (${uws.version || 'no package.json'}${uws.commit ? `, source ${uws.commit.slice(0, 12)}` : ''}): it loads`);
  if (redis) log(`Redis: ${redis}`);
  for (const n of notes) log(`note: ${n}`);
  log(`populations: ${populationNote}`);
  log(`pinning: ${pinningNote}`);

  // The context the phases share.
  const ctx = {
    cfg,
    rec,
    live: new Set(),
    cpus: noPin,
    status: { phase: null, arm: null, repeat: null, step: null, cycle: null, fpKiB: null, t0: now() },
    lastProgress: 0,
    progress(force) {
      const t = now();
      if (!force && t - this.lastProgress < 5) return;
      this.lastProgress = t;
      const s = this.status;
      log(`${s.phase} · ${s.arm} · repeat ${s.repeat}/${repeats}${s.cycle ? ` · cycle ${s.cycle}` : ''} · ${s.step || ''}`
        + ` · ${fmt(t - s.t0, 0)} s · RSS+swap ${finite(s.fpKiB) ? `${fmt(s.fpKiB / 1024, 1)} MiB` : '–'}`);
    },
  };
  const ticker = setInterval(() => ctx.progress(false), 1000);

  let aborted = false;
  const onSignal = (sig) => {
    if (aborted) return;
    aborted = true;
    log(`${sig}: stopping the processes this run started`);
    for (const p of ctx.live) if (p.alive) p.child.kill('SIGTERM');
    setTimeout(() => {
      for (const p of ctx.live) if (p.alive) p.child.kill('SIGKILL');
      process.exit(130);
    }, 5000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const runs = [];
  const tStart = now();
  const phaseFns = { parked: phases.parked, soak: phases.soak, cpu: phases.cpu, handshakes: phases.handshakes, json: phases.json, bus: phases.bus,
    publish: phases.publish, history: require('./history').history, slow: require('./slow').slow,
    presence: require('./presence').presence, asks: phases.asks, sse: require('./sse').sse, ...require('./pusher').PHASES };
  for (const phase of phaseList) {
    ctx.cpus = pinFor(phase);
    const phaseArms = arms.filter((a) => phasesOf(a).includes(phase));
    for (const a of arms) {
      if (!phaseArms.includes(a)) notes.push(`${a.name}: no ${phase} phase (it runs ${phasesOf(a).join(', ')})`);
    }
    for (const [k, { arm, repeat }] of order(phaseArms, repeats, meta.fixedOrder).entries()) {
      if (aborted) break;
      Object.assign(ctx.status, { phase, arm: arm.name, repeat, step: 'start', cycle: null, fpKiB: null, t0: now() });
      log(`── ${phase} · ${arm.name} · repeat ${repeat}/${repeats} (run ${k + 1} of ${phaseArms.length * repeats})`);
      const t0 = now();
      const loadavg = os.loadavg()[0];
      try {
        const r = await phaseFns[phase](ctx, arm, repeat);
        runs.push({ phase, arm: arm.name, repeat, order: k, startS: t0 - tStart, seconds: now() - t0, loadavg, ...r });
        log(`   done in ${fmt(now() - t0, 0)} s: ${brief(phase, r.figures)}`);
        for (const n of r.notes || []) log(`   note: ${n}`);
      } catch (err) {
        runs.push({ phase, arm: arm.name, repeat, order: k, startS: t0 - tStart, seconds: now() - t0, loadavg, error: err.message, notes: err.notes || [] });
        log(`   FAILED after ${fmt(now() - t0, 0)} s: ${err.message}`);
        for (const n of err.notes || []) log(`   note: ${n}`);
      }
    }
  }
  clearInterval(ticker);
  meta.elapsedS = now() - tStart;

  const res = { meta, runs };
  const out = report.build(res);
  fs.writeFileSync(path.join(outDir, 'report.md'), out.md);
  for (const [name, svg] of Object.entries(out.charts)) fs.writeFileSync(path.join(outDir, name), svg);
  fs.writeFileSync(path.join(outDir, 'results.json'), `${JSON.stringify({ ...res, gates: out.gates, targets: out.targets, oddSummary: res.oddSummary,
    baselineComparison: out.baselineComparison }, null, 1)}\n`);
  log(`report: ${path.join(outDir, 'report.md')} (${fmt(meta.elapsedS / 60, 1)} min)`);
  const slowMd = writeSlow(outDir, res);
  if (slowMd) log(`slow phase: ${slowMd}`);
  const presenceMd = writePresence(outDir, res);
  if (presenceMd) log(`presence phase: ${presenceMd}`);
  const asksOut = writeAsks(outDir, res);
  if (asksOut) {
    log(`asks phase: its section in ${asksOut.file}, asks-*.svg; subscribes per server CPU-second as a multiple of socket.io's (the issue's goals):`);
    for (const t of asksOut.targets) {
      log(`  ${t.result.padEnd(7)} ${t.arm}: ${t.ratio === null ? '–' : `${fmt(t.ratio, 2)}x`} (goal ≥ ${t.goal}x; process.cpuUsage(): ${t.ratioCpuUsage === null ? '–' : `${fmt(t.ratioCpuUsage, 2)}x`})`);
    }
  }
  const sseOut = writeSse(outDir, res);
  if (sseOut) {
    log(`sse phase: its section in ${sseOut.file}, sse-*.svg; ratios of medians (the issue's goals):`);
    for (const t of sseOut.targets) log(`  ${t.result.padEnd(7)} ${t.name}: ${t.ratio === null ? '–' : `${fmt(t.ratio, 2)}x`}${t.goal ? ` (goal ${t.goal})` : ''}`);
  }
  const pusherOut = writePusher(outDir, res);
  if (pusherOut) {
    log(`pusher phases: ${pusherOut.file}; symphony-pusher against soketi, medians (the issue's goals):`);
    for (const t of pusherOut.targets) log(`  ${t.result.padEnd(7)} ${t.name}: ${t.figures}`);
  }
  const historyTargets = writeHistory(outDir, res);
  if (historyTargets) {
    log(`history phase: ${path.join(outDir, 'summary.md')}, history.json, history.svg; its targets (reported, not gates):`);
    for (const t of historyTargets) log(`  ${t.result.padEnd(7)} ${t.name}: ${t.value || '–'}`);
  }
  if (out.baselineComparison.length) {
    log('this code vs the baseline (medians, min–max; not a gate):');
    for (const c of out.baselineComparison) {
      log(`  ${c.figure}: ${c.arm} ${fmtRange(c.cur, c.digits)} vs ${c.base} ${fmtRange(c.old, c.digits)}, ratio ${fmt(c.ratio, 3)}`
        + `${c.pairs && c.pairs.n > 1 ? ` (per repeat ${fmtRange(c.pairs, 3)})` : ''}${c.overlap === false ? ', ranges do not overlap' : ''}`);
    }
  }
  log('gates:');
  for (const g of out.gates) log(`  ${g.result.padEnd(4)} ${g.name}: ${g.figures}`);
  if (phaseList.includes('json')) {
    log('targets of the JSON shape (reported, not gates):');
    for (const t of out.targets) log(`  ${t.result.padEnd(6)} ${t.name}: ${t.figures}`);
  }
  await rec.close();
  const failed = runs.filter((r) => r.error).length;
  if (aborted) return 130;
  return failed ? 1 : 0;
}

/** --rebuild DIR: report.md and the charts again from DIR/results.json. */
function rebuild(dir) {
  const saved = JSON.parse(fs.readFileSync(path.join(dir, 'results.json'), 'utf8'));
  const res = { meta: saved.meta, runs: saved.runs };
  const out = report.build(res);
  fs.writeFileSync(path.join(dir, 'report.md'), out.md);
  for (const [name, svg] of Object.entries(out.charts)) fs.writeFileSync(path.join(dir, name), svg);
  writeHistory(dir, res);
  writeSlow(dir, res);
  writePresence(dir, res);
  writeAsks(dir, res);
  writeSse(dir, res);
  writePusher(dir, res);
  process.stderr.write(`bench: rebuilt ${path.join(dir, 'report.md')} and ${Object.keys(out.charts).length} charts\n`);
  for (const g of out.gates) process.stderr.write(`  ${g.result.padEnd(4)} ${g.name}: ${g.figures}\n`);
  return 0;
}

function brief(phase, f) {
  if (!f) return '';
  const k = (v, d = 0) => fmt(v, d);
  if (phase === 'parked') {
    return `${k(f.n)} parked: ${k(f.bytesPerConnOverIdle)} B/conn over idle, ${k(f.bytesPerConnMarginal)} marginal; active ${k(f.activeMsgsPerS)} msg/s (${k(f.activeDeliveredPct, 1)}%), CPU ${k(f.activeCpuPct, 1)}%`;
  }
  if (phase === 'cpu') {
    return f.shapes.map((s) => `${s.shape}: ${k(s.msgsPerS)} msg/s (${k(s.deliveredPct, 1)}%), ${k(s.cpuSPer1M, 2)} CPU-s/1M, p99 ${k(s.p99ms, 2)} ms`).join('; ');
  }
  if (phase === 'json') {
    return `${k(f.n)} conns (${k(f.negotiated)} deflate), parked ${k(f.bytesPerConnOverIdle)} B/conn over idle; ${k(f.msgsPerS)} msg/s (${k(f.deliveredPct, 1)}%), `
      + `${k(f.wireBytesPerMsg, 1)} wire B/msg (${k(f.compressedPct, 0)}% compressed), ${k(f.cpuSPer1M, 2)} CPU-s/1M, p99 ${k(f.p99ms, 2)} ms`;
  }
  if (phase === 'handshakes') {
    return f.keys.map((x) => `${x.key}: ${k(x.connections)} in ${k(x.seconds, 1)} s, ${k(x.perCoreS)}/s per server core`).join('; ');
  }
  if (phase === 'bus') {
    const w = (x) => `${x.key} ${k(x.msgsPerS)} msg/s (${k(x.deliveredPct, 1)}%, dups ${k(x.dups + x.back)}), ${k(x.cpuSPer1M, 2)} CPU-s/1M`
      + ` (+Redis ${k(x.redisCpuSPer1M, 2)}), p99 same ${k(x.same.p99Ms, 2)} / cross ${x.cross ? k(x.cross.p99Ms, 2) : '–'} ms`;
    const r = f.restart;
    return `${k(f.heldMin)} held; ${f.windows.map(w).join('; ')}`
      + `${r ? `; Redis restart: resubscribed ${k(r.resubscribeS === null ? null : r.resubscribeS * 1000)} ms, delivering again ${k(r.resumedS === null ? null : r.resumedS * 1000)} ms, dups ${k(r.dups + r.back)}`
        + `${r.history ? `, missed ${k(r.history.missed)} (not in Redis: ${k(r.history.notInRedis)} of ${k(r.history.published)} published)` : ''}` : ''}`;
  }
  if (phase === 'publish') {
    const cap = f.capacity;
    return `${k(f.connections)} topics × 1: ${f.windows.map((w) => `${k(w.rate / 1000)}k/s ${k(w.deliveredPct, 1)}%, ${k(w.cpuSPer1M, 2)} CPU-s/1M, `
      + `p50/p99 ${k(w.p50Ms, 1)}/${k(w.p99Ms, 1)} ms${w.pass ? '' : ' ✗'}`).join('; ')}`
      + `; capacity (p99 ≤ ${k(f.p99BoundMs)} ms) ${cap.rate === null ? '–' : `${cap.bound === 'atLeast' ? '≥ ' : cap.bound === 'below' ? '< ' : ''}${k(cap.rate)}/s`}`;
  }
  if (phase === 'history') {
    const st = f.storm;
    return `${k(f.clients)} clients: live ${k(f.live.msgsPerS)} msg/s (${k(f.live.deliveredPct, 1)}%), ${k(f.live.cpuUsPerMsg, 2)} µs CPU/msg`
      + (st ? `; storm: ${k(st.replayed)} replayed, all live in ${k(st.allLiveS, 2)} s, ${k(st.cpuUsPerReplayed, 2)} µs CPU/replayed above baseline`
        + ` (raw ${k(st.cpuUsPerReplayedRaw, 2)}), gaps ${k(st.gaps + st.offsetGaps)}, dups ${k(st.dups + st.offsetDups)}, not recovered ${k(st.notRecovered)}, peak RSS ${k(f.peakRssKiB / 1024, 1)} MiB` : '')
      + (f.memory ? `; memory: frame ${k(f.memory.frameBytes, 1)} B, allocator ${k(f.memory.allocatorBytesPerMsg, 1)} B/msg, RSS ${k(f.memory.rssBytesPerMsg, 1)} B/msg` : '');
  }
  if (phase === 'slow') {
    return `${f.policy}: ${k(f.normal)} normal p99 ${k(f.normalP99Ms, 1)} ms (${k(f.normalDeliveredPct, 1)}%); ${k(f.slow)} slow: `
      + `${k(f.slowReceivedPct, 1)}% received, staleness p50 ${k(f.ageP50MsMedian)} ms, closed ${k(f.slowClosed)}, `
      + `at the end ${k(f.upToDate)} of ${k(f.pairs)} (client, topic) up to date (behind median ${k(f.behindMedian)}); allocated ${k(f.allocatedMedianKiB / 1024, 1)} MiB, `
      + `RSS ${k(f.rssMedianKiB / 1024, 1)} MiB; conflated ${k(f.conflated)}, dropped ${k(f.dropped)}`;
  }
  if (phase === 'presence') {
    const op = f.open;
    const cl = f.close;
    return `${k(f.connections)} connections over ${f.nodes} nodes, presence ${f.presence ? 'on' : 'off'}: ${k(op.connectionsPerS)} conn/s`
      + (f.presence ? `, ${k(op.joinsPerS)} joins/s heard by every node, Redis ${k(op.redisUsecPer, 1)} µs/join (${k(op.usedMemoryPerEntry)} B/entry)` : '')
      + `; close ${k(cl.closesPerS)}/s` + (f.presence ? `, ${k(cl.leavesPerS)} leaves/s, Redis ${k(cl.redisUsecPer, 1)} µs/leave` : '')
      + `; nodes ${k(op.nodesCpuUsPer)} / ${k(cl.nodesCpuUsPer)} µs CPU per open / close`
      + (f.queries.presenceSeq ? `; presence() p50/p99 ${k(f.queries.presenceSeq.p50Ms, 2)}/${k(f.queries.presenceSeq.p99Ms, 2)} ms, `
        + `${k(f.queries.presenceConc.perS)}/s at ${f.queries.presenceConc.what.match(/\d+/)[0]} at once, Redis ${k(f.queries.presenceSeq.redisUsecPerCall, 1)} µs/call` : '')
      + `; subscribers() p50/p99 ${k(f.queries.subscribers.p50Ms, 2)}/${k(f.queries.subscribers.p99Ms, 2)} ms`;
  }
  if (phase === 'asks') {
    if (f.skipped) return f.skipped;
    if (f.rt) {
      return Object.entries(f.series).map(([name, x]) => `${name} p50/p99 ${k(x.ack.p50Us)}/${k(x.ack.p99Us)} µs`
        + `${x.delivered ? ` (delivered ${k(x.delivered.p50Us)}/${k(x.delivered.p99Us)})` : ''}, server ${k(x.serverCpuUsPerCall, 1)} µs CPU/call`).join('; ');
    }
    const s = f.storm;
    return `${k(f.connections)} × ${f.subsPerConn} subscribes (${f.auth}): ${k(s.answered)} answered (${k(s.refused)} refused) in ${k(s.wallS, 3)} s, `
      + `${k(s.subscribesPerS)}/s; server ${k(s.serverCpuUsPerSub, 2)} µs CPU/subscribe (${k(s.subsPerCpuS)} per CPU-s; cpuUsage ${k(s.cpuUsageUsPerSub, 2)} µs), `
      + `clients ${k(s.clientCores, 2)} cores; open ${k(f.open.perS)} conn/s, ${k(f.open.serverCpuUsPerConn, 1)} µs CPU/conn`;
  }
  if (phase === 'sse') {
    const m = f.memory;
    return `${k(f.connections)} ${f.client === 'sse' ? 'SSE' : 'WebSocket'} conns: ${k(f.msgsPerS)} msg/s (${k(f.deliveredPct, 1)}%), `
      + `${k(f.cpuSPer1M, 2)} CPU-s/1M, p50/p99 ${k(f.p50ms, 1)}/${k(f.p99ms, 1)} ms, lost ${k(f.lost)}, gaps ${k(f.gaps)}, bad ${k(f.badPayloads)}`
      + (m ? `; parked ${k(m.n)}: ${k(m.bytesPerConnOverIdle)} B/conn over idle, ${k(m.bytesPerConnMarginal)} marginal` : '');
  }
  if (phase.startsWith('pusher-')) return briefPusher(phase, f);
  if (phase === 'soak') {
    return `fresh-low ${k(f.freshLowKiB / 1024, 1)} MiB; cycles ${f.cycles.map((c) => `${k(c.peakKiB / 1024, 1)}→${k(c.troughKiB / 1024, 1)} MiB (${k(c.troughPctOfPeak, 0)}%)`).join(', ')}; quiet ${k(f.quietKiB / 1024, 1)}, zero ${k(f.zeroKiB / 1024, 1)} MiB`;
  }
  return '';
}

function briefPusher(phase, f) {
  const k = (v, d = 0) => fmt(v, d);
  if (f.unavailable) return `not available yet: ${f.unavailable}`;
  if (phase === 'pusher-fanout') {
    return `${k(f.subscribers)} subscribers over ${f.channels} channels: ${k(f.msgsPerS)} msg/s (${k(f.deliveredPct, 1)}%), `
      + `${k(f.cpuUsPerMsg, 3)} µs server CPU per delivered message (${k(f.serverCores, 2)} cores), p50/p99 ${k(f.p50ms, 1)}/${k(f.p99ms, 1)} ms, `
      + `${k(f.publishesPerS)} publishes/s (failed ${k(f.publishFailed)}, late ${k(f.publisherLate)}), lost ${k(f.lost)}, gaps ${k(f.gaps)}, bad ${k(f.badPayloads)}`;
  }
  if (phase === 'pusher-idle') {
    return `${k(f.n)} subscribed idle: ${k(f.bytesPerConnOverIdle)} B/conn over idle, ${k(f.bytesPerConnMarginal)} marginal (errors ${k(f.subscribeErrors)})`;
  }
  if (phase === 'pusher-http') {
    return `${k(f.publishes)} publishes in ${k(f.seconds, 1)} s (${k(f.publishesPerS)}/s, failed ${k(f.failed)}): ${k(f.publishesPerCpuS)} per server CPU-second `
      + `(${k(f.cpuUsPerPublish, 1)} µs each, ${k(f.serverCores, 2)} cores), ${k(f.connectsPerPublish, 2)} TCP connects per publish, delivered ${k(f.delivered)}`;
  }
  if (phase === 'pusher-presence') {
    return `${k(f.joins)} joins over ${f.rooms} rooms (errors ${k(f.errors)}), member_added ${k(f.memberAdded)} of ${k(f.expectAdded)}: `
      + `${f.settled ? `settled in ${k(f.settleS, 2)} s (${k(f.joinsPerS)} joins/s)` : 'did not settle'}, server ${k(f.serverCpuS, 2)} CPU-s `
      + `(${k(f.cpuUsPerJoin, 1)} µs per join, ${k(f.cpuUsPerMemberAdded, 2)} µs per member_added)`;
  }
  return '';
}

main().then((code) => {
  process.exitCode = code;
}, (err) => {
  process.stderr.write(`bench: ${err.message}\n`);
  process.exitCode = 2;
});
