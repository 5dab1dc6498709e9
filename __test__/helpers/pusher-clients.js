'use strict';
// The real clients of the Pusher acceptance suite, pointed at a target
// (pusher-target.js):
//
// - sdk(target, opts): the `pusher` server SDK 5 (HTTP API, signatures).
// - connect(target, opts): pusher-js 8 in Node over a WebSocket only,
//   authorized by the SDK (channelAuthorization and userAuthentication
//   customHandlers that sign with authorizeChannel / authenticateUser, as an
//   app's auth endpoint would), connected (bounded wait).
// - subscribe(client, name): resolves at pusher:subscription_succeeded,
//   rejects with the subscription error.
// - inbox(): events pushed as they come; until(pred) resolves at the first
//   that matches (no polling), bounded.
// - raw(target, opts): a bare WebSocket that speaks the protocol by hand,
//   for exact frames and close codes. With SY_PUSHER_FRAMES=<file>, every
//   frame a raw client receives is appended to that file (the reference
//   frames of the report).
//
// Everything is stopped after the test when a t is given, in the reverse
// order of starting (helpers/teardown.js: the clients before the target).

const fs = require('node:fs');
const http = require('node:http');
const { once } = require('node:events');
const WebSocket = require('ws');
const Pusher = require('pusher');
const PusherJs = require('pusher-js');
const { defer } = require('./teardown');

PusherJs.logToConsole = false;

// pusher-js closes a socket its server already closed (on a close code that
// stops it: 4009 after terminateUserConnections, 4001...), and
// faye-websocket's close() then arms a 30 s timer whose callback does nothing
// on a closed socket (_beginClose returns at once) but which nothing clears:
// it held the test file's process 30 s after its last test. Such a close's
// timer is cleared here; a close of an open socket keeps its own.
const createWebSocket = PusherJs.Runtime.createWebSocket;
PusherJs.Runtime.createWebSocket = function (url) {
  const socket = createWebSocket.call(this, url);
  const close = socket.close;
  socket.close = function (...args) {
    const wasClosed = this.readyState === 3; // CLOSED
    const r = close.apply(this, args);
    if (wasClosed && this._closeTimer) clearTimeout(this._closeTimer);
    return r;
  };
  return socket;
};

/** p, or a rejection naming what after ms. */
function withTimeout(p, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Items in arrival order; until(pred, ms, what) resolves with the first match (past or future). */
class Inbox {
  constructor(name = 'inbox') {
    this.name = name;
    this.items = [];
    this.waiters = new Set();
  }

  push(item) {
    this.items.push(item);
    for (const w of [...this.waiters]) w();
  }

  until(pred = () => true, ms = 5000, what = 'an item') {
    return new Promise((resolve, reject) => {
      const check = () => {
        const hit = this.items.find(pred);
        if (hit !== undefined) {
          finish();
          resolve(hit);
        }
      };
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out after ${ms} ms waiting for ${what} in ${this.name}; got ${JSON.stringify(this.items).slice(0, 1500)}`));
      }, ms);
      this.waiters.add(check);
      check();
    });
  }

  /** Resolves once n items match pred. */
  count(n, pred = () => true, ms = 5000, what = `${n} items`) {
    return this.until(() => this.items.filter(pred).length >= n ? true : undefined, ms, what)
      .then(() => this.items.filter(pred));
  }
}

/** The SDK for target's app (default: its first). */
function sdk(target, { app = target.app, ...extra } = {}) {
  return new Pusher({
    appId: String(app.id),
    key: app.key,
    secret: Array.isArray(app.secret) ? app.secret[0] : app.secret,
    host: target.httpHost,
    port: String(target.httpPort),
    useTLS: false,
    timeout: 5000,
    ...extra,
  });
}

/**
 * A pusher-js client, connected. opts: app (default the target's first),
 * key (override the key, e.g. an unknown one), member(channel) → presence
 * { user_id, user_info } (default { user_id: 'u-<n>' }), user → the signed
 * in user { id, user_info, watchlist } for signin(), signer (an SDK: default
 * sdk(target, { app })), wait (false: do not wait for 'connected'), t,
 * and any pusher-js option.
 */
let nth = 0;
async function connect(target, { app = target.app, key, member, user, signer, wait = true, t, timeoutMs = 5000, ...opts } = {}) {
  const n = ++nth;
  const authSdk = signer ?? sdk(target, { app });
  const memberOf = member ?? (() => ({ user_id: `u-${n}`, user_info: { n } }));
  const client = new PusherJs(key ?? app.key, {
    wsHost: target.wsHost,
    wsPort: target.wsPort,
    forceTLS: false,
    enabledTransports: ['ws'],
    disableStats: true,
    cluster: '',
    channelAuthorization: {
      customHandler: ({ socketId, channelName }, cb) => {
        try {
          const data = channelName.startsWith('presence-') ? memberOf(channelName) : undefined;
          cb(null, authSdk.authorizeChannel(socketId, channelName, data));
        } catch (err) {
          cb(err, null);
        }
      },
    },
    userAuthentication: {
      customHandler: ({ socketId }, cb) => {
        try {
          if (!user) throw new Error('this client has no user to sign in');
          cb(null, authSdk.authenticateUser(socketId, user));
        } catch (err) {
          cb(err, null);
        }
      },
    },
    ...opts,
  });
  client.states = new Inbox(`client ${n} states`);
  client.errors = new Inbox(`client ${n} errors`);
  client.connection.bind('state_change', (s) => client.states.push(s.current));
  client.connection.bind('error', (e) => client.errors.push(e));
  if (t) defer(t, () => client.disconnect());
  if (wait) await client.states.until((s) => s === 'connected', timeoutMs, `pusher-js client ${n} to connect to ${target.kind}`);
  return client;
}

/** Subscribes; resolves { channel, data } at subscription_succeeded, rejects with the subscription error. */
function subscribe(client, name, ms = 5000) {
  const channel = client.subscribe(name);
  return withTimeout(new Promise((resolve, reject) => {
    channel.bind('pusher:subscription_succeeded', (data) => resolve({ channel, data }));
    channel.bind('pusher:subscription_error', (err) => reject(Object.assign(new Error(`subscription to ${name} failed: ${JSON.stringify(err)}`), { data: err })));
  }), ms, `subscription_succeeded on ${name}`);
}

/** Every event `name` on channel (or every event, name null) pushed into an Inbox: { event, data, metadata }. */
function events(channel, name = null) {
  const box = new Inbox(`events on ${channel.name}`);
  if (name === null) channel.bind_global((event, data) => box.push({ event, data }));
  else channel.bind(name, (data, metadata) => box.push({ event: name, data, metadata }));
  return box;
}

// ---------------------------------------------------------------------------
// A bare WebSocket.

const framesFile = process.env.SY_PUSHER_FRAMES || null;
function record(label, dir, text) {
  if (!framesFile) return;
  fs.appendFileSync(framesFile, `${JSON.stringify({ label, dir, frame: text })}\n`);
}

/**
 * A raw protocol client: ws://host:port/app/<key>?protocol=7&client=js&version=8.6.0.
 * Resolves { ws, frames (Inbox of parsed frames), send(obj or string),
 * next(pred, ms, what), closed (promise of { code, reason }), socketId,
 * established (its data) }. opts: key, app, query (replaces the default
 * one), path (replaces /app/<key>), established (false: do not wait for
 * connection_established), label (for SY_PUSHER_FRAMES), t.
 */
async function raw(target, { app = target.app, key = app.key, query = 'protocol=7&client=js&version=8.6.0&flash=false', path, established = true, label = 'raw', t, timeoutMs = 5000 } = {}) {
  const url = `ws://${target.wsHost}:${target.wsPort}${path ?? `/app/${encodeURIComponent(key)}`}${query ? `?${query}` : ''}`;
  const ws = new WebSocket(url, { perMessageDeflate: false });
  const frames = new Inbox(`frames of ${label}`);
  let closedResolve;
  const closed = new Promise((r) => { closedResolve = r; });
  ws.on('message', (data, isBinary) => {
    const text = data.toString();
    record(label, 'in', text);
    let parsed;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = { unparsed: text, binary: isBinary };
    }
    frames.push(parsed);
  });
  ws.on('close', (code, reason) => {
    record(label, 'close', JSON.stringify({ code, reason: reason.toString() }));
    closedResolve({ code, reason: reason.toString() });
  });
  const opened = new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
    ws.once('unexpected-response', (req, res) => reject(new Error(`${url}: HTTP ${res.statusCode} instead of an upgrade`)));
  });
  ws.on('error', () => {}); // after open: the close event tells
  if (t) defer(t, () => { if (ws.readyState !== WebSocket.CLOSED) ws.terminate(); });
  await withTimeout(opened, timeoutMs, `the WebSocket ${url} to open`);
  const client = {
    ws,
    frames,
    closed,
    socketId: null,
    established: null,
    send(msg) {
      const text = typeof msg === 'string' ? msg : JSON.stringify(msg);
      record(label, 'out', text);
      ws.send(text);
    },
    /** The first frame (since the start) matching pred; with `after`, only frames past that index. */
    next(pred, ms = 5000, what = 'a frame') {
      return frames.until(pred, ms, what);
    },
    /** The first frame past those seen so far that matches pred. */
    nextNew(pred = () => true, ms = 5000, what = 'a new frame') {
      const from = frames.items.length;
      return frames.until((f) => frames.items.indexOf(f) >= from && pred(f), ms, what);
    },
    close() {
      if (ws.readyState !== WebSocket.CLOSED) ws.terminate();
    },
  };
  if (established) {
    const f = await client.next((x) => x.event === 'pusher:connection_established' || x.event === 'pusher:error', timeoutMs, 'pusher:connection_established');
    if (f.event === 'pusher:error') throw new Error(`connection refused: ${JSON.stringify(f)}`);
    client.established = JSON.parse(f.data);
    client.socketId = client.established.socket_id;
  }
  return client;
}

/** The auth of a subscribe message for socketId (private, presence with member, encrypted). */
function authFor(target, socketId, channel, member, { signer, app = target.app, ...extra } = {}) {
  return (signer ?? sdk(target, { app, ...extra })).authorizeChannel(socketId, channel, member);
}

/** Subscribes a raw client; resolves the first frame about that channel that answers it. */
async function rawSubscribe(client, target, channel, member, opts = {}) {
  const data = { channel };
  if (/^(private-|presence-)/.test(channel)) Object.assign(data, authFor(target, client.socketId, channel, member, opts));
  delete data.shared_secret;
  client.send({ event: 'pusher:subscribe', data });
  return client.nextNew((f) => f.channel === channel && /subscription_succeeded|subscription_error/.test(f.event), 5000, `the answer to the subscription of ${channel}`);
}

/** A signed HTTP API request made by hand (the SDK's signature), for bad-input tests. */
function signedUrl(target, { method = 'GET', path: p, query = {}, body = null, secret = target.secret, key = target.key, timestamp = Math.floor(Date.now() / 1000), bodyMd5 } = {}) {
  const crypto = require('node:crypto');
  const params = { auth_key: key, auth_timestamp: String(timestamp), auth_version: '1.0', ...query };
  if (body !== null) params.body_md5 = bodyMd5 ?? crypto.createHash('md5').update(body).digest('hex');
  const sorted = Object.keys(params).sort().map((k) => `${k}=${params[k]}`).join('&');
  const sig = crypto.createHmac('sha256', secret).update(`${method}\n${p}\n${sorted}`).digest('hex');
  const qs = Object.keys(params).map((k) => `${k}=${encodeURIComponent(params[k])}`).join('&');
  return `http://${target.httpHost}:${target.httpPort}${p}?${qs}&auth_signature=${sig}`;
}

/**
 * The status an HTTP API answer means: its HTTP status (Pusher), or on
 * Soketi, which answers every refusal with 200, the "code" of its JSON body
 * (DEVIATIONS['http-error-status']).
 */
function statusOf(target, { status, json }) {
  const soketi = status === 200 && json && typeof json.code === 'number' ? json.code : status;
  return target.deviation('http-error-status', { pusher: status, soketi });
}

/** The status of an SDK call: its RequestError's, or the response's (statusOf). */
async function sdkStatus(target, promise) {
  let res;
  try {
    res = await promise;
  } catch (err) {
    if (typeof err.status !== 'number') throw err;
    return err.status;
  }
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return statusOf(target, { status: res.status, json });
}

/** fetch() a hand-signed request; resolves { status, text, json }. */
async function httpRaw(target, opts) {
  const url = signedUrl(target, opts);
  const res = await withTimeout(fetch(url, {
    method: opts.method ?? 'GET',
    body: opts.body ?? undefined,
    headers: opts.body ? { 'content-type': 'application/json' } : {},
  }), 5000, `${opts.method ?? 'GET'} ${opts.path}`);
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: statusOf(target, { status: res.status, json }), httpStatus: res.status, text, json };
}

/**
 * A webhook receiver on loopback (answers 200): { url, posts (Inbox of
 * { headers, body }), events (Inbox of { event, headers, body }, one per
 * event of a POST), names() ("name:channel" of every event, in order) }.
 */
async function webhookReceiver(t) {
  const posts = new Inbox('webhook POSTs');
  const events = new Inbox('webhook events');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      posts.push({ headers: req.headers, body });
      for (const event of JSON.parse(body).events) events.push({ event, headers: req.headers, body });
      res.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  defer(t, () => { server.closeAllConnections(); server.close(); });
  const names = () => events.items.map(({ event }) => `${event.name}:${event.channel}`);
  return { url: `http://127.0.0.1:${server.address().port}/hooks`, posts, events, names };
}

module.exports = { withTimeout, Inbox, sdk, connect, subscribe, events, raw, authFor, rawSubscribe, signedUrl, httpRaw, statusOf, sdkStatus, webhookReceiver, PusherJs };
