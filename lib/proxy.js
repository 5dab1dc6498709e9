'use strict';
// The client's real address behind proxies (docs/operations.md, "Behind a load
// balancer"): the options of the PROXY protocol on the native listener
// (read by src/io/wire/sy_peer.c), and trustProxy: the client's address from
// Forwarded (RFC 7239) or X-Forwarded-For, when the immediate peer is a
// proxy we trust. trustProxy runs here, on the JS thread, when onUpgrade is
// asked: what the native code sees (its counters, its limits) is the
// socket's or the PROXY header's address.

const net = require('node:net');
const { invalidArgType, invalidArgValue, outOfRange } = require('./errors');

const PROXY_FROM_MAX = 64; // SY_PROXY_FROM_MAX (src/io/model/sy_io_opts.h)

// Express's names for ranges (proxy-addr), so a trustProxy setting reads the same.
const NAMED = Object.freeze({
  loopback: ['127.0.0.0/8', '::1/128'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
  uniquelocal: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
});

/** "::ffff:10.1.2.3" → "10.1.2.3" (how a dual-stack socket shows an IPv4 peer); else the text. */
function unmap(address) {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m && net.isIPv4(m[1]) ? m[1] : address;
}

/** "10.0.0.0/8", "2001:db8::/32" or one address → { address, prefix, family }; throws naming `name`. */
function parseRange(text, name) {
  if (typeof text !== 'string') throw invalidArgType(name, 'a string (an address or a CIDR range)', text);
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const v = net.isIP(address);
  if (v === 0 || address.includes('%')) {
    throw invalidArgValue(name, 'is not an IP address or a CIDR range (e.g. 10.0.0.0/8, 2001:db8::/32)', text);
  }
  const max = v === 4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const bits = text.slice(slash + 1);
    if (!/^(0|[1-9]\d{0,2})$/.test(bits) || Number(bits) > max) {
      throw outOfRange(name, `a prefix length of 0 to ${max} after '/'`, text);
    }
    prefix = Number(bits);
  }
  return { address, prefix, family: v === 4 ? 'ipv4' : 'ipv6' };
}

/**
 * options.proxyProtocol (false, true, 'optional') and options.proxyProtocolFrom
 * (null or an array of addresses/ranges) → the binding's { mode, from }.
 */
function proxyProtocolOptions(o) {
  const p = o.proxyProtocol;
  if (p !== false && p !== true && p !== 'optional') {
    throw invalidArgValue('options.proxyProtocol', "must be false, true or 'optional'", p);
  }
  const from = o.proxyProtocolFrom;
  if (from !== null) {
    if (!Array.isArray(from)) throw invalidArgType('options.proxyProtocolFrom', 'an array of addresses or CIDR ranges, or null', from);
    if (from.length === 0 || from.length > PROXY_FROM_MAX) {
      throw outOfRange('options.proxyProtocolFrom', `an array of 1 to ${PROXY_FROM_MAX} entries`, from.length);
    }
    from.forEach((r, i) => parseRange(r, `options.proxyProtocolFrom[${i}]`));
    if (p === false) {
      throw invalidArgValue('options.proxyProtocolFrom', 'needs options.proxyProtocol (true or \'optional\')', 'proxyProtocol: false');
    }
  }
  if (p !== false && o.noServer) {
    throw invalidArgValue('options.proxyProtocol', 'needs symphony\'s own listener (with noServer the connection comes through the other server, which read its first bytes)', p);
  }
  return { mode: p === false ? 0 : p === true ? 1 : 2, from: from === null ? null : [...from] };
}

/**
 * options.trustProxy → null (off) or trust(address, hop): is the hop'th
 * address from us (0: the immediate peer) a proxy whose Forwarded /
 * X-Forwarded-For we believe? Express's forms: true (every hop), a number
 * N (the N nearest hops), or addresses/CIDR ranges/'loopback'/'linklocal'/
 * 'uniquelocal' as an array or a comma-separated string.
 */
function trustProxyOption(value) {
  if (value === false) return null;
  if (value === true) return () => true;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 1 || value > 64) throw outOfRange('options.trustProxy', 'an integer >= 1 and <= 64 (hops)', value);
    return (address, hop) => hop < value;
  }
  let list = value;
  if (typeof list === 'string') list = list.split(',').map((s) => s.trim()).filter(Boolean);
  if (!Array.isArray(list) || list.length === 0) {
    throw invalidArgType('options.trustProxy', 'a boolean, a number of hops, or addresses/CIDR ranges (an array or a comma-separated string)', value);
  }
  const blocks = new net.BlockList();
  list.forEach((entry, i) => {
    const name = `options.trustProxy[${i}]`;
    for (const r of NAMED[entry] ?? [entry]) {
      const { address, prefix, family } = parseRange(r, name);
      blocks.addSubnet(address, prefix, family);
    }
  });
  return (address) => {
    const a = unmap(address);
    const v = net.isIP(a);
    return v !== 0 && blocks.check(a, v === 4 ? 'ipv4' : 'ipv6');
  };
}

/** A node ("192.0.2.1", "192.0.2.1:4711", "[2001:db8::1]:4711", "2001:db8::1") → { address, port } or null. */
function node(text) {
  let host = text, port = 0;
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end < 0) return null;
    const rest = host.slice(end + 1);
    host = host.slice(1, end);
    if (rest !== '') {
      if (!/^:\d{1,5}$/.test(rest)) return null;
      port = Number(rest.slice(1));
    }
  } else if (host.indexOf(':') === host.lastIndexOf(':') && host.includes(':')) {
    const at = host.indexOf(':'); // IPv4:port
    if (!/^\d{1,5}$/.test(host.slice(at + 1))) return null;
    port = Number(host.slice(at + 1));
    host = host.slice(0, at);
  }
  if (port > 65535 || net.isIP(host) === 0) return null;
  return { address: host, port };
}

/** Splits s at `sep` outside quoted strings. */
function splitOutsideQuotes(s, sep) {
  const out = [];
  let cur = '', quoted = false;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (quoted && ch === '\\' && i + 1 < s.length) {
      cur += ch + s[++i];
    } else if (ch === '"') {
      quoted = !quoted;
      cur += ch;
    } else if (ch === sep && !quoted) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur);
  return out;
}

/** Forwarded's for= per element, client first (null for an element without one). null: no usable header. */
function forwardedFor(value) {
  const hops = [];
  let any = false;
  for (const element of splitOutsideQuotes(value, ',')) {
    let found = null;
    for (const pair of splitOutsideQuotes(element, ';')) {
      const eq = pair.indexOf('=');
      if (eq < 0 || pair.slice(0, eq).trim().toLowerCase() !== 'for') continue;
      let v = pair.slice(eq + 1).trim();
      if (v.length >= 2 && v.startsWith('"') && v.endsWith('"')) v = v.slice(1, -1).replace(/\\(.)/g, '$1');
      found = v;
    }
    if (found !== null) any = true;
    hops.push(found);
  }
  return any ? hops : null;
}

/**
 * The client's { address, port } for a request whose immediate peer is
 * `peer`: walking from the peer toward the client through Forwarded's for=
 * (or else X-Forwarded-For), each trusted hop hands over to the one before
 * it; the first untrusted hop is the client (Express's rule, proxy-addr).
 * A hop that is not an IP address ("unknown", an obfuscated name) ends the
 * walk at the proxy that reported it. A port is the header's, else 0.
 */
function clientAddress(trust, peer, headers) {
  let hops = null;
  if (headers.forwarded !== undefined) hops = forwardedFor(headers.forwarded);
  if (hops === null && headers['x-forwarded-for'] !== undefined) {
    hops = headers['x-forwarded-for'].split(',').map((s) => s.trim());
  }
  if (hops === null) return peer;
  let current = peer;
  for (let i = 0, j = hops.length - 1; j >= 0; i++, j--) {
    if (!trust(current.address, i)) break;
    const next = hops[j] === null ? null : node(hops[j]);
    if (next === null) break;
    current = next;
  }
  return current;
}

module.exports = { proxyProtocolOptions, trustProxyOption, clientAddress, unmap };
