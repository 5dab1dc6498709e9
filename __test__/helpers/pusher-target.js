'use strict';
// The server the Pusher acceptance suite (__test__/pusher/*.test.js) runs
// against: symphony by default, or Soketi 1.6 to validate the tests
// themselves (a test that passes on Soketi and fails on symphony means
// symphony is wrong, not the test):
//
//   SY_PUSHER_TARGET=soketi SY_SOKETI_BIN=/path/to/node_modules/@soketi/soketi/bin/server.js \
//     node --test __test__/pusher/
//
// (Soketi is not a dependency of this repository: install it elsewhere, e.g.
// a package.json with "@soketi/soketi": "1.6.1" and the override
// "uWebSockets.js": "npm:uwebsockets@3.0.6".)
//
// startTarget({ apps, redisUrl, t, ...limits }) starts one node in a child
// process on a free loopback port and resolves
//   { kind, wsHost, wsPort, httpHost, httpPort, appId, key, secret, app, apps,
//     stop(), restart(), deviation(name, { pusher, soketi }) }
// apps are symphony's `pusher.apps` entries ({ id, key, secret,
// enableClientMessages, enableUserAuthentication, maxConnections,
// maxClientEventsPerSecond, webhooks }); the first is the default app the
// returned appId/key/secret name. With t, stop() runs after the test, after
// the clients started later with t (helpers/teardown.js).
//
// Where Soketi deviates from Pusher's documented behaviour, a test asserts
// target.deviation(name, { pusher, soketi }): Pusher's value on symphony,
// Soketi's on Soketi, so the rest of the test is still proven on Soketi and
// the deviation is written down where it is asserted (and listed in
// DEVIATIONS below).
//
// The symphony target runs __test__/helpers/pusher-node.js. Until symphony
// has the `pusher` option (issue 45), starting it fails with an error that
// says so: every test fails loudly, none is skipped.

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { freePort } = require('./redis');
const { defer } = require('./teardown');

const HOST = '127.0.0.1';
const KIND = process.env.SY_PUSHER_TARGET === 'soketi' ? 'soketi' : 'symphony';

/** Where Soketi 1.6.1 differs from Pusher's documentation (name → what). */
const DEVIATIONS = {
  'http-error-status': 'HTTP API errors: Soketi answers every refusal with HTTP status 200 and the intended status only in the JSON body {"error", "code"} (uWebSockets.js sends 200 once a header was written before writeStatus), so the pusher SDK takes a refused request (bad signature, bad body, 101 channels) for a success; Pusher answers with the status itself (400, 401, 404, 413)',
  'http-auth-key': 'HTTP API auth_key: Soketi never checks that it is the app\'s key (a request signed with the app\'s secret passes with any auth_key); Pusher refuses another key (401)',
  'http-bad-json': 'HTTP API body that is not JSON: Soketi checks body_md5 against "{}" (what it reads an unparsable body as) and answers 401; Pusher answers 400 (the body is malformed, the signature is right)',
  'channel-name-status': 'a channel name that is not allowed or too long: Soketi answers pusher:subscription_error with status 4009 (a close code, in the field where pusher-js puts an HTTP status); symphony answers status 400 (a bad request), type InvalidChannel or LimitReached',
  'webhooks-vacated-per-node': 'two nodes over Redis: Soketi may send channel_vacated once from each node the channel was occupied on (each node asks the cluster for its count over Redis after its own leave, and answers its pong before that: two leaves close together both see 0; seen 2 of 3 runs even when the second leave waited for the pong of the first), while channel_occupied came once; Pusher sends each once per channel, cluster-wide',
  'http-trigger-info': 'POST /events with info=subscription_count: Soketi answers {"ok":true}; Pusher answers {"channels":{"<name>":{"subscription_count":n}}} (info asks for it)',
  'protocol-version': 'Soketi ignores the protocol query parameter (a connection without one, or with protocol=99, is established); Pusher documents 4008 (no protocol version supplied) and 4007 (unsupported protocol version)',
  'quota-code': 'over the app connection quota: Soketi sends pusher:error 4100 and closes 4100; Pusher documents 4004 ("Application is over connection quota")',
  'activity-timeout': 'connection_established: Soketi announces activity_timeout 30 whatever it is configured to (and closes idle sockets after a fixed 120 s); Pusher sends the configured value (120 by default)',
  'client-event-public': 'a client event on a public channel: Soketi relays it to the other subscribers; Pusher only allows client events on private and presence channels (the client is refused with pusher:error)',
  'client-event-unsubscribed': 'a client event on a channel the sender has not subscribed: Soketi drops it silently; symphony answers pusher:error 4301 as for every other refused client event',
  'bad-json': 'a message that is not JSON: Soketi drops it silently; symphony answers pusher:error (code 4200), the connection stays open',
  'http-timestamp': 'HTTP API auth_timestamp more than 600 s from now: Soketi accepts it (it never checks the timestamp); Pusher answers 401',
  'http-channels-info': 'GET /channels: Soketi gives every channel {subscription_count, occupied} whatever info asks; Pusher gives {} per channel unless info asks (user_count only for presence- with filter_by_prefix=presence-)',
  'pong-timeout': 'Soketi never sends pusher:ping and closes a silent connection after a fixed 120 s (4201); Pusher sends pusher:ping after activity_timeout and closes 4201 when no pong follows',
  'presence-limit-same-user': 'presence channel at maxPresenceMembers: Soketi refuses a second connection of a user already in (it counts connections); the limit is on members, so symphony lets it in',
  'signin-without-user-auth': 'Soketi ignores pusher:signin on an app without enableUserAuthentication (no answer at all); symphony signs the user in',
};

function deviation(name, { pusher, soketi }) {
  if (!(name in DEVIATIONS)) throw new Error(`deviation(${name}): not in DEVIATIONS (pusher-target.js)`);
  return KIND === 'soketi' ? soketi : pusher;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves once fn() is truthy; rejects after ms naming what. */
async function pollUntil(fn, ms, what) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      if (await fn()) return;
    } catch (err) {
      if (err.fatal) throw err;
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(50);
  }
}

const DEFAULT_APP = {
  id: 'app-1',
  key: 'key-1',
  secret: 'secret-1',
  enableClientMessages: true,
  enableUserAuthentication: false,
};

/** The pusher option's top-level settings a test may give, and Soketi's key for each. */
const SOKETI_LIMITS = {
  userAuthenticationTimeout: (v) => ['userAuthenticationTimeout', v],
  maxEventBytes: (v) => ['eventLimits.maxPayloadInKb', v / 1024],
  maxPresenceMembers: (v) => ['presence.maxMembersPerChannel', v],
  maxPresenceMemberBytes: (v) => ['presence.maxMemberSizeInKb', v / 1024],
  maxChannelNameLength: (v) => ['channelLimits.maxNameLength', v],
  maxEventNameLength: (v) => ['eventLimits.maxNameLength', v],
  maxChannelsPerEvent: (v) => ['eventLimits.maxChannelsAtOnce', v],
  maxBatchSize: (v) => ['eventLimits.maxBatchSize', v],
  cacheTtl: (v) => ['channelLimits.cacheTtl', v],
  webhookBatching: (v) => ['webhooks.batching.enabled', v],
  activityTimeout: null, // Soketi has no such setting (DEVIATIONS['activity-timeout'])
  vacateDelay: null, // Soketi has none: it sends channel_vacated at once
};

function soketiConfig({ apps, port, metricsPort, redisUrl, limits }) {
  const config = {
    host: HOST,
    port,
    'metrics.host': HOST,
    'metrics.port': metricsPort,
    shutdownGracePeriod: 100,
    'appManager.array.apps': apps.map((a) => {
      const out = { ...a };
      if (Array.isArray(out.secret)) out.secret = out.secret[0];
      return out;
    }),
  };
  if (redisUrl) {
    const u = new URL(redisUrl);
    config['adapter.driver'] = 'redis';
    config['database.redis.host'] = u.hostname;
    config['database.redis.port'] = Number(u.port || 6379);
  }
  for (const [k, v] of Object.entries(limits)) {
    const map = SOKETI_LIMITS[k];
    if (map === undefined) throw new Error(`startTarget: unknown setting ${k}`);
    if (map === null) continue;
    const [key, value] = map(v);
    config[key] = value;
  }
  return config;
}

/** Spawns one child; resolves { child, exited, log() }. */
function spawnChild(cmd, args, env) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let log = '';
  child.stdout.on('data', (d) => { log += d; if (log.length > 65536) log = log.slice(-32768); });
  child.stderr.on('data', (d) => { log += d; if (log.length > 65536) log = log.slice(-32768); });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    child.once('error', (err) => reject(new Error(`could not start ${cmd}: ${err.message}`)));
    child.once('spawn', () => resolve({ child, exited, log: () => log }));
  });
}

/**
 * Whether exited (a promise) settles within ms. The bound's timer is
 * cleared as soon as it does: a timer left behind would keep the test file's
 * process alive for the rest of it after its last test (5 s after every
 * stop(), which was most of the Pusher suite's time after its tests).
 */
async function exitsWithin(exited, ms) {
  let timer;
  const bound = new Promise((resolve) => { timer = setTimeout(() => resolve(false), ms); });
  try {
    return await Promise.race([exited.then(() => true), bound]);
  } finally {
    clearTimeout(timer);
  }
}

async function killChild(proc, timeoutMs = 5000) {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  try { process.kill(proc.child.pid, 'SIGTERM'); } catch { return; }
  if (!await exitsWithin(proc.exited, timeoutMs)) {
    try { process.kill(proc.child.pid, 'SIGKILL'); } catch { /* gone */ }
    await exitsWithin(proc.exited, timeoutMs);
  }
}

const live = new Set();
process.on('exit', () => {
  for (const proc of live) {
    try { process.kill(proc.child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
});

/** Starts Soketi on port (the bin from SY_SOKETI_BIN); resolves once it answers on it. */
async function startSoketi(options) {
  const bin = process.env.SY_SOKETI_BIN;
  if (!bin || !fs.existsSync(bin)) {
    throw new Error('SY_PUSHER_TARGET=soketi needs SY_SOKETI_BIN=<path to @soketi/soketi/bin/server.js>');
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-pusher-soketi-'));
  const file = path.join(dir, 'config.json');
  fs.writeFileSync(file, JSON.stringify(soketiConfig(options)));
  const proc = await spawnChild(process.execPath, [bin, 'start', `--config=${file}`], {});
  live.add(proc);
  proc.exited.then(() => live.delete(proc));
  proc.dir = dir;
  try {
    await pollUntil(async () => {
      if (proc.child.exitCode !== null) throw Object.assign(new Error(`soketi exited ${proc.child.exitCode}:\n${proc.log().slice(-2000)}`), { fatal: true });
      return /Server is up and running/.test(proc.log());
    }, 60000, `soketi on port ${options.port}`);
  } catch (err) {
    if (!err.fatal) err.message += `\n${proc.log().slice(-2000)}`;
    await killChild(proc);
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return proc;
}

/** Starts symphony (pusher-node.js) on port; resolves once it listens. */
async function startSymphony({ apps, port, redisUrl, limits }) {
  const options = { host: HOST, port, pusher: { apps, ...limits } };
  if (redisUrl) options.bus = { url: redisUrl };
  const proc = await spawnChild(process.execPath, [path.join(__dirname, 'pusher-node.js'), JSON.stringify(options)], {});
  live.add(proc);
  proc.exited.then(() => live.delete(proc));
  try {
    await pollUntil(async () => {
      const log = proc.log();
      const failed = /^PUSHER-NODE-FAILED (.*)$/m.exec(log);
      if (failed) {
        const err = new Error(failed[1]);
        err.fatal = true;
        throw err;
      }
      if (proc.child.exitCode !== null) throw Object.assign(new Error(`symphony exited ${proc.child.exitCode}:\n${log.slice(-2000)}`), { fatal: true });
      return /^PUSHER-NODE-LISTENING/m.test(log);
    }, 60000, `symphony on port ${port}`).catch((err) => {
      throw err.fatal || !err.message.startsWith('timed out') ? err : new Error(`${err.message}\n${proc.log().slice(-2000)}`);
    });
  } catch (err) {
    await killChild(proc);
    throw err;
  }
  return proc;
}

/**
 * Starts one node of the target. options: apps (default: one app with client
 * events on), redisUrl (2+ nodes meet over it), t (t.after(stop)), port (a
 * fixed port: a restart keeps it), and the pusher option's settings
 * (userAuthenticationTimeout, maxEventBytes, activityTimeout, cacheTtl, ...).
 */
async function startTarget({ apps = [DEFAULT_APP], redisUrl = null, t = null, port = null, ...limits } = {}) {
  apps = apps.map((a) => ({ ...a }));
  const wsPort = port ?? await freePort();
  const metricsPort = KIND === 'soketi' ? await freePort() : null;
  const start = () => (KIND === 'soketi'
    ? startSoketi({ apps, port: wsPort, metricsPort, redisUrl, limits })
    : startSymphony({ apps, port: wsPort, redisUrl, limits }));
  let proc = await start();
  const target = {
    kind: KIND,
    wsHost: HOST,
    wsPort,
    httpHost: HOST,
    httpPort: wsPort,
    appId: String(apps[0].id),
    key: apps[0].key,
    secret: Array.isArray(apps[0].secret) ? apps[0].secret[0] : apps[0].secret,
    app: apps[0],
    apps,
    deviation,
    get pid() { return proc.child.pid; },
    /** The child's output so far (for a failure's message). */
    log: () => proc.log(),
    /** Stops the node (SIGTERM, then SIGKILL), waits for its exit. Idempotent. */
    async stop() {
      await killChild(proc);
      if (proc.dir) fs.rmSync(proc.dir, { recursive: true, force: true });
    },
    /** SIGKILL now (a crash), waits for the exit. */
    async kill() {
      if (proc.child.exitCode === null && proc.child.signalCode === null) {
        try { process.kill(proc.child.pid, 'SIGKILL'); } catch { /* gone */ }
        await proc.exited;
      }
    },
    /** Stops it and starts it again on the same port with the same settings. */
    async restart() {
      await target.stop();
      proc = await start();
    },
  };
  if (t) defer(t, () => target.stop());
  return target;
}

module.exports = { startTarget, freePort, KIND, DEVIATIONS, DEFAULT_APP, deviation };
