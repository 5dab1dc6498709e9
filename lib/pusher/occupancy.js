'use strict';
// A channel's occupancy across the cluster (docs/pusher.md, "Occupancy
// across nodes"):
// channel_occupied once when the first subscriber anywhere appears,
// channel_vacated once when the last one anywhere leaves (a dead node's
// too, once its time is past), and subscription_count when the cluster's
// count changes, throttled as Pusher does.
//
// Each node knows its own subscribers of a topic (the server's
// 'subscription' event for 0 <-> 1, server.subscribers() for the count,
// and changed(topic) from the protocol for every change in between). One
// node alone (no bus) decides from that. With a bus, each node writes its
// own count of a topic into Redis, in the topic's slot (the hash tag
// history and presence use), and the script that writes it returns the
// cluster's count before and after:
//
//   <base>:occ          a hash: node id -> that node's subscribers (> 0)
//   <base>:occ:ops      a hash: node id -> its last write's id and answer
//   <base>:occ:cnt      a hash: the last count sent (at, sent, dirty)
//
// where <base> is {<prefix><topic>} (or <prefix><topic> itself when it has
// a hash tag). A write is one script call, atomic: the one call that moves
// the sum from 0 to more is the one occupied, the one that moves it to 0 the
// one vacated, so exactly one node decides each transition, whatever the
// nodes do at the same moment. Its answer is kept under the write's id: a
// write whose reply was lost (the bus went down) is sent again, the same,
// and gets the same answer, so its decision is not lost either.
//
// Which nodes are alive, and what each holds, sits in the prefix's own slot:
//
//   {<prefix>}:occ:nodes       a sorted set: node id -> until (ms, Redis' clock)
//   {<prefix>}:occ:dead        a sorted set: dead node id -> claimed until
//   {<prefix>}:occ:node:<id>   a set: the topics node id has written
//
// A node renews its time every ttl/3 (one call per node, not per topic),
// and every renewal also claims the nodes whose time is past: the claimer
// writes 0 for the dead node into each topic of its set (the same script:
// the last one decides vacated), then forgets it; a claimer that dies
// itself leaves the claim to lapse and another node takes it over. A node
// that finds itself gone at its renewal (taken for dead after a stall,
// or Redis lost its keys) takes a new id and writes its topics again,
// moving each topic's count from its old id to its new in one call.
//
// Each transition is decided once; the deciding node then calls onOccupied
// or onVacated, so a node killed between Redis' answer and that call loses
// the event (at most once). Redis losing its keys makes every node write
// its topics again: occupied comes again (at least once), and a topic
// emptied meanwhile is never vacated.

const crypto = require('node:crypto');
const { binding } = require('../native');
const { call: busCall } = require('../bus');
const { invalidArgType, invalidArgValue, integer } = require('../errors');

const DEFAULTS = Object.freeze({
  topics: null,         // (topic) => boolean: the topics tracked (null: every one)
  onOccupied: null,     // (topic)
  onVacated: null,      // (topic)
  onCount: null,        // (topic, n)
  onError: null,        // (err): a failure that is retried (Redis' error replies)
  ttl: 15000,           // ms: a dead node's subscribers count for at most this (+ ttl/3)
  vacateDelay: 3000,    // ms a topic's last local subscriber is kept before it leaves (Pusher: up to 3 s)
  countInterval: 5000,  // ms between subscription_count events of a large channel (Pusher: 5 s)
  countSmall: 100,      // a channel of at most this many subscribers has each change sent
});

// Redis' clock in ms.
const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

// The cluster's count of KEYS[1] (a hash node -> count).
const SUM = `local function sum(k)
  local s = 0
  for _, v in ipairs(redis.call('HVALS', k)) do s = s + tonumber(v) end
  return s
end
`;

// KEYS[1]: <base>:occ. ARGV: node, count, op, old node ('' none: its field
// removed in the same call), countInterval, countSmall. Returns { before,
// after, count to send (-1 none), ms until a held-back count may go (0
// none) }; the same answer again for the same op of the same node.
const WRITE = `${NOW}${SUM}local k = KEYS[1]
local ops = k .. ':ops'
local cnt = k .. ':cnt'
local node, count, op, old = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local interval, small = tonumber(ARGV[5]), tonumber(ARGV[6])
local prev = redis.call('HGET', ops, node)
if prev then
  local p, b, a, e, w = string.match(prev, '^(%S+) (%-?%d+) (%-?%d+) (%-?%d+) (%d+)$')
  if p == op then return { tonumber(b), tonumber(a), tonumber(e), tonumber(w) } end
end
local before = sum(k)
if old ~= '' then redis.call('HDEL', k, old) end
if count > 0 then redis.call('HSET', k, node, count) else redis.call('HDEL', k, node) end
local after = sum(k)
local emit, wait = -1, 0
if after == 0 then
  redis.call('DEL', cnt)
elseif after ~= before then
  local at = tonumber(redis.call('HGET', cnt, 'at') or '0')
  if after <= small or now - at >= interval then
    redis.call('HSET', cnt, 'at', now, 'sent', after)
    redis.call('HDEL', cnt, 'dirty')
    emit = after
  else
    redis.call('HSET', cnt, 'dirty', '1')
    wait = interval - (now - at)
  end
  redis.call('PEXPIRE', cnt, 600000)
end
redis.call('HSET', ops, node, op .. ' ' .. before .. ' ' .. after .. ' ' .. emit .. ' ' .. wait)
if old ~= '' then redis.call('HDEL', ops, old) end
redis.call('PEXPIRE', ops, 600000)
return { before, after, emit, wait }
`;

// A count held back (a large channel's, within countInterval of the last):
// sent now if it is still due. KEYS[1]: <base>:occ. ARGV: countInterval.
// Returns { count to send (-1 none), ms still to wait (0 none) }.
const COUNT = `${NOW}${SUM}local cnt = KEYS[1] .. ':cnt'
if not redis.call('HGET', cnt, 'dirty') then return { -1, 0 } end
local interval = tonumber(ARGV[1])
local at = tonumber(redis.call('HGET', cnt, 'at') or '0')
if now - at < interval then return { -1, interval - (now - at) } end
redis.call('HDEL', cnt, 'dirty')
local total = sum(KEYS[1])
if total > 0 and total ~= tonumber(redis.call('HGET', cnt, 'sent') or '-1') then
  redis.call('HSET', cnt, 'at', now, 'sent', total)
  return { total, 0 }
end
return { -1, 0 }
`;

// KEYS[1]: {prefix}:occ:nodes. ARGV: node, ttl, 'join' | 'renew'. A renewal
// of a node no longer there (claimed as dead, or Redis lost it) returns 0.
const ALIVE = `${NOW}if ARGV[3] == 'renew' and not redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return 1
`;

// KEYS[1]: {prefix}:occ:nodes, KEYS[2]: {prefix}:occ:dead. ARGV: ttl, most,
// the base of the nodes' topic sets ({prefix}:occ:node:). Moves the nodes
// whose time is past to the dead set, claims up to `most` dead nodes not
// claimed (or whose claim lapsed) for ttl, and returns them as { node, its
// topics, node, its topics, ... }.
const CLAIM = `${NOW}local ttl = tonumber(ARGV[1])
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do
  redis.call('ZREM', KEYS[1], n)
  redis.call('ZADD', KEYS[2], 0, n)
end
local out = {}
for _, n in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))) do
  redis.call('ZADD', KEYS[2], now + ttl, n)
  out[#out + 1] = n
  out[#out + 1] = redis.call('SMEMBERS', ARGV[3] .. n)
end
return out
`;

// KEYS[1]: {prefix}:occ:nodes, KEYS[2]: {prefix}:occ:dead. ARGV: node, the
// base of the topic sets. The node is gone: from both sets, with its topics.
const FORGET = `redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', ARGV[2] .. ARGV[1])
return 1
`;

/** One node alone: the same answers as the scripts, from memory. */
class MemoryStore {
  #topics = new Map(); // topic -> { count, at, sent, dirty }
  #opts;

  constructor(opts) { this.#opts = opts; }

  async write(topic, node, count) {
    let s = this.#topics.get(topic);
    const before = s?.count ?? 0;
    if (s === undefined) s = { count: 0, at: 0, sent: -1, dirty: false };
    s.count = count;
    let emit = -1;
    let wait = 0;
    if (count === 0) {
      this.#topics.delete(topic);
    } else {
      this.#topics.set(topic, s);
      if (count !== before) {
        const now = Date.now();
        if (count <= this.#opts.countSmall || now - s.at >= this.#opts.countInterval) {
          s.at = now;
          s.sent = count;
          s.dirty = false;
          emit = count;
        } else {
          s.dirty = true;
          wait = this.#opts.countInterval - (now - s.at);
        }
      }
    }
    return [before, count, emit, wait];
  }

  async count(topic) {
    const s = this.#topics.get(topic);
    if (s === undefined || !s.dirty) return [-1, 0];
    const now = Date.now();
    if (now - s.at < this.#opts.countInterval) return [-1, this.#opts.countInterval - (now - s.at)];
    s.dirty = false;
    if (s.count === s.sent) return [-1, 0];
    s.at = now;
    s.sent = s.count;
    return [s.count, 0];
  }
}

/** With a bus: the scripts above, on the bus' connections. */
class RedisStore {
  #bus;
  #prefix;
  #opts;

  constructor(bus, opts) {
    this.#bus = bus;
    this.#prefix = bus.options.prefix;
    this.#opts = opts;
  }

  #key(topic) { return `${binding.busKeyBase(this.#prefix + topic)}:occ`; }
  get #nodes() { return `{${this.#prefix}}:occ:nodes`; }
  get #dead() { return `{${this.#prefix}}:occ:dead`; }
  get #held() { return `{${this.#prefix}}:occ:node:`; }

  // EVAL with the body each time (Redis caches it by its SHA): no NOSCRIPT
  // resend that could land behind later calls of the same topic.
  #eval(script, keys, args) {
    return this.#bus[busCall](keys[0], ['EVAL', script, String(keys.length), ...keys, ...args.map(String)]);
  }

  write(topic, node, count, op, old = '') {
    return this.#eval(WRITE, [this.#key(topic)], [node, count, op, old, this.#opts.countInterval, this.#opts.countSmall]);
  }

  count(topic) {
    return this.#eval(COUNT, [this.#key(topic)], [this.#opts.countInterval]);
  }

  alive(node, mode) { return this.#eval(ALIVE, [this.#nodes], [node, this.#opts.ttl, mode]); }

  index(node, topic, on) {
    return this.#bus[busCall](this.#nodes, [on ? 'SADD' : 'SREM', this.#held + node, topic]);
  }

  async claim(most) {
    const flat = await this.#eval(CLAIM, [this.#nodes, this.#dead], [this.#opts.ttl, most, this.#held]);
    const out = [];
    for (let i = 0; i + 1 < flat.length; i += 2) out.push({ node: flat[i], topics: flat[i + 1] });
    return out;
  }

  forget(node) { return this.#eval(FORGET, [this.#nodes, this.#dead], [node, this.#held]); }
}

function occupancyOptions(v) {
  if (v === undefined || v === null) v = {};
  if (typeof v !== 'object' || Array.isArray(v)) throw invalidArgType('options', 'an object', v);
  for (const k of Object.keys(v)) {
    if (!(k in DEFAULTS)) throw invalidArgValue(`options.${k}`, 'is not a known occupancy option', k);
  }
  const o = { ...DEFAULTS, ...v };
  for (const k of ['topics', 'onOccupied', 'onVacated', 'onCount', 'onError']) {
    if (o[k] !== null && typeof o[k] !== 'function') throw invalidArgType(`options.${k}`, 'a function', o[k]);
  }
  integer('options.ttl', o.ttl, 1000, 86400000);
  integer('options.vacateDelay', o.vacateDelay, 0, 3600000);
  integer('options.countInterval', o.countInterval, 0, 3600000);
  integer('options.countSmall', o.countSmall, 0, Number.MAX_SAFE_INTEGER);
  return Object.freeze(o);
}

// Dead nodes claimed per renewal, and a dead node's topics written at once.
const CLAIMS_PER_RENEWAL = 16;
const CLAIM_WRITES = 64;

/**
 * The occupancy of a server's topics across the cluster: from when it is
 * made (the topics with subscribers then, server.topics(), and the
 * 'subscription' events after) to close(), which comes before
 * server.close(), so that this node's topics leave Redis (and their last
 * leave is decided) while the bus runs.
 */
class Occupancy {
  #server;
  #opts;
  #store;
  #bus;
  #node = crypto.randomBytes(8).toString('hex');
  #seq = 0;
  #gen = 0; // this node's ids so far: a write begun under an older one leaves the topic to the rewrite
  // topic -> { local: this node's subscribers, written: its count in Redis
  // (-1: to be written again), old: an earlier id of this node to remove,
  // indexed: in this node's set, busy: a write going, retry: one failed,
  // unacked: { op, count, old } sent without an answer, vacate: the
  // vacateDelay timer, countTimer, active: the last 'subscription' event,
  // owed: a 0 -> 1 edge not yet in Redis, written as at least 1 even when
  // its subscribers left before the write: a channel occupied for a moment
  // is occupied, then vacated }
  #topics = new Map();
  #queued = false;
  #dirty = new Set(); // topics to write at the end of this turn
  #timer = null;
  #registered = false;
  #registering = null;
  #upSince = Infinity; // when the bus last came up (ms): claims wait ttl after it
  #closed = false;
  #closing = null; // close()'s resolver for a write that fails while it waits
  #idle = new Set(); // resolvers waiting for every write to be done
  #onEdge;
  #onUp;
  #stats = { occupied: 0, vacated: 0, counts: 0, writes: 0, failures: 0, claimed: 0, reborn: 0 };

  constructor(server, options) {
    if (server === null || typeof server !== 'object' || typeof server.subscribers !== 'function') {
      throw invalidArgType('server', 'a symphony Server', server);
    }
    this.#server = server;
    this.#opts = occupancyOptions(options);
    this.#bus = server.bus ?? null;
    this.#store = this.#bus === null ? new MemoryStore(this.#opts) : new RedisStore(this.#bus, this.#opts);
    this.#onEdge = (topic, active) => this.#edge(topic, active);
    server.on('subscription', this.#onEdge);
    if (this.#bus !== null) {
      // Up again: a renewal first (which finds out whether this node was
      // taken for dead while the bus was down), then what waits.
      this.#onUp = () => {
        this.#upSince = performance.now();
        if (this.#registered) this.#tick();
        else this.#register();
      };
      this.#bus.on('up', this.#onUp);
      if (this.#bus.state === 'up') this.#onUp();
    }
    // Topics this node has subscribers of already: 'subscription' reports
    // their end, not their start.
    for (const [topic, n] of server.topics()) {
      if (n > 0 && this.#tracked(topic)) {
        const s = this.#state(topic);
        s.active = true;
        this.#set(topic, s, n);
      }
    }
    // Renewal and claims (with a bus), and the counts read again (both):
    // every ttl/3.
    this.#timer = setInterval(() => this.#tick(), Math.max(250, Math.floor(this.#opts.ttl / 3)));
    this.#timer.unref();
  }

  /** This node's id in Redis (a new one after it was taken for dead). */
  get node() { return this.#node; }

  stats() { return { ...this.#stats, topics: this.#topics.size }; }

  #tracked(topic) {
    return this.#opts.topics === null || this.#opts.topics(topic) === true;
  }

  #state(topic) {
    let s = this.#topics.get(topic);
    if (s === undefined) {
      s = { local: 0, written: 0, old: null, indexed: false, busy: false, retry: false, unacked: null, vacate: null, countTimer: null, active: false, owed: false };
      this.#topics.set(topic, s);
    }
    return s;
  }

  #edge(topic, active) {
    if (this.#closed || !this.#tracked(topic)) return;
    const s = this.#state(topic);
    s.active = active;
    // Both edges of a brief subscription may come in one turn, before the
    // write of the first: the 1 is still written (then the 0).
    if (active) s.owed = true;
    this.#set(topic, s, active ? Math.max(1, this.#server.subscribers(topic)) : 0);
  }

  /** A subscription of topic began or ended on this node (the protocol says so on every one): its count is read again. */
  changed(topic) {
    const s = this.#topics.get(topic);
    if (this.#closed || s === undefined || !s.active) return;
    this.#set(topic, s, Math.max(1, this.#server.subscribers(topic)));
  }

  #set(topic, s, n) {
    s.local = n;
    if (n === 0 && this.#opts.vacateDelay > 0 && s.written !== 0) {
      // The last local subscriber: kept for vacateDelay, in case it comes back.
      if (s.vacate === null) {
        s.vacate = setTimeout(() => {
          s.vacate = null;
          this.#queue(topic);
        }, this.#opts.vacateDelay);
        s.vacate.unref?.();
      }
      return;
    }
    if (s.vacate !== null) {
      clearTimeout(s.vacate);
      s.vacate = null;
    }
    this.#queue(topic);
  }

  // Every topic looked at again (those whose write failed tried again).
  #retry() {
    for (const [topic, s] of this.#topics) {
      s.retry = false;
      this.#dirty.add(topic);
    }
    this.#queue();
  }

  #queue(topic) {
    if (topic !== undefined) this.#dirty.add(topic);
    if (this.#queued) return;
    this.#queued = true;
    setImmediate(() => {
      this.#queued = false;
      this.#flush();
    });
  }

  #flush() {
    const dirty = this.#dirty;
    this.#dirty = new Set();
    for (const topic of dirty) {
      const s = this.#topics.get(topic);
      if (s !== undefined) this.#sync(topic, s);
    }
    this.#settleIdle();
  }

  // One write at a time per topic: a lost reply's write first (the same
  // op), then this node's count now.
  #sync(topic, s) {
    // A write that failed waits for the next renewal or the bus' 'up'.
    if (s.busy || s.retry || (this.#bus !== null && !this.#registered)) return;
    if (s.owed && s.written > 0) s.owed = false; // the edge is in Redis
    // While the last local subscriber is kept (vacateDelay), what Redis has stays.
    const want = s.vacate !== null ? Math.max(1, s.written) : s.owed ? Math.max(1, s.local) : s.local;
    if (s.unacked === null && want === s.written) {
      if (want === 0 && s.written === 0 && s.vacate === null && s.countTimer === null) this.#drop(topic, s);
      return;
    }
    s.busy = true;
    this.#write(topic, s, want).catch((err) => {
      s.retry = true;
      this.#failed(err);
    }).finally(() => {
      s.busy = false;
      if (this.#topics.get(topic) === s) this.#sync(topic, s);
      this.#settleIdle();
    });
  }

  async #write(topic, s, want) {
    const gen = this.#gen;
    if (s.unacked === null) {
      if (want > 0 && !s.indexed && this.#bus !== null) {
        // In this node's set before its count is in the topic: whoever
        // claims this node finds the topic.
        await this.#store.index(this.#node, topic, true);
        if (gen !== this.#gen) return; // reborn meanwhile: indexed again under the new id
        s.indexed = true;
      }
      s.unacked = { op: `${this.#node}.${++this.#seq}`, count: want, old: s.old ?? '' };
    }
    const u = s.unacked;
    this.#stats.writes++;
    const answer = await this.#store.write(topic, this.#node, u.count, u.op, u.old);
    if (gen !== this.#gen) {
      // Reborn meanwhile: this write's decision stands (Redis made it), and
      // the rewrite under the new id moves its count.
      this.#decided(topic, answer);
      return;
    }
    s.unacked = null;
    s.old = null;
    s.written = u.count;
    this.#decided(topic, answer);
    if (s.written === 0 && s.local === 0 && s.indexed && this.#bus !== null && s.vacate === null) {
      await this.#store.index(this.#node, topic, false);
      if (gen === this.#gen) s.indexed = false;
    }
  }

  // What a script answered: the transitions this call made, this node's to send.
  #decided(topic, [before, after, emit, wait]) {
    if (before === 0 && after > 0) {
      this.#stats.occupied++;
      this.#call('onOccupied', topic);
    }
    if (emit >= 0 && this.#opts.onCount !== null) {
      this.#stats.counts++;
      this.#call('onCount', topic, emit);
    }
    if (before > 0 && after === 0) {
      this.#stats.vacated++;
      this.#call('onVacated', topic);
    }
    if (wait > 0) this.#countLater(topic, wait);
  }

  // A large channel's count held back: sent when its interval is over,
  // by the node that held it back.
  #countLater(topic, wait) {
    const s = this.#state(topic);
    if (s.countTimer !== null || this.#closed) return;
    s.countTimer = setTimeout(() => {
      s.countTimer = null;
      if (this.#closed) return;
      this.#store.count(topic).then(([emit, again]) => {
        if (emit >= 0 && this.#opts.onCount !== null) {
          this.#stats.counts++;
          this.#call('onCount', topic, emit);
        }
        if (again > 0) this.#countLater(topic, again);
        else this.#queue(topic);
      }, (err) => {
        this.#failed(err);
        this.#countLater(topic, this.#opts.countInterval);
      });
    }, wait);
    s.countTimer.unref?.();
  }

  #call(name, ...args) {
    const fn = this.#opts[name];
    if (fn === null) return;
    try {
      fn(...args);
    } catch (err) {
      process.nextTick(() => { throw err; });
    }
  }

  #failed(err) {
    this.#stats.failures++;
    this.#closing?.(false);
    // The bus down (or the server closed): written again once it is up
    // (the 'up' event, or the next renewal).
    if (err?.code !== 'ERR_BUS_DOWN' && err?.code !== 'ERR_SYMPHONY_CLOSED' && this.#opts.onError !== null) this.#call('onError', err);
  }

  #drop(topic, s) {
    if (s.active || s.indexed || s.busy) return;
    this.#topics.delete(topic);
  }

  // Joins the live set (with a bus), then writes what waits.
  #register() {
    if (this.#closed || this.#registering !== null) return;
    this.#registering = this.#store.alive(this.#node, 'join').then(() => {
      this.#registered = true;
      this.#retry();
    }, (err) => this.#failed(err)).finally(() => { this.#registering = null; });
  }

  #tick() {
    if (this.#closed) return;
    if (this.#opts.onCount !== null) {
      // The counts between edges when no changed() said so.
      for (const [topic, s] of this.#topics) {
        if (s.active && s.vacate === null) {
          const n = Math.max(1, this.#server.subscribers(topic));
          if (n !== s.local) this.#set(topic, s, n);
        }
      }
    }
    if (this.#bus === null) return;
    if (!this.#registered) {
      this.#register();
      return;
    }
    this.#store.alive(this.#node, 'renew').then((ok) => {
      if (ok === 0) this.#reborn();
      else this.#claim();
    }, (err) => this.#failed(err));
    this.#retry();
  }

  // Taken for dead (or Redis lost the keys): a new id, and every topic's
  // count moved from the old id to it in one write each.
  #reborn() {
    const old = this.#node;
    this.#node = crypto.randomBytes(8).toString('hex');
    this.#gen++;
    this.#stats.reborn++;
    this.#registered = false;
    for (const s of this.#topics.values()) {
      if (s.unacked !== null) s.unacked = { ...s.unacked, op: `${this.#node}.${++this.#seq}`, old };
      else if (s.written !== 0 || s.local !== 0) {
        s.old = old;
        s.written = -1; // differs from any count: written again
      }
      s.indexed = false;
    }
    this.#register();
  }

  async #claim() {
    // Back from an outage every node's time may be past: each gets a ttl to
    // renew before any is taken for dead.
    if (performance.now() - this.#upSince < this.#opts.ttl) return;
    let dead;
    try {
      dead = await this.#store.claim(CLAIMS_PER_RENEWAL);
    } catch (err) {
      this.#failed(err);
      return;
    }
    for (const { node, topics } of dead) {
      if (node === this.#node) continue;
      try {
        for (let i = 0; i < topics.length; i += CLAIM_WRITES) {
          await Promise.all(topics.slice(i, i + CLAIM_WRITES).map(async (topic) => {
            const answer = await this.#store.write(topic, node, 0, `claim.${this.#node}.${++this.#seq}`, '');
            this.#decided(topic, answer);
          }));
        }
        await this.#store.forget(node);
        this.#stats.claimed++;
      } catch (err) {
        // The claim lapses after ttl and this node or another takes it again.
        this.#failed(err);
      }
    }
  }

  #settleIdle() {
    if (this.#idle.size === 0 || !this.#isIdle()) return;
    for (const resolve of this.#idle) resolve();
    this.#idle.clear();
  }

  #isIdle() {
    for (const s of this.#topics.values()) {
      if (s.busy || s.retry || s.unacked !== null) return false;
      if (s.vacate === null && s.local !== s.written) return false;
    }
    return !this.#queued;
  }

  /**
   * Stops: this node's topics leave Redis at once (no vacateDelay; the
   * last leave decided and its onVacated called here) and the node leaves
   * the live set, within timeout ms; what is not written by then is left
   * to expire as a dead node's. Call it before server.close().
   */
  async close({ timeout = 2000 } = {}) {
    if (this.#closed) return;
    this.#server.off('subscription', this.#onEdge);
    if (this.#bus !== null) this.#bus.off('up', this.#onUp);
    clearInterval(this.#timer);
    for (const s of this.#topics.values()) {
      if (s.vacate !== null) clearTimeout(s.vacate);
      s.vacate = null;
      if (s.countTimer !== null) clearTimeout(s.countTimer);
      s.countTimer = null;
      s.local = 0;
      s.active = false;
      s.owed = false;
    }
    let timer;
    const done = new Promise((resolve) => {
      this.#idle.add(resolve);
      this.#retry();
    });
    // Done when every write is; given up at timeout, or at a write that
    // fails (the bus down, the server closed: it would not go through).
    const ok = await Promise.race([done.then(() => true), new Promise((r) => {
      this.#closing = r;
      timer = setTimeout(() => r(false), timeout);
    })]);
    clearTimeout(timer);
    this.#closing = null;
    this.#closed = true;
    if (ok && this.#bus !== null && this.#registered) await this.#store.forget(this.#node).catch(() => {});
  }
}

module.exports = { Occupancy, OCCUPANCY_DEFAULTS: DEFAULTS, occupancyOptions };
