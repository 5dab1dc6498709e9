'use strict';
// What symphony.v2 clients ask (docs/protocol.md, "Clients ask"): the IO
// threads parse and check each ask, answer what needs no decision (limits,
// malformed frames, a topic held already, an unsubscribe) and hand the rest
// here as EV_ASK events (src/io/sy_ask.h). This module asks the
// application's hooks (onSubscribe, onPublish, onRequest), bounds each by
// askTimeout, and answers through the binding; an answer for an ask the
// client dropped meanwhile (it unsubscribed, it went) is dropped, here and
// natively.
//
// Pending asks are kept per connection only while they wait: a connection
// that asks nothing costs nothing here.

const { ClientError } = require('./errors');

const ASK_BINARY = 1; // SY_ASK_BINARY
const ASK_RESUB = 2; // SY_ASK_RESUB

/** A refusal or error as the client gets it: { code, reason }. */
function refusal(code, reason) {
  return { code, reason };
}

/** The JSON text of a notice ("c" + JSON). */
function notice(obj) {
  return `c${JSON.stringify(obj)}`;
}

/**
 * What a hook's answer means: { ok: true, options } or { ok: false, code, reason }.
 * true / an object without `code` grant; false, null, undefined refuse
 * ('forbidden'); { code, reason } refuses with those.
 */
function decision(result) {
  if (result === true) return { ok: true, options: {} };
  if (result === false || result === null || result === undefined) {
    return { ok: false, ...refusal('forbidden', 'refused by the application') };
  }
  if (typeof result === 'object' && !Buffer.isBuffer(result)) {
    if (result.code !== undefined) {
      return { ok: false, ...refusal(String(result.code), result.reason === undefined ? '' : String(result.reason)) };
    }
    return { ok: true, options: result };
  }
  return { ok: false, ...refusal('internal', 'the application answered neither true, false nor an object') };
}

/** What a thrown error or rejection tells the client: a ClientError's code and message, else 'internal'. */
function thrown(err) {
  if (err instanceof ClientError) return refusal(err.code, err.message);
  return refusal('internal', 'internal error');
}

class Asks {
  #hooks; // { onSubscribe, onPublish, onRequest }
  #timeout; // ms
  #io; // { answer(id, rid, frame, binary), subscribe(id, rid, topic, since, extra), publish(topic, data), position(topic), owe() }
  #report; // (err) => void: the server's 'error'
  #presence; // lib/presence.js (join, leave)
  // id -> Map(rid -> { kind, topic, timer, gone }): the asks waiting for a hook.
  #pending = new Map();

  constructor(hooks, timeout, io, report, presence) {
    this.#hooks = hooks;
    this.#timeout = timeout;
    this.#io = io;
    this.#report = report;
    this.#presence = presence;
  }

  /** An EV_ASK: code = (flags << 8) | kind, parts as src/io/sy_ask.h lists them. */
  ask(id, code, parts) {
    const kind = String.fromCharCode(code & 0xff);
    const flags = code >> 8;
    const rid = Number(parts[0]);
    switch (kind) {
      case 's': {
        const [, topic, since, token, data] = parts;
        let position = null;
        if (since !== '') {
          const colon = since.indexOf(':');
          position = { epoch: since.slice(0, colon), offset: Number(since.slice(colon + 1)) };
        }
        const ctx = {
          since: position,
          token: token === '' ? undefined : token,
          // Checked JSON natively (src/proto/sy_v2.c); parsed here once.
          data: data === '' ? undefined : JSON.parse(data),
          resubscribe: (flags & ASK_RESUB) !== 0,
        };
        this.#run(id, rid, 's', topic, this.#hooks.onSubscribe, [id, topic, ctx],
          (d) => this.#granted(id, rid, topic, position, d.options),
          (r) => this.#answer(id, rid, notice({ type: 'refused', rid, topic, code: r.code, reason: r.reason })),
          refusal('forbidden', 'this server takes no subscribes from clients (no onSubscribe, no tokens)'));
        break;
      }
      case 'P': {
        // A publish its token granted on the IO thread: no hook to ask.
        const [, topic, data] = parts;
        this.#published(id, rid, topic, data);
        break;
      }
      case 'p': {
        const [, topic, data] = parts;
        this.#run(id, rid, 'p', topic, this.#hooks.onPublish, [id, topic, data, { binary: (flags & ASK_BINARY) !== 0 }],
          () => this.#published(id, rid, topic, data),
          (r) => this.#answer(id, rid, notice({ type: 'error', rid, code: r.code, reason: r.reason })),
          refusal('forbidden', 'this server takes no publishes from clients (no onPublish)'));
        break;
      }
      case 'r': {
        const [, data] = parts;
        this.#request(id, rid, data, (flags & ASK_BINARY) !== 0);
        break;
      }
      case 'S': {
        // A token granted it on the IO thread (told for presence only).
        this.#presence.join(id, parts[1]);
        break;
      }
      case 'u': {
        // Done natively: what waits for that topic is dropped.
        const [, topic] = parts;
        const mine = this.#pending.get(id);
        if (mine) {
          for (const [r, p] of mine) {
            if (p.kind === 's' && p.topic === topic) this.#settle(id, r);
          }
        }
        this.#presence.leave(id, topic);
        break;
      }
      default:
        break;
    }
  }

  /** The connection closed: what it waited for is dropped. */
  closed(id) {
    const mine = this.#pending.get(id);
    if (!mine) return;
    for (const p of mine.values()) clearTimeout(p.timer);
    this.#pending.delete(id);
  }

  /**
   * Asks hook(...args) within the timeout; calls grant(decision) or
   * refuse({ code, reason }) once, unless the ask was dropped meanwhile.
   */
  #run(id, rid, kind, topic, hook, args, grant, refuse, none) {
    if (typeof hook !== 'function') {
      refuse(none);
      return;
    }
    const decide = (value, failed) => {
      if (failed) {
        if (!(value instanceof ClientError)) this.#report(value);
        refuse(thrown(value));
        return;
      }
      const d = decision(value);
      if (d.ok) grant(d);
      else refuse(d);
    };
    let result;
    try {
      result = hook(...args);
    } catch (err) {
      decide(err, true);
      return;
    }
    if (result === null || typeof result !== 'object' || typeof result.then !== 'function') {
      // Answered at once: nothing to keep, no timer.
      decide(result, false);
      return;
    }
    // A Promise: pending (an unsubscribe or the connection's end drops it)
    // until it settles or askTimeout passes.
    const p = this.#hold(id, rid, kind, topic, () => refuse(refusal('timeout', 'the application did not answer in time')));
    const done = (value, failed) => {
      if (p.gone) return;
      this.#settle(id, rid);
      decide(value, failed);
    };
    result.then((v) => done(v, false), (e) => done(e, true));
  }

  /** Keeps an ask pending with its timer (onTimeout answers and drops it). */
  #hold(id, rid, kind, topic, onTimeout) {
    let mine = this.#pending.get(id);
    if (!mine) this.#pending.set(id, (mine = new Map()));
    const p = { kind, topic, gone: false, timer: null };
    p.timer = setTimeout(() => {
      if (p.gone) return;
      this.#settle(id, rid);
      onTimeout();
    }, this.#timeout);
    p.timer.unref?.();
    mine.set(rid, p);
    return p;
  }

  #settle(id, rid) {
    const mine = this.#pending.get(id);
    const p = mine && mine.get(rid);
    if (!p) return;
    p.gone = true;
    clearTimeout(p.timer);
    mine.delete(rid);
    if (mine.size === 0) this.#pending.delete(id);
  }

  #answer(id, rid, frame, binary = false) {
    this.#io.answer(id, rid, frame, binary);
  }

  #granted(id, rid, topic, since, options) {
    let extra = `,"rid":${rid}`;
    if (options.data !== undefined) {
      const data = JSON.stringify(options.data);
      if (data !== undefined) extra += `,"data":${data}`;
    }
    let ok;
    try {
      ok = this.#io.subscribe(id, rid, topic, since, extra);
    } catch (err) {
      // The hook's data over the notice's room (RangeError): refused, said.
      this.#report(err);
      this.#answer(id, rid, notice({ type: 'refused', rid, topic, code: 'internal', reason: 'internal error' }));
      return;
    }
    if (ok) this.#presence.join(id, topic);
  }

  #published(id, rid, topic, data) {
    this.#io.publish(topic, data);
    const answer = { type: 'published', rid };
    const pos = this.#io.position(topic);
    if (pos !== null) {
      answer.epoch = pos.epoch;
      answer.offset = String(pos.offset);
    }
    this.#answer(id, rid, notice(answer));
  }

  #request(id, rid, data, binary) {
    const hook = this.#hooks.onRequest;
    const fail = (r) => this.#answer(id, rid, notice({ type: 'error', rid, code: r.code, reason: r.reason }));
    if (typeof hook !== 'function') {
      fail(refusal('unsupported', 'this server takes no requests (no onRequest)'));
      return;
    }
    const p = this.#hold(id, rid, 'r', null, () => fail(refusal('timeout', 'the application did not answer in time')));
    const reply = (value) => {
      if (p.gone) return;
      this.#settle(id, rid);
      if (value instanceof Uint8Array) {
        const head = Buffer.from(`r${rid}\n`);
        this.#answer(id, rid, Buffer.concat([head, value]), true);
        return;
      }
      const json = JSON.stringify(value === undefined ? null : value);
      if (json === undefined) {
        fail(refusal('internal', 'the reply cannot be sent as JSON'));
        return;
      }
      this.#answer(id, rid, `r${rid}\n${json}`);
    };
    const failed = (err) => {
      if (p.gone) return;
      this.#settle(id, rid);
      if (!(err instanceof ClientError)) this.#report(err);
      fail(thrown(err));
    };
    let result;
    try {
      result = hook(id, data, { binary });
    } catch (err) {
      failed(err);
      return;
    }
    if (result !== null && typeof result === 'object' && typeof result.then === 'function') result.then(reply, failed);
    else reply(result);
  }
}

module.exports = { Asks };
