'use strict';
// A plain TCP proxy on 127.0.0.1 (any protocol: Redis' here) whose
// server-to-client bytes can be held and let go, and which tells when the
// client has sent a given string: a test puts one node's bus behind it to
// make what Redis sends that node late, an event at a time, with no timer.
const net = require('node:net');
const { once } = require('node:events');

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
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = this.server.address().port;
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

  #track(s) {
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => {});
  }

  #accept(client) {
    this.#track(client);
    const up = net.connect(this.target, '127.0.0.1');
    this.#track(up);
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

module.exports = { HoldProxy };
