'use strict';
// new Server(options): their defaults, their checks and what the binding is
// given. The options the IO threads are told are declared once, in C
// (src/io/model/sy_io_opts.h, SY_IO_OPTS_LIST): the binding decodes them from that
// list and gives it here as binding.optionSchema, rows of { name, path, kind,
// default, min, max, values, help }. Their defaults, ranges, names in errors
// and the binding's object come from it; what is not a field of the IO
// threads (TLS, tokens, hooks, the bus, presence, the PROXY protocol's
// sources, trustProxy) is checked by hand below or in its own module.

const os = require('node:os');
const { binding } = require('./native');
const { invalidArgType, invalidArgValue, outOfRange, integer } = require('./errors');
const { busOption } = require('./bus');
const { presenceOption } = require('./presence');
const { proxyProtocolOptions, trustProxyOption } = require('./proxy');
const { tokensOption } = require('./tokens');
const { pusherOptions } = require('./pusher/config');

// The rows lib/ names by a path of the user's options ("" rows it derives:
// upgradeHandler from onUpgrade, tellTokenSubscribes, proxyProtocol).
const SCHEMA = binding.optionSchema.filter((r) => r.path !== '');

// Options given as an object of parts (rows "group.part"): what false, true
// and null mean, and how their errors read.
const GROUPS = {
  // permessage-deflate (RFC 7692): false, true, or { threshold, level }.
  compression: { off: () => false, type: 'a boolean or an object', unknown: 'is not a known compression option' },
  // Per-topic history (docs/history.md): false or null (off), true, or { size, ttl, maxBytes }.
  history: {
    off: () => ({ size: 0, ttl: 0, maxBytes: 0 }), nullOff: true,
    type: 'a boolean or an object', unknown: 'is not a known history option',
  },
  // The part of an address that names a client: { v4: 1..32, v6: 1..64 }.
  addressPrefix: { type: 'an object', unknown: 'is not a known prefix (v4, v6)' },
};
for (const [name, g] of Object.entries(GROUPS)) {
  const rows = SCHEMA.filter((r) => r.path.startsWith(`${name}.`));
  g.rows = Object.fromEntries(rows.map((r) => [r.path.slice(name.length + 1), r]));
  g.keys = new Set(Object.keys(g.rows));
  g.defaults = Object.freeze(Object.fromEntries(rows.map((r) => [r.path.slice(name.length + 1), r.default])));
}
const TOPIC_HISTORY_KEYS = new Set(['size', 'ttl']); // maxBytes is the server's

// A burst (and close's grace) lasts at most this long (src/io/model/sy_ratelimit.h).
const BURST_MAX_SECONDS = 60;
const BURSTS = { messageBurst: 'maxMessagesPerSecond', byteBurst: 'maxBytesPerSecond', workBurst: 'maxWorkPerSecond' };

/** The list's default of each plain option, and of each object option its off value or its parts'. */
function listDefaults() {
  const d = {};
  for (const r of SCHEMA) if (!r.path.includes('.')) d[r.path] = r.default;
  for (const [name, g] of Object.entries(GROUPS)) d[name] = g.off ? false : g.defaults;
  return d;
}

const DEFAULTS = Object.freeze({
  ...listDefaults(),
  // Defaults that are rules (the list has none for them): IO threads, min(2,
  // CPUs); frames in one client message, null → max(1024, maxPayload / 64),
  // so a message of maxPayload bytes may come in 64-byte fragments
  // (Autobahn's 9.3/9.4 shapes) while 100,000 empty ones cannot; bursts,
  // null → one second's worth of their rate.
  threads: Math.min(2, os.availableParallelism ? os.availableParallelism() : os.cpus().length || 1),
  // The memory policy (docs/memory.md). SYMPHONY_RECLAIM=0 in the
  // environment turns the default off (for comparisons).
  reclaim: !['0', 'false', 'off'].includes(String(process.env.SYMPHONY_RECLAIM ?? '').toLowerCase()),
  onUpgrade: null,
  // { cert, key, ca?, passphrase?, servername?: { name: { cert, key, passphrase? } } }:
  // wss:// only. The PEM is copied into native memory at the call and not kept.
  tls: null,
  // No listener of its own: connections come from another server's
  // 'upgrade' event through handleUpgrade(). docs/operations.md, "One port with Express or node:http".
  noServer: false,
  // Several servers as one fan-out over Redis (lib/bus.js). docs/bus.md, "Scaling out".
  bus: null,
  // The PROXY protocol before every connection's first byte on symphony's
  // own listener: false, true (required) or 'optional'; the sources a header
  // is accepted from (null: any). docs/operations.md, "Behind a load balancer".
  proxyProtocol: false,
  proxyProtocolFrom: null,
  // req.remoteAddress from Forwarded / X-Forwarded-For when the immediate
  // peer is trusted: false, true, a number of hops, or addresses/CIDR ranges.
  trustProxy: false,
  // Who is subscribed to a topic, on every node: false, true, or
  // { topics, ttl, maxInfo }. docs/api.md, "Presence: who is here, on every node".
  presence: false,
  // What symphony.v2 clients may ask (docs/protocol.md, "Clients ask"): each
  // hook answers true, false or { code, reason }, at once or as a Promise.
  // Without a hook, a client's subscribes and publishes are refused.
  onSubscribe: null,
  onPublish: null,
  onRequest: null,
  // Tokens (JWT) the IO threads verify: { keys, audience, issuer, leeway } (docs/tokens.md).
  tokens: null,
  // Pusher Channels' protocol and HTTP API beside symphony's own (docs/pusher.md).
  pusher: null,
  // A hook that has not answered after this many ms refuses ('timeout').
  askTimeout: 5000,
});

/** 'a', 'b' or 'c'. */
function oneOf(values) {
  const q = values.map((v) => `'${v}'`);
  return q.length > 1 ? `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}` : q[0];
}

/** A plain option (a row without parts) checked by its kind; the rules' nulls resolved. */
function plainOption(o, r) {
  const name = `options.${r.path}`;
  const v = o[r.path];
  if (r.kind === 'bool') {
    if (typeof v !== 'boolean') throw invalidArgType(name, 'of type boolean', v);
  } else if (r.kind === 'enum') {
    if (!r.values.includes(v)) throw invalidArgValue(name, `must be ${oneOf(r.values)}`, v);
  } else if (r.kind === 'string') {
    if (r.default === null ? v !== null && typeof v !== 'string' : typeof v !== 'string' || v.length === 0) {
      throw invalidArgType(name, r.default === null ? 'a string or null' : 'a non-empty string', v);
    }
  } else if (r.path === 'maxFragments' && v === null) {
    o.maxFragments = Math.min(Math.max(1024, Math.floor(o.maxPayload / 64)), r.max);
  } else if (Object.hasOwn(BURSTS, r.path)) {
    burstOption(o, r, BURSTS[r.path]);
  } else {
    integer(name, v, r.min, r.max);
  }
}

/** A burst: null (one second's worth of the rate), or 1 to a minute's worth. */
function burstOption(o, r, rateKey) {
  const v = o[r.path];
  if (v === null) return;
  integer(`options.${r.path}`, v, r.min, r.max);
  if (o[rateKey] > 0 && v > o[rateKey] * BURST_MAX_SECONDS) {
    throw outOfRange(`options.${r.path}`, `an integer >= 1 and <= ${BURST_MAX_SECONDS} seconds' worth of ${rateKey} ` +
      `(${o[rateKey] * BURST_MAX_SECONDS})`, v);
  }
}

/** An object option (compression, history, addressPrefix): its off value, or its parts, frozen. */
function groupOption(group, value, name = `options.${group}`, keys = GROUPS[group].keys) {
  const g = GROUPS[group];
  if (g.off && (value === false || (g.nullOff && value === null))) return g.off();
  if (g.off && value === true) return g.defaults;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidArgType(name, g.type, value);
  for (const k of Object.keys(value)) {
    if (!keys.has(k)) throw invalidArgValue(`${name}.${k}`, g.unknown, k);
  }
  const out = { ...g.defaults };
  for (const k of keys) if (value[k] !== undefined) out[k] = value[k];
  for (const [k, r] of Object.entries(g.rows)) integer(`${name}.${k}`, out[k], r.min, r.max);
  return Object.freeze(out);
}

/** A topic's history option (server.topic(name, { history })): size and ttl only. */
function topicHistoryOption(value) {
  return groupOption('history', value, 'options.history', TOPIC_HISTORY_KEYS);
}

/** new Server's options, checked, with the defaults filled in. */
function normalizeOptions(options) {
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') throw invalidArgType('options', 'an object', options);
  const o = { ...DEFAULTS };
  for (const key of Object.keys(options)) {
    if (!(key in DEFAULTS)) throw invalidArgValue(`options.${key}`, 'is not a known option', key);
    if (options[key] !== undefined) o[key] = options[key];
  }
  for (const r of SCHEMA) if (!r.path.includes('.') && !Object.hasOwn(GROUPS, r.path)) plainOption(o, r);
  if (o.path !== null && (!o.path.startsWith('/') || /[?#\s]/.test(o.path))) {
    throw invalidArgValue('options.path', "must start with '/' and hold no '?', '#' or spaces", o.path);
  }
  for (const group of Object.keys(GROUPS)) o[group] = groupOption(group, o[group]);
  for (const key of ['onUpgrade', 'onSubscribe', 'onPublish', 'onRequest']) {
    if (o[key] !== null && typeof o[key] !== 'function') throw invalidArgType(`options.${key}`, 'a function or null', o[key]);
  }
  integer('options.askTimeout', o.askTimeout, 1, 2147483647);
  o.tokens = tokensOption(o.tokens);
  o.pusher = pusherOptions(o.pusher);
  if (o.tls !== null) tlsArgs(o.tls, 'options.tls'); // checked now, applied by the constructor
  if (typeof o.noServer !== 'boolean') throw invalidArgType('options.noServer', 'of type boolean', o.noServer);
  if (o.noServer && o.tls !== null) {
    throw invalidArgValue('options.tls', 'cannot be used with noServer (TLS is the other server\'s: terminate it there, or give symphony its own port)', 'tls');
  }
  o.bus = busOption(o.bus);
  o.presence = presenceOption(o.presence);
  proxyProtocolOptions(o); // checked now, given to the binding by nativeOptions
  trustProxyOption(o.trustProxy);
  return o;
}

/** The binding's object for serverCreate, by the list's names, from normalized options. */
function nativeOptions(o) {
  const n = {};
  for (const r of SCHEMA) {
    const [group, part] = r.path.split('.');
    if (part !== undefined) n[r.name] = (o[group] || GROUPS[group].defaults)[part];
    else if (Object.hasOwn(GROUPS, group)) n[r.name] = o[group] !== false; // compression: on or off
    else n[r.name] = o[group];
  }
  for (const [burst, rate] of Object.entries(BURSTS)) n[burst] = o[burst] ?? (o[rate] || 1); // 1: unused without a rate
  const proxy = proxyProtocolOptions(o);
  n.proxyProtocol = proxy.mode;
  n.proxyProtocolFrom = proxy.from;
  n.upgradeHandler = typeof o.onUpgrade === 'function';
  // Presence needs to hear of the subscribes tokens grant natively.
  n.tellTokenSubscribes = o.presence !== null && o.tokens !== null;
  return n;
}

function isBytes(data) {
  return ArrayBuffer.isView(data) || data instanceof ArrayBuffer;
}

function pem(value, name, optional) {
  if (optional && (value === undefined || value === null)) return null;
  if (typeof value === 'string' || isBytes(value)) return value;
  throw invalidArgType(name, `a PEM string or Buffer${optional ? ' (or undefined)' : ''}`, value);
}

function passphrase(value, name) {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw invalidArgType(name, 'of type string', value);
  return value;
}

/** What options.tls keeps of tls options: the SNI names (the PEM is in native memory). */
function tlsSummary(tls) {
  return { servername: Object.keys(tls.servername ?? {}) };
}

const TLS_KEYS = new Set(['cert', 'key', 'ca', 'passphrase', 'servername']);
const SNI_KEYS = new Set(['cert', 'key', 'passphrase']);
const SERVERNAME = /^(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/;

/**
 * The native call's arguments for tls options: [certs, ca], the default
 * certificate first, then one per SNI name. Only reads the options.
 */
function tlsArgs(tls, name) {
  if (tls === null || typeof tls !== 'object' || Array.isArray(tls)) throw invalidArgType(name, 'an object', tls);
  for (const k of Object.keys(tls)) {
    if (!TLS_KEYS.has(k)) throw invalidArgValue(`${name}.${k}`, 'is not a known tls option', k);
  }
  const certs = [{
    cert: pem(tls.cert, `${name}.cert`), key: pem(tls.key, `${name}.key`),
    passphrase: passphrase(tls.passphrase, `${name}.passphrase`), servername: null,
  }];
  const sni = tls.servername ?? {};
  if (typeof sni !== 'object' || Array.isArray(sni)) throw invalidArgType(`${name}.servername`, 'an object', sni);
  for (const [host, entry] of Object.entries(sni)) {
    const at = `${name}.servername["${host}"]`;
    if (!SERVERNAME.test(host) || host.length > 253) throw invalidArgValue(at, 'is not a host name or *.wildcard', host);
    if (entry === null || typeof entry !== 'object') throw invalidArgType(at, 'an object', entry);
    for (const k of Object.keys(entry)) {
      if (!SNI_KEYS.has(k)) throw invalidArgValue(`${at}.${k}`, 'is not a known option', k);
    }
    certs.push({
      cert: pem(entry.cert, `${at}.cert`), key: pem(entry.key, `${at}.key`),
      passphrase: passphrase(entry.passphrase, `${at}.passphrase`), servername: host.toLowerCase(),
    });
  }
  return [certs, pem(tls.ca, `${name}.ca`, true)];
}

module.exports = { DEFAULTS, normalizeOptions, nativeOptions, topicHistoryOption, tlsArgs, tlsSummary, isBytes };
