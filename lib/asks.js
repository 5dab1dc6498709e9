'use strict';
// What symphony.v2 clients ask (docs/protocol.md, "Clients ask"): the IO
// threads parse and check each ask, answer what needs no decision (limits,
// malformed frames, a topic held already, an unsubscribe) and hand the rest
// here as EV_ASK events (src/io/app/sy_ask.h). This module asks the
// application's hooks (onSubscribe, onPublish, onRequest), bounds each by
// askTimeout, and answers through the binding; an answer for an ask the
// client dropped meanwhile (it unsubscribed, it went) is dropped, here and
// natively.
//
// Pending asks are kept per connection only while they wait: a connection
// that asks nothing costs nothing here.
//
// Nothing a hook answers can throw out of here: an answer that cannot be
// written (JSON.stringify throws on a BigInt, a cycle, nesting too deep, a
// toJSON that throws; or the answer cannot be queued) reaches the client as
// the 'internal' refusal or error, and the server's 'error' as a HookError
// naming the hook, the connection and the topic. Sync and async hooks alike:
// an async hook's answer is handled inside its .then callbacks, which never
// throw (no unhandled rejection).

const { ClientError, HookError } = require('./errors');

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
  return INTERNAL;
}

const INTERNAL = Object.freeze(refusal('internal', 'internal error'));

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

  /** An EV_ASK: code = (flags << 8) | kind, parts as src/io/app/sy_ask.h lists them. */
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
        let value;
        try {
          // Checked JSON natively (src/proto/sy_v2.c); parsed here once.
          value = data === '' ? undefined : JSON.parse(data);
        } catch {
          // Valid JSON this engine cannot hold (nesting past its stack).
          this.#answer(id, rid, notice({ type: 'refused', rid, topic, code: 'bad-request', reason: 'data cannot be read' }));
          break;
        }
        const ctx = {
          since: position,
          token: token === '' ? undefined : token,
          data: value,
          resubscribe: (flags & ASK_RESUB) !== 0,
        };
        this.#run(id, rid, 's', topic, 'onSubscribe', [id, topic, ctx],
          (d) => this.#granted(id, rid, topic, position, d.options),
          (r) => this.#answer(id, rid, notice({ type: 'refused', rid, topic, code: r.code, reason: r.reason })),
          refusal('forbidden', 'this server takes no subscribes from clients (no onSubscribe, no tokens)'));
        break;
      }
      case 'P': {
        // A publish its token granted on the IO thread: no hook to ask.
        const [, topic, data] = parts;
        try {
          this.#published(id, rid, topic, data);
        } catch (err) {
          // Nothing here may throw into the event batch: said, answered.
          this.#report(err);
          this.#answer(id, rid, notice({ type: 'error', rid, ...INTERNAL }));
        }
        break;
      }
      case 'p': {
        const [, topic, data] = parts;
        this.#run(id, rid, 'p', topic, 'onPublish', [id, topic, data, { binary: (flags & ASK_BINARY) !== 0 }],
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

  /** A hook's answer could not reach the client: the server's 'error' hears why. */
  #failed(hook, id, topic, cause) {
    try {
      this.#report(new HookError(hook, id, topic, cause));
    } catch (err) {
      // An 'error' listener that throws: as a throwing listener of any
      // other event, an uncaught exception, never from inside an answer.
      process.nextTick(() => { throw err; });
    }
  }

  /**
   * Asks the hook named `name` (...args) within the timeout; calls
   * grant(decision) or refuse({ code, reason }) once, unless the ask was
   * dropped meanwhile. Neither throws out of here (#failed, 'internal').
   */
  #run(id, rid, kind, topic, name, args, grant, refuse, none) {
    const hook = this.#hooks[name];
    if (typeof hook !== 'function') {
      refuse(none);
      return;
    }
    const decide = (value, failed) => {
      try {
        if (failed) {
          // Said with what threw it: the hook, the connection, the topic.
          if (!(value instanceof ClientError)) this.#report(new HookError(name, id, topic, value, true));
          refuse(thrown(value));
          return;
        }
        const d = decision(value);
        if (d.ok) grant(d);
        else refuse(d);
      } catch (err) {
        // An answer that could not be read or sent (a getter or toString
        // that throws, a binding that refused it).
        this.#failed(name, id, topic, err);
        try {
          refuse(INTERNAL);
        } catch (again) {
          this.#failed(name, id, topic, again);
        }
      }
    };
    let result, then;
    try {
      result = hook(...args);
      then = result !== null && typeof result === 'object' ? result.then : undefined;
    } catch (err) {
      decide(err, true);
      return;
    }
    if (typeof then !== 'function') {
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
    try {
      then.call(result, (v) => done(v, false), (e) => done(e, true));
    } catch (err) {
      done(err, true);
    }
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
    let ok;
    try {
      // { data } as JSON: it may not be writable (a BigInt, a cycle, a
      // client's 200,000-level data echoed back, a toJSON that throws).
      const value = options.data;
      if (value !== undefined) {
        const data = JSON.stringify(value);
        if (data !== undefined) extra += `,"data":${data}`;
      }
      ok = this.#io.subscribe(id, rid, topic, since, extra);
    } catch (err) {
      // Not written, or over the notice's room (RangeError): refused, said.
      this.#failed('onSubscribe', id, topic, err);
      this.#answer(id, rid, notice({ type: 'refused', rid, topic, ...INTERNAL }));
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
    // The reply as its frame; throws when it cannot be written.
    const frame = (value) => {
      if (value instanceof Uint8Array) return Buffer.concat([Buffer.from(`r${rid}\n`), value]);
      const json = JSON.stringify(value === undefined ? null : value);
      if (json === undefined) throw new TypeError(`the reply is not a JSON value (${typeof value})`);
      return `r${rid}\n${json}`;
    };
    const reply = (value) => {
      if (p.gone) return;
      this.#settle(id, rid);
      try {
        const f = frame(value);
        this.#answer(id, rid, f, typeof f !== 'string');
      } catch (err) {
        this.#failed('onRequest', id, null, err);
        try {
          fail(INTERNAL);
        } catch (again) {
          this.#failed('onRequest', id, null, again);
        }
      }
    };
    const failed = (err) => {
      if (p.gone) return;
      this.#settle(id, rid);
      try {
        if (!(err instanceof ClientError)) this.#report(new HookError('onRequest', id, null, err, true));
        fail(thrown(err));
      } catch (again) {
        this.#failed('onRequest', id, null, again);
      }
    };
    let result, then;
    try {
      result = hook(id, data, { binary });
      then = result !== null && typeof result === 'object' ? result.then : undefined;
    } catch (err) {
      failed(err);
      return;
    }
    if (typeof then !== 'function') {
      reply(result);
      return;
    }
    try {
      then.call(result, reply, failed);
    } catch (err) {
      failed(err);
    }
  }
}

module.exports = { Asks };
