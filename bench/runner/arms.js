'use strict';
// The arms: which server, which build, which environment.

const fs = require('node:fs');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const BENCH = path.join(__dirname, '..');
const REPO = path.resolve(BENCH, '..');
const SERVERS = path.join(BENCH, 'servers');
const FANOUT = path.join(SERVERS, 'fanout-server.js');
const WS = path.join(SERVERS, 'ws-server.js');
const UWS = path.join(SERVERS, 'uws-server.js');
const SSE = path.join(SERVERS, 'sse-server.js');
const SOKETI = path.join(SERVERS, 'soketi-server.js');
const PUSHER = path.join(SERVERS, 'pusher-server.js');
// The pusher phases' one app (id:key:secret), on Soketi and on symphony alike.
const PUSHER_APP = { id: 'bench', key: 'bench-key', secret: 'bench-secret' };
const PUSHER_APP_ENV = `${PUSHER_APP.id}:${PUSHER_APP.key}:${PUSHER_APP.secret}`;
const PUSHER_PHASES = ['pusher-fanout', 'pusher-idle', 'pusher-http', 'pusher-presence'];
const THRESHOLD = 128; // symphony's default compression threshold (B)
const nativeDir = (root) => path.join(root, 'native', `linux-${process.arch}`);

const BUILTIN = {
  jemalloc: {
    name: 'jemalloc',
    what: 'default build (private jemalloc)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    soak: true,
    json: true,
    publish: true,
  },
  system: {
    name: 'system',
    what: 'system-allocator build (glibc malloc)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'system' },
    allocator: 'system',
    soak: true,
  },
  'system-arena2': {
    name: 'system-arena2',
    what: 'system-allocator build, MALLOC_ARENA_MAX=2',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'system', MALLOC_ARENA_MAX: '2' },
    allocator: 'system',
    soak: true,
  },
  'jemalloc-tls': {
    name: 'jemalloc-tls',
    what: 'default build over wss:// (private OpenSSL 3.5, ECDSA P-256)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', BENCH_TLS: 'ecdsa' },
    allocator: 'jemalloc',
    tls: true,
    soak: false,
  },
  'ws-tls': {
    name: 'ws-tls',
    what: 'the ws server over wss:// (Node\'s https, its OpenSSL; peer)',
    script: WS,
    gate: 'ws',
    env: { BENCH_TLS: 'ecdsa' },
    allocator: null,
    tls: true,
    soak: false,
  },
  ws: {
    name: 'ws',
    what: 'the same server on the ws package (peer)',
    script: WS,
    gate: 'ws',
    env: {},
    allocator: null,
    soak: false, // parked, cpu, json and publish phases
    json: true,
    publish: true,
  },
  // The JSON shape's arms (the json phase only): permessage-deflate on.
  'jemalloc-deflate': {
    name: 'jemalloc-deflate',
    what: `default build, compression: { threshold: ${THRESHOLD}, level: 6 } (libdeflate, once per publish)`,
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    deflate: { threshold: THRESHOLD },
    phases: ['json'],
  },
  'ws-deflate': {
    name: 'ws-deflate',
    what: `ws, perMessageDeflate { threshold: ${THRESHOLD}, level 6, no context takeover } (zlib, once per send; peer)`,
    script: WS,
    gate: 'ws',
    env: {},
    allocator: null,
    deflate: { threshold: THRESHOLD },
    phases: ['json'],
  },
  'ws-deflate-defaults': {
    name: 'ws-deflate-defaults',
    what: 'ws, perMessageDeflate: true (its defaults: threshold 1024 B, so a ~630 B message goes uncompressed; peer)',
    script: WS,
    gate: 'ws',
    env: { BENCH_WS_DEFLATE: 'defaults' },
    allocator: null,
    deflate: { threshold: 1024 },
    phases: ['json'],
  },
  // uWebSockets.js: only with --uws-path (never a dependency; see uws-server.js).
  uws: {
    name: 'uws',
    what: 'uWebSockets.js pub/sub, compression DISABLED (peer)',
    script: UWS,
    gate: 'uws',
    env: {},
    allocator: null,
    uws: true,
    phases: ['parked', 'cpu', 'json', 'publish'],
  },
  // The bus phase (issue 12): several server processes as one fan-out over
  // Redis, or each on its own (symphony-local). `bus`: 'native' (symphony's
  // bus option), 'relay' (the hand-built relay of bench/servers/redis-relay.js)
  // or null. Only the bus phase runs them; it switches the traffic with its
  // own control lines, not the traffic gate.
  'symphony-bus': {
    name: 'symphony-bus',
    what: 'default build, one node of a fan-out over Redis (bus: { url }); node 0 publishes, the others receive through the bus',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    bus: 'native',
    phases: ['bus'],
  },
  // issue 24: the same nodes with history on every topic: Redis numbers each
  // publish (one script: offset, XADD, SPUBLISH) and every node, the
  // publisher's too, delivers when Redis brings it back; Redis keeps an
  // append-only file (appendfsync everysec), so the kill -9 of the restart
  // step keeps the sequence and the nodes fill what they missed from it.
  'symphony-bus-history': {
    name: 'symphony-bus-history',
    what: 'symphony-bus with history { size: 1000, ttl: 60 } on every topic (offsets from Redis), Redis with AOF (appendfsync everysec)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    bus: 'native',
    history: { size: 1000, ttl: 60 },
    aof: 'everysec',
    phases: ['bus'],
  },
  'symphony-local': {
    name: 'symphony-local',
    what: 'default build, no bus: every process publishes its share to its own subscribers (the same deliveries without Redis)',
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    bus: null,
    phases: ['bus'],
  },
  'ws-redis': {
    name: 'ws-redis',
    what: 'ws + the redis npm client, relayed by hand (a channel per topic; the publisher PUBLISHes only and delivers what comes back; peer)',
    script: WS,
    gate: 'ws',
    env: {},
    allocator: null,
    bus: 'relay',
    phases: ['bus'],
  },
  'uws-redis': {
    name: 'uws-redis',
    what: 'uWebSockets.js + the redis npm client, relayed by hand as ws-redis (peer)',
    script: UWS,
    gate: 'uws',
    env: {},
    allocator: null,
    uws: true,
    bus: 'relay',
    phases: ['bus'],
  },
  // The history phase (issue 23): a reconnect storm, bench/servers/history-server.js
  // with its own clients (bench/runner/history-client.js). Only the history phase runs them.
  'sy-history': {
    name: 'sy-history',
    what: 'default build, history { size, ttl }, symphony.v1 clients (ws) resuming with sy.since; also the memory fill',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    history: true,
    fill: true,
    phases: ['history'],
  },
  'sy-nohistory': {
    name: 'sy-nohistory',
    what: 'default build, history off, the same symphony.v1 clients live (no storm): live CPU with history off',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    history: false,
    storm: false,
    phases: ['history'],
  },
  'sy-history-peer': {
    name: 'sy-history-peer',
    what: 'sy-history at the socket.io arm\'s population (the CPU-per-replayed comparison)',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    history: true,
    peer: true,
    phases: ['history'],
  },
  // The slow phase: slow clients among normal ones, one arm per slowConsumer
  // policy, the default build otherwise. Only the slow phase runs them.
  ...Object.fromEntries(['drop', 'close', 'conflate'].map((policy) => [`slow-${policy}`, {
    name: `slow-${policy}`,
    what: `default build, slowConsumer '${policy}'`,
    script: FANOUT,
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    slowConsumer: policy,
    phases: ['slow'],
  }])),
  socketio: {
    name: 'socketio',
    what: 'socket.io 4.8 (websocket transport), connectionStateRecovery { maxDisconnectionDuration: 60000 }, socket.io-client 4.8 clients',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: {},
    allocator: null,
    impl: 'socketio',
    history: true,
    peer: true,
    phases: ['history'],
  },
  // issue 24: the storm across nodes. Three servers over one Redis (AOF);
  // node 0 publishes, the clients are on node 1 and resume on node 2.
  'sy-history-nodes': {
    name: 'sy-history-nodes',
    what: 'sy-history on 3 nodes over one Redis (bus: { url }, AOF everysec): node 0 publishes, clients on node 1 resume on node 2 (sy.since)',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    history: true,
    peer: true,
    nodes: 3,
    phases: ['history'],
  },
  'socketio-nodes': {
    name: 'socketio-nodes',
    what: 'socketio on 3 nodes over one Redis (@socket.io/redis-streams-adapter, AOF everysec): node 0 emits, clients on node 1 recover on node 2',
    script: path.join(SERVERS, 'history-server.js'),
    gate: 'none',
    env: {},
    allocator: null,
    impl: 'socketio',
    history: true,
    peer: true,
    nodes: 3,
    phases: ['history'],
  },
  // The presence phase (issue 26): 3 nodes over one Redis
  // (bench/servers/presence-server.js), presence on and off; the same
  // connections, rooms and clients. Only the presence phase runs them.
  'sy-presence': {
    name: 'sy-presence',
    what: 'default build, 3 nodes over one Redis (bus: { url }), presence: { ttl: 15000 }, each connection in one room with { user }',
    script: path.join(SERVERS, 'presence-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    presence: true,
    phases: ['presence'],
  },
  'sy-nopresence': {
    name: 'sy-nopresence',
    what: 'sy-presence with presence: false (the same bus, rooms and clients): what the connections cost without presence',
    script: path.join(SERVERS, 'presence-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    presence: false,
    phases: ['presence'],
  },
  // The asks phase: clients' subscribes (a storm: N connections × K
  // subscribes at once) authorized by tokens or by a hook, against
  // socket.io's 'join'; and the round trips of a client's publish and request
  // against socket.io's emit with an ack (bench/servers/asks-server.js).
  // Only the asks phase runs them.
  'asks-token': {
    name: 'asks-token',
    what: 'default build, tokens: { keys: [{ alg: \'HS256\', secret }] }, no onSubscribe: each subscribe carries a JWT the IO thread verifies',
    script: path.join(SERVERS, 'asks-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    auth: 'token',
    phases: ['asks'],
  },
  'asks-hook': {
    name: 'asks-hook',
    what: 'default build, onSubscribe: (id, topic) => topic.startsWith(\'room.\') (at once)',
    script: path.join(SERVERS, 'asks-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    auth: 'hook',
    phases: ['asks'],
  },
  'asks-socketio': {
    name: 'asks-socketio',
    what: 'socket.io 4.8 (websocket transport), a \'join\' handler: socket.join(room) and ack',
    script: path.join(SERVERS, 'asks-server.js'),
    gate: 'none',
    env: {},
    allocator: null,
    impl: 'socketio',
    phases: ['asks'],
  },
  'asks-rt-symphony': {
    name: 'asks-rt-symphony',
    what: 'default build, onPublish true, onRequest echo; one symphony client (ws): client.publish() and client.request() one at a time',
    script: path.join(SERVERS, 'asks-server.js'),
    gate: 'none',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc' },
    allocator: 'jemalloc',
    impl: 'symphony',
    auth: 'hook',
    rt: true,
    phases: ['asks'],
  },
  'asks-rt-socketio': {
    name: 'asks-rt-socketio',
    what: 'socket.io 4.8, one socket.io-client: emit(\'publish\') and emit(\'echo\') with an ack, one at a time',
    script: path.join(SERVERS, 'asks-server.js'),
    gate: 'none',
    env: {},
    allocator: null,
    impl: 'socketio',
    rt: true,
    phases: ['asks'],
  },
  // The sse phase (issue 34): event streams (SSE) against WebSocket on the
  // same symphony server, and the two Node SSE servers users write
  // (bench/servers/sse-server.js, BENCH_SSE_IMPL). `sseClient`: what loadgen
  // speaks to it; `sseMemory`: the parked-memory run too. Only the sse phase
  // runs them.
  'sse-symphony': {
    name: 'sse-symphony',
    what: 'default build, event streams (SSE): onUpgrade answers { topics }, server.topic(t).publish(text)',
    script: SSE,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', BENCH_SSE_IMPL: 'symphony' },
    allocator: 'jemalloc',
    sseClient: 'sse',
    sseMemory: true,
    phases: ['sse'],
  },
  'sse-symphony-ws': {
    name: 'sse-symphony-ws',
    what: 'the same symphony server (same script and onUpgrade), WebSocket clients',
    script: SSE,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', BENCH_SSE_IMPL: 'symphony' },
    allocator: 'jemalloc',
    sseClient: 'ws',
    sseMemory: true,
    phases: ['sse'],
  },
  'sse-node': {
    name: 'sse-node',
    what: 'a node:http SSE hub as Node users write one: Map of topic -> Set of res, res.write() per subscriber per message (peer)',
    script: SSE,
    gate: 'none',
    env: { BENCH_SSE_IMPL: 'node' },
    allocator: null,
    sseClient: 'sse',
    phases: ['sse'],
  },
  'sse-better': {
    name: 'sse-better',
    what: 'better-sse 0.16.1: a session per request, a Channel per topic, channel.broadcast({ ts, seq, p }, topic) (peer)',
    script: SSE,
    gate: 'none',
    env: { BENCH_SSE_IMPL: 'better-sse' },
    allocator: null,
    sseClient: 'sse',
    phases: ['sse'],
  },
  // The pusher phases (issue 45): the Pusher Channels protocol v7, Soketi
  // against symphony's pusher option (bench/runner/pusher.js). Soketi is
  // installed on demand (bench/runner/pusher-peers.js: `peer`); the
  // symphony arm is probed once a run (`pusherProbe`) and reports "not
  // available yet" on a build without the option. Only these phases run them.
  soketi: {
    name: 'soketi',
    what: 'Soketi 1.6.x from npm (uWebSockets.js from uwebsockets@3.0.6), its default app, in-process as `soketi start` runs it (peer)',
    script: SOKETI,
    gate: 'none',
    env: { BENCH_PUSHER_APP: PUSHER_APP_ENV },
    allocator: null,
    impl: 'pusher',
    peer: 'soketi',
    phases: PUSHER_PHASES,
  },
  'symphony-pusher': {
    name: 'symphony-pusher',
    what: 'default build, new Server({ pusher: { apps: [{ id, key, secret }] } }) (bench/servers/pusher-server.js)',
    script: PUSHER,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', BENCH_PUSHER_APP: PUSHER_APP_ENV },
    allocator: 'jemalloc',
    impl: 'pusher',
    pusherProbe: true,
    phases: PUSHER_PHASES,
  },
  'uws-deflate': {
    name: 'uws-deflate',
    what: 'uWebSockets.js pub/sub, compression SHARED_COMPRESSOR (no threshold; peer)',
    script: UWS,
    gate: 'uws',
    env: {},
    allocator: null,
    uws: true,
    deflate: { threshold: 0 },
    phases: ['json'],
  },
};

const DEFAULT_ARMS = ['jemalloc', 'system', 'system-arena2', 'ws', 'jemalloc-tls', 'ws-tls',
  'jemalloc-deflate', 'ws-deflate', 'ws-deflate-defaults', 'uws', 'uws-deflate',
  'symphony-bus', 'symphony-bus-history', 'symphony-local', 'ws-redis', 'uws-redis', 'sy-history', 'sy-nohistory', 'sy-history-peer', 'socketio',
  'slow-drop', 'slow-close', 'slow-conflate', 'sy-presence', 'sy-nopresence'];
// Arms that only an opt-in phase runs, and that are not among the defaults:
// selected (without --arms) when their phase is.
const PHASE_ARMS = { asks: ['asks-token', 'asks-hook', 'asks-socketio', 'asks-rt-symphony', 'asks-rt-socketio'],
  sse: ['sse-symphony', 'sse-symphony-ws', 'sse-node', 'sse-better'],
  ...Object.fromEntries(PUSHER_PHASES.map((p) => [p, ['symphony-pusher', 'soketi']])) };

/** The phases an arm runs: its `phases`, or parked and cpu plus soak (soak
 * arms), handshakes (TLS arms), json (json arms) and publish (publish arms). */
function phasesOf(arm) {
  if (arm.phases) return arm.phases;
  return ['parked', 'cpu', ...(arm.soak ? ['soak'] : []), ...(arm.tls ? ['handshakes'] : []), ...(arm.json ? ['json'] : []),
    ...(arm.publish ? ['publish'] : [])];
}

/** The uWebSockets.js folder of --uws-path, checked: it loads here (the
 * folder and this Node), or an error saying why not. */
function uwsCheckout(dir) {
  const root = path.resolve(dir);
  if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) throw new Error(`--uws-path ${dir}: no such folder`);
  try {
    execFileSync(process.execPath, ['-e', `const u = require(${JSON.stringify(root)}); if (typeof u.App !== 'function') process.exit(3)`],
      { stdio: ['ignore', 'ignore', 'pipe'], timeout: 20000 });
  } catch (e) {
    const why = `${e.stderr || ''}`.trim().split('\n').filter(Boolean).slice(-1)[0] || `exit ${e.status}`;
    throw new Error(`--uws-path ${dir}: uWebSockets.js does not load there with Node ${process.version}: ${why}`);
  }
  let version = null;
  try {
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    version = `${pkg.name}@${pkg.version}`;
  } catch {
    // a bare folder: no version to tell
  }
  let commit = null;
  try {
    commit = fs.readFileSync(path.join(root, 'source_commit'), 'utf8').trim() || null;
  } catch {
    // not every build has one
  }
  return { dir: root, version, commit };
}

// --baseline DIR: these arms again, on the symphony of another checkout.
const BASELINE_OF = { jemalloc: 'base-jemalloc', 'jemalloc-tls': 'base-jemalloc-tls' };

/** A checkout: its folder, commit and whether its tracked files differ from
 * the commit (null when it is not a git checkout). */
function describeCheckout(dir) {
  const git = (...args) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    return { dir, commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return { dir, commit: null, dirty: null };
  }
}

function checkoutLabel(c) {
  return c.commit ? `${c.commit.slice(0, 7)}${c.dirty ? '+changes' : ''}` : 'not a git checkout';
}

/** The checkout of --baseline DIR, checked: a symphony package with lib/. */
function baselineCheckout(dir, what = '--baseline') {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new Error(`${what} ${dir}: no such folder`);
  const root = fs.realpathSync(path.resolve(dir));
  let pkg = null;
  try {
    pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  } catch {
    // below
  }
  if (!pkg || !['symphony', 'symphony-ws'].includes(pkg.name) || !fs.existsSync(path.join(root, 'lib', 'index.js'))) {
    throw new Error(`${what} ${dir}: not a symphony checkout (no package.json named symphony-ws or symphony with lib/index.js)`);
  }
  return describeCheckout(root);
}

/** The baseline twin of a built-in arm: the same arm, symphony loaded from
 * the baseline checkout (fanout-server.js and the traffic gate read
 * BENCH_SYMPHONY_ROOT). */
function baselineArm(of, base) {
  const a = BUILTIN[of];
  return {
    ...a,
    name: BASELINE_OF[of],
    what: `${a.what} from the baseline ${base.dir} (${checkoutLabel(base)})`,
    env: { ...a.env, BENCH_SYMPHONY_ROOT: base.dir },
    root: base.dir,
    baselineOf: of,
  };
}

/** Why a server of `arm` did not load the symphony the arm asked for (the
 * build under its root, the allocator), or null when it did. `loaded` is
 * fanout-server.js's { root, native, allocator }. */
function wrongBuild(arm, loaded) {
  if (arm.gate !== 'symphony') return null;
  const want = fs.realpathSync(arm.root || REPO);
  if (!loaded || !loaded.native) return `${arm.name}: the server did not say which symphony build it loaded`;
  let native = loaded.native;
  try {
    native = fs.realpathSync(native);
  } catch {
    // compared as printed
  }
  if (!native.startsWith(`${want}${path.sep}`)) return `${arm.name}: the server loaded ${loaded.native}, expected a build under ${want}`;
  if (arm.allocator && loaded.allocator !== arm.allocator) {
    return `${arm.name}: the server loaded allocator ${loaded.allocator}, expected ${arm.allocator}`;
  }
  return null;
}

/** "NAME=K=V,K2=V2" -> an arm: the default build plus that environment. */
function parseArmEnv(spec) {
  const m = /^([A-Za-z0-9_.-]+)=(.+)$/.exec(spec);
  if (!m) throw new Error(`--arm-env wants NAME=K=V[,K=V...] (got ${spec})`);
  const [, name, rest] = m;
  if (BUILTIN[name]) throw new Error(`--arm-env: ${name} is a built-in arm's name`);
  const env = {};
  // Values may hold commas (jemalloc's conf does): a piece without '=' that
  // follows a pair belongs to the previous value.
  let last = null;
  for (const piece of rest.split(',')) {
    const eq = piece.indexOf('=');
    if (eq > 0 && /^[A-Za-z_][A-Za-z0-9_]*$/.test(piece.slice(0, eq))) {
      last = piece.slice(0, eq);
      env[last] = piece.slice(eq + 1);
    } else if (last) {
      env[last] += `,${piece}`;
    } else {
      throw new Error(`--arm-env ${name}: "${piece}" is not K=V`);
    }
  }
  // BENCH_SYMPHONY_ROOT=DIR: the build is DIR's (another checkout, as
  // --baseline's twins), checked as theirs are.
  const root = env.BENCH_SYMPHONY_ROOT ? baselineCheckout(env.BENCH_SYMPHONY_ROOT, `--arm-env ${name}: BENCH_SYMPHONY_ROOT`).dir : undefined;
  if (root) env.BENCH_SYMPHONY_ROOT = root;
  return {
    name,
    what: `${root ? `the build of ${root}` : 'default build'} + ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(' ')}`,
    script: FANOUT,
    gate: 'symphony',
    env: { SYMPHONY_ALLOCATOR: 'jemalloc', ...env },
    allocator: 'jemalloc',
    soak: true,
    publish: true,
    ...(root ? { root } : {}),
  };
}

/**
 * The arms to run: names from --arms (default: all built-ins) plus every
 * --arm-env; with a baseline checkout (--baseline DIR: baselineCheckout()),
 * each of jemalloc and jemalloc-tls that runs gets its twin base-jemalloc /
 * base-jemalloc-tls right after it (base-jemalloc alone when neither runs),
 * unless --arms names a twin: then just the arms named; without --arms, the
 * arms of PHASE_ARMS whose phase is in `phases` too. Returns { arms, notes } where
 * notes say what was left out and why (nothing is skipped silently).
 */
function selectArms(names, armEnvs, base = null, uws = null, phases = []) {
  const notes = [];
  const extra = armEnvs.map(parseArmEnv);
  for (const a of extra) {
    if (Object.values(BASELINE_OF).includes(a.name)) throw new Error(`--arm-env: ${a.name} is a baseline arm's name`);
  }
  const twins = base ? Object.keys(BASELINE_OF).map((of) => baselineArm(of, base)) : [];
  const explicit = names !== null;
  const list = explicit ? names.slice() : [...DEFAULT_ARMS, ...phases.flatMap((p) => PHASE_ARMS[p] || [])];
  if (base && !twins.some((t) => list.includes(t.name))) {
    for (const t of twins) {
      const i = list.indexOf(t.baselineOf);
      if (i >= 0 && !list.includes(t.name)) list.splice(i + 1, 0, t.name);
    }
    if (!twins.some((t) => list.includes(t.name))) {
      list.push(twins[0].name);
      notes.push(`--baseline: neither jemalloc nor jemalloc-tls selected; ${twins[0].name} runs alone`);
    }
  }
  const arms = [];
  for (const n of list) {
    const arm = BUILTIN[n] || extra.find((a) => a.name === n) || twins.find((a) => a.name === n);
    if (!arm && Object.values(BASELINE_OF).includes(n)) throw new Error(`arm ${n} needs --baseline DIR`);
    if (!arm) throw new Error(`unknown arm ${n} (built-in: ${Object.keys(BUILTIN).join(', ')}; or define it with --arm-env)`);
    if (arms.some((a) => a.name === arm.name)) continue;
    if (arm.uws && !uws) {
      if (explicit) throw new Error(`arm ${n} needs --uws-path DIR (uWebSockets.js is not a dependency)`);
      notes.push(`arm ${n} left out: no --uws-path`);
      continue;
    }
    if (!fs.existsSync(arm.script)) {
      const why = `${path.relative(path.join(BENCH, '..'), arm.script)} does not exist`;
      if (explicit) throw new Error(`arm ${n}: ${why}`);
      notes.push(`arm ${n} left out: ${why}`);
      continue;
    }
    arms.push(arm.uws ? { ...arm, env: { ...arm.env, BENCH_UWS_PATH: uws.dir } } : arm);
  }
  for (const a of extra) if (!arms.includes(a)) arms.push(a);
  for (const a of arms) {
    if (!a.allocator) continue;
    const dir = nativeDir(a.root || REPO);
    let files = [];
    try {
      files = fs.readdirSync(dir);
    } catch {
      // no folder: no build
    }
    if (!files.some((f) => f.startsWith(`symphony.glibc.${a.allocator}`) && f.endsWith('.node'))) {
      const where = a.root ? dir : path.relative(REPO, dir);
      throw new Error(`arm ${a.name}: no ${a.allocator} build in ${where} (npm run build${a.root ? ` in ${a.root}` : ''})`);
    }
  }
  if (arms.length === 0) throw new Error('no arm to run');
  return { arms, notes };
}

/** The order of the runs of one phase: [{ arm, repeat }], interleaved
 * (A B C A B C ...) unless fixedOrder (A A A B B B ...). */
function order(arms, repeats, fixedOrder) {
  const runs = [];
  if (fixedOrder) {
    for (const arm of arms) for (let r = 1; r <= repeats; r++) runs.push({ arm, repeat: r });
  } else {
    for (let r = 1; r <= repeats; r++) for (const arm of arms) runs.push({ arm, repeat: r });
  }
  return runs;
}

module.exports = { BUILTIN, DEFAULT_ARMS, PHASE_ARMS, BASELINE_OF, REPO, PUSHER_APP, PUSHER_PHASES, selectArms, order, parseArmEnv, baselineCheckout, describeCheckout,
  checkoutLabel, wrongBuild, phasesOf, uwsCheckout };
