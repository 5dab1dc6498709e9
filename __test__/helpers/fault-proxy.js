'use strict';
// The faults of the client's fault matrix (__test__/client/faults.test.js,
// __test__/browser/client-faults.test.js): a TCP proxy on 127.0.0.1 in
// front of a server's port, whose answer to each new connection is its
// `mode`, and which can break the connections it carries:
//
//   'pass'          forwarded both ways, as they are
//   'close'         accepted and closed at once (a load balancer whose backend is down)
//   'reset'         accepted and reset (RST) at once
//   'hole'          accepted, never answered, never closed (a black hole at connect)
//   'head-reset'    forwarded, and reset after the first 12 bytes of the server's answer (inside its HTTP head)
//   'upgrade:<n>'   WebSocket upgrades answered with HTTP status <n> here; every other request forwarded
//   'all:<n>'       every request answered with HTTP status <n> here (a proxy whose server is away)
//   'silent'        forwarded, but a WebSocket's bytes after its 101 head are dropped both ways
//                   (a proxy that passes upgrades, not frames)
//   'buffer'        WebSocket upgrades answered 400 here; an event stream's bytes held until the
//                   proxy's mode changes (a proxy that buffers responses); the rest forwarded
//
// stop() stops listening (connections are refused) and start() listens on
// the same port again; resetAll() resets every connection it carries
// (mid-stream), holeAll() stops forwarding their bytes both ways without
// closing them (a black hole mid-stream). Every connection it accepted is
// destroyed by close().
const net = require('node:net');
const { once } = require('node:events');

const HEAD_END = '\r\n\r\n';

/** Keeps s in sockets while it lives; its errors are the test's to see, not thrown. */
function track(sockets, s) {
  sockets.add(s);
  s.on('close', () => sockets.delete(s));
  s.on('error', () => {});
}

/** server listening on 127.0.0.1 at port (0: a free one); resolves the port. */
async function listenLoopback(server, port) {
  server.listen(port, '127.0.0.1');
  await once(server, 'listening');
  return server.address().port;
}

class FaultProxy {
  /** @param {number} target the port on 127.0.0.1 it forwards to */
  constructor(target) {
    this.target = target;
    this.mode = 'pass';
    this.port = 0;
    this.server = null;
    this.sockets = new Set();
    this.pairs = new Set();
    this.log = [];
  }

  /** Listens (again) on 127.0.0.1: a free port the first time, the same one after. Resolves the port. */
  async start() {
    this.server = net.createServer((c) => this.#accept(c));
    this.port = await listenLoopback(this.server, this.port);
    return this.port;
  }

  /** Stops listening at once: new connections are refused; the ones it carries go on. */
  stop() {
    if (this.server) this.server.close();
    this.server = null;
  }

  /** Resets every connection it carries. */
  resetAll() {
    for (const p of [...this.pairs]) this.#kill(p, true);
  }

  /** Stops forwarding the bytes of every connection it carries, both ways, without closing them. */
  holeAll() {
    for (const p of this.pairs) p.hole = true;
  }

  /** Sets the mode for new connections; held event streams are let go when it is no longer 'buffer'. */
  set(mode) {
    this.mode = mode;
    if (mode !== 'buffer') {
      for (const p of this.pairs) {
        if (p.held) { const h = p.held; p.held = null; for (const d of h) p.client.write(d); }
      }
    }
  }

  close() {
    this.stop();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  #note(s) {
    this.log.push(s);
    if (this.log.length > 100) this.log.splice(0, 20);
  }

  #accept(client) {
    track(this.sockets, client);
    const mode = this.mode;
    this.#note(`accept ${mode}`);
    if (mode === 'close') { client.end(); return; }
    if (mode === 'reset') { client.resetAndDestroy(); return; }
    if (mode === 'hole') return;
    const pair = { client, upstream: null, request: Buffer.alloc(0), hole: false, held: null, mode, seen: 0 };
    this.pairs.add(pair);
    client.on('close', () => this.#kill(pair, false));
    client.on('data', (d) => this.#up(pair, d));
  }

  #up(pair, d) {
    if (pair.hole) return;
    if (pair.upstream) { pair.upstream.write(d); return; }
    pair.request = Buffer.concat([pair.request, d]);
    const i = pair.request.indexOf(HEAD_END);
    if (i < 0) return;
    const head = pair.request.subarray(0, i).toString('latin1');
    const upgrade = /\r\nupgrade:\s*websocket/i.test(head);
    const stream = /\r\naccept:[^\r]*text\/event-stream/i.test(head);
    const m = /^(upgrade|all):(\d+)$/.exec(pair.mode);
    const status = m && (m[1] === 'all' || upgrade) ? Number(m[2]) : pair.mode === 'buffer' && upgrade ? 400 : 0;
    if (status) {
      this.#note(`answered ${status} (${upgrade ? 'upgrade' : stream ? 'stream' : 'request'})`);
      pair.client.end(`HTTP/1.1 ${status} Proxy Says No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
      return;
    }
    if (pair.mode === 'buffer' && stream) pair.held = [];
    const up = pair.upstream = net.connect(this.target, '127.0.0.1');
    track(this.sockets, up);
    up.on('data', (x) => this.#down(pair, x));
    // A black hole stays one: the page is not told when the server leaves.
    up.on('close', () => { if (!pair.hole) this.#kill(pair, false); });
    pair.upgrade = upgrade;
    up.write(pair.request);
    pair.request = null;
  }

  #down(pair, x) {
    if (pair.hole) return;
    if (pair.mode === 'head-reset') {
      pair.client.write(x.subarray(0, 12), () => this.#kill(pair, true));
      pair.hole = true;
      return;
    }
    if (pair.held) { pair.held.push(x); return; }
    if (pair.mode === 'silent' && pair.upgrade) {
      // The 101's head, then nothing.
      const i = x.indexOf(HEAD_END);
      pair.client.write(i < 0 ? x : x.subarray(0, i + 4));
      if (i >= 0) pair.hole = true;
      return;
    }
    pair.client.write(x);
  }

  #kill(pair, reset) {
    if (!this.pairs.delete(pair)) return;
    if (reset) {
      if (!pair.client.destroyed) pair.client.resetAndDestroy();
    } else {
      pair.client.destroy();
    }
    if (pair.upstream) pair.upstream.destroy();
  }
}

// HoldProxy: a plain TCP proxy (any protocol: Redis' here) whose
// server-to-client bytes can be held and let go, and which tells when the
// client has sent a given string: a test puts one node's bus behind it to
// make what Redis sends that node late, an event at a time, with no timer.
class HoldProxy {
  /** @param {number} target the port on 127.0.0.1 it forwards to */
  constructor(target) {
    this.target = target;
    this.port = 0;
    this.server = null;
    this.sockets = new Set();
    this.held = null;    // while holding: [socket, bytes] to write on release()
    this.sent = '';      // what clients sent since mark() (latin1)
    this.waiters = [];   // { text, resolve }
  }

  async start() {
    this.server = net.createServer((c) => this.#accept(c));
    this.port = await listenLoopback(this.server, 0);
    return this.port;
  }

  /** Holds every server-to-client byte from now on (every connection). */
  hold() { this.held ??= []; }

  /** Writes what was held, in order, and forwards again. */
  release() {
    const held = this.held ?? [];
    this.held = null;
    for (const [socket, bytes] of held) if (!socket.destroyed) socket.write(bytes);
  }

  /** Forgets what clients sent so far: sentText() waits for what comes after. */
  mark() { this.sent = ''; }

  /** Resolves once the clients have sent text since mark(). */
  sentText(text) {
    if (this.sent.includes(text)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ text, resolve }));
  }

  close() {
    if (this.server) this.server.close();
    this.server = null;
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }

  #accept(client) {
    track(this.sockets, client);
    const up = net.connect(this.target, '127.0.0.1');
    track(this.sockets, up);
    client.on('data', (d) => {
      up.write(d);
      this.sent += d.toString('latin1');
      this.waiters = this.waiters.filter((w) => !(this.sent.includes(w.text) && (w.resolve(), true)));
    });
    up.on('data', (d) => {
      if (this.held) this.held.push([client, d]);
      else client.write(d);
    });
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
  }
}

module.exports = { FaultProxy, HoldProxy };
