'use strict';
// options.tokens (docs/tokens.md): the keys the IO threads verify clients'
// tokens (JWT, RFC 7519) with, and what a token must say (audience,
// issuer), made into the binding's arguments. The verification itself is
// native (src/auth/sy_jwt.c): a subscribe whose token grants its topic
// goes live on the IO thread, with no call into JavaScript.

const { KeyObject } = require('node:crypto');
const { invalidArgType, invalidArgValue, integer } = require('./errors');

const TOKENS_KEYS = new Set(['keys', 'audience', 'issuer', 'leeway']);
const KEY_KEYS = new Set(['kid', 'alg', 'secret', 'publicKey', 'jwk', 'jwks']);
const ASYMMETRIC = new Set(['ES256', 'RS256', 'EdDSA']);

function bytesOrString(v) {
  return typeof v === 'string' || Buffer.isBuffer(v) || v instanceof Uint8Array;
}

/** One key as the binding takes it: [kind, kid | null, alg | null, bytes]. */
function nativeKey(k, name) {
  if (k === null || typeof k !== 'object') throw invalidArgType(name, 'an object', k);
  for (const key of Object.keys(k)) {
    if (!KEY_KEYS.has(key)) throw invalidArgValue(`${name}.${key}`, 'is not a known key option', key);
  }
  if (k.kid !== undefined && (typeof k.kid !== 'string' || k.kid === '' || Buffer.byteLength(k.kid) > 255)) {
    throw invalidArgType(`${name}.kid`, 'a string of 1 to 255 bytes', k.kid);
  }
  const kid = k.kid ?? null;
  if (k.jwk !== undefined || k.jwks !== undefined) {
    const v = k.jwk ?? k.jwks;
    if (k.secret !== undefined || k.publicKey !== undefined) {
      throw invalidArgValue(name, 'takes one of secret, publicKey, jwk or jwks', 'several');
    }
    const text = typeof v === 'string' ? v : JSON.stringify(v);
    if (typeof text !== 'string') throw invalidArgType(`${name}.${k.jwk !== undefined ? 'jwk' : 'jwks'}`, 'a JWK object or its JSON', v);
    return ['jwk', kid, null, text];
  }
  if (k.alg === 'HS256') {
    if (!bytesOrString(k.secret) || k.secret.length === 0) throw invalidArgType(`${name}.secret`, 'a non-empty string or Buffer', k.secret);
    return ['secret', kid, 'HS256', k.secret];
  }
  if (ASYMMETRIC.has(k.alg)) {
    let pem = k.publicKey;
    if (pem instanceof KeyObject) pem = pem.export({ type: 'spki', format: 'pem' });
    if (!bytesOrString(pem) || pem.length === 0) throw invalidArgType(`${name}.publicKey`, 'a PEM public key (SPKI) or a KeyObject', k.publicKey);
    return ['pem', kid, k.alg, pem];
  }
  throw invalidArgValue(`${name}.alg`, "must be 'HS256', 'ES256', 'RS256' or 'EdDSA' (or give jwk / jwks)", k.alg);
}

function nativeKeys(keys, name) {
  if (!Array.isArray(keys)) throw invalidArgType(name, 'a non-empty array of keys', keys);
  if (keys.length === 0) throw invalidArgValue(name, 'must hold at least one key (with none, every token would be refused)', '[]');
  return keys.map((k, i) => nativeKey(k, `${name}[${i}]`));
}

/** options.tokens, checked: null, or { keys (the binding's), audience, issuer, leeway }. */
function tokensOption(value) {
  if (value === null || value === undefined || value === false) return null;
  if (typeof value !== 'object') throw invalidArgType('options.tokens', 'an object { keys, audience, issuer, leeway }', value);
  for (const key of Object.keys(value)) {
    if (!TOKENS_KEYS.has(key)) throw invalidArgValue(`options.tokens.${key}`, 'is not a known tokens option', key);
  }
  const out = { keys: nativeKeys(value.keys, 'options.tokens.keys'), audience: null, issuer: null, leeway: 0 };
  for (const key of ['audience', 'issuer']) {
    if (value[key] !== undefined && value[key] !== null) {
      if (typeof value[key] !== 'string' || value[key] === '') throw invalidArgType(`options.tokens.${key}`, 'a non-empty string', value[key]);
      out[key] = value[key];
    }
  }
  if (value.leeway !== undefined) out.leeway = integer('options.tokens.leeway', value.leeway, 0, 3600);
  return out;
}

module.exports = { tokensOption, nativeKeys };
