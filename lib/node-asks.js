'use strict';
// A question every node answers over the nodes' control channel (docs/bus.md,
// "The nodes' control channel"): the request goes out once, Redis says how
// many nodes received it, and the answers are gathered by request id until
// that many came, or the time is up. Subscriber counts (lib/presence.js) and
// Pusher's channel lists (lib/pusher/channels.js) ask this way.

const crypto = require('node:crypto');
const { SymphonyError } = require('./errors');

class NodeAsks {
  #pending = new Map(); // request id -> { expect, got: Map node -> answer, resolve, reject, timer }

  /**
   * send(req) publishes the request named req and resolves how many nodes
   * got it; resolves a Map node -> answer once each answered, or rejects
   * with ERR_BUS_TIMEOUT (`${what}: k of n nodes answered within ms`, with
   * answered and expected) after timeout ms.
   */
  ask(send, timeout, what) {
    const req = crypto.randomBytes(6).toString('hex');
    return new Promise((resolve, reject) => {
      const c = { expect: null, got: new Map(), resolve, reject, timer: null };
      c.timer = setTimeout(() => {
        this.#pending.delete(req);
        const err = new SymphonyError('ERR_BUS_TIMEOUT', `${what}: ${c.got.size} of ${c.expect ?? '?'} nodes answered within ${timeout} ms`);
        err.answered = c.got.size;
        err.expected = c.expect;
        reject(err);
      }, timeout);
      this.#pending.set(req, c);
      send(req).then((n) => {
        c.expect = n;
        this.#settle(req);
      }, (err) => {
        clearTimeout(c.timer);
        this.#pending.delete(req);
        reject(err);
      });
    });
  }

  /** Whether req is a request of this node's still waiting. */
  waiting(req) {
    return this.#pending.has(req);
  }

  /** node's answer to request req (ignored when req is not waiting). */
  answer(req, node, value) {
    const c = this.#pending.get(req);
    if (c === undefined) return;
    c.got.set(node, value);
    this.#settle(req);
  }

  #settle(req) {
    const c = this.#pending.get(req);
    if (c === undefined || c.expect === null || c.got.size < c.expect) return;
    clearTimeout(c.timer);
    this.#pending.delete(req);
    c.resolve(c.got);
  }

  /** Stops waiting: the requests under way never settle (their callers are closing). */
  close() {
    for (const c of this.#pending.values()) clearTimeout(c.timer);
    this.#pending.clear();
  }
}

module.exports = { NodeAsks };
