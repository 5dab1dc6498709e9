'use strict';
// For the client's suites: a small real `ws` server on 127.0.0.1 that speaks
// symphony.v1 as docs/protocol.md writes it (the test writes the frames), a
// recorder of a client's events that the tests wait on (never on time), and
// timers that record the delays the client asks for.
const { once } = require('node:events');
const { WebSocketServer } = require('ws');

const EPOCH_A = '3f9a0c1d2e4b5a69';
const EPOCH_B = '00000000deadbeef';

/** A waitable list: push() wakes every until(pred) whose predicate now holds. */
class Waitable {
  constructor() { this.items = []; this.waiters = []; }
  push(x) {
    this.items.push(x);
    this.waiters = this.waiters.filter((w) => !(w.pred(this.items) && (w.resolve(this.items), true)));
  }
  /** Resolves (with the items) once pred(items) is true. */
  until(pred) {
    if (pred(this.items)) return Promise.resolve(this.items);
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }
  /** The n-th item (0-based), once there. */
  async at(n) { return (await this.until((a) => a.length > n))[n]; }
}

/**
 * A ws server. protocol: the subprotocol it chooses when offered (false: none).
 * refuse(): upgrades answered 503 while true. Every accepted connection is
 * { ws, url, protocol, received: Waitable of { data, isBinary }, closed: Promise }.
 */
async function startServer({ protocol = 'symphony.v1' } = {}) {
  const state = { refuse: false };
  const upgrades = new Waitable(); // every upgrade request's url, refused or not
  const wss = new WebSocketServer({
    host: '127.0.0.1',
    port: 0,
    handleProtocols: (offered) => (protocol && offered.has(protocol) ? protocol : false),
    verifyClient: (info, cb) => {
      upgrades.push(info.req.url);
      if (state.refuse) cb(false, 503);
      else cb(true);
    },
  });
  await once(wss, 'listening');
  const connections = new Waitable();
  wss.on('connection', (ws, req) => {
    const received = new Waitable();
    ws.on('message', (data, isBinary) => received.push({ data, isBinary }));
    const closed = once(ws, 'close');
    connections.push({ ws, url: req.url, protocol: ws.protocol, received, closed });
  });
  const { port } = wss.address();
  return {
    wss,
    port,
    url: `ws://127.0.0.1:${port}/feed`,
    upgrades,
    connections,
    refuse(on) { state.refuse = on; },
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise((r) => wss.close(r));
    },
  };
}

/** Every event of a client, in order, as [name, ...args]; waitable. */
function record(client) {
  const events = new Waitable();
  for (const name of ['message', 'subscribed', 'unsubscribed', 'recovered', 'state', 'error']) {
    client.on(name, (...args) => events.push([name, ...args]));
  }
  return events;
}

/** The events named `name` (their arguments). */
const only = (events, name) => events.filter((e) => e[0] === name).map((e) => e.slice(1));

/**
 * Timers that record each delay the client asks for and run the callback on
 * the next turn (setImmediate), so reconnects happen at once and the delays
 * are asserted, not waited for.
 */
function fastTimers() {
  const delays = [];
  const cleared = [];
  return {
    delays,
    cleared,
    setTimeout: (fn, ms) => { delays.push(ms); return setImmediate(fn); },
    clearTimeout: (h) => { cleared.push(h); clearImmediate(h); },
  };
}

/** Timers that only record: the callbacks run when the test calls fire(i). */
function heldTimers() {
  const pending = [];
  const cleared = [];
  return {
    pending,
    cleared,
    setTimeout: (fn, ms) => { const h = { fn, ms }; pending.push(h); return h; },
    clearTimeout: (h) => { cleared.push(h); },
  };
}

/** A symphony.v1 notice frame. */
const notice = (obj) => `c${JSON.stringify(obj)}`;

module.exports = { EPOCH_A, EPOCH_B, Waitable, startServer, record, only, fastTimers, heldTimers, notice };
