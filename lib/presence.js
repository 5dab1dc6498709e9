'use strict';
// Presence and subscriber counts across nodes (docs/bus.md, "Presence and
// counts across nodes"; docs/api.md, "Presence: who is here, on every node").
//
// A topic with presence lists who is subscribed to it, with each
// connection's presence info (onUpgrade's result.presence). On one node the
// list is kept here; with a bus it is kept in Redis, per topic and node, in
// the topic's cluster slot (the hash tag history uses):
//
//   <base>:presence          a sorted set: node id -> until (ms, Redis' clock)
//   <base>:presence:<node>   a hash: connection id -> info (JSON)
//
// where <base> is {<prefix><topic>} (or <prefix><topic> itself when it has a
// hash tag). Each node writes its own entries (a script per topic and turn:
// the turn's joins and leaves at once), renews its `until` every ttl/3, and a
// node that finds another's `until` past removes that node's entries and
// tells every node they left (reason 'expired'): a node that died leaves
// within ttl + ttl/3. Joins and leaves reach every node as 'join' and
// 'leave' events through the nodes' control channel (binding/bus.c,
// sy_bus_set_ctl), which also carries the subscriber-count requests.

const crypto = require('node:crypto');
const { invalidArgType, invalidArgValue, integer } = require('./errors');
const { NodeAsks } = require('./node-asks');

const PRESENCE_DEFAULTS = Object.freeze({
  topics: true,    // which topics keep presence: true (every topic), or (topic) => boolean
  ttl: 15000,      // ms: a node's entries outlive it by at most this (+ ttl/3)
  maxInfo: 4096,   // bytes of a connection's presence info (JSON)
});

/** options.presence → { topics, ttl, maxInfo } or null (off). */
function presenceOption(v) {
  if (v === undefined || v === null || v === false) return null;
  if (v === true) return PRESENCE_DEFAULTS;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgType('options.presence', 'a boolean or an object', v);
  for (const k of Object.keys(v)) {
    if (!(k in PRESENCE_DEFAULTS)) throw invalidArgValue(`options.presence.${k}`, 'is not a known presence option', k);
  }
  const o = { ...PRESENCE_DEFAULTS, ...v };
  if (o.topics !== true && typeof o.topics !== 'function') {
    throw invalidArgType('options.presence.topics', 'true or a function (topic) => boolean', o.topics);
  }
  integer('options.presence.ttl', o.ttl, 1000, 86400000);
  integer('options.presence.maxInfo', o.maxInfo, 2, 1 << 20);
  return Object.freeze(o);
}

/** A connection's presence info as JSON text (null when none was given). */
function infoText(value, max) {
  if (value === undefined) return 'null';
  let s;
  try {
    s = JSON.stringify(value);
  } catch (err) {
    throw invalidArgValue('onUpgrade result presence', `is not JSON-serializable (${err.message})`, value);
  }
  if (s === undefined) throw invalidArgValue('onUpgrade result presence', 'is not JSON-serializable', value);
  if (Buffer.byteLength(s) > max) {
    throw invalidArgValue('onUpgrade result presence', `is over options.presence.maxInfo (${max} bytes as JSON)`, s.length);
  }
  return s;
}

// What every script starts with: Redis' clock (ms), and two helpers.
// KEYS[1] is the topic's sorted set (node -> until); KEYS[1]:<node> that
// node's hash (connection id -> info).
const LIB = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- Appends node n's entries to out as n, id, info, ...
local function append(out, n)
  local e = redis.call('HGETALL', KEYS[1] .. ':' .. n)
  for i = 1, #e, 2 do
    out[#out + 1] = n
    out[#out + 1] = e[i]
    out[#out + 1] = e[i + 1]
  end
end
-- Node n (with entries) counts until ttl from now; its keys outlive that.
local function stamp(n, ttl)
  redis.call('ZADD', KEYS[1], now + ttl, n)
  redis.call('PEXPIRE', KEYS[1] .. ':' .. n, ttl * 2)
  redis.call('PEXPIRE', KEYS[1], ttl * 2)
end
`;
// Removes the nodes whose time is past (not ARGV[1], the caller) and
// returns their entries in purged.
const PURGE = `local purged = {}
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  if n ~= ARGV[1] then
    append(purged, n)
    redis.call('DEL', KEYS[1] .. ':' .. n)
    redis.call('ZREM', KEYS[1], n)
  end
end
`;

// A node's writes. ARGV: node, ttl, reset (1: drop the node's entries
// first), nadd, then nadd (id, info) pairs, then ids to remove. Returns
// the node's entries now.
const WRITE = `${LIB}local k = KEYS[1] .. ':' .. ARGV[1]
if ARGV[3] == '1' then redis.call('DEL', k) end
local nadd = tonumber(ARGV[4])
local i = 5
if nadd > 0 then
  local kv = {}
  for j = 1, nadd do
    kv[#kv + 1] = ARGV[i]
    kv[#kv + 1] = ARGV[i + 1]
    i = i + 2
  end
  redis.call('HSET', k, unpack(kv))
end
if i <= #ARGV then redis.call('HDEL', k, unpack(ARGV, i)) end
local have = redis.call('HLEN', k)
if have > 0 then stamp(ARGV[1], tonumber(ARGV[2])) else redis.call('ZREM', KEYS[1], ARGV[1]) end
return have
`;

// A node's renewal. ARGV: node, ttl. Returns { the node's entries in
// Redis, the purged entries }.
const RENEW = `${LIB}${PURGE}local have = redis.call('HLEN', KEYS[1] .. ':' .. ARGV[1])
if have > 0 then stamp(ARGV[1], tonumber(ARGV[2])) end
return { have, purged }
`;

// Every live node's entries. ARGV: ''. Returns { entries, purged }.
const READ = `${LIB}${PURGE}local out = {}
for _, n in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do append(out, n) end
return { out, purged }
`;

// Joins and leaves after a write wait this long for the next (ms).
const FLUSH_WINDOW_MS = 10;

// At most this many (id, info) pairs per script call (the bus' calls take
// up to 64 arguments).
const PAIRS_PER_CALL = 28;

/**
 * The presence of one server's topics: this node's entries, their copy in
 * Redis (with a bus), the events, and the count requests.
 */
class Presence {
  #opts;
  #node;
  #bus;       // { call(route, args) -> Promise, ctl(message) -> Promise, key(topic) } or null
  #emit;      // (event, ...args) on the server
  #report;    // (err) the server's error reporting
  #local;     // (topic) -> this node's subscribers
  #overrides = new Map(); // topic -> boolean (server.topic(name, { presence }))
  #mine = new Map();      // topic -> Map id -> info text: this node's entries
  #byConn = new Map();    // id -> Set of topics with an entry of id's
  #infos = new Map();     // id -> its presence info (JSON text), when onUpgrade gave one
  #pending = new Map();   // topic -> { add: Map id -> info, remove: Map id -> info, reset }
  #inRedis = new Map();   // topic -> Set of ids: this node's entries in Redis once its queued writes are done
  #flushQueued = false;
  #lastFlush = -Infinity;
  #timer = null;
  #counts = new NodeAsks(); // subscribers(): every node's count
  #closed = false;

  constructor(opts, { bus, emit, report, local }) {
    this.#opts = opts;
    this.#node = crypto.randomBytes(8).toString('hex');
    this.#bus = bus;
    this.#emit = emit;
    this.#report = report;
    this.#local = local;
  }

  /** This node's id in presence entries and events. */
  get node() { return this.#node; }

  /** server.topic(name, { presence }) */
  setTopic(topic, on) {
    this.#overrides.set(topic, on);
  }

  /** Whether topic keeps presence. */
  has(topic) {
    const o = this.#overrides.get(topic);
    if (o !== undefined) return o;
    if (this.#opts === null) return false;
    return this.#opts.topics === true || this.#opts.topics(topic) === true;
  }

  get maxInfo() { return (this.#opts ?? PRESENCE_DEFAULTS).maxInfo; }

  get #ttl() { return (this.#opts ?? PRESENCE_DEFAULTS).ttl; }

  /** Connection id subscribed to topic (its info: JSON text). */
  /** Connection id was accepted with presence info (JSON text; onUpgrade's result.presence). */
  accepted(id, info) {
    this.#infos.set(id, info);
  }

  /** Connection id subscribed to topic (a topic with presence: it joins, with its info). */
  join(id, topic) {
    if (this.#closed || !this.has(topic)) return;
    const info = this.#infos.get(id) ?? 'null';
    let entries = this.#mine.get(topic);
    if (entries === undefined) {
      entries = new Map();
      this.#mine.set(topic, entries);
    }
    if (entries.has(id)) return;
    entries.set(id, info);
    let topics = this.#byConn.get(id);
    if (topics === undefined) {
      topics = new Set();
      this.#byConn.set(id, topics);
    }
    topics.add(topic);
    this.#change(topic, id, info, true);
  }

  /** Connection id left topic (unsubscribed). */
  leave(id, topic) {
    const entries = this.#mine.get(topic);
    const info = entries?.get(id);
    if (info === undefined) return;
    entries.delete(id);
    if (entries.size === 0) this.#mine.delete(topic);
    const topics = this.#byConn.get(id);
    topics?.delete(topic);
    if (topics?.size === 0) this.#byConn.delete(id);
    this.#change(topic, id, info, false);
  }

  /** Connection id closed: it leaves every topic. */
  closed(id) {
    this.#infos.delete(id);
    const topics = this.#byConn.get(id);
    if (topics === undefined) return;
    for (const topic of [...topics]) this.leave(id, topic);
  }

  #change(topic, id, info, joined) {
    if (this.#bus === null) {
      this.#emit(joined ? 'join' : 'leave', topic, { node: this.#node, id, info: JSON.parse(info) }, joined ? undefined : 'left');
      return;
    }
    const p = this.#pendingOf(topic);
    if (joined) {
      if (p.remove.has(id)) p.remove.delete(id); // left and came back in one turn: still there
      else p.add.set(id, info);
    } else if (p.add.has(id)) {
      p.add.delete(id); // joined and left in one turn: never written
    } else {
      p.remove.set(id, info);
    }
    this.#queueFlush();
    this.#arm();
  }

  // The first change after a quiet spell is written at the end of its
  // turn; the next ones wait for FLUSH_WINDOW_MS after that write, so that
  // a burst of connections is a few script calls and events per topic, not
  // one per connection (as the bus batches its subscriptions).
  #queueFlush() {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    const run = () => {
      this.#flushQueued = false;
      this.#lastFlush = performance.now();
      this.#flush();
    };
    const wait = this.#lastFlush + FLUSH_WINDOW_MS - performance.now();
    if (wait <= 0) setImmediate(run);
    else setTimeout(run, Math.ceil(wait)).unref();
  }

  #flush() {
    const pending = this.#pending;
    this.#pending = new Map();
    for (const [topic, p] of pending) {
      if (p.add.size === 0 && p.remove.size === 0 && !p.reset) continue;
      this.#write(topic, p).catch((err) => {
        // Not written (the bus down, Redis' error): this node's entries of
        // topic are written whole at the next renewal (reset).
        this.#markReset(topic);
        if (err.code !== 'ERR_BUS_DOWN') this.#report(err);
      });
    }
  }

  /** topic's changes not written yet (made empty when there are none). */
  #pendingOf(topic) {
    let p = this.#pending.get(topic);
    if (p === undefined) {
      p = { add: new Map(), remove: new Map(), reset: false };
      this.#pending.set(topic, p);
    }
    return p;
  }

  #markReset(topic) {
    this.#pendingOf(topic).reset = true;
  }

  async #write(topic, p) {
    const key = this.#bus.key(topic);
    const ttl = String(this.#ttl);
    // Whole (reset): what this node has now (its joins not yet announced,
    // or announced while Redis lost them: announced again).
    const whole = p.reset ? [...(this.#mine.get(topic) ?? new Map())] : null;
    let add = whole !== null ? [...whole] : [...p.add];
    let remove = whole !== null ? [] : [...p.remove.keys()];
    // What Redis holds of this node's once the writes queued so far are
    // done: what a renewal's answer is compared with.
    let held = this.#inRedis.get(topic);
    if (whole !== null || held === undefined) held = new Set();
    for (const [id] of add) held.add(id);
    for (const id of remove) held.delete(id);
    if (held.size > 0) this.#inRedis.set(topic, held);
    else this.#inRedis.delete(topic);
    // Every chunk is queued now, in order (one connection per slot keeps
    // it): a later turn's write of the topic cannot land between two.
    const calls = [];
    do {
      const chunkAdd = add.splice(0, PAIRS_PER_CALL);
      const chunkRemove = remove.splice(0, Math.max(0, PAIRS_PER_CALL * 2 - chunkAdd.length * 2));
      const args = [this.#node, ttl, calls.length === 0 && p.reset ? '1' : '0', String(chunkAdd.length)];
      for (const [id, info] of chunkAdd) args.push(String(id), info);
      for (const id of chunkRemove) args.push(String(id));
      calls.push(this.#eval(WRITE, key, args));
    } while (add.length > 0 || remove.length > 0);
    await Promise.all(calls);
    const joins = whole ?? [...p.add];
    const leaves = [...p.remove]; // a reset removed them too (its DEL)
    if (joins.length > 0 || leaves.length > 0) {
      await this.#announce({ t: 'presence', topic, node: this.#node, join: joins, leave: leaves, reason: 'left' });
    }
  }

  #announce(event) {
    return this.#bus.ctl(JSON.stringify(event));
  }

  // EVAL with the body each time (Redis caches it by its SHA): no NOSCRIPT
  // resend that could land behind later calls of the same topic.
  #eval(script, key, args) {
    return this.#bus.call(key, ['EVAL', script, '1', key, ...args]);
  }

  // The renewal timer runs while this node has entries (with a bus).
  #arm() {
    if (this.#timer !== null || this.#bus === null || this.#closed) return;
    const ttl = this.#ttl;
    this.#timer = setInterval(() => this.#renew(), Math.max(250, Math.floor(ttl / 3)));
    this.#timer.unref();
  }

  #renew() {
    if (this.#mine.size === 0 && this.#pending.size === 0) {
      clearInterval(this.#timer);
      this.#timer = null;
      return;
    }
    const ttl = String(this.#ttl);
    for (const topic of this.#mine.keys()) {
      if (this.#pending.get(topic)?.reset) continue; // written whole at this flush
      const key = this.#bus.key(topic);
      // Calls of one topic run in order: the answer counts what the writes
      // queued before it left (not those queued after).
      const expect = this.#inRedis.get(topic)?.size ?? 0;
      this.#eval(RENEW, key, [this.#node, ttl]).then(([have, purged]) => {
        this.#expired(topic, purged);
        // Redis does not hold what this node wrote (Redis restarted, or this
        // node was taken for dead and removed): written whole again.
        if (have !== expect && this.#mine.has(topic) && !this.#pending.get(topic)?.reset) {
          this.#markReset(topic);
          this.#queueFlush();
        }
      }, (err) => {
        this.#markReset(topic);
        if (err.code !== 'ERR_BUS_DOWN') this.#report(err);
      });
    }
    if (this.#pending.size > 0) this.#queueFlush();
  }

  // Entries a script removed (their node's time was past): every node is told.
  #expired(topic, purged) {
    if (!Array.isArray(purged) || purged.length === 0) return;
    const byNode = new Map();
    for (let i = 0; i + 2 < purged.length; i += 3) {
      const list = byNode.get(purged[i]) ?? [];
      list.push([Number(purged[i + 1]), purged[i + 2]]);
      byNode.set(purged[i], list);
    }
    for (const [node, leave] of byNode) {
      this.#announce({ t: 'presence', topic, node, join: [], leave, reason: 'expired' }).catch(() => {});
    }
  }

  /** Every entry of topic: this node's without a bus, else every live node's from Redis. */
  async list(topic) {
    if (this.#bus === null) {
      return [...(this.#mine.get(topic) ?? new Map())].map(([id, info]) => ({ node: this.#node, id, info: JSON.parse(info) }));
    }
    const [flat, purged] = await this.#eval(READ, this.#bus.key(topic), ['']);
    this.#expired(topic, purged);
    const out = [];
    for (let i = 0; i + 2 < flat.length; i += 3) out.push({ node: flat[i], id: Number(flat[i + 1]), info: parseInfo(flat[i + 2]) });
    return out;
  }

  /**
   * The subscribers of topic on every node: a request on the control
   * channel, which every node answers (Redis says how many got it).
   */
  async subscribers(topic, timeout) {
    const got = await this.#counts.ask((req) => this.#announce({ t: 'count?', topic, node: this.#node, req }), timeout,
      `symphony: subscribers(${JSON.stringify(topic)})`);
    let sum = 0;
    for (const n of got.values()) sum += n;
    return sum;
  }

  /** A message on the nodes' control channel (every node gets every one). */
  control(buf) {
    let m;
    try {
      m = JSON.parse(buf.toString('utf8'));
    } catch {
      return; // not ours (another program on the channel): ignored
    }
    if (m === null || typeof m !== 'object' || typeof m.topic !== 'string' && m.t !== 'count') return;
    switch (m.t) {
      case 'presence':
        if (typeof m.node !== 'string') return;
        for (const e of Array.isArray(m.join) ? m.join : []) {
          if (Array.isArray(e)) this.#emit('join', m.topic, { node: m.node, id: Number(e[0]), info: parseInfo(e[1]) });
        }
        for (const e of Array.isArray(m.leave) ? m.leave : []) {
          if (Array.isArray(e)) {
            this.#emit('leave', m.topic, { node: m.node, id: Number(e[0]), info: parseInfo(e[1]) },
              m.reason === 'expired' ? 'expired' : 'left');
          }
        }
        break;
      case 'count?':
        if (typeof m.node !== 'string' || typeof m.req !== 'string' || this.#closed) return;
        this.#announce({ t: 'count', to: m.node, req: m.req, node: this.#node, n: this.#local(m.topic) }).catch(() => {});
        break;
      case 'count': {
        if (m.to !== this.#node || typeof m.req !== 'string' || typeof m.node !== 'string' || !Number.isSafeInteger(m.n)) return;
        this.#counts.answer(m.req, m.node, m.n);
        break;
      }
      default:
        break;
    }
  }

  /**
   * The server is closing: this node's entries leave Redis (and every node
   * is told) before the bus stops. Resolves when written (or failed).
   */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    this.#counts.close();
    const mine = this.#mine;
    this.#mine = new Map();
    this.#byConn.clear();
    this.#infos.clear();
    this.#pending.clear();
    this.#inRedis.clear();
    if (this.#bus === null) return;
    const ttl = String(this.#ttl);
    await Promise.allSettled([...mine].map(async ([topic, entries]) => {
      await this.#eval(WRITE, this.#bus.key(topic), [this.#node, ttl, '1', '0']);
      await this.#announce({ t: 'presence', topic, node: this.#node, join: [], leave: [...entries], reason: 'left' });
    }));
  }
}

function parseInfo(s) {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

module.exports = { PRESENCE_DEFAULTS, presenceOption, infoText, Presence };
