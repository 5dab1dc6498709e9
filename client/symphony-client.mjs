// symphony-ws/client: a WebSocket client of symphony that speaks symphony.v1
// (docs/protocol.md, "symphony.v1: positions and recovery"). It keeps each
// topic's position (epoch, offset), reconnects with exponential backoff and
// full jitter, and on every reconnect says where it was (sy.since), so the
// server replays what it missed, or tells it that it cannot (recovered: false).
//
// One self-contained file: no imports, no Node built-ins, so a browser page
// can import it as it is. symphony-client.cjs is generated from it by
// scripts/client-cjs.js: edit this file only.
//
// Data: a text frame's payload is a string; a binary frame's payload is a
// Uint8Array (a view of the frame's bytes after the header, no copy), in
// browsers and in Node alike (binaryType is set to 'arraybuffer').

export const PROTOCOL = 'symphony.v1';
// symphony.v2: symphony.v1 plus what the client asks (subscribe, unsubscribe,
// publish, request). Offered after symphony.v1, so that a server that knows
// only v1 (and takes the first offered) gives a v1 connection.
export const PROTOCOL_V2 = 'symphony.v2';
const PROTOCOLS = [PROTOCOL, PROTOCOL_V2];
// Refusals worth asking again after a backoff (the others are final).
const TRANSIENT = new Set(['timeout', 'internal', 'too-many-pending', 'pending', 'memory', 'unavailable', 'rate-limited']);
// A subscribe or a call not answered in this long is refused 'timeout' (the
// server answers every ask within its askTimeout, 5 s by default).
const ASK_TIMEOUT = 30000;
// At most this many publishes and requests wait for 'open'.
const MAX_QUEUED = 1024;

// The server refuses more sy.since parameters than this (docs/protocol.md);
// sending more would make every reconnect fail with 400.
const MAX_SINCE = 1024;
const EPOCH = /^[0-9a-fA-F]{16}$/;
// A `p` header: <id> (u32) and, on topics with history, ,<offset> (u64).
const P_HEADER = /^(0|[1-9]\d{0,9})(?:,(0|[1-9]\d{0,19}))?$/;
// The longest header: 'p' + 10 digits + ',' + 20 digits + '\n'. A frame with
// no '\n' that early is malformed; looking no further keeps a huge malformed
// frame from being scanned whole.
const MAX_HEADER = 33;
const noop = () => {};
// A message without a position's info (the same object each time).
const BARE = Object.freeze({ offset: undefined, epoch: undefined });

/** A TypeError/RangeError with a Node-style code, for bad arguments. */
function argError(Ctor, code, message) {
  const err = new Ctor(message);
  err.code = code;
  return err;
}

/** An offset from the wire (decimal string) or from the user (number): a Number, or undefined when not exact. */
function toOffset(v) {
  if (typeof v === 'string') {
    if (!/^(0|[1-9]\d{0,19})$/.test(v)) return undefined;
    v = Number(v);
  }
  // Beyond 2^53-1 a Number is not exact: such a position could not be given
  // back to the server as it was, so the client does not keep it.
  return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
}

/** What a binary message event carries, as a Uint8Array (no copy), or null if it cannot be read at once. */
function toBytes(data) {
  if (data instanceof ArrayBuffer || Object.prototype.toString.call(data) === '[object ArrayBuffer]') return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  // A Blob (or ws' 'fragments', were binaryType changed after the client set it) could only be read asynchronously, which would reorder messages.
  return null;
}

/** What a server's refusal or error answer becomes: an Error with the server's code and reason. */
export class AskError extends Error {
  constructor(code, reason) {
    super(reason ? `${code}: ${reason}` : code);
    this.name = 'AskError';
    this.code = code;
    this.reason = reason || '';
  }
}

/** Bytes of a head (ASCII) and a payload (string or bytes) as one frame's data: a string stays a string. */
function framed(head, data) {
  if (typeof data === 'string') return head + data;
  const bytes = toBytes(data);
  if (bytes === null) throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', 'data must be a string, an ArrayBuffer or a typed array');
  const out = new Uint8Array(head.length + bytes.length);
  for (let i = 0; i < head.length; i++) out[i] = head.charCodeAt(i);
  out.set(bytes, head.length);
  return out;
}

/** options.timeout (ms): dflt when not given, else > 0. */
function timeoutOf(options, dflt) {
  const t = options && options.timeout !== undefined ? options.timeout : dflt;
  if (t !== dflt && (typeof t !== 'number' || !(t > 0 && t <= 2147483647))) {
    throw argError(RangeError, 'ERR_OUT_OF_RANGE', 'options.timeout must be > 0 and <= 2147483647 (ms)');
  }
  return t;
}

function checkTopic(topic) {
  if (typeof topic !== 'string' || topic === '') {
    throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "topic" argument must be a non-empty string');
  }
}

/** UTF-8 bytes of a string; -1 when it is not well-formed (a lone surrogate). */
function utf8(s) {
  try { return encodeURIComponent(s).replace(/%../g, '.').length; } catch { return -1; }
}

/** Why the server would refuse this topic (docs/protocol.md), or ''. */
function badTopic(topic) {
  const n = utf8(topic);
  return n < 0 ? 'topic not UTF-8' : n > 1024 ? 'topic over 1,024 bytes' : '';
}

/**
 * What ended an attempt, from what the transport said: Node's ws and fetch
 * name the error, a browser does not ('failed').
 */
function causeOf(err) {
  const m = err ? `${err.message} ${err.code} ${err.cause && err.cause.code} ${err.cause && err.cause.message}` : '';
  return /REFUSED/.test(m) ? 'refused' : /RESET|hang|other side|PIPE/.test(m) ? 'reset'
    : /NOTFOUND|EAI_/.test(m) ? 'dns' : /UNREACH/.test(m) ? 'unreachable' : /response: \d/.test(m) ? 'rejected' : 'failed';
}

/** The tiny event emitter (browsers have no EventEmitter). */
class Emitter {
  constructor() { this._events = Object.create(null); }

  on(event, listener) {
    fnOpt('The "listener" argument', listener, 0);
    (this._events[event] || (this._events[event] = [])).push(listener);
    return this;
  }

  off(event, listener) {
    const list = this._events[event];
    if (list) {
      // The last one added goes first, as with Node's EventEmitter.
      const i = list.lastIndexOf(listener);
      if (i >= 0) list.splice(i, 1);
    }
    return this;
  }

  once(event, listener) {
    fnOpt('The "listener" argument', listener, 0);
    const once = (...args) => { this.off(event, once); listener.apply(this, args); };
    return this.on(event, once);
  }

  _emit(event, ...args) {
    // A copy: a listener that adds or removes listeners affects the next emit only.
    for (const fn of (this._events[event] || []).slice()) fn.apply(this, args);
  }
}

/** A number option (ms, or a count): dflt when undefined, else checked. */
function ms(name, v, dflt, min) {
  if (v === undefined) return dflt;
  if (typeof v !== 'number') throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', `options.${name} must be a number`);
  if (!(v >= min && v <= 2147483647)) throw argError(RangeError, 'ERR_OUT_OF_RANGE', `options.${name} must be >= ${min} and <= 2147483647`);
  return v;
}

/** An object option: {} when undefined. */
function obj(name, v) {
  if (v === undefined) return {};
  if (v === null || typeof v !== 'object') throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', `${name} must be an object`);
  return v;
}

/** A function option, or dflt when undefined (a missing global: undefined). */
function fnOpt(name, v, dflt) {
  if (v === undefined) v = dflt;
  if (v !== undefined && typeof v !== 'function') throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', `${name} must be a function`);
  return v;
}

/** options.token: undefined or a non-empty string. */
function tokenOpt(t) {
  if (t !== undefined && (typeof t !== 'string' || t === '')) throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', 'options.token must be a non-empty string');
  return t;
}

/** The options' checks: every bad one throws at construction, not at the first reconnect. */
function checkOptions(options) {
  obj('The "options" argument', options);
  const transport = options.transport === undefined ? 'auto' : options.transport;
  if (transport !== 'auto' && transport !== 'websocket' && transport !== 'sse') {
    throw argError(TypeError, 'ERR_INVALID_ARG_VALUE', "options.transport must be 'auto', 'websocket' or 'sse'");
  }
  const f = fnOpt('options.fetch', options.fetch, globalThis.fetch);
  // Wrapped: a browser's fetch called as a method of another object throws.
  const fetchFn = f ? (...a) => f(...a) : null;
  const WS = fnOpt('options.WebSocket', options.WebSocket, globalThis.WebSocket);
  if (transport === 'sse' ? !f : !WS) {
    throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', transport === 'sse' ? "transport 'sse' needs options.fetch"
      : "options.WebSocket must be a WebSocket class (ws) where there is none, or use transport 'sse'");
  }
  const fallback = obj('options.fallback', options.fallback);
  const fb = { after: 2, openTimeout: 10000, retryWebSocket: 60000 };
  for (const k in fb) fb[k] = ms(`fallback.${k}`, fallback[k], fb[k], k === 'after' ? 1 : 0);
  // openTimeout bounds every attempt on every transport (fallback.openTimeout: its former name).
  const openTimeout = ms('openTimeout', options.openTimeout, fb.openTimeout, 1);
  const heartbeat = ms('heartbeat', options.heartbeat, 30000, 0);
  const backoff = obj('options.backoff', options.backoff);
  const min = ms('backoff.min', backoff.min, 500, 0);
  const max = ms('backoff.max', backoff.max, Math.max(30000, min), min);
  const random = fnOpt('options.random', options.random, Math.random);
  const timers = obj('options.timers', options.timers);
  // Wrapped: a browser's setTimeout called as a method of another object
  // throws "Illegal invocation".
  const setT = fnOpt('options.timers.setTimeout', timers.setTimeout, (fn, t) => setTimeout(fn, t));
  const clearT = fnOpt('options.timers.clearTimeout', timers.clearTimeout, (t) => clearTimeout(t));
  const now = fnOpt('options.timers.now', timers.now, Date.now);
  return { WS, min, max, random, setT, clearT, now, transport, fetchFn, fb, openTimeout, heartbeat };
}

/** Given positions ({ [topic]: { epoch, offset } }, as positions() returns them), checked, as a Map. */
function readPositions(given) {
  const out = new Map();
  if (given === null) return out;
  given = obj('options.positions', given);
  for (const [topic, p] of Object.entries(given)) {
    const offset = p && typeof p === 'object' ? toOffset(p.offset) : undefined;
    if (topic === '' || !p || typeof p.epoch !== 'string' || !EPOCH.test(p.epoch) || offset === undefined) {
      throw argError(TypeError, 'ERR_INVALID_ARG_VALUE',
        `options.positions[${JSON.stringify(topic)}] must be { epoch: 16 hex digits, offset: 0 to 2^53-1 }`);
    }
    out.set(topic, { epoch: p.epoch.toLowerCase(), offset });
  }
  return out;
}

/** The URL to open: http(s) turned into ws(s), relative URLs resolved against the page. */
function baseUrl(url) {
  if (typeof url !== 'string' && !(url && typeof url.href === 'string')) {
    throw argError(TypeError, 'ERR_INVALID_ARG_TYPE', 'The "url" argument must be a string or a URL');
  }
  let u;
  try {
    u = new URL(typeof url === 'string' ? url : url.href, globalThis.location ? globalThis.location.href : undefined);
  } catch {
    throw argError(TypeError, 'ERR_INVALID_URL', `Invalid URL: ${typeof url === 'string' ? url : url.href}`);
  }
  if (u.protocol === 'http:') u.protocol = 'ws:';
  else if (u.protocol === 'https:') u.protocol = 'wss:';
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') {
    throw argError(TypeError, 'ERR_INVALID_URL', `The URL must be ws:, wss:, http: or https:, not ${u.protocol}`);
  }
  // A WebSocket URL has no fragment (browsers throw on one).
  u.hash = '';
  // The user's own query parameters are kept byte for byte; only sy.since,
  // which is the client's, is taken out (it is added anew on each connect).
  const own = u.search.slice(1).split('&').filter((kv) => {
    if (kv === '') return false;
    const name = kv.split('=', 1)[0].replace(/\+/g, ' ');
    try { return decodeURIComponent(name) !== 'sy.since'; } catch { return true; }
  });
  u.search = '';
  return { href: u.href, query: own.join('&') };
}

/** Stops hearing a socket and closes it (with code and reason where they are valid). */
function shut(ws, code, reason) {
  ws.onopen = ws.onmessage = ws.onclose = ws.onerror = noop;
  try { ws.close(code, reason); } catch { ws.close(); }
}

/** The http(s) URL of a ws(s) one. */
function httpUrl(wsUrl) {
  const u = new URL(wsUrl);
  u.protocol = u.protocol === 'wss:' ? 'https:' : 'http:';
  return u;
}

/** Text and bytes as one Uint8Array (a frame's header, then its body). */
function joinBytes(head, body) {
  const h = new TextEncoder().encode(head);
  const out = new Uint8Array(h.length + body.length);
  out.set(h, 0);
  out.set(body, h.length);
  return out;
}

/** base64 to bytes (atob: browsers and Node alike). */
function fromBase64(b64) {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * An event stream of the server (docs/sse.md), read with fetch, behind the
 * part of the WebSocket interface the client uses: its events are made the
 * symphony frames they were made from (so the client reads them as it
 * reads a WebSocket's), send() is a POST with the stream's name, one after
 * another so that they arrive in order.
 */
class StreamSocket {
  constructor(url, protocols, fetchFn) {
    this.url = url;
    this.protocol = '';
    this.binaryType = 'arraybuffer';
    this.onopen = this.onmessage = this.onclose = this.onerror = noop;
    this._fetch = fetchFn;
    this._abort = new AbortController();
    this._name = null;
    this._ids = new Map(); // topic -> its id on this stream (from the notices)
    this._posts = Promise.resolve();
    this._ended = false;
    this._close = { code: 1006, reason: '' };
    this._run(protocols);
  }

  async _run(protocols) {
    let res;
    try {
      // The subprotocols in the query: a browser's fetch may not send a
      // Sec-WebSocket-Protocol header (docs/sse.md).
      const u = httpUrl(this.url);
      for (const p of protocols) u.searchParams.append('sy.protocol', p);
      res = await this._fetch(u.href, { headers: { accept: 'text/event-stream' }, signal: this._abort.signal, cache: 'no-store' });
    } catch (err) {
      this._end(err);
      return;
    }
    if (res.status !== 200 || !res.body) {
      this._close.reason = `HTTP ${res.status}`;
      this.cause = 'rejected';
      this._end(null);
      return;
    }
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    let ev = { data: [], event: '', id: '', enc: '' };
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || this._ended) break;
        this.heard = 1; // a byte (a heartbeat too): the stream lives
        buf += dec.decode(value, { stream: true });
        // The server ends every line with LF (a payload's CR is a line end there).
        for (let nl; (nl = buf.indexOf('\n')) >= 0;) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line === '') {
            if (ev.data.length > 0) this._event(ev);
            ev = { data: [], event: '', id: '', enc: '' };
            if (this._ended) return;
            continue;
          }
          const colon = line.indexOf(':');
          if (colon === 0) continue; // a heartbeat
          const name = colon < 0 ? line : line.slice(0, colon);
          const v = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
          if (name === 'data') ev.data.push(v);
          else if (name === 'event') ev.event = v;
          else if (name === 'id') ev.id = v;
          else if (name === 'enc') ev.enc = v;
        }
      }
    } catch (err) {
      this._end(err);
      return;
    }
    this._end(null);
  }

  /** One event, as the frame it was made from. */
  _event(ev) {
    const text = ev.data.join('\n');
    const bytes = ev.enc === 'base64';
    const deliver = (head) => {
      const data = bytes ? joinBytes(head, fromBase64(text)).buffer : head + text;
      this.onmessage({ data });
    };
    switch (ev.event) {
      case 'sy.open': {
        const o = JSON.parse(text);
        this._name = o.stream;
        this.protocol = o.protocol || PROTOCOL;
        this.hello = o; // its limits and heartbeat (docs/sse.md)
        this.onopen({});
        return;
      }
      case 'sy.notice': {
        const n = JSON.parse(text);
        if (n && n.type === 'subscribed' && typeof n.topic === 'string') this._ids.set(n.topic, n.id);
        deliver('c');
        return;
      }
      case 'sy.close': {
        const c = JSON.parse(text);
        this._close = { code: c.code, reason: c.reason };
        return;
      }
      case 'sy.reply':
        deliver('r');
        return;
      case '':
      case 'message':
        deliver('d\n');
        return;
      default: {
        const id = this._ids.get(ev.event);
        if (id === undefined) return; // not one of its topics (a topic named like an event of ours)
        // The id's first position is this event's topic's: its offset.
        let offset = '';
        const first = ev.id.split('&', 1)[0];
        if (first.startsWith('sy.since=')) {
          const v = decodeURIComponent(first.slice(9).replace(/\+/g, ' '));
          const a = v.indexOf(':');
          const b = v.indexOf(':', a + 1);
          if (v.slice(b + 1) === ev.event) offset = `,${v.slice(a + 1, b)}`;
        }
        deliver(`p${id}${offset}\n`);
      }
    }
  }

  send(data) {
    if (this._ended || this._name === null) return;
    const u = httpUrl(this.url);
    // Bytes are said by sy.binary=1, not a Content-Type: a page's POST
    // stays a "simple" cross-origin request (no preflight).
    const binary = typeof data !== 'string';
    u.search = `sy.stream=${this._name}${binary ? '&sy.binary=1' : ''}`;
    this._posts = this._posts.then(() => this._fetch(u.href, {
      method: 'POST',
      body: data,
      ...(binary ? {} : { headers: { 'content-type': 'text/plain;charset=utf-8' } }),
    })).then((res) => {
      if (res.status !== 202) this.onerror({ message: `POST answered ${res.status}` });
    }, (err) => this.onerror({ message: `POST failed: ${err && err.message}` }));
  }

  close() {
    if (this._ended) return;
    this._close = { code: 1000, reason: '' };
    this._end(null);
  }

  _end(err) {
    if (this._ended) return;
    this._ended = true;
    this._abort.abort();
    if (err && err.name !== 'AbortError') this.onerror({ message: err.message, error: err });
    this.onclose(this._close);
  }
}

/**
 * A subscription the client asked for (client.subscribe): its state
 * ('subscribing' | 'subscribed' | 'unsubscribed') and events: 'message'
 * (data, { offset, epoch }), 'subscribed' (info), 'refused' (AskError),
 * 'unsubscribed' ({ by, code, reason }). Asked again after every reconnect,
 * from its position, until unsubscribed.
 */
export class Subscription extends Emitter {
  constructor(client, topic, token, data) {
    super();
    this.topic = topic;
    this._client = client;
    this._token = token;
    this._data = data;
    this._state = 'subscribing';
    this._rid = -1; // the subscribe in flight
    this._retry = null; // its backoff's timer (and _wait: its answer's deadline)
    this._attempt = 0;
    this._renewed = false; // a fresh token was asked for after 'token-expired'
  }

  /** 'subscribing' | 'subscribed' | 'unsubscribed' */
  get state() { return this._state; }

  /** Stops it: no message of the topic follows; 'unsubscribed' ({ by: 'client' }) at once. */
  unsubscribe() { this._client._unsubscribe(this); }

  _stop() {
    clearTimeout(this._wait);
    if (this._retry !== null) { this._client._clearT(this._retry); this._retry = null; }
  }
}

export class SymphonyClient extends Emitter {
  /**
   * @param {string|URL} url ws:, wss: (or http:, https:, or relative in a page)
   * @param {object} [options] { WebSocket, backoff: { min, max }, random, timers, positions,
   *   transport: 'auto' | 'websocket' | 'sse', fetch, fallback: { after, openTimeout, retryWebSocket } }
   */
  constructor(url, options = {}) {
    super();
    const o = this._o = checkOptions(options);
    this._setT = o.setT;
    this._clearT = o.clearT;
    this._url = baseUrl(url);
    // The transport (docs/sse.md, "The rule"): 'auto' begins with a
    // WebSocket and moves to the event stream only on evidence that
    // WebSockets are blocked where HTTP passes: a WebSocket that opened and
    // then said nothing, or one that failed after a plain GET to the same
    // URL was answered (fallback.after failures in a row start that GET).
    // A refused, reset or silent server is an outage: the transport stays.
    // While on the stream, a WebSocket is tried every retryWebSocket ms.
    this._auto = o.transport === 'auto' && o.fetchFn !== null;
    this._transport = o.transport === 'sse' ? 'sse' : 'websocket';
    this._why = o.transport === 'auto' ? 'first' : 'option';
    this._wsFails = 0;
    // Unset until said: _suspect (HTTP passes: the next WebSocket that fails
    // means WebSockets are blocked), _check (that GET, while it runs),
    // _switching, _limits (the server's, from its hello), _kill (ends the
    // current connection with a cause), _v1 and _v2 (what the server chose).
    this._probe = null; // a WebSocket tried while on the stream, and its timer
    this._strikes = 0; // closes for size or policy in a row: the backoff grows past an open
    this._down = o.now(); // when the outage began
    /** topic -> { epoch, offset }: what positions() returns and sy.since sends. */
    this._pos = readPositions(options.positions);
    /** This connection's topic ids -> { topic, epoch } (ids do not outlive a connection). */
    this._ids = new Map();
    this._ws = null;
    this._timer = null;
    this._attempt = 0; // failed connections since the last open: the backoff's exponent
    this._state = 'connecting';
    this._getToken = fnOpt('options.getToken', options.getToken);
    /** topic -> Subscription: what the client asked for and keeps. */
    this._subs = new Map();
    /** rid -> { resolve, reject, timer, frame, sent }: publishes and requests waiting to be sent or answered. */
    this._calls = new Map();
    /** topic -> unsubscribes in flight: its notices until their answer are stale. */
    this._leaving = new Map();
    this._rid = 0;
    this._opened = false; // a connection opened before: the next subscribes are resubscribes
    this._stats = { messages: 0, duplicates: 0, malformed: 0, unknown: 0, reconnects: 0 };
    // Connecting in a microtask lets the caller add its listeners first (the
    // first 'state' event); not a timer, so an injected timer sees only the
    // backoff's delays.
    queueMicrotask(() => { if (this._state === 'connecting' && this._ws === null) this._connect(); });
    // A page that comes back online reconnects at once; one that goes
    // offline drops its connection (a browser may keep it, dead, for minutes).
    this._net = (ev) => {
      if (ev.type === 'offline') { if (this._kill) this._kill('offline'); } else if (this._state === 'reconnecting') {
        this._clearT(this._timer);
        this._attempt = 0;
        this._connect();
      }
    };
    if (typeof addEventListener === 'function') { addEventListener('online', this._net); addEventListener('offline', this._net); }
  }


  /** 'connecting' | 'open' | 'reconnecting' | 'closed' */
  get state() { return this._state; }

  /** The URL of the next (or current) connection: the given one with a sy.since per kept position. */
  url() {
    const since = new URLSearchParams();
    let n = 0;
    for (const [topic, p] of this._pos) {
      // Subscriptions' positions too: a topic the server also chooses at the
      // upgrade resumes there (the subscribe is then answered "held").
      if (n++ === MAX_SINCE) break;
      since.append('sy.since', `${p.epoch}:${p.offset}:${topic}`);
    }
    const q = [this._url.query, since.toString()].filter(Boolean).join('&');
    const href = this._url.href;
    return q ? `${href}?${q}` : href;
  }

  /** The kept positions, a plain JSON-able object { [topic]: { epoch, offset } } (a copy). */
  positions() {
    return Object.fromEntries(Array.from(this._pos, ([topic, p]) => [topic, { epoch: p.epoch, offset: p.offset }]));
  }

  /** Counters (a copy): messages delivered, duplicates dropped, malformed and unknown frames ignored, reconnects. */
  stats() { return { ...this._stats }; }

  /** Sends data (string, ArrayBuffer, typed array, Blob) as is. False when not open (nothing is queued). */
  send(data) {
    const blob = typeof Blob === 'function' && data instanceof Blob;
    // Checked first: bad data throws whatever the state.
    const f = blob ? new Blob(['d\n', data]) : framed('d\n', data);
    if (!this._ws || this._state !== 'open') return false;
    this._ws.send(this._v2 ? f : data);
    return true;
  }

  /**
   * Subscribes to topic (symphony.v2): the Subscription, the same one for
   * the same topic while it lives. options: { since: { epoch, offset }
   * (resume from there), token (a JWT the server checks), data (JSON for
   * the server's onSubscribe) }. A topic the server would refuse (over
   * 1,024 bytes, not UTF-8) is refused at once: 'refused' bad-request.
   */
  subscribe(topic, options = {}) {
    checkTopic(topic);
    obj('The "options" argument', options);
    if (this._state === 'closed') throw argError(Error, 'ERR_CLIENT_CLOSED', 'The client is closed');
    let sub = this._subs.get(topic);
    if (sub) return sub;
    tokenOpt(options.token);
    sub = new Subscription(this, topic, options.token, options.data);
    const bad = badTopic(topic);
    if (bad) {
      // Never asked, so never 'subscribing': refused after the caller's listeners are on.
      sub._state = 'unsubscribed';
      queueMicrotask(() => sub._emit('refused', new AskError('bad-request', bad)));
      return sub;
    }
    if (options.since !== undefined && options.since !== null) {
      const p = readPositions({ [topic]: options.since }).get(topic);
      this._pos.set(topic, p);
    }
    this._subs.set(topic, sub);
    if (this._state === 'open') this._ask([sub], false);
    return sub;
  }

  /** The live subscriptions (an array). */
  subscriptions() { return Array.from(this._subs.values()); }

  /**
   * Publishes data (string or bytes) on topic through the server's
   * onPublish (or with options.token, a JWT the server checks instead):
   * resolves with { epoch, offset } (topics with history) or {},
   * rejects with an AskError (its code: 'forbidden', 'disconnected', ...).
   * Before 'open' it waits for it (options.timeout ms, none by default).
   */
  publish(topic, data, options = {}) {
    checkTopic(topic);
    const token = tokenOpt(options && options.token);
    const bad = badTopic(topic);
    if (bad) return Promise.reject(new AskError('bad-request', bad));
    return this._call((rid) => framed(`p${JSON.stringify(token === undefined ? { rid, topic } : { rid, topic, token })}\n`, data), timeoutOf(options, 0));
  }

  /**
   * Asks the server's onRequest: resolves with its reply (JSON value, or a
   * Uint8Array for bytes), rejects with an AskError ('timeout' after
   * options.timeout ms, default 30000, counted from the call: a request
   * before 'open' waits for it).
   */
  request(data, options = {}) {
    const timeout = timeoutOf(options, ASK_TIMEOUT);
    return this._call((rid) => framed(`r${JSON.stringify({ rid })}\n`, data), timeout);
  }

  _call(make, timeout) {
    if (this._state === 'closed') return Promise.reject(new AskError('closed', 'the client was closed'));
    let queued = 0;
    for (const c of this._calls.values()) queued += !c.sent;
    if (queued >= MAX_QUEUED) return Promise.reject(new AskError('too-many-pending', 'queue full'));
    const rid = ++this._rid;
    let frame;
    try {
      frame = make(rid);
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      const call = { resolve, reject, timer: null, frame, sent: false };
      if (timeout > 0) {
        call.timer = this._setT(() => {
          this._calls.delete(rid);
          reject(new AskError('timeout', `no answer in ${timeout} ms`));
        }, timeout);
      }
      this._calls.set(rid, call);
      if (this._state === 'open') this._flush();
    });
  }

  /** Sends the calls that wait for the connection (after 'open'), in order. */
  _flush() {
    for (const [rid, c] of this._calls) {
      if (c.sent) continue;
      if (!this._v2) this._settle(rid, new AskError('unsupported', `the server did not choose ${PROTOCOL_V2}`));
      else { c.sent = true; this._ws.send(c.frame); }
    }
  }

  _settle(rid, err, value) {
    const call = this._calls.get(rid);
    if (!call) return;
    this._calls.delete(rid);
    if (call.timer !== null) this._clearT(call.timer);
    if (err) call.reject(err);
    else call.resolve(value);
  }

  /**
   * Asks for subs (resub after a reconnect), each with a fresh token when
   * getToken says so, in frames that fit the server's limits (its hello:
   * maxEntries and maxPayload); an entry too big for any frame is refused
   * 'too-large' here. Each ask not answered in ASK_TIMEOUT is refused 'timeout'.
   */
  _ask(subs, resub) {
    if (!this._v2) {
      // After the caller's listeners are on (subscribe() returns first).
      if (this._state === 'open') {
        queueMicrotask(() => {
          for (const sub of subs) {
            if (this._subs.get(sub.topic) === sub) this._refused(sub, 'unsupported', `the server did not choose ${PROTOCOL_V2}`);
          }
        });
      }
      return;
    }
    const ws = this._ws;
    const ask = subs.filter((sub) => this._getToken && (resub || sub._token === undefined || sub._renewed));
    const send = () => {
      if (this._ws !== ws || this._state !== 'open') return;
      const lim = this._limits || {};
      const most = lim.maxEntries || MAX_SINCE;
      const room = (lim.maxPayload || Infinity) - 30; // what the entries of one frame may take
      let batch = [];
      let bytes = 0;
      const flush = () => {
        if (batch.length > 0) ws.send(`s${JSON.stringify({ subs: batch, resub })}`);
        batch = [];
        bytes = 0;
      };
      for (const sub of subs) {
        if (this._subs.get(sub.topic) !== sub || sub._state === 'unsubscribed') continue;
        sub._rid = ++this._rid;
        sub._state = 'subscribing';
        const e = { rid: sub._rid, topic: sub.topic };
        const p = this._pos.get(sub.topic);
        if (p) e.since = { epoch: p.epoch, offset: String(p.offset) };
        if (sub._token !== undefined) e.token = sub._token;
        if (sub._data !== undefined) e.data = sub._data;
        const n = utf8(JSON.stringify(e)) + 1;
        if (n > room) { this._refused(sub, 'too-large', `over maxPayload (${lim.maxPayload})`); continue; }
        if (batch.length === most || bytes + n > room) flush();
        batch.push(e);
        bytes += n;
        const rid = sub._rid;
        clearTimeout(sub._wait);
        sub._wait = setTimeout(() => {
          if (sub._rid === rid && sub._state === 'subscribing' && this._ws === ws) this._refused(sub, 'timeout', `no answer in ${ASK_TIMEOUT} ms`);
        }, ASK_TIMEOUT);
      }
      flush();
    };
    if (ask.length === 0) { send(); return; }
    Promise.all(ask.map((sub) => Promise.resolve().then(() => this._getToken(sub.topic)).then((token) => {
      sub._token = typeof token === 'string' && token !== '' ? token : undefined;
    }, (err) => {
      // No token: asked without one (the server says what it thinks).
      this._error('ERR_GET_TOKEN', `getToken(${JSON.stringify(sub.topic)}) failed: ${err && err.message}`, { cause: err });
    }))).then(send);
  }

  _refused(sub, code, reason) {
    const err = new AskError(code, reason);
    sub._stop();
    if (code === 'token-expired' && this._getToken && !sub._renewed) {
      // Once with a fresh token; a second expiry is final.
      sub._renewed = true;
      this._ask([sub], false);
      return;
    }
    if (TRANSIENT.has(code) && this._state === 'open') {
      const delay = Math.floor(this._o.random() * Math.min(this._o.max, this._o.min * Math.pow(2, sub._attempt++)));
      err.retry = delay;
      sub._retry = this._setT(() => {
        sub._retry = null;
        if (this._subs.get(sub.topic) === sub && this._state === 'open') this._ask([sub], false);
      }, delay);
      sub._emit('refused', err);
      return;
    }
    sub._state = 'unsubscribed';
    this._subs.delete(sub.topic);
    sub._emit('refused', err);
  }

  _unsubscribe(sub) {
    if (sub._state === 'unsubscribed' || this._subs.get(sub.topic) !== sub) return;
    sub._state = 'unsubscribed';
    this._subs.delete(sub.topic);
    this._pos.delete(sub.topic);
    sub._stop();
    if (this._v2 && this._ws && this._state === 'open') {
      this._leaving.set(sub.topic, (this._leaving.get(sub.topic) || 0) + 1);
      this._ws.send(`u${JSON.stringify({ rid: ++this._rid, topic: sub.topic })}`);
    }
    sub._emit('unsubscribed', { by: 'client' });
  }

  /**
   * The connection went: what was sent and waited for an answer fails
   * (code), what was not sent yet waits for the next connection (closed:
   * fails too), subscriptions wait for the next one.
   */
  _lost(code) {
    for (const [rid, call] of this._calls) {
      if (call.sent || code === 'closed') this._settle(rid, new AskError(code, code === 'closed' ? 'the client was closed' : 'the connection was lost'));
    }
    this._leaving.clear();
    for (const sub of this._subs.values()) {
      sub._stop();
      if (sub._state === 'subscribed') sub._state = 'subscribing';
    }
  }

  /** Closes for good: no reconnect after it. Emits state 'closed' at once; no event follows. */
  close(code = 1000, reason = '') {
    if (this._state === 'closed') return;
    if (this._timer !== null) { this._clearT(this._timer); this._timer = null; }
    if (typeof removeEventListener === 'function') { removeEventListener('online', this._net); removeEventListener('offline', this._net); }
    this._cancelProbe();
    if (this._check) this._check.abort();
    if (this._kill) this._kill(null, code, reason);
    this._ids.clear();
    this._lost('closed');
    for (const sub of this._subs.values()) sub._state = 'unsubscribed';
    this._subs.clear();
    this._setState('closed', {});
  }

  _setState(state, info) {
    this._state = state;
    this._emit('state', state, info);
  }

  /** An 'error' event; without a listener it is dropped (there is no caller to throw to). */
  _error(code, message, extra) {
    const err = new Error(message);
    err.code = code;
    if (extra) Object.assign(err, extra);
    this._emit('error', err);
  }

  /**
   * One attempt on the current transport, bounded by openTimeout: a
   * symphony.v2 WebSocket is open at its first frame (the server's hello),
   * an event stream at its sy.open. Once open, a watchdog ends a connection
   * that says nothing: a stream after 1.5 times its heartbeat, a symphony.v2
   * WebSocket after a heartbeat's wait and an `h` frame left unanswered.
   */
  _connect() {
    const transport = this._transport;
    const url = this.url();
    this._setState('connecting', { url: transport === 'sse' ? httpUrl(url).href : url, attempt: this._attempt, transport });
    if (this._state !== 'connecting') return; // closed by a listener
    this._limits = 0;
    let ws;
    try {
      ws = transport === 'sse' ? new StreamSocket(url, PROTOCOLS, this._o.fetchFn) : new this._o.WS(url, PROTOCOLS);
    } catch (err) {
      this._error('ERR_WEBSOCKET', `Cannot open a WebSocket: ${err && err.message}`, { cause: err });
      this._failed(transport, 'failed', 1006, '');
      return;
    }
    this._ws = ws;
    ws.binaryType = 'arraybuffer';
    let opened = false;
    let upgraded = false;
    let cause = '';
    let heard = 0;
    let pinged = false;
    let watch = null;
    const deadline = setTimeout(() => {
      // A WebSocket that opened and said nothing: something in between passes upgrades, not frames.
      this._kill(upgraded ? 'silent' : 'timeout');
    }, this._o.openTimeout);
    const done = (code = 1006, reason = cause || '') => {
      if (this._ws !== ws) return;
      this._ws = this._kill = null;
      clearTimeout(deadline);
      clearInterval(watch);
      if (cause === null) { shut(ws, code, reason); return; } // close()
      shut(ws);
      this._cancelProbe();
      this._ids.clear();
      this._lost('disconnected');
      if (this._switching) {
        // A WebSocket opened while on the stream: over to it at once.
        this._switching = false;
        this._connect();
        return;
      }
      if (!opened) { this._failed(transport, cause || ws.cause || (code === 1006 ? 'failed' : 'closed'), code, reason); return; }
      this._down = this._o.now();
      this._retry(code, reason, cause || (code === 1006 ? 'lost' : 'closed'));
    };
    this._kill = (c, code, reason) => { cause = c; done(code, reason); };
    const open = () => {
      opened = true;
      clearTimeout(deadline);
      if (transport === 'websocket') {
        this._wsFails = 0;
        this._suspect = false;
        this._check = null;
      } else {
        this._limits = ws.hello && ws.hello.limits;
        this._scheduleProbe();
      }
      this._attempt = 0;
      // The subscriptions are asked for before 'open' is told: one that a
      // listener of 'open' adds is then asked for once, by subscribe().
      this._state = 'open';
      if (this._subs.size > 0) this._ask(Array.from(this._subs.values()), this._opened);
      this._opened = true;
      this._flush();
      const hb = transport === 'sse' ? 1.5 * ((ws.hello && ws.hello.heartbeat) || 60000) : this._v2 ? this._o.heartbeat : 0;
      if (hb > 0) {
        watch = setInterval(() => {
          if (heard || ws.heard) { heard = ws.heard = 0; pinged = false; } else if (transport === 'sse' || pinged) this._kill('stalled');
          else { pinged = true; ws.send('h'); }
        }, hb);
      }
      this._setState('open', { protocol: ws.protocol, plain: !this._v1, transport });
      if (!this._v1 && this._ws === ws) {
        this._error('ERR_SUBPROTOCOL',
          `The server chose ${JSON.stringify(ws.protocol)}, not ${PROTOCOL}: bare payloads, no topics or positions`);
      }
    };
    ws.onopen = () => {
      upgraded = transport === 'websocket';
      this._v2 = ws.protocol === PROTOCOL_V2;
      this._v1 = this._v2 || ws.protocol === PROTOCOL;
      if (!upgraded || !this._v2) open();
    };
    ws.onmessage = (ev) => {
      heard = 1;
      // The first frame (the hello: the server's limits) is read before the resubscribe that open() sends.
      this._frame(ev.data);
      if (!opened && this._ws === ws) open();
    };
    ws.onerror = (ev) => {
      cause = causeOf(ev && (ev.error || ev));
      this._error('ERR_WEBSOCKET', (ev && ev.message) || 'WebSocket error', { event: ev });
    };
    ws.onclose = (ev) => {
      if (opened) cause = '';
      done(ev ? ev.code : 1006, ev ? ev.reason : '');
    };
  }

  /**
   * An attempt that did not open. 'auto', on a WebSocket: one that opened
   * silent, or any failure once HTTP is known to pass, moves to the stream;
   * fallback.after failures in a row ask whether HTTP passes (_probeHttp).
   * On the stream: one answered with an HTTP status goes back to WebSockets.
   */
  _failed(transport, cause, code, reason) {
    if (this._auto) {
      if (transport === 'sse') {
        if (cause === 'rejected') this._use('websocket', 'stream-rejected');
      } else if (cause === 'silent' || this._suspect) {
        this._use('sse', cause === 'silent' ? 'silent' : 'upgrade-blocked');
        cause = this._why;
      } else if (++this._wsFails >= this._o.fb.after && !this._check) this._probeHttp();
    }
    this._retry(code, reason, cause);
  }

  _use(transport, why) {
    this._transport = transport;
    this._why = why;
    this._wsFails = 0;
    this._suspect = false;
  }

  /**
   * A plain GET of the URL, bounded by openTimeout: any answer but 502-504
   * (a proxy whose server is away) says HTTP passes. 'no-cors': a page of
   * another origin learns that an answer came (status 0), not what it said.
   * Runs beside the reconnects, which it never holds up.
   */
  _probeHttp() {
    this._wsFails = 0;
    const ac = this._check = new AbortController();
    const t = setTimeout(() => ac.abort(), this._o.openTimeout);
    Promise.resolve().then(() => this._o.fetchFn(httpUrl(this._url.href).href, { mode: 'no-cors', cache: 'no-store', signal: ac.signal })).then((res) => {
      if (res.body) res.body.cancel().catch(noop);
      if (this._check === ac && (res.status < 502 || res.status > 504)) this._suspect = true;
    }, noop).then(() => {
      clearTimeout(t);
      if (this._check === ac) this._check = null;
    });
  }

  /** On the stream ('auto'): a WebSocket is tried again in retryWebSocket ms. */
  _scheduleProbe() {
    if (!this._auto || this._probe !== null) return;
    const probe = { ws: null, timer: null };
    this._probe = probe;
    probe.timer = this._setT(() => {
      probe.timer = null;
      let ws;
      try { ws = new this._o.WS(this.url(), PROTOCOLS); } catch { this._probe = null; this._scheduleProbe(); return; }
      probe.ws = ws;
      const done = (ok) => {
        shut(ws, 1000, '');
        if (this._probe !== probe) return;
        this._probe = null;
        if (!ok) { this._scheduleProbe(); return; }
        this._use('websocket', 'websocket-open');
        if (this._ws) { this._switching = true; this._kill('switch'); } // done() connects at once
      };
      ws.onopen = () => done(true);
      ws.onclose = () => done(false);
      ws.onerror = noop;
    }, this._o.fb.retryWebSocket);
  }

  _cancelProbe() {
    const p = this._probe;
    if (p === null) return;
    this._probe = null;
    if (p.timer !== null) this._clearT(p.timer);
    if (p.ws) shut(p.ws);
  }

  /** The transport of the connection ('websocket' | 'sse'): the one in use, or the next one tried. */
  get transport() { return this._transport; }

  /**
   * Why that transport: 'first' ('auto' begins with a WebSocket), 'option'
   * (options.transport), 'upgrade-blocked' or 'silent' (the fallback, and
   * its evidence), 'websocket-open' (back: a WebSocket opened while on the
   * stream), 'stream-rejected' (back: the stream was answered with an HTTP status).
   */
  get transportReason() { return this._why; }

  /**
   * The next attempt after a backoff: random(0, cap), full jitter, where
   * cap = min(max, min * 2^attempt, max(min, half the outage so far)), so a
   * client is back within about half an outage's length. A close for size
   * or policy (1008, 1009, 1013) grows the backoff past opens, until an
   * attempt ends otherwise: never an immediate identical retry.
   */
  _retry(code, reason, cause) {
    if (code === 1008 || code === 1009 || code === 1013) this._strikes++;
    else this._strikes = 0;
    const exp = Math.max(this._attempt, this._strikes);
    let cap = Math.min(this._o.max, this._o.min * Math.pow(2, exp));
    if (!this._strikes) cap = Math.min(cap, Math.max(this._o.min, (this._o.now() - this._down) / 2));
    const delay = Math.floor(this._o.random() * cap);
    this._attempt++;
    this._stats.reconnects++;
    this._setState('reconnecting', { delay, attempt: this._attempt, code, reason, cause });
    // A listener of that state may have closed the client.
    if (this._state !== 'reconnecting') return;
    this._timer = this._setT(() => { this._timer = null; this._connect(); }, delay);
  }

  /** One frame from the server: never throws for what is in it (a listener's own exception does propagate). */
  _frame(raw) {
    const text = typeof raw === 'string';
    const data = text ? raw : toBytes(raw);
    if (data === null) { this._stats.malformed++; return; }
    if (!this._v1) {
      this._stats.messages++;
      this._emit('message', null, data, BARE);
      return;
    }
    if (data.length === 0) { this._stats.malformed++; return; }
    const kind = text ? data.charCodeAt(0) : data[0];
    if (kind === 0x63 /* c */) { this._notice(text ? data.slice(1) : data.subarray(1)); return; }
    if (kind !== 0x70 /* p */ && kind !== 0x64 /* d */ && (kind !== 0x72 /* r */ || !this._v2)) { this._stats.unknown++; return; }
    const nl = text ? data.slice(0, MAX_HEADER).indexOf('\n') : data.subarray(0, MAX_HEADER).indexOf(0x0a);
    if (nl < 0) { this._stats.malformed++; return; }
    const payload = text ? data.slice(nl + 1) : data.subarray(nl + 1);
    const head = text ? data.slice(1, nl) : String.fromCharCode.apply(null, data.subarray(1, nl));
    if (kind === 0x72) {
      // A reply: r<rid>\n<JSON> (text) or <bytes> (binary).
      const rid = Number(head);
      let value = payload;
      if (text) {
        try { value = JSON.parse(payload); } catch { this._stats.malformed++; return; }
      }
      this._settle(rid, null, value);
      return;
    }
    if (kind === 0x64) {
      if (nl !== 1) { this._stats.malformed++; return; }
      this._stats.messages++;
      this._emit('message', null, payload, BARE);
      return;
    }
    const m = P_HEADER.exec(head);
    const sub = m && this._ids.get(Number(m[1]));
    if (!sub) { this._stats.malformed++; return; }
    // A topic the client has just left: its last messages are stale.
    if (sub.stale) return;
    let offset;
    if (m[2] !== undefined) {
      offset = toOffset(m[2]);
      if (offset === undefined) { this._stats.malformed++; return; }
      if (sub.epoch !== undefined) {
        const kept = this._pos.get(sub.topic);
        // Cannot happen on one connection (docs/protocol.md); dropped so the
        // application never sees a message twice.
        if (kept && kept.epoch === sub.epoch && offset <= kept.offset) { this._stats.duplicates++; return; }
        // A jump forward (the server's slowConsumer 'conflate' replaced older
        // messages with this newer one) is taken as it is: the position is the
        // newest offset held, and a resume asks for what comes after it.
        if (kept && kept.epoch === sub.epoch) kept.offset = offset;
        else this._pos.set(sub.topic, { epoch: sub.epoch, offset });
      }
    }
    this._stats.messages++;
    const info = { offset, epoch: offset === undefined ? undefined : sub.epoch };
    this._emit('message', sub.topic, payload, info);
    const mine = this._subs.get(sub.topic);
    if (mine && this._state !== 'closed') mine._emit('message', payload, info);
  }

  _notice(body) {
    let n;
    try {
      n = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body));
    } catch {
      this._stats.malformed++;
      return;
    }
    if (n === null || typeof n !== 'object' || typeof n.type !== 'string') { this._stats.malformed++; return; }
    if (n.type === 'hello') { this._limits = n.limits; return; }
    if (n.type === 'pong') return;
    const idOk = Number.isInteger(n.id) && n.id >= 0 && n.id <= 0xffffffff;
    if (n.type === 'published' || n.type === 'error') {
      if (n.type === 'published') {
        this._settle(n.rid, null, n.epoch === undefined ? {} : { epoch: n.epoch, offset: toOffset(n.offset) });
      } else if (this._calls.has(n.rid)) {
        this._settle(n.rid, new AskError(String(n.code), typeof n.reason === 'string' ? n.reason : ''));
      } else {
        // Not a call's: a frame the server could not take (bad-request, unknown-kind).
        this._error('ERR_ASK', `The server answered ${n.code}: ${n.reason}`, { serverCode: n.code, reason: n.reason });
      }
      return;
    }
    if (n.type === 'refused') {
      const sub = typeof n.topic === 'string' ? this._subs.get(n.topic) : undefined;
      if (sub && sub._rid === n.rid) this._refused(sub, String(n.code), typeof n.reason === 'string' ? n.reason : '');
      return;
    }
    if (this._leaving.has(n.topic)) {
      // Between an unsubscribe and its answer: what the topic's notices say is stale.
      if (n.type === 'subscribed' && idOk) this._ids.set(n.id, { topic: n.topic, stale: true });
      if (n.type === 'unsubscribed') {
        const left = this._leaving.get(n.topic) - 1;
        if (left > 0) this._leaving.set(n.topic, left);
        else this._leaving.delete(n.topic);
        if (idOk) this._ids.delete(n.id);
      }
      return;
    }
    if (n.type === 'subscribed') {
      if (typeof n.topic !== 'string' || n.topic === '' || !idOk) { this._stats.malformed++; return; }
      const history = n.epoch !== undefined || n.offset !== undefined;
      const offset = toOffset(n.offset);
      if (history && (typeof n.epoch !== 'string' || !EPOCH.test(n.epoch) || offset === undefined)) { this._stats.malformed++; return; }
      const epoch = history ? n.epoch.toLowerCase() : undefined;
      this._ids.set(n.id, { topic: n.topic, epoch });
      const hasSince = n.since !== undefined;
      const since = hasSince ? toOffset(n.since) : undefined;
      if (!history) {
        // No history, no position: one kept from before would only be
        // answered no-history on every reconnect.
        this._pos.delete(n.topic);
      } else if (n.recovered === true && since !== undefined) {
        // The replay (since + 1 .. offset) follows and brings the position
        // to offset, message by message.
        this._pos.set(n.topic, { epoch, offset: since });
      } else {
        this._pos.set(n.topic, { epoch, offset });
      }
      this._emit('subscribed', n.topic, { id: n.id, epoch, offset: history ? offset : undefined });
      const sub = this._subs.get(n.topic);
      if (sub && this._state !== 'closed') {
        sub._state = 'subscribed';
        sub._stop();
        sub._attempt = 0;
        sub._renewed = false;
        sub._emit('subscribed', {
          epoch,
          offset: history ? offset : undefined,
          recovered: hasSince ? n.recovered === true : undefined,
          reason: hasSince && n.recovered !== true && typeof n.reason === 'string' ? n.reason : undefined,
          since,
          data: n.data,
        });
      }
      if (hasSince && this._state !== 'closed') {
        this._emit('recovered', n.topic, n.recovered === true, {
          reason: n.recovered === true ? undefined : (typeof n.reason === 'string' ? n.reason : undefined),
          epoch,
          offset: history ? offset : undefined,
          since,
        });
      }
      return;
    }
    if (n.type === 'unsubscribed') {
      if (typeof n.topic !== 'string' || !idOk) { this._stats.malformed++; return; }
      this._ids.delete(n.id);
      // The client no longer follows the topic: its position is not sent
      // again (kept ones would otherwise pile up towards the 1,024 limit).
      this._pos.delete(n.topic);
      this._emit('unsubscribed', n.topic);
      const sub = this._subs.get(n.topic);
      if (sub && this._state !== 'closed') {
        // The server ended it (server.unsubscribe()).
        sub._state = 'unsubscribed';
        this._subs.delete(n.topic);
        sub._emit('unsubscribed', { by: 'server' });
      }
      return;
    }
    // A notice of a later version: ignored, as the protocol says.
    this._stats.unknown++;
  }
}

/** new SymphonyClient(url, options). */
export function connect(url, options) {
  return new SymphonyClient(url, options);
}
