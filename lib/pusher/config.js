'use strict';
// The `pusher` option of new Server() (docs/pusher.md): the apps (key → id,
// secrets, per-app limits, webhooks) and the protocol's limits, checked and
// filled with their defaults here, once; and Soketi's configuration (its
// environment variables and its --config JSON file) read into the same
// options, so that moving from Soketi is changing one command
// (`npx symphony-ws pusher`, bin/symphony-ws.js).

const fs = require('node:fs');
const { SymphonyError, invalidArgType, invalidArgValue, integer } = require('../errors');

/** The webhook events an app may ask for (Pusher's names). */
const WEBHOOK_EVENTS = ['channel_occupied', 'channel_vacated', 'member_added', 'member_removed', 'client_event', 'cache_miss', 'subscription_count'];

/**
 * The protocol's limits and times, with Pusher's documented defaults
 * (activity timeout 120 s, events of 10 KiB, 10 client events per second,
 * 100 channels per event, batches of 10, 100 members of 1 KiB each), but
 * names of 200 characters as Soketi allows (Pusher documents 164 for a
 * channel; a longer one breaks nothing). The standalone server started with
 * Soketi's settings (fromSoketi) takes Soketi's defaults where they are
 * larger, so an application moving from Soketi keeps working.
 */
const LIMITS = {
  activityTimeout: [120, 1, 3600],             // s: what connection_established tells the client
  maxChannelNameLength: [200, 1, 1024],        // characters
  maxEventNameLength: [200, 1, 1024],          // characters
  maxEventBytes: [10 * 1024, 1, 64 << 20],     // one event's data, as sent by a client or the HTTP API
  maxChannelsPerEvent: [100, 1, 1000],         // channels of one HTTP API event
  maxBatchSize: [10, 1, 1000],                 // events of one /batch_events
  maxPresenceMembers: [100, 1, 1 << 20],       // members of one presence channel
  maxPresenceMemberBytes: [1024, 1, 1 << 20],  // one member's user_info, as JSON
  userAuthenticationTimeout: [30000, 0, 3600000], // ms a connection of an app with user
                                               // authentication may stay without pusher:signin; 0: forever
  cacheTtl: [1800, 0, 31 * 86400],             // s a cache channel keeps its last event (Pusher: 30 min); 0: no limit
  vacateDelay: [3000, 0, 3600000],             // ms a node keeps a channel's last subscriber before it leaves
                                               // (channel_vacated; Pusher: up to 3 s); 0: at once
};

/** Per-app settings and their defaults (0: no limit). */
const APP_LIMITS = {
  maxConnections: [0, 0, 2 ** 32 - 1],
  maxClientEventsPerSecond: [10, 0, 1e6],
  maxBackendEventsPerSecond: [0, 0, 1e9],
  maxReadRequestsPerSecond: [0, 0, 1e9],
};

const KEY_RE = /^[A-Za-z0-9_.-]{1,128}$/;

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A count that Soketi writes as -1 (or a string) for "no limit": 0 here. */
function limitOf(name, value, [dflt, min, max]) {
  if (value === undefined || value === null) return dflt;
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) value = Number(value);
  if (value === -1) return 0;
  return integer(name, value, min, max);
}

function boolOf(name, value, dflt) {
  if (value === undefined || value === null) return dflt;
  if (value === 'true' || value === '1' || value === 1) return true;
  if (value === 'false' || value === '0' || value === 0) return false;
  if (typeof value !== 'boolean') throw invalidArgType(name, 'of type boolean', value);
  return value;
}

function webhooksOf(name, list) {
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw invalidArgType(name, 'an array', list);
  return list.map((h, i) => {
    const at = `${name}[${i}]`;
    if (!isObject(h)) throw invalidArgType(at, 'an object', h);
    let url;
    try {
      url = new URL(h.url);
    } catch {
      throw invalidArgValue(`${at}.url`, 'must be an http:// or https:// URL', h.url);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw invalidArgValue(`${at}.url`, 'must be an http:// or https:// URL', h.url);
    }
    if (h.lambda_function !== undefined || h.lambda !== undefined) {
      throw invalidArgValue(at, 'is an AWS Lambda webhook, which symphony does not call: give it an url', 'lambda');
    }
    const types = h.event_types ?? h.eventTypes;
    if (!Array.isArray(types) || types.length === 0) throw invalidArgType(`${at}.event_types`, 'a non-empty array of event names', types);
    for (const t of types) {
      if (!WEBHOOK_EVENTS.includes(t)) throw invalidArgValue(`${at}.event_types`, `may name only ${WEBHOOK_EVENTS.join(', ')}`, t);
    }
    const headers = h.headers ?? {};
    if (!isObject(headers) || Object.values(headers).some((v) => typeof v !== 'string')) {
      throw invalidArgType(`${at}.headers`, 'an object of strings', headers);
    }
    const filter = h.filter ?? {};
    if (!isObject(filter)) throw invalidArgType(`${at}.filter`, 'an object', filter);
    const prefix = filter.channel_name_starts_with ?? filter.channelNameStartsWith ?? null;
    const suffix = filter.channel_name_ends_with ?? filter.channelNameEndsWith ?? null;
    for (const [k, v] of [['channel_name_starts_with', prefix], ['channel_name_ends_with', suffix]]) {
      if (v !== null && typeof v !== 'string') throw invalidArgType(`${at}.filter.${k}`, 'a string', v);
    }
    return { url: url.href, eventTypes: [...new Set(types)], headers: { ...headers }, filter: { startsWith: prefix, endsWith: suffix } };
  });
}

function appOf(name, a) {
  if (!isObject(a)) throw invalidArgType(name, 'an object', a);
  const id = typeof a.id === 'number' && Number.isSafeInteger(a.id) && a.id >= 0 ? String(a.id) : a.id;
  if (typeof id !== 'string' || !KEY_RE.test(id)) {
    throw invalidArgValue(`${name}.id`, 'must be 1 to 128 characters of A-Z, a-z, 0-9, "_", "." or "-"', a.id);
  }
  if (typeof a.key !== 'string' || !KEY_RE.test(a.key)) {
    throw invalidArgValue(`${name}.key`, 'must be 1 to 128 characters of A-Z, a-z, 0-9, "_", "." or "-"', a.key);
  }
  // Several secrets: the first signs (webhooks), every one is accepted
  // (signatures of clients' auth and of HTTP API requests), so a secret can
  // be rotated without a moment when some signers are refused.
  const secrets = typeof a.secret === 'string' ? [a.secret] : a.secret;
  if (!Array.isArray(secrets) || secrets.length === 0 || secrets.length > 4 ||
      secrets.some((s) => typeof s !== 'string' || s.length === 0 || s.length > 1024)) {
    throw invalidArgValue(`${name}.secret`, 'must be a string of 1 to 1024 characters, or an array of 1 to 4 of them (the first signs, all verify)', a.secret);
  }
  const app = {
    id,
    key: a.key,
    secrets: [...secrets],
    enabled: boolOf(`${name}.enabled`, a.enabled, true),
    enableClientMessages: boolOf(`${name}.enableClientMessages`, a.enableClientMessages, false),
    enableUserAuthentication: boolOf(`${name}.enableUserAuthentication`, a.enableUserAuthentication, false),
    webhooks: webhooksOf(`${name}.webhooks`, a.webhooks),
  };
  for (const [k, spec] of Object.entries(APP_LIMITS)) app[k] = limitOf(`${name}.${k}`, a[k], spec);
  return app;
}

/**
 * The `pusher` option, checked: null (no Pusher protocol) or
 * { apps, pathPrefix, ...LIMITS } with every default filled in. Throws the
 * TypeError or RangeError that names the field.
 */
function pusherOptions(value) {
  if (value === undefined || value === null || value === false) return null;
  if (!isObject(value)) throw invalidArgType('pusher', 'an object', value);
  const apps = value.apps;
  if (!Array.isArray(apps) || apps.length === 0) throw invalidArgType('pusher.apps', 'a non-empty array of { id, key, secret }', apps);
  if (apps.length > 4096) throw invalidArgValue('pusher.apps', 'has more than 4096 apps', apps.length);
  const out = { apps: apps.map((a, i) => appOf(`pusher.apps[${i}]`, a)) };
  for (const field of ['id', 'key']) {
    const seen = new Set();
    for (const a of out.apps) {
      if (seen.has(a[field])) throw invalidArgValue('pusher.apps', `has two apps with the ${field} "${a[field]}"`, a[field]);
      seen.add(a[field]);
    }
  }
  const prefix = value.pathPrefix ?? '';
  if (typeof prefix !== 'string' || !/^(\/[A-Za-z0-9_.~-]+)*$/.test(prefix)) {
    throw invalidArgValue('pusher.pathPrefix', 'must be "" or a path like "/ws" (no trailing slash)', prefix);
  }
  out.pathPrefix = prefix;
  for (const [k, spec] of Object.entries(LIMITS)) out[k] = limitOf(`pusher.${k}`, value[k], spec);
  out.webhookBatching = boolOf('pusher.webhookBatching', value.webhookBatching, false);
  return out;
}

/**
 * Soketi's settings that mean the same here: the name after SOKETI_ in its
 * environment, the dotted key of its --config file, and where the value
 * goes in symphony's options. The value's reading (number, boolean, JSON) is
 * the target's check's.
 */
const SOKETI = [
  ['HOST', 'host', 'host'],
  ['PORT', 'port', 'port'],
  ['PATH_PREFIX', 'pathPrefix', 'pusher.pathPrefix'],
  ['DEBUG', 'debug', 'debug'],
  ['DEFAULT_APP_ID', 'appManager.array.apps.0.id', 'app.id'],
  ['DEFAULT_APP_KEY', 'appManager.array.apps.0.key', 'app.key'],
  ['DEFAULT_APP_SECRET', 'appManager.array.apps.0.secret', 'app.secret'],
  ['DEFAULT_APP_MAX_CONNS', 'appManager.array.apps.0.maxConnections', 'app.maxConnections'],
  ['DEFAULT_APP_ENABLE_CLIENT_MESSAGES', 'appManager.array.apps.0.enableClientMessages', 'app.enableClientMessages'],
  ['DEFAULT_APP_ENABLED', 'appManager.array.apps.0.enabled', 'app.enabled'],
  ['DEFAULT_APP_MAX_BACKEND_EVENTS_PER_SEC', 'appManager.array.apps.0.maxBackendEventsPerSecond', 'app.maxBackendEventsPerSecond'],
  ['DEFAULT_APP_MAX_CLIENT_EVENTS_PER_SEC', 'appManager.array.apps.0.maxClientEventsPerSecond', 'app.maxClientEventsPerSecond'],
  ['DEFAULT_APP_MAX_READ_REQ_PER_SEC', 'appManager.array.apps.0.maxReadRequestsPerSecond', 'app.maxReadRequestsPerSecond'],
  ['DEFAULT_APP_USER_AUTHENTICATION', 'appManager.array.apps.0.enableUserAuthentication', 'app.enableUserAuthentication'],
  ['DEFAULT_APP_WEBHOOKS', 'appManager.array.apps.0.webhooks', 'app.webhooks'],
  ['CHANNEL_LIMITS_MAX_NAME_LENGTH', 'channelLimits.maxNameLength', 'pusher.maxChannelNameLength'],
  ['CHANNEL_CACHE_TTL', 'channelLimits.cacheTtl', 'pusher.cacheTtl'],
  ['EVENT_MAX_BATCH_SIZE', 'eventLimits.maxBatchSize', 'pusher.maxBatchSize'],
  ['EVENT_MAX_CHANNELS_AT_ONCE', 'eventLimits.maxChannelsAtOnce', 'pusher.maxChannelsPerEvent'],
  ['EVENT_MAX_NAME_LENGTH', 'eventLimits.maxNameLength', 'pusher.maxEventNameLength'],
  ['EVENT_MAX_SIZE_IN_KB', 'eventLimits.maxPayloadInKb', 'pusher.maxEventBytes', 1024],
  ['PRESENCE_MAX_MEMBER_SIZE', 'presence.maxMemberSizeInKb', 'pusher.maxPresenceMemberBytes', 1024],
  ['PRESENCE_MAX_MEMBERS', 'presence.maxMembersPerChannel', 'pusher.maxPresenceMembers'],
  ['USER_AUTHENTICATION_TIMEOUT', 'userAuthenticationTimeout', 'pusher.userAuthenticationTimeout'],
  ['WEBHOOKS_BATCHING', 'webhooks.batching.enabled', 'pusher.webhookBatching'],
  ['SHUTDOWN_GRACE_PERIOD', 'shutdownGracePeriod', 'closeDeadline'],
  ['SSL_CERT', 'ssl.certPath', 'tls.cert', 'file'],
  ['SSL_KEY', 'ssl.keyPath', 'tls.key', 'file'],
  ['SSL_PASS', 'ssl.passphrase', 'tls.passphrase'],
  ['SSL_CA', 'ssl.caPath', 'tls.ca', 'file'],
  ['ADAPTER_DRIVER', 'adapter.driver', 'adapter'],
  ['ADAPTER_REDIS_PREFIX', 'adapter.redis.prefix', 'bus.prefix'],
  ['ADAPTER_REDIS_CLUSTER_MODE', 'adapter.redis.clusterMode', 'redis.cluster'],
  ['DB_REDIS_HOST', 'database.redis.host', 'redis.host'],
  ['DB_REDIS_PORT', 'database.redis.port', 'redis.port'],
  ['DB_REDIS_DB', 'database.redis.db', 'redis.db'],
  ['DB_REDIS_USERNAME', 'database.redis.username', 'redis.username'],
  ['DB_REDIS_PASSWORD', 'database.redis.password', 'redis.password'],
  ['DB_REDIS_SENTINELS', 'database.redis.sentinels', 'redis.sentinels'],
  ['DB_REDIS_INSTANCE_NAME', 'database.redis.name', 'redis.name'],
  ['DB_REDIS_CLUSTER_NODES', 'database.redis.clusterNodes', 'redis.clusterNodes'],
  ['METRICS_ENABLED', 'metrics.enabled', 'metrics.enabled'],
  ['METRICS_HOST', 'metrics.host', 'metrics.host'],
  ['METRICS_SERVER_PORT', 'metrics.port', 'metrics.port'],
  ['MODE', 'mode', 'mode'],
  ['APP_MANAGER_DRIVER', 'appManager.driver', 'appManager'],
];

/**
 * Soketi's settings with no counterpart here, and why it does not matter
 * (printed once at start by the standalone server, never an error: a
 * Soketi deployment's environment keeps working as it is).
 */
const SOKETI_IGNORED = [
  [/^(CACHE_|DB_POOLING_|APP_MANAGER_CACHE_|RATE_LIMITER_)/, 'symphony keeps apps, caches and rate limits in its own memory'],
  [/^(QUEUE_|WEBHOOKS_BATCHING_DURATION$)/, 'webhooks are sent by the server itself, batched per event loop turn'],
  [/^(CLUSTER_|ADAPTER_CLUSTER_|ADAPTER_REDIS_(REQUESTS_TIMEOUT|SUB_OPTIONS|PUB_OPTIONS)$)/, 'nodes meet over Redis (the bus), not by UDP discovery'],
  [/^(METRICS_DRIVER|METRICS_PROMETHEUS_PREFIX)$/, 'metrics are Prometheus text with symphony_ names'],
  [/^HTTP_ACCEPT_TRAFFIC_MEMORY_THRESHOLD$/, 'symphony limits memory per connection (maxBackpressure) and gives it back'],
];

class ConfigError extends SymphonyError {
  constructor(message) {
    super('ERR_SYMPHONY_CONFIG', message);
    this.name = 'ConfigError';
  }
}

/** A dotted key's value in a Soketi config object, flat ("a.b.c": v) or nested. */
function dotted(obj, key) {
  if (Object.hasOwn(obj, key)) return obj[key];
  const parts = key.split('.');
  for (let i = parts.length - 1; i > 0; i--) {
    const head = parts.slice(0, i).join('.');
    if (Object.hasOwn(obj, head) && obj[head] !== null && typeof obj[head] === 'object') {
      const v = dotted(obj[head], parts.slice(i).join('.'));
      if (v !== undefined) return v;
    }
  }
  return undefined;
}

/** Soketi reads every environment value as JSON when it parses, else as a string. */
function envValue(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Server options from Soketi's configuration: `env` (process.env: the
 * SOKETI_* variables) over `file` (the parsed --config JSON). Returns
 * { options, ignored, debug, metrics } where options are new Server()'s
 * (with `pusher`), ignored lists "NAME: why" for the settings that have no
 * counterpart, metrics is { host, port } or null. Throws a ConfigError for a
 * setting whose value symphony cannot honour (another app manager, another
 * adapter, a file that cannot be read).
 */
function fromSoketi({ env = {}, file = {} } = {}) {
  const got = {};
  const ignored = [];
  for (const [name, key, target, kind] of SOKETI) {
    let v = env[`SOKETI_${name}`] !== undefined ? envValue(env[`SOKETI_${name}`]) : dotted(file, key);
    if (v === undefined || v === null || v === '') continue;
    if (kind === 1024) v = limitOf(`SOKETI_${name}`, v, [0, 0, 1 << 20]) * 1024;
    if (kind === 'file') {
      try {
        v = fs.readFileSync(String(v));
      } catch (e) {
        throw new ConfigError(`SOKETI_${name} (${key}): cannot read ${v}: ${e.message}`);
      }
    }
    got[target] = v;
  }
  for (const name of Object.keys(env)) {
    if (!name.startsWith('SOKETI_')) continue;
    const rest = name.slice(7);
    if (SOKETI.some(([n]) => n === rest)) continue;
    const why = SOKETI_IGNORED.find(([re]) => re.test(rest));
    ignored.push(`${name}: ${why ? why[1] : 'not a setting symphony knows (Soketi 1.6 has no such name either?)'}`);
  }
  if (got.appManager !== undefined && got.appManager !== 'array') {
    throw new ConfigError(`SOKETI_APP_MANAGER_DRIVER=${got.appManager}: symphony reads apps from its options or a JSON file (--config with "appManager.array.apps"), not from ${got.appManager}`);
  }
  if (got.mode !== undefined && got.mode !== 'full') {
    throw new ConfigError(`SOKETI_MODE=${got.mode}: symphony has one mode (full: WebSockets and the HTTP API on one port)`);
  }
  const adapter = got.adapter ?? 'local';
  if (!['local', 'redis', 'cluster'].includes(adapter)) {
    throw new ConfigError(`SOKETI_ADAPTER_DRIVER=${adapter}: symphony's nodes meet over Redis (redis) or not at all (local)`);
  }
  if (adapter === 'cluster') ignored.push('SOKETI_ADAPTER_DRIVER=cluster: one node (local); nodes meet over Redis: use redis');

  // The apps: the file's array, with the SOKETI_DEFAULT_APP_* variables over
  // its first one (as Soketi does); Soketi's built-in default app when none.
  const fileApps = dotted(file, 'appManager.array.apps');
  const apps = Array.isArray(fileApps) && fileApps.length > 0 ? fileApps.map((a) => ({ ...a })) : [{ id: 'app-id', key: 'app-key', secret: 'app-secret' }];
  for (const [target, v] of Object.entries(got)) {
    if (target.startsWith('app.')) apps[0][target.slice(4)] = v;
  }
  // Soketi's defaults where they differ from Pusher's (and so from
  // pusherOptions'): client events unlimited, events of 100 KiB, members of 2 KiB.
  for (const a of apps) if (a.maxClientEventsPerSecond === undefined) a.maxClientEventsPerSecond = -1;

  const options = { host: got.host ?? '0.0.0.0', port: Number(got.port ?? 6001),
    pusher: { apps, maxEventBytes: 100 * 1024, maxPresenceMemberBytes: 2 * 1024 } };
  for (const [target, v] of Object.entries(got)) {
    if (target.startsWith('pusher.')) options.pusher[target.slice(7)] = v;
  }
  if (got.closeDeadline !== undefined) options.closeDeadline = Number(got.closeDeadline);
  if (got['tls.cert'] !== undefined || got['tls.key'] !== undefined) {
    if (got['tls.cert'] === undefined || got['tls.key'] === undefined) throw new ConfigError('SOKETI_SSL_CERT and SOKETI_SSL_KEY go together');
    options.tls = { cert: got['tls.cert'], key: got['tls.key'] };
    if (got['tls.passphrase'] !== undefined) options.tls.passphrase = String(got['tls.passphrase']);
    if (got['tls.ca'] !== undefined) options.tls.ca = got['tls.ca'];
  }
  if (adapter === 'redis') options.bus = redisBus(got);
  const metrics = boolOf('SOKETI_METRICS_ENABLED', got['metrics.enabled'], false)
    ? { host: String(got['metrics.host'] ?? '0.0.0.0'), port: Number(got['metrics.port'] ?? 9601) }
    : null;
  return { options, ignored, debug: boolOf('SOKETI_DEBUG', got.debug, false), metrics };
}

/** The bus options from Soketi's Redis settings. */
function redisBus(got) {
  const user = got['redis.username'] ? encodeURIComponent(String(got['redis.username'])) : '';
  const pass = got['redis.password'] ? encodeURIComponent(String(got['redis.password'])) : '';
  const auth = user || pass ? `${user}${pass ? `:${pass}` : ''}@` : '';
  const db = got['redis.db'] !== undefined && String(got['redis.db']) !== '0' ? `/${got['redis.db']}` : '';
  const bus = {};
  if (got['bus.prefix'] !== undefined) bus.prefix = String(got['bus.prefix']);
  const nodes = got['redis.clusterNodes'];
  const cluster = boolOf('SOKETI_ADAPTER_REDIS_CLUSTER_MODE', got['redis.cluster'], false);
  if (cluster) {
    const list = Array.isArray(nodes) ? nodes : typeof nodes === 'string' ? nodes.split(',') : [];
    if (list.length === 0) throw new ConfigError('SOKETI_ADAPTER_REDIS_CLUSTER_MODE needs SOKETI_DB_REDIS_CLUSTER_NODES (host:port,...)');
    bus.url = list.map((n) => (typeof n === 'string' ? `redis://${auth}${n.trim()}` : `redis://${auth}${n.host}:${n.port}`));
    bus.cluster = true;
    return bus;
  }
  const sentinels = got['redis.sentinels'];
  if (Array.isArray(sentinels) && sentinels.length > 0) {
    bus.sentinels = sentinels.map((s) => (typeof s === 'string' ? `redis://${s}` : { host: String(s.host), port: Number(s.port ?? 26379) }));
    bus.name = String(got['redis.name'] ?? 'mymaster');
    // The data nodes' credentials and database (the url's host is not used:
    // the sentinels name the primary).
    if (auth || db) bus.url = `redis://${auth}primary${db}`;
    return bus;
  }
  bus.url = `redis://${auth}${got['redis.host'] ?? '127.0.0.1'}:${got['redis.port'] ?? 6379}${db}`;
  return bus;
}

module.exports = { pusherOptions, fromSoketi, ConfigError, WEBHOOK_EVENTS, LIMITS, APP_LIMITS, SOKETI };
