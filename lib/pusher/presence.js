'use strict';
// Pusher's presence channels (docs/pusher.md, "Presence channels"): who is
// a member of each presence- channel, decided here, on the owner's thread.
//
// The IO thread checks a subscribe's auth and reads its channel_data
// (src/io/app/sy_pusher_presence.h), then hands it here as an EV_PUSHER
// event: 'j' (join: topic, channel, user id, user_info JSON or ""), 'l'
// (the client unsubscribed: done there already), 'u' (GET .../users, to
// answer), 'c' and 'n' (GET /channels, /channels/<name>: lib/pusher/channels.js
// answers). A connection's close leaves every channel it joined.
//
// A member is a user id: its first connection on a channel adds it
// (member_added to the others, the member_added webhook), its last one
// leaving removes it (member_removed, the webhook); a user past
// maxPresenceMembers is refused on the channel (LimitReached), a
// connection of a user already in is not. Each channel's changes are
// decided one after the other (a queue per topic), so the counts the
// subscribers see agree with the member events.
//
// Where the members are: without a bus, here (LocalStore). With one, in
// Redis, in the channel's slot (RedisStore), one script per join or leave,
// so that every decision (added, removed, refused) is made once for the
// cluster, by Redis' order, and the node that made it publishes the member
// event to the channel (it reaches every node's subscribers through the
// bus) and reports the webhook:
//
//   <base>:pusher:u          hash: user id -> its connections on every node
//   <base>:pusher:i          hash: user id -> user_info (JSON, the first connection's)
//   <base>:pusher:n:<node>   hash: connection id -> user id (that node's)
//   <base>:pusher:nodes      sorted set: node -> until (ms, Redis' clock)
//
// (<base>:presence is lib/presence.js' key of the topic.) Each node renews
// its time every ttl/3 while it has members; a renewal also removes the
// members of nodes whose time is past (a node that died: its users leave
// within ttl + ttl/3, member_removed sent by the renewing node).

const crypto = require('node:crypto');
const { binding } = require('../native');
const { reportPusherEvent } = require('./events');
const { PusherChannels } = require('./channels');

const TTL_MS = 15000; // a node's time, renewed every ttl/3 (options.presence.ttl when given)

// KEYS[1]: the channel's base. What every script starts with.
const LIB = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local K = KEYS[1]
local function keep(node, ttl)
  redis.call('ZADD', K .. ':nodes', now + ttl, node)
  for _, k in ipairs({K .. ':u', K .. ':i', K .. ':nodes', K .. ':n:' .. node}) do redis.call('PEXPIRE', k, ttl * 3) end
end
-- Connection conn of node leaves: its user id when that was the user's last connection.
local function drop(node, conn)
  local nk = K .. ':n:' .. node
  local uid = redis.call('HGET', nk, conn)
  if not uid then return nil end
  redis.call('HDEL', nk, conn)
  if redis.call('HINCRBY', K .. ':u', uid, -1) <= 0 then
    redis.call('HDEL', K .. ':u', uid)
    redis.call('HDEL', K .. ':i', uid)
    return uid
  end
  return nil
end
-- Every connection of node leaves: the users removed, appended to out.
local function purge(node, out)
  local nk = K .. ':n:' .. node
  for _, conn in ipairs(redis.call('HKEYS', nk)) do
    local uid = drop(node, conn)
    if uid then out[#out + 1] = uid end
  end
  redis.call('DEL', nk)
  redis.call('ZREM', K .. ':nodes', node)
end
-- The nodes whose time is past (not self) leave: the users removed, appended to out.
local function purge_dead(self, out)
  for _, n in ipairs(redis.call('ZRANGEBYSCORE', K .. ':nodes', '-inf', now)) do
    if n ~= self then purge(n, out) end
  end
end
`;

// ARGV: node, conn, user id, info, max, ttl. Returns {added (1/0), {uid, info, ...}, removed}
// or {-1, removed} (full); removed: the users of dead nodes it removed first.
const JOIN = `${LIB}local removed = {}
purge_dead(ARGV[1], removed)
local nk = K .. ':n:' .. ARGV[1]
local added = 0
if not redis.call('HGET', nk, ARGV[2]) then
  if not redis.call('HGET', K .. ':u', ARGV[3]) and redis.call('HLEN', K .. ':u') >= tonumber(ARGV[5]) then return {-1, removed} end
  redis.call('HSET', nk, ARGV[2], ARGV[3])
  if redis.call('HINCRBY', K .. ':u', ARGV[3], 1) == 1 then
    redis.call('HSET', K .. ':i', ARGV[3], ARGV[4])
    added = 1
  end
end
keep(ARGV[1], tonumber(ARGV[6]))
return {added, redis.call('HGETALL', K .. ':i'), removed}
`;

// ARGV: node, conn. Returns {removed user id} or {}.
const LEAVE = `${LIB}local uid = drop(ARGV[1], ARGV[2])
if redis.call('HLEN', K .. ':n:' .. ARGV[1]) == 0 then redis.call('ZREM', K .. ':nodes', ARGV[1]) end
if uid then return {uid} end
return {}
`;

// ARGV: node, ttl, whether to leave (1: this node leaves, at close). Returns the users removed.
const RENEW = `${LIB}local out = {}
purge_dead(ARGV[1], out)
if ARGV[3] == '1' then purge(ARGV[1], out)
elseif redis.call('HLEN', K .. ':n:' .. ARGV[1]) > 0 then keep(ARGV[1], tonumber(ARGV[2])) end
return out
`;

const USERS = `return redis.call('HKEYS', KEYS[1] .. ':u')`;

/** The members of this node's channels, without a bus. */
class LocalStore {
  #channels = new Map(); // topic -> { users: Map uid -> { info, n }, conns: Map conn -> uid }

  async join(topic, conn, uid, info, max) {
    let ch = this.#channels.get(topic);
    if (ch === undefined) {
      ch = { users: new Map(), conns: new Map() };
      this.#channels.set(topic, ch);
    }
    let added = false;
    if (!ch.conns.has(conn)) {
      const u = ch.users.get(uid);
      if (u === undefined && ch.users.size >= max) {
        if (ch.conns.size === 0) this.#channels.delete(topic);
        return { refused: true, removed: [] };
      }
      ch.conns.set(conn, uid);
      if (u === undefined) {
        ch.users.set(uid, { info, n: 1 });
        added = true;
      } else {
        u.n++;
      }
    }
    return { added, members: [...ch.users].map(([id, u]) => [id, u.info]), removed: [] };
  }

  async leave(topic, conn) {
    const ch = this.#channels.get(topic);
    const uid = ch?.conns.get(conn);
    if (uid === undefined) return null;
    ch.conns.delete(conn);
    const u = ch.users.get(uid);
    if (--u.n > 0) return null;
    ch.users.delete(uid);
    if (ch.users.size === 0) this.#channels.delete(topic);
    return uid;
  }

  async users(topic) {
    return [...(this.#channels.get(topic)?.users.keys() ?? [])];
  }

  async renew() { return []; }
}

/** The members of every node's channels, in Redis (bus: lib/server.js' { call, key }). */
class RedisStore {
  #bus;
  #ttl;
  #node = crypto.randomBytes(8).toString('hex');

  constructor(bus, ttl) {
    this.#bus = bus;
    this.#ttl = ttl;
  }

  #eval(script, topic, args) {
    const key = `${this.#bus.key(topic)}:pusher`;
    return this.#bus.call(key, ['EVAL', script, '1', key, ...args]);
  }

  async join(topic, conn, uid, info, max) {
    const r = await this.#eval(JOIN, topic, [this.#node, String(conn), uid, info, String(max), String(this.#ttl)]);
    if (r[0] === -1) return { refused: true, removed: r[1].map(String) };
    const flat = r[1];
    const members = [];
    for (let i = 0; i + 1 < flat.length; i += 2) members.push([String(flat[i]), String(flat[i + 1])]);
    return { added: r[0] === 1, members, removed: r[2].map(String) };
  }

  async leave(topic, conn) {
    const r = await this.#eval(LEAVE, topic, [this.#node, String(conn)]);
    return r.length > 0 ? String(r[0]) : null;
  }

  async users(topic) {
    return (await this.#eval(USERS, topic, [])).map(String);
  }

  /** Renews this node's time on topic (or leaves it, at close): the users removed meanwhile. */
  async renew(topic, leaving) {
    return (await this.#eval(RENEW, topic, [this.#node, String(this.#ttl), leaving ? '1' : '0'])).map(String);
  }
}

const instances = new WeakMap(); // Server -> PusherPresence

/**
 * The presence channels of one server. io: { send(id, text), subscribe(id,
 * topic), unsubscribe(id, topic), publish(topic, payload, event),
 * reply(id, response) }, each a no-op once the server has closed (while it
 * closes they still work: its members' member_removed reach the other
 * nodes).
 */
class PusherPresence {
  #server;
  #apps;  // app index -> { id, prefix }
  #max;
  #io;
  #store;
  #bus;
  #queues = new Map(); // topic -> the promise of its last change
  #byConn = new Map(); // conn -> Map topic -> { app, channel }: joined or joining
  #topics = new Map(); // topic -> { app, channel, conns }: this node's connections there
  #retry = new Map();  // topic -> { app, channel, conns: Set }: leaves Redis did not take, tried again at each renewal
  #timer = null;
  #closed = false;
  #report;
  #ttl;
  #channels;

  constructor(server, { pusher, bus, ttl = TTL_MS, report }, io) {
    this.#server = server;
    this.#report = report;
    this.#ttl = ttl;
    this.#apps = pusher.apps.map((a, i) => ({ id: a.id, prefix: i === 0 ? '' : `${a.id}:` }));
    this.#max = pusher.maxPresenceMembers;
    this.#io = io;
    this.#bus = bus;
    this.#store = bus === null ? new LocalStore() : new RedisStore(bus, ttl);
    this.#channels = new PusherChannels(server, { bus, users: (topic) => this.#store.users(topic), reply: (conn, status, body) => this.#reply(conn, status, body) });
    instances.set(server, this);
  }

  /** An EV_PUSHER event (src/io/app/sy_pusher_presence.h). */
  event(conn, kind, app, parts) {
    const [topic, channel] = parts;
    const a = this.#apps[app];
    if (a === undefined || this.#closed) return;
    switch (kind) {
      case 0x6a: { // 'j'
        let mine = this.#byConn.get(conn);
        if (mine === undefined) this.#byConn.set(conn, (mine = new Map()));
        mine.set(topic, { app: a, channel });
        const [uid, info] = [parts[2], parts[3] === '' ? 'null' : parts[3]];
        this.#queue(topic, () => this.#store.join(topic, conn, uid, info, this.#max), (r) => this.#joined(conn, topic, a, channel, uid, info, r));
        break;
      }
      case 0x6c: { // 'l'
        const mine = this.#byConn.get(conn);
        if (mine?.delete(topic)) this.#leave(conn, topic, a, channel);
        if (mine?.size === 0) this.#byConn.delete(conn);
        break;
      }
      case 0x75: // 'u'
        this.#store.users(topic).then(
          (ids) => this.#reply(conn, 200, { users: ids.map((id) => ({ id })) }),
          (err) => this.#reply(conn, 503, { error: `presence: ${err.message}` }));
        break;
      case 0x63: // 'c': filter_by_prefix, info
        this.#channels.list(conn, a.prefix, parts[0], parts[1]);
        break;
      case 0x6e: // 'n': topic, channel, info
        this.#channels.one(conn, topic, parts[2]);
        break;
      default:
        break;
    }
  }

  /** Connection conn closed: it leaves every channel it joined. */
  closed(conn) {
    if (this.#closed) return; // close() takes this node's members out at once
    const mine = this.#byConn.get(conn);
    if (mine === undefined) return;
    this.#byConn.delete(conn);
    for (const [topic, { app, channel }] of mine) this.#leave(conn, topic, app, channel);
  }

  /** GET /channels' requests and answers (lib/pusher/channels.js' channelsCtl). */
  get channels() { return this.#channels; }

  /** The user ids of a presence channel's topic, on every node. */
  users(topic) { return this.#store.users(topic); }

  /** The topic of app appId's channel (the first app's: the channel's own name). */
  topicOf(appId, channel) {
    return `${this.#apps.find((x) => x.id === appId)?.prefix ?? ''}${channel}`;
  }

  // A change of topic: call() (the store's) runs now, so that the calls go
  // out in the order of the events (Redis runs one slot's calls in the
  // order sent: a flood is pipelined, not one round trip after another);
  // then(its promise) runs once the topic's earlier changes have, so the
  // frames and member events go out in that order too.
  #queue(topic, call, then) {
    const result = call();
    result.catch(() => {}); // then() hears of it
    const prev = this.#queues.get(topic) ?? Promise.resolve();
    const next = prev.then(() => then(result)).catch((err) => {
      // The bus down or the server closing: said by the bus' own events.
      if (!this.#closed && err?.code !== 'ERR_BUS_DOWN' && err?.code !== 'ERR_SYMPHONY_CLOSED') this.#report(err);
    });
    this.#queues.set(topic, next);
    next.then(() => { if (this.#queues.get(topic) === next) this.#queues.delete(topic); });
  }

  async #joined(conn, topic, app, channel, uid, info, result) {
    let r;
    try {
      r = await result;
    } catch (err) {
      this.#refuse(conn, channel, 'PresenceError', `Presence is not available: ${err.message}`, 503);
      return;
    }
    // Members of dead nodes the join found and removed first.
    for (const gone of r.removed) this.#memberEvent(topic, app, channel, 'member_removed', gone);
    if (r.refused) {
      this.#refuse(conn, channel, 'LimitReached', `The maximum number of members in this presence channel is ${this.#max}`, 400);
      return;
    }
    let t = this.#topics.get(topic);
    if (t === undefined) this.#topics.set(topic, (t = { app, channel, conns: new Set() }));
    t.conns.add(conn);
    this.#arm();
    // The others hear of it before conn is subscribed: not conn itself.
    if (r.added) this.#memberEvent(topic, app, channel, 'member_added', uid, info);
    const hash = {};
    for (const [id, text] of r.members) hash[id] = parse(text);
    const ids = Object.keys(hash);
    this.#io.send(conn, JSON.stringify({
      event: 'pusher_internal:subscription_succeeded',
      channel,
      data: JSON.stringify({ presence: { ids, hash, count: ids.length } }),
    }));
    this.#io.subscribe(conn, topic);
  }

  #leave(conn, topic, app, channel) {
    this.#queue(topic, () => this.#store.leave(topic, conn), (r) => this.#left(conn, topic, app, channel, r));
  }

  async #left(conn, topic, app, channel, result) {
    const t = this.#topics.get(topic);
    if (t !== undefined) {
      t.conns.delete(conn);
      if (t.conns.size === 0) this.#topics.delete(topic);
    }
    this.#io.unsubscribe(conn, topic); // a join decided after the client had left
    let uid;
    try {
      uid = await result;
    } catch (err) {
      // Not taken (Redis away): tried again at the next renewal.
      let r = this.#retry.get(topic);
      if (r === undefined) this.#retry.set(topic, (r = { app, channel, conns: new Set() }));
      r.conns.add(conn);
      this.#arm();
      throw err;
    }
    if (uid !== null) this.#memberEvent(topic, app, channel, 'member_removed', uid);
  }

  #memberEvent(topic, app, channel, name, uid, info) {
    const payload = name === 'member_added' ? `{"user_id":${JSON.stringify(uid)},"user_info":${info}}` : `{"user_id":${JSON.stringify(uid)}}`;
    this.#io.publish(topic, payload, `pusher_internal:${name}`);
    reportPusherEvent(this.#server, app.id, { name, channel, user_id: uid });
  }

  #refuse(conn, channel, type, error, status) {
    this.#io.send(conn, JSON.stringify({ event: 'pusher:subscription_error', channel, data: { type, error, status } }));
  }

  #reply(conn, status, body) {
    const text = JSON.stringify(body);
    const reason = status === 200 ? 'OK' : 'Service Unavailable';
    this.#io.reply(conn, `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\nConnection: close\r\n\r\n${text}`);
  }

  // With a bus: this node's time on its channels, renewed every ttl/3
  // while it has members, and dead nodes' members removed.
  #arm() {
    if (this.#timer !== null || this.#bus === null || this.#closed) return;
    this.#timer = setInterval(() => {
      if (this.#topics.size === 0 && this.#retry.size === 0) {
        clearInterval(this.#timer);
        this.#timer = null;
        return;
      }
      const retry = this.#retry;
      this.#retry = new Map();
      for (const [topic, { app, channel, conns }] of retry) {
        for (const conn of conns) this.#leave(conn, topic, app, channel);
      }
      for (const [topic, { app, channel }] of this.#topics) {
        this.#queue(topic, () => this.#store.renew(topic, false), (r) => this.#renewed(topic, app, channel, r));
      }
    }, Math.max(250, Math.floor(this.#ttl / 3)));
    this.#timer.unref();
  }

  async #renewed(topic, app, channel, result) {
    for (const uid of await result) this.#memberEvent(topic, app, channel, 'member_removed', uid);
  }

  /** The server closes: with a bus, this node's members leave Redis (and the others hear member_removed). */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#channels.close();
    if (this.#bus === null) return;
    await Promise.allSettled([...this.#queues.values()]); // joins under way land before this node leaves
    this.#retry.clear(); // the nodes' renewals purge what is left of this node
    await Promise.allSettled([...this.#topics].map(([topic, { app, channel }]) =>
      this.#renewed(topic, app, channel, this.#store.renew(topic, true))));
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The number of users (members) of a presence channel, on every node:
 * what GET /apps/<id>/channels(/<name>) answers as user_count. server: a
 * Server with the `pusher` option; appId: the app's id; channel: a
 * presence- channel's name. Resolves to a number (0 for a channel nobody
 * is in); rejects when Redis does not answer. null when the server speaks
 * no Pusher.
 */
async function presenceUserCount(server, appId, channel) {
  const p = instances.get(server);
  if (p === undefined) return null;
  return (await p.users(p.topicOf(appId, channel))).length;
}

/**
 * The presence channels of a server with the `pusher` option (lib/server.js):
 * handle its native server; opts: pusher the checked option, bus
 * lib/server.js' { call, key } or null, ttl a node's time in Redis (ms),
 * owe() wakes the IO threads at the end of the turn, running() whether the
 * server runs, report(err) the server's reporting of an error no caller
 * hears of.
 */
function pusherPresence(server, handle, { owe, running, ...opts }) {
  const on = (fn) => (...args) => {
    if (!running()) return;
    fn(...args);
    owe();
  };
  return new PusherPresence(server, opts, {
    send: on((id, text) => binding.serverSend(handle, id, text, 0)),
    subscribe: on((id, topic) => binding.serverSubscribe(handle, id, topic)),
    unsubscribe: on((id, topic) => binding.serverUnsubscribe(handle, id, topic)),
    publish: on((topic, payload, event) => binding.serverPublishEvent(handle, topic, payload, 0, event)),
    reply: on((id, response) => binding.serverReply(handle, id, Buffer.from(response))),
  });
}

module.exports = { PusherPresence, pusherPresence, presenceUserCount };
