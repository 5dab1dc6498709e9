'use strict';
// The native limits per client address, per connection's inbound rate and
// per connection's work: their defaults, their checks at `new Server` and
// what the binding is given. They hold without JS: a refused address is
// answered by the IO thread before onUpgrade runs, a client over its rate is
// paused (or closed) on the IO thread, and an ask over the work budget is
// refused there. docs/limits.md.

const { binding } = require('./native');
const { invalidArgType, invalidArgValue, outOfRange, integer } = require('./errors');

const { options: RANGES } = binding.constants;

// A burst (and close's grace) lasts at most this long (src/io/sy_ratelimit.h).
const BURST_MAX_SECONDS = 60;

const LIMIT_DEFAULTS = Object.freeze({
  // Open connections per client address (IPv4 address, IPv6 /64 by default);
  // over it: 503. 0: no limit. Off by default: behind a NAT or a proxy without
  // the PROXY protocol, many users share one address.
  maxConnectionsPerAddress: 0,
  // New connections per second per address, in bursts of as many; over it:
  // 429 with Retry-After. 0: no limit.
  upgradeRatePerAddress: 0,
  // The part of an address that names a client: { v4: 1..32, v6: 1..64 }.
  addressPrefix: Object.freeze({ v4: 32, v6: 64 }),
  // Inbound, per connection: messages and payload bytes per second (0: no
  // limit), in bursts of messageBurst / byteBurst (null: one second's worth).
  maxMessagesPerSecond: 0,
  maxBytesPerSecond: 0,
  messageBurst: null,
  byteBurst: null,
  // Over the rate: 'pause' stops reading the connection until it is within
  // its rate again (TCP pushes back on the client; nothing is lost); 'close'
  // closes it (1008) once it is more than rateLimitGrace ms of its rate ahead.
  rateLimit: 'pause',
  rateLimitGrace: 1000,
  // The work one connection may cause on its IO thread, in units a second
  // (about 10 µs of a core each: an ask's entry 1, a token's signature check
  // 1 to 40 by algorithm), in bursts of workBurst (null: one second's worth).
  // Over it, asks are refused 'rate-limited'; asking on, the connection is
  // closed (1008). On by default: one hostile connection costs at most ~2% of
  // a core, and a resubscribe of 1,024 topics with one token fits a burst.
  // 0: no budget. src/io/sy_budget.h's SY_WORK_DEFAULT_PER_S.
  maxWorkPerSecond: 2048,
  workBurst: null,
});

const PREFIX_KEYS = new Set(['v4', 'v6']);

/** Checks o's limit options in place (o: the options with defaults). */
function limitOptions(o) {
  for (const key of ['maxConnectionsPerAddress', 'upgradeRatePerAddress', 'maxMessagesPerSecond', 'maxBytesPerSecond',
    'rateLimitGrace', 'maxWorkPerSecond']) {
    integer(`options.${key}`, o[key], RANGES[key].min, RANGES[key].max);
  }
  o.addressPrefix = prefixOption(o.addressPrefix);
  o.messageBurst = burstOption(o, 'messageBurst', 'maxMessagesPerSecond');
  o.byteBurst = burstOption(o, 'byteBurst', 'maxBytesPerSecond');
  o.workBurst = burstOption(o, 'workBurst', 'maxWorkPerSecond');
  if (o.rateLimit !== 'pause' && o.rateLimit !== 'close') {
    throw invalidArgValue('options.rateLimit', "must be 'pause' or 'close'", o.rateLimit);
  }
  return o;
}

function prefixOption(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgType('options.addressPrefix', 'an object', value);
  }
  for (const k of Object.keys(value)) {
    if (!PREFIX_KEYS.has(k)) throw invalidArgValue(`options.addressPrefix.${k}`, 'is not a known prefix (v4, v6)', k);
  }
  const p = { ...LIMIT_DEFAULTS.addressPrefix };
  for (const k of PREFIX_KEYS) if (value[k] !== undefined) p[k] = value[k];
  integer('options.addressPrefix.v4', p.v4, RANGES.addressPrefixV4.min, RANGES.addressPrefixV4.max);
  integer('options.addressPrefix.v6', p.v6, RANGES.addressPrefixV6.min, RANGES.addressPrefixV6.max);
  return Object.freeze(p);
}

/** A burst: null (one second's worth of the rate), or 1 to a minute's worth. */
function burstOption(o, key, rateKey) {
  if (o[key] === null) return null;
  integer(`options.${key}`, o[key], 1, RANGES[key].max);
  if (o[rateKey] > 0 && o[key] > o[rateKey] * BURST_MAX_SECONDS) {
    throw outOfRange(`options.${key}`, `an integer >= 1 and <= ${BURST_MAX_SECONDS} seconds' worth of ${rateKey} ` +
      `(${o[rateKey] * BURST_MAX_SECONDS})`, o[key]);
  }
  return o[key];
}

/** The binding's fields for them. */
function nativeLimitOptions(o) {
  return {
    maxConnectionsPerAddress: o.maxConnectionsPerAddress,
    upgradeRatePerAddress: o.upgradeRatePerAddress,
    addressPrefixV4: o.addressPrefix.v4,
    addressPrefixV6: o.addressPrefix.v6,
    maxMessagesPerSecond: o.maxMessagesPerSecond,
    messageBurst: o.messageBurst ?? (o.maxMessagesPerSecond || 1), // 1: unused without a rate
    maxBytesPerSecond: o.maxBytesPerSecond,
    byteBurst: o.byteBurst ?? (o.maxBytesPerSecond || 1),
    rateLimit: o.rateLimit === 'close' ? 1 : 0,
    rateLimitGrace: o.rateLimitGrace,
    maxWorkPerSecond: o.maxWorkPerSecond,
    workBurst: o.workBurst ?? (o.maxWorkPerSecond || 1),
  };
}

module.exports = { LIMIT_DEFAULTS, limitOptions, nativeLimitOptions };
