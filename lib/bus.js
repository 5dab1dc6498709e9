'use strict';
// The bus: several symphony servers (processes, machines) as one fan-out
// over Redis sharded pub/sub. The work is native (src/bus/sy_bus.c, one bus
// thread per server); here are its options and the `server.bus` object.
// docs/bus.md, "Scaling out".

const { EventEmitter } = require('node:events');
const tls = require('node:tls');
const { SymphonyError, invalidArgType, invalidArgValue, outOfRange, integer } = require('./errors');

const BUS_DEFAULTS = Object.freeze({
  url: null,               // 'redis://[user:pass@]host:port[/db]', or a list of seeds (Redis Cluster)
  cluster: null,           // default: true when url is a list
  // Redis Sentinel: the sentinels ('redis://[user:pass@]host[:26379]' or
  // { host, port }) and the name of the primary they watch; url (optional)
  // then gives only the data nodes' credentials and redis:// or rediss://.
  sentinels: null,
  name: null,
  prefix: 'symphony:',     // channel = prefix + topic
  maxBuffer: 16 << 20,     // bytes of publishes toward Redis not yet acknowledged; past it they are dropped
  connectTimeout: 2000,    // ms
  backoff: Object.freeze({ min: 100, max: 1000 }), // ms between reconnects, doubling, +-20% jitter
  // TLS to Redis (rediss:// turns it on): true, or { ca, cert, key,
  // passphrase, servername, rejectUnauthorized } as Node's tls.connect
  // takes them. Default CAs: Node's bundled roots (tls.rootCertificates).
  tls: null,
});

const TLS_KEYS = new Set(['ca', 'cert', 'key', 'passphrase', 'servername', 'rejectUnauthorized']);

const BACKOFF_KEYS = new Set(['min', 'max']);

/** One redis:// URL as { host, port, user, pass }. */
function parseUrl(name, s, defaultPort = 6379) {
  if (typeof s !== 'string') throw invalidArgType(name, 'a redis:// URL string', s);
  let u;
  try {
    u = new URL(s);
  } catch {
    throw invalidArgValue(name, 'is not a URL (redis://[user:password@]host:port[/db])', s);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw invalidArgValue(name, 'must start with redis:// or rediss://', s);
  if (u.hostname === '') throw invalidArgValue(name, 'names no host', s);
  if (u.search !== '' || u.hash !== '') throw invalidArgValue(name, 'has a query or fragment, which the bus does not read', s);
  const db = u.pathname === '' || u.pathname === '/' ? '0' : u.pathname.slice(1);
  // Pub/sub channels are global to a Redis server: the database number is
  // accepted (URLs are often shared with other clients) and has no effect.
  if (!/^\d{1,5}$/.test(db)) throw invalidArgValue(name, 'has a path that is not a database number', s);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  const port = u.port === '' ? defaultPort : Number(u.port);
  const user = u.username === '' ? null : decodeURIComponent(u.username);
  const pass = u.password === '' ? null : decodeURIComponent(u.password);
  if (user !== null && pass === null) throw invalidArgValue(name, 'has a user name but no password', s);
  return { host, port, user, pass, tls: u.protocol === 'rediss:' };
}

/** One entry of options.bus.sentinels: a URL, or { host, port } (port default 26379). */
function parseSentinel(name, v) {
  if (typeof v === 'string') return parseUrl(name, v, 26379);
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw invalidArgType(name, 'a redis:// URL string or a { host, port } object', v);
  }
  for (const k of Object.keys(v)) {
    if (k !== 'host' && k !== 'port') throw invalidArgValue(`${name}.${k}`, 'is not a known sentinel option (host, port)', k);
  }
  if (typeof v.host !== 'string' || v.host === '') throw invalidArgType(`${name}.host`, 'a non-empty string', v.host);
  const port = v.port ?? 26379;
  integer(`${name}.port`, port, 1, 65535);
  return { host: v.host, port, user: null, pass: null, tls: false, object: true };
}

/** options.bus.sentinels and .name (with .url and .cluster) as { sentinels, name, data }, or null without sentinels. */
function sentinelOption(o) {
  if (o.sentinels === null) {
    if (o.name !== null) throw invalidArgValue('options.bus.name', 'names a Sentinel primary, which needs options.bus.sentinels', o.name);
    return null;
  }
  if (!Array.isArray(o.sentinels)) throw invalidArgType('options.bus.sentinels', 'an array of redis:// URLs or { host, port } objects', o.sentinels);
  if (o.sentinels.length === 0 || o.sentinels.length > 64) throw outOfRange('options.bus.sentinels', '1 to 64 sentinels', o.sentinels.length);
  const sentinels = o.sentinels.map((v, i) => parseSentinel(`options.bus.sentinels[${i}]`, v));
  if (o.cluster === true) throw invalidArgValue('options.bus.cluster', 'is true with sentinels (Sentinel watches one primary; a Redis Cluster fails over by itself)', o.cluster);
  if (Array.isArray(o.url)) throw invalidArgValue('options.bus.url', 'is a list with sentinels (the sentinels name the one primary)', o.url.length);
  if (typeof o.name !== 'string') throw invalidArgType('options.bus.name', 'a string (the primary\'s name in Sentinel, as in `sentinel monitor <name>`)', o.name);
  if (Buffer.byteLength(o.name) === 0 || Buffer.byteLength(o.name) > 128) throw outOfRange('options.bus.name', '1 to 128 bytes', Buffer.byteLength(o.name));
  if (/[\s\0]/.test(o.name)) throw invalidArgValue('options.bus.name', 'has a space or a control character', o.name);
  const urls = sentinels.filter((x) => !x.object);
  for (const x of urls) {
    if (x.user !== urls[0].user || x.pass !== urls[0].pass) {
      throw invalidArgValue('options.bus.sentinels', 'gives different credentials for different sentinels', 'sentinels');
    }
  }
  // The data nodes: the url's credentials and scheme (its host is not
  // used: the sentinels name the primary), else none and the sentinels' scheme.
  const data = o.url === null ? null : parseUrl('options.bus.url', o.url);
  const tlsOn = data !== null ? data.tls : urls.some((x) => x.tls);
  if (urls.some((x) => x.tls !== tlsOn)) {
    throw invalidArgValue('options.bus.sentinels', 'mixes redis:// and rediss:// (the sentinels and the data nodes share one TLS setting)', 'sentinels');
  }
  return {
    sentinels: sentinels.map(({ host, port }) => Object.freeze({ host, port })),
    name: o.name,
    user: urls.length ? urls[0].user : null,
    pass: urls.length ? urls[0].pass : null,
    data: data ?? { host: null, port: null, user: null, pass: null, tls: tlsOn },
  };
}

/** A PEM option (string, Buffer, TypedArray, or a list of them) as one string. */
function pem(name, v) {
  if (v === undefined || v === null) return null;
  const list = Array.isArray(v) ? v : [v];
  return list.map((x, i) => {
    if (typeof x === 'string') return x;
    if (ArrayBuffer.isView(x)) return Buffer.from(x.buffer, x.byteOffset, x.byteLength).toString('latin1');
    throw invalidArgType(Array.isArray(v) ? `${name}[${i}]` : name, 'PEM text (a string or a Buffer)', x);
  }).join('\n');
}

/** options.bus.tls (with rediss:// meaning true) as what binding/bus.c reads, or null. */
function tlsOption(value, fromUrl) {
  if (value === null || value === false) {
    if (fromUrl && value === false) throw invalidArgValue('options.bus.tls', 'is false while the URL says rediss://', value);
    return fromUrl ? tlsOption(true, true) : null;
  }
  if (value === true) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArgType('options.bus.tls', 'a boolean or an object', value);
  for (const k of Object.keys(value)) {
    if (!TLS_KEYS.has(k)) throw invalidArgValue(`options.bus.tls.${k}`, 'is not a known bus TLS option', k);
  }
  const ca = pem('options.bus.tls.ca', value.ca) ?? tls.rootCertificates.join('\n');
  const cert = pem('options.bus.tls.cert', value.cert);
  const key = pem('options.bus.tls.key', value.key);
  if ((cert === null) !== (key === null)) throw invalidArgValue('options.bus.tls', 'needs both cert and key, or neither', 'cert/key');
  for (const k of ['passphrase', 'servername']) {
    if (value[k] !== undefined && value[k] !== null && typeof value[k] !== 'string') {
      throw invalidArgType(`options.bus.tls.${k}`, 'of type string', value[k]);
    }
  }
  const rejectUnauthorized = value.rejectUnauthorized ?? true;
  if (typeof rejectUnauthorized !== 'boolean') {
    throw invalidArgType('options.bus.tls.rejectUnauthorized', 'of type boolean', rejectUnauthorized);
  }
  return {
    ca, cert, key, passphrase: value.passphrase ?? null, servername: value.servername ?? null, rejectUnauthorized,
  };
}

/**
 * options.bus as a frozen, complete object (or null): TypeErrors and
 * RangeErrors name the option.
 */
function busOption(value) {
  if (value === null || value === undefined) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidArgType('options.bus', 'an object or null', value);
  for (const k of Object.keys(value)) {
    if (!(k in BUS_DEFAULTS)) throw invalidArgValue(`options.bus.${k}`, 'is not a known bus option', k);
  }
  const o = { ...BUS_DEFAULTS };
  for (const [k, v] of Object.entries(value)) if (v !== undefined) o[k] = v;
  const sentinel = sentinelOption(o);
  const urls = Array.isArray(o.url) ? o.url : [o.url];
  if (o.url === null && sentinel === null) throw invalidArgType('options.bus.url', 'a redis:// URL or a list of them (or give sentinels)', o.url);
  if (urls.length === 0 || urls.length > 64) throw outOfRange('options.bus.url', '1 to 64 URLs', urls.length);
  const seeds = sentinel !== null ? [sentinel.data] :
    urls.map((u, i) => parseUrl(Array.isArray(o.url) ? `options.bus.url[${i}]` : 'options.bus.url', u));
  if (o.cluster === null) o.cluster = Array.isArray(o.url);
  if (typeof o.cluster !== 'boolean') throw invalidArgType('options.bus.cluster', 'of type boolean', o.cluster);
  if (!o.cluster && seeds.length !== 1) {
    throw invalidArgValue('options.bus.url', 'lists several URLs, which only a cluster (cluster: true) has', urls.length);
  }
  for (const s of seeds) {
    if (s.user !== seeds[0].user || s.pass !== seeds[0].pass) {
      throw invalidArgValue('options.bus.url', 'gives different credentials for the seeds of one cluster', 'url');
    }
    if (s.tls !== seeds[0].tls) throw invalidArgValue('options.bus.url', 'mixes redis:// and rediss:// seeds', 'url');
  }
  const tlsOpts = tlsOption(o.tls, seeds[0].tls);
  if (typeof o.prefix !== 'string') throw invalidArgType('options.bus.prefix', 'of type string', o.prefix);
  if (Buffer.byteLength(o.prefix) > 256 || /[{}]/.test(o.prefix)) {
    throw invalidArgValue('options.bus.prefix', 'must be at most 256 bytes without { or } (hash tags belong to topics)', o.prefix);
  }
  integer('options.bus.maxBuffer', o.maxBuffer, 1024, 2 ** 40);
  integer('options.bus.connectTimeout', o.connectTimeout, 1, 3600000);
  if (o.backoff === null || typeof o.backoff !== 'object') throw invalidArgType('options.bus.backoff', 'an object', o.backoff);
  for (const k of Object.keys(o.backoff)) {
    if (!BACKOFF_KEYS.has(k)) throw invalidArgValue(`options.bus.backoff.${k}`, 'is not a known backoff option', k);
  }
  const backoff = { ...BUS_DEFAULTS.backoff, ...o.backoff };
  integer('options.bus.backoff.min', backoff.min, 1, 3600000);
  integer('options.bus.backoff.max', backoff.max, backoff.min, 3600000);
  // The URLs as the user gave them, but a password shown as '***'.
  const redact = (u) => {
    const x = new URL(u);
    if (x.password !== '') x.password = '***';
    return x.href.replace(/\/$/, '');
  };
  return Object.freeze({
    url: o.url === null ? null : Array.isArray(o.url) ? Object.freeze(o.url.map(redact)) : redact(o.url),
    cluster: o.cluster,
    sentinels: sentinel && Object.freeze(sentinel.sentinels),
    name: sentinel && sentinel.name,
    [nativeSentinel]: sentinel,
    prefix: o.prefix,
    maxBuffer: o.maxBuffer,
    connectTimeout: o.connectTimeout,
    backoff: Object.freeze(backoff),
    tls: tlsOpts !== null,
    seeds: Object.freeze(seeds.map((s) => Object.freeze(s))),
    [nativeTls]: tlsOpts,
  });
}

/** What serverSetBus reads (binding/bus.c). */
const nativeTls = Symbol('tls');
const nativeSentinel = Symbol('sentinel');
function nativeBusOptions(o) {
  const st = o[nativeSentinel];
  return {
    hosts: st ? [] : o.seeds.map((s) => s.host),
    ports: st ? [] : o.seeds.map((s) => s.port),
    sentinelHosts: st ? st.sentinels.map((s) => s.host) : [],
    sentinelPorts: st ? st.sentinels.map((s) => s.port) : [],
    sentinelName: st ? st.name : null,
    sentinelUser: st ? st.user : null,
    sentinelPass: st ? st.pass : null,
    cluster: o.cluster,
    prefix: o.prefix,
    user: o.seeds[0].user,
    pass: o.seeds[0].pass,
    maxBuffer: o.maxBuffer,
    connectTimeout: o.connectTimeout,
    backoffMin: o.backoff.min,
    backoffMax: o.backoff.max,
    tls: o[nativeTls],
  };
}

/** The bus is down: error.message is Redis' own error text, or the socket's. */
class BusError extends SymphonyError {
  constructor(message) {
    super('ERR_BUS_DOWN', message);
    this.name = 'SymphonyBusError';
  }
}

/** Redis answered a bus call with an error reply: error.message is Redis' text. */
class BusReplyError extends SymphonyError {
  constructor(message) {
    super('ERR_BUS_REPLY', message);
    this.name = 'SymphonyBusReplyError';
  }
}

/**
 * A call's reply as binding/bus.c encodes it (src/bus/sy_bus_call.h):
 * strings as UTF-8 text, integers as numbers, nil as null, arrays as
 * arrays, an error reply as a BusReplyError, no reply at all as a BusError
 * (why it got none).
 */
function decodeReply(buf) {
  let at = 0;
  const need = (n) => {
    if (at + n > buf.length) throw new BusReplyError('symphony: a truncated reply from the bus');
  };
  const text = () => {
    need(4);
    const n = buf.readUInt32LE(at);
    at += 4;
    need(n);
    at += n;
    return buf.toString('utf8', at - n, at);
  };
  const value = () => {
    need(1);
    const tag = String.fromCharCode(buf[at++]);
    switch (tag) {
      case 's': return text();
      case 'e': return new BusReplyError(text());
      case 'x': return new BusError(`symphony: ${text()}`);
      case 'i': {
        need(8);
        at += 8;
        return Number(buf.readBigInt64LE(at - 8));
      }
      case 'n': return null;
      case 'a': {
        need(4);
        const n = buf.readUInt32LE(at);
        at += 4;
        const a = [];
        for (let i = 0; i < n; i++) a.push(value());
        return a;
      }
      default:
        throw new BusReplyError(`symphony: an unknown tag ${JSON.stringify(tag)} in a reply from the bus`);
    }
  };
  if (buf.length === 0) return new BusError('symphony: no reply (out of memory)');
  return value();
}

const update = Symbol('update');
// The server's side of the bus object: calls, control messages, counts.
const attach = Symbol('attach');
const call = Symbol('call');
const ctl = Symbol('ctl');
const fence = Symbol('fence');

/**
 * server.bus: the bus' state ('connecting' until it is first up or first
 * fails; 'up'; 'down' while reconnecting) and its changes as events:
 * 'up', 'down' (a BusError), and 'state' (state, error|null) for both.
 */
class Bus extends EventEmitter {
  #state = 'connecting';
  #error = null;
  #options;
  #native = null;    // (id, route, args) -> boolean: binding.serverBusCall
  #presence = null;  // lib/presence.js: control messages, counts
  #calls = new Map(); // id -> { resolve, reject }
  #nextCall = 1;

  constructor(options) {
    super();
    this.#options = options;
  }

  [attach](native, presence) {
    this.#native = native;
    this.#presence = presence;
  }

  /** One Redis command on the bus' connections (routed by route's slot; null: the control channel). */
  [call](route, args) {
    return new Promise((resolve, reject) => {
      const id = this.#nextCall++;
      if (this.#native === null || !this.#native(id, route, args)) {
        reject(new BusError('symphony: the bus is stopping or not set'));
        return;
      }
      this.#calls.set(id, { resolve, reject });
    });
  }

  [ctl](message) { return this[call](null, [message]); }

  /**
   * Resolves once every control message Redis sent this node before now
   * has been handed to the server (a PING on the connection that carries
   * them); rejects when that connection is not up or went first.
   */
  [fence]() { return this[call](null, []); }

  /** This node's id in presence entries and events. */
  get node() { return this.#presence === null ? null : this.#presence.node; }

  /**
   * The subscribers of topic on every node of the bus (this one too): every
   * node is asked over Redis and answers. Rejects with ERR_BUS_TIMEOUT when
   * some do not answer within options.timeout ms (default 2000), or
   * ERR_BUS_DOWN when the bus is not up.
   */
  subscribers(topic, options) {
    if (typeof topic !== 'string' || topic.length === 0) return Promise.reject(invalidArgType('topic', 'a non-empty string', topic));
    let timeout = 2000;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') return Promise.reject(invalidArgType('options', 'an object', options));
      if (options.timeout !== undefined) {
        try {
          integer('options.timeout', options.timeout, 1, 3600000);
        } catch (err) {
          return Promise.reject(err);
        }
        timeout = options.timeout;
      }
    }
    if (this.#presence === null) return Promise.reject(new BusError('symphony: the server is not running'));
    if (this.#state !== 'up') return Promise.reject(new BusError('symphony: subscribers(): the bus is not up'));
    return this.#presence.subscribers(topic, timeout);
  }

  get state() { return this.#state; }
  /** Why the bus is down (a BusError), else null. */
  get error() { return this.#error; }
  /** The options in effect (the password shown as '***', no PEM). */
  get options() {
    const o = this.#options;
    return {
      url: o.url, cluster: o.cluster, prefix: o.prefix, maxBuffer: o.maxBuffer, connectTimeout: o.connectTimeout,
      backoff: o.backoff, tls: o.tls,
      seeds: o.sentinels ? [] : o.seeds.map((s) => ({ host: s.host, port: s.port })),
      sentinels: o.sentinels ? o.sentinels.map((s) => ({ host: s.host, port: s.port })) : null,
      name: o.name,
    };
  }

  [update](kind, a, b) {
    if (kind === 'ctl') {
      this.#presence?.control(a);
      return;
    }
    if (kind === 'reply') {
      const c = this.#calls.get(a);
      if (c === undefined) return;
      this.#calls.delete(a);
      let v;
      try {
        v = decodeReply(b);
      } catch (err) {
        c.reject(err);
        return;
      }
      if (v instanceof Error) c.reject(v);
      else c.resolve(v);
      return;
    }
    this.#setState(a, b);
  }

  #setState(state, message) {
    if (state === this.#state) return;
    this.#state = state;
    this.#error = state === 'down' ? new BusError(message || 'the bus is down') : null;
    this.emit('state', state, this.#error);
    if (state === 'down') this.emit('down', this.#error);
    else if (state === 'up') this.emit('up');
  }
}

module.exports = { BUS_DEFAULTS, busOption, nativeBusOptions, Bus, BusError, BusReplyError, update, attach, call, ctl, fence };
