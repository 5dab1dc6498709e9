'use strict';
// GET /apps/<id>/channels and /channels/<name> when the owner answers them
// (docs/pusher.md, "The HTTP API in the server"): the IO thread answers
// them itself (src/io/app/sy_pusher_api.c) unless `info` asks user_count
// (presence members are lib/pusher/presence.js') or the server has a bus
// (the counts and the list are then every node's). It checks the request
// first (the 400s), then hands it here: SY_EV_PUSHER 'c' (the list) or
// 'n' (one channel), src/io/app/sy_pusher_presence.h.
//
// Across nodes:
//   /channels/<name>: server.bus.subscribers(topic) (docs/bus.md,
//     "Subscriber counts": one request and one answer per node on the
//     nodes' control channel).
//   /channels: the same shape of exchange, for a list: this node asks on
//     the control channel ({"t":"pch?"}: a request id, its node, the topics'
//     prefix), every node (this one too) answers with its occupied topics
//     under that prefix and their counts ({"t":"pch"}), and the asker adds
//     them up once every node Redis delivered the request to has answered
//     (TIMEOUT_MS, else 503: a wrong list is never answered).
// user_count: the presence store's users on every node (presence.js).

const crypto = require('node:crypto');
const { NodeAsks } = require('../node-asks');

const TIMEOUT_MS = 2000;
const CHANNEL_RE = /^[A-Za-z0-9_\-=@,.;]+$/;
const S2U = '#server-to-user-';
const ASK = '{"t":"pch?"';
const ANSWER = '{"t":"pch"';

/** Which attributes an `info` parameter asks for (as sy_pusher_http_info reads it). */
function infoOf(text) {
  const words = new Set(String(text).split(','));
  return { users: words.has('user_count'), subs: words.has('subscription_count') };
}

/** Whether the rest of a topic after its app's prefix is a channel (sy_pusher_channel_check's alphabet). */
function isChannel(name) {
  return name.startsWith(S2U) ? name.length > S2U.length && !/[\x00-\x1f\x7f]/.test(name) : CHANNEL_RE.test(name);
}

class PusherChannels {
  #server;
  #bus;   // lib/server.js' { ctl(message) -> Promise<receivers> } or null
  #users; // (topic) -> Promise<user ids>: a presence channel's, every node's
  #reply; // (conn, status, body)
  #node;
  #asks = new NodeAsks(); // /channels with a bus: every node's list

  constructor(server, { bus, users, reply }) {
    this.#server = server;
    this.#node = nodeOf(server);
    this.#bus = bus;
    this.#users = users;
    this.#reply = reply;
  }

  /** GET /channels of the app whose topics start with prefix: filter (filter_by_prefix) and info as sent. */
  list(conn, prefix, filter, info) {
    const want = infoOf(info);
    this.#occupied(prefix + filter).then(async (counts) => {
      const channels = {};
      const names = [...counts.keys()].filter((topic) => isChannel(topic.slice(prefix.length))).sort();
      const users = want.users ? await Promise.all(names.map((topic) => this.#users(topic))) : null;
      names.forEach((topic, i) => {
        const attrs = {};
        if (want.subs) attrs.subscription_count = counts.get(topic);
        if (users !== null) attrs.user_count = users[i].length;
        channels[topic.slice(prefix.length)] = attrs;
      });
      this.#reply(conn, 200, { channels });
    }).catch((err) => this.#reply(conn, 503, { error: `channels: ${err.message}` }));
  }

  /** GET /channels/<channel> (its topic), info as sent. */
  one(conn, topic, info) {
    const want = infoOf(info);
    Promise.all([
      // (in a then: a throw of subscribers() is this request's 503, not the dispatch's)
      Promise.resolve().then(() => (this.#bus === null ? this.#server.subscribers(topic) : this.#server.bus.subscribers(topic, { timeout: TIMEOUT_MS }))),
      want.users ? this.#users(topic) : null,
    ]).then(([subs, users]) => {
      const body = { occupied: subs > 0 };
      if (users !== null) body.user_count = users.length;
      if (want.subs) body.subscription_count = subs;
      this.#reply(conn, 200, body);
    }, (err) => this.#reply(conn, 503, { error: `channels: ${err.message}` }));
  }

  /** Every node's occupied topics under prefix, their counts added up. */
  async #occupied(prefix) {
    if (this.#bus === null) return occupied(this.#server, prefix);
    const got = await this.#asks.ask((req) => this.#bus.ctl(JSON.stringify({ t: 'pch?', req, node: this.#node, prefix })), TIMEOUT_MS, "every node's channels");
    const sum = new Map();
    for (const list of got.values()) for (const [topic, n] of list) sum.set(topic, (sum.get(topic) ?? 0) + n);
    return sum;
  }

  /** A node's answer ({"t":"pch"}, parsed) to one of this node's requests. */
  answered(m) {
    if (m.to !== this.#node || !Array.isArray(m.list) || !this.#asks.waiting(m.req)) return;
    this.#asks.answer(m.req, m.node, m.list.filter((x) => Array.isArray(x) && typeof x[0] === 'string' && Number.isInteger(x[1])));
  }

  /** The server closes: the requests under way end (their connections are closed with it). */
  close() {
    this.#asks.close();
  }
}

const nodes = new WeakMap(); // Server -> its id in these requests and answers

function nodeOf(server) {
  let id = nodes.get(server);
  if (id === undefined) nodes.set(server, (id = crypto.randomBytes(8).toString('hex')));
  return id;
}

/** server's occupied topics that start with prefix: a Map topic -> subscribers. */
function occupied(server, prefix) {
  const out = new Map();
  for (const [topic, n] of server.topics()) if (n > 0 && topic.startsWith(prefix)) out.set(topic, n);
  return out;
}

/**
 * A message of the nodes' control channel (a Buffer) at server (bus:
 * lib/server.js' { ctl }; channels: its PusherChannels, null without
 * `pusher`): true when it was one of GET /channels'. Every node answers a
 * request, with the `pusher` option or not (a node without it has its
 * topics too, and Redis counts it among the nodes).
 */
function channelsCtl(server, bus, channels, buf) {
  if (buf.length < ANSWER.length || buf[0] !== 0x7b) return false;
  const head = buf.toString('latin1', 0, ASK.length);
  const ask = head === ASK;
  if (!ask && !head.startsWith(ANSWER)) return false;
  let m;
  try {
    m = JSON.parse(buf.toString('utf8'));
  } catch {
    return true;
  }
  if (typeof m?.req !== 'string' || typeof m.node !== 'string') return true;
  if (!ask) {
    channels?.answered(m);
  } else if (typeof m.prefix === 'string') {
    const list = [...occupied(server, m.prefix)];
    bus.ctl(JSON.stringify({ t: 'pch', req: m.req, to: m.node, node: nodeOf(server), list })).catch(() => {});
  }
  return true;
}

module.exports = { PusherChannels, channelsCtl };
