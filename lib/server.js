'use strict';
// require('symphony-ws').Server: a WebSocket fan-out server whose sockets live
// on native IO threads. Connections are named by numbers (ids), not objects.

const { EventEmitter } = require('node:events');
const net = require('node:net');
const { binding } = require('./native');
const { SymphonyError, TlsError, HookError, invalidArgType, outOfRange, invalidArgValue, integer } = require('./errors');
const { exposition } = require('./metrics');
const { nativeBusOptions, Bus, update: busUpdate, attach: busAttach, call: busCall, ctl: busCtl, fence: busFence } = require('./bus');
const { infoText, Presence } = require('./presence');
const { trustProxyOption, clientAddress } = require('./proxy');
const { DEFAULTS, normalizeOptions, nativeOptions, topicHistoryOption, tlsArgs, tlsSummary, isBytes } = require('./options');
const { Asks } = require('./asks');
const { nativeKeys } = require('./tokens');
const { pusherPresence } = require('./pusher/presence');
const { channelsCtl } = require('./pusher/channels');
const { setPusher, pusherOpenInfo, pusherSummary, publishEvent, publishWithEvent } = require('./pusher/server');
const { PusherHooks } = require('./pusher/hooks');

// The limits the binding checks and its event codes, from the binding itself
// (binding/server_stats.c): checked here first only to name the user's argument.
const {
  TOPIC_MAX_LEN, CLOSE_REASON_MAX_LEN, CLOSE_CODE_MIN, CLOSE_CODE_MAX,
  REFUSE_STATUS_MIN, REFUSE_STATUS_MAX, EV_UPGRADE, EV_OPEN, EV_MESSAGE, EV_CLOSE, EV_DRAIN, EV_FAILED, EV_CLOSED,
  EV_OPEN_DEFLATE, EV_OPEN_SSE, EV_UPGRADE_SSE, EV_POST, EV_PUSHER, EV_PUSHER_HOOK, SEND_BINARY, SEND_COMPRESS, SEND_LOCAL, EV_RECOVERY, EV_TOPIC,
  EV_TOPIC_ON, EV_ASK,
} = binding.constants;

// Why a resume did not recover, by the native code (sy_v1_reason_t in
// src/proto/sy_v1.h; the same words symphony.v1 clients get).
const RECOVERY_REASONS = ['', 'epoch', 'trimmed', 'future', 'too-large', 'no-history', 'memory', 'not-symphony.v1'];

// The subprotocol a connection gets when the application does not choose:
// symphony.v2 when the client offers it (the client library offers
// symphony.v1 first, which a server before v2 takes), else the first offered.
const V2 = 'symphony.v2';
function defaultProtocol(req) {
  return req.protocols.includes(V2) ? V2 : req.protocols[0] ?? '';
}

// Response headers symphony writes itself; a user may not set them.
const RESERVED_HEADERS = new Set([
  'upgrade', 'connection', 'sec-websocket-accept', 'sec-websocket-protocol',
  'sec-websocket-extensions', 'sec-websocket-version', 'content-length', 'transfer-encoding',
]);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** The request head as the client sent it (as far as Node keeps it), for the native parser. */
function requestHead(req) {
  let s = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) s += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
  return Buffer.from(`${s}\r\n`, 'latin1');
}

/** A short HTTP answer written through Node's own socket (one symphony cannot take over). */
function answerThroughNode(socket, status, text) {
  if (socket.destroyed || !socket.writable) return;
  const body = `${text}\n`;
  socket.end(`HTTP/1.1 ${status} ${status === 501 ? 'Not Implemented' : status === 503 ? 'Service Unavailable' : 'Internal Server Error'}\r\n` +
    `Connection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

function headerLines(headers, name) {
  if (headers === undefined || headers === null) return '';
  if (typeof headers !== 'object') throw invalidArgType(name, 'an object', headers);
  let out = '';
  for (const [k, v] of Object.entries(headers)) {
    if (!TOKEN.test(k)) throw invalidArgValue(`${name} name`, 'is not a valid header name', k);
    if (RESERVED_HEADERS.has(k.toLowerCase())) throw invalidArgValue(`${name} name`, 'is set by symphony itself', k);
    for (const one of Array.isArray(v) ? v : [v]) {
      const s = String(one);
      if (/[\r\n\0]/.test(s)) throw invalidArgValue(`${name}["${k}"]`, 'holds CR, LF or NUL', JSON.stringify(s));
      out += `${k}: ${s}\r\n`;
    }
  }
  return out;
}

function checkData(data) {
  if (typeof data !== 'string' && !isBytes(data)) {
    throw invalidArgType('data', 'a string, Buffer, TypedArray, DataView or ArrayBuffer', data);
  }
}

/**
 * The native flags of publish/send: { binary, compress } (compress: true
 * unless false), and for publish { local } (this node only, not the bus).
 */
function sendFlags(opts, data, publish = false) {
  let binary = isBytes(data), compress = true, local = false;
  if (opts !== undefined) {
    if (opts === null || typeof opts !== 'object') throw invalidArgType('options', 'an object', opts);
    if (opts.binary !== undefined) {
      if (typeof opts.binary !== 'boolean') throw invalidArgType('options.binary', 'of type boolean', opts.binary);
      binary = opts.binary;
    }
    if (opts.compress !== undefined) {
      if (typeof opts.compress !== 'boolean') throw invalidArgType('options.compress', 'of type boolean', opts.compress);
      compress = opts.compress;
    }
    if (publish && opts.local !== undefined) {
      if (typeof opts.local !== 'boolean') throw invalidArgType('options.local', 'of type boolean', opts.local);
      local = opts.local;
    }
  }
  return (binary ? SEND_BINARY : 0) | (compress ? SEND_COMPRESS : 0) | (local ? SEND_LOCAL : 0);
}

function checkId(id) {
  if (typeof id !== 'number') throw invalidArgType('id', 'of type number', id);
  if (!Number.isSafeInteger(id) || id < 0) throw outOfRange('id', 'a connection id (a safe non-negative integer)', id);
}

function checkTopic(topic) {
  if (typeof topic !== 'string') throw invalidArgType('topic', 'of type string', topic);
  if (topic.length === 0 || Buffer.byteLength(topic) > TOPIC_MAX_LEN) {
    throw outOfRange('topic', `a non-empty string of at most ${TOPIC_MAX_LEN} UTF-8 bytes`, topic.length);
  }
}

/** Close codes an endpoint may send (RFC 6455 7.4; 1004-1006 and 1015 never). */
function validSendCode(code) {
  return code === 1000 || (code >= 1001 && code <= 1003) || (code >= 1007 && code <= 1014) ||
    (code >= 3000 && code <= 4999);
}

function parseRequest(parts, trust, transport) {
  const [url, peerAddress, peerPort, socketAddress, socketPort] = parts;
  const rawHeaders = parts.slice(5);
  const headers = Object.create(null);
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const k = rawHeaders[i].toLowerCase();
    headers[k] = k in headers ? `${headers[k]}, ${rawHeaders[i + 1]}` : rawHeaders[i + 1];
  }
  const protocols = headers['sec-websocket-protocol']
    ? headers['sec-websocket-protocol'].split(',').map((s) => s.trim()).filter(Boolean) : [];
  // An event stream may offer them in its query too (a browser's fetch
  // cannot send a Sec- header): sy.protocol=symphony.v2 (docs/sse.md).
  if (transport === 'sse') {
    const q = url.indexOf('?');
    if (q >= 0) {
      for (const p of new URLSearchParams(url.slice(q + 1)).getAll('sy.protocol')) if (p && !protocols.includes(p)) protocols.push(p);
    }
  }
  // The client's resume positions (docs/protocol.md, sy.since): the native
  // upgrade refused malformed ones before asking, so this is an array.
  // An event stream that reconnects gives them in Last-Event-ID, in the
  // same form (docs/sse.md): those win.
  const lastId = transport === 'sse' ? headers['last-event-id'] : undefined;
  const since = binding.parseSince(lastId ? `?${lastId}` : url);
  // The client: the PROXY header's source or the socket's peer, then, with
  // trustProxy, what trusted proxies forwarded (lib/proxy.js).
  const peer = { address: peerAddress, port: Number(peerPort) };
  const client = trust ? clientAddress(trust, peer, headers) : peer;
  return {
    url,
    headers,
    rawHeaders,
    remoteAddress: client.address,
    remotePort: client.port,
    socketAddress,
    socketPort: Number(socketPort),
    protocols,
    origin: headers.origin ?? null,
    since: Array.isArray(since) ? since : [],
    transport,
  };
}

/**
 * A topic handle (server.topic(name)): publish() without the name's lookup.
 * While a handle lives, its topic's entry stays in the server's registry
 * (~100 bytes); drop the handle to let it go.
 */
class Topic {
  #publish;
  #position;

  constructor(name, publish, position) {
    this.name = name;
    this.#publish = publish;
    this.#position = position;
    Object.freeze(this);
  }

  /** As server.publish(this.name, data, options). */
  publish(data, options) {
    return this.#publish(data, options);
  }

  /** As server.position(this.name): { epoch, offset, first, kept } or null. */
  get position() {
    return this.#position();
  }
}

class Server extends EventEmitter {
  #handle;
  #opts;
  #trust = null; // options.trustProxy, compiled (lib/proxy.js)
  #pusherNode = null; // the node of Pusher socket ids (lib/pusher/server.js), or null
  #pusherHooks = null; // the Pusher apps' webhooks (lib/pusher/hooks.js), or null
  #state = 'new'; // new -> listening -> closing -> closed
  // publish() and send() queue without waking the IO threads; one wake-up at
  // the end of the turn (a microtask) hands them the turn's messages at once.
  #wakeQueued = false;
  #wake = () => {
    this.#wakeQueued = false;
    if (this.#state === 'listening') binding.serverWake(this.#handle);
  };
  #port = null;
  #closed = null;
  #userData = new Map();
  #bus = null;
  #presence; // lib/presence.js
  #pusherPresence = null; // lib/pusher/presence.js, with the pusher option
  #asks; // lib/asks.js
  // Resumes decided at an accept, until its 'open' (EV_RECOVERY comes first).
  #recovering = new Map();
  // While 'subscription' has a listener: the topics reported active (their
  // last event said true). null: no listener, and the IO threads report no edges.
  #active = null;

  constructor(options) {
    super();
    // 'subscription' costs nothing until someone listens: the IO threads
    // report topics' 0 <-> 1 edges only from the first listener to the last.
    this.on('newListener', (event) => {
      if (event === 'subscription' && this.#active === null) this.#topicEvents(true);
    });
    this.on('removeListener', (event) => {
      if (event === 'subscription' && this.listenerCount('subscription') === 0) this.#topicEvents(false);
    });
    this.#opts = normalizeOptions(options);
    const o = this.#opts;
    this.#trust = trustProxyOption(o.trustProxy);
    this.#handle = binding.serverCreate(nativeOptions(o));
    this.#pusherNode = o.pusher === null ? null : setPusher(this.#handle, o.pusher);
    const pusher = o.pusher;
    if (pusher !== null) this.#pusherHooks = new PusherHooks(this, pusher, (err) => this.#report(err));
    o.pusher = pusherSummary(o.pusher);
    if (o.tls !== null) {
      this.#applyTls(o.tls, 'options.tls');
      o.tls = tlsSummary(o.tls);
    }
    const bus = o.bus === null ? null : {
      call: (route, args) => this.#bus[busCall](route, args),
      ctl: (message) => this.#bus[busCtl](message),
      // The presence keys of topic: in its slot, by history's rule (sy_bus_seq_wrap).
      key: (topic) => `${binding.busKeyBase(o.bus.prefix + topic)}:presence`,
    };
    this.#presence = new Presence(o.presence, {
      bus, emit: (...args) => this.emit(...args), report: (err) => this.#report(err),
      local: (topic) => this.subscribers(topic),
    });
    if (pusher !== null) {
      this.#pusherPresence = pusherPresence(this, this.#handle, {
        pusher, bus, ttl: o.presence?.ttl, owe: () => this.#owe(), report: (err) => this.#report(err),
        running: () => this.#state === 'listening' || this.#state === 'closing',
      });
    }
    if (o.tokens !== null) {
      this.#setTokens(o.tokens.keys);
      // server.options shows which keys, never their secrets.
      o.tokens = { ...o.tokens, keys: o.tokens.keys.map(([kind, kid, alg]) => ({ kind, kid, alg })) };
    }
    this.#asks = new Asks({ onSubscribe: o.onSubscribe, onPublish: o.onPublish, onRequest: o.onRequest }, o.askTimeout, {
      answer: (id, rid, frame, binary) => {
        if (this.#state !== 'listening') return;
        binding.serverAnswer(this.#handle, id, rid, frame, binary);
        this.#owe();
      },
      subscribe: (id, rid, topic, since, extra) => this.#state === 'listening' &&
        binding.serverAnswerSubscribe(this.#handle, id, rid, topic, since ? since.epoch : null,
          since ? Math.min(since.offset, Number.MAX_SAFE_INTEGER) : 0, extra),
      publish: (topic, data) => this.publish(topic, data),
      // With a bus, Redis numbers a message a round trip after publish():
      // the position now is not the message's, and the answer claims none.
      position: (topic) => (o.bus === null ? this.position(topic) : null),
    }, (err) => this.#report(err), this.#presence);
    if (o.bus !== null) {
      this.#bus = new Bus(o.bus);
      this.#bus[busAttach]((id, route, args) => binding.serverBusCall(this.#handle, id, route, args), this.#presence);
      try {
        binding.serverSetBus(this.#handle, nativeBusOptions(o.bus), (kind, a, b) => {
          if (kind === 'ctl' && (this.#streamPost(a) || channelsCtl(this, bus, this.#pusherPresence?.channels ?? null, a))) return;
          this.#bus[busUpdate](kind, a, b);
        });
      } catch (err) {
        if (err.code === 'ERR_SYMPHONY_TLS') throw new TlsError(err.message.replace('symphony: bus.tls:', 'symphony: options.bus.tls:'));
        throw err;
      }
    }
    this.#pusherHooks?.start(); // occupancy, once the bus is there
    if (o.noServer) {
      // The IO threads start now, without a listener.
      binding.serverListen(this.#handle, (type, id, code, payload) => this.#dispatch(type, id, code, payload), false);
      this.#state = 'listening';
      // --- first hour (issue 46): a noServer server never used does not keep the process alive.
      this.#keepAlive(false);
    }
  }

  // --- first hour (issue 46): whether the IO threads' events keep Node's
  // loop alive. A noServer server holds it only from its first connection
  // (handleUpgrade / handleRequest) and while it closes.
  #held = true;
  #keepAlive(on) {
    if (this.#held === on || typeof binding.serverRef !== 'function') return;
    this.#held = on;
    binding.serverRef(this.#handle, on);
  }

  /**
   * Takes over a connection from a node:http server's 'upgrade' event (so
   * from Express, Fastify, Koa): symphony checks the upgrade request as its
   * own listener would (the same HTTP answers), asks onUpgrade, and writes
   * the 101 from an IO thread on its own duplicate of the socket; Node's
   * socket is let go without a byte written. Returns true when taken over;
   * false when it could not be (a TLS socket, one already destroyed or with
   * bytes Node still has to write, a server that is closed): then the client
   * got an HTTP error where possible, and the reason goes to 'error'.
   */
  handleUpgrade(req, socket, head) {
    if (req === null || typeof req !== 'object' || typeof req.method !== 'string' || typeof req.url !== 'string' ||
        !Array.isArray(req.rawHeaders) || typeof req.httpVersion !== 'string') {
      throw invalidArgType('req', 'an http.IncomingMessage', req);
    }
    if (!(socket instanceof net.Socket)) throw invalidArgType('socket', 'a net.Socket', socket);
    if (head === undefined || head === null) head = Buffer.alloc(0);
    if (!Buffer.isBuffer(head)) throw invalidArgType('head', 'a Buffer', head);
    const refuse = (status, code, why) => {
      answerThroughNode(socket, status, why);
      socket.destroy();
      this.#report(new SymphonyError(code, `symphony: handleUpgrade: ${why}`));
      return false;
    };
    if (this.#state !== 'listening') return refuse(503, 'ERR_SERVER_NOT_RUNNING', 'the server is not running');
    if (socket.encrypted) {
      return refuse(501, 'ERR_SYMPHONY_TLS_SOCKET', 'a TLS socket cannot be taken over (its TLS state is in Node\'s OpenSSL): ' +
        'terminate TLS at the proxy, or give symphony its own port with the tls option');
    }
    if (socket.destroyed || !socket.readable) return refuse(500, 'ERR_SYMPHONY_UNADOPTABLE', 'the socket is already closed');
    if (socket.writableLength > 0) {
      return refuse(500, 'ERR_SYMPHONY_UNADOPTABLE', 'Node still has bytes to write on this socket');
    }
    const fd = socket._handle && typeof socket._handle.fd === 'number' ? socket._handle.fd : -1;
    if (fd < 0) {
      return refuse(500, 'ERR_SYMPHONY_UNADOPTABLE', process.platform === 'win32'
        ? 'on Windows, Node does not give out a socket\'s handle: give symphony its own port (the port option)'
        : 'the socket has no file descriptor of its own');
    }
    // Node stops reading; what it read past the request and has not handed
    // out goes to symphony after `head`, before anything read later.
    socket.pause();
    if (typeof socket._handle.readStop === 'function') socket._handle.readStop();
    const later = [];
    for (let chunk; (chunk = socket.read()) !== null;) later.push(chunk);
    this.#keepAlive(true);
    try {
      if (!binding.serverAdopt(this.#handle, fd, Buffer.concat([requestHead(req), head, ...later]))) {
        return refuse(503, 'ERR_SERVER_NOT_RUNNING', 'the server is not running');
      }
    } catch (err) {
      return refuse(500, err.code || 'ERR_SYMPHONY_ADOPT', err.message);
    }
    // Symphony has its own descriptor now; Node closes its one (libuv takes
    // it out of its epoll set first), which leaves the connection open.
    socket.destroy();
    return true;
  }

  /**
   * From a node:http server's 'request' event (so from Express, Fastify,
   * Koa): an event stream's request (docs/sse.md) is taken over by
   * symphony, as handleUpgrade takes an upgrade: a GET that asks for
   * text/event-stream, and a POST with ?sy.stream= (its body read here,
   * then handed over with its head; symphony answers it). Returns true when
   * it took the request, false when it is not a stream's (answer it
   * yourself) or could not be taken over (then the client got an HTTP error
   * and the reason went to 'error', as handleUpgrade's).
   */
  handleRequest(req, res) {
    if (req === null || typeof req !== 'object' || typeof req.method !== 'string' || typeof req.url !== 'string' ||
        !Array.isArray(req.rawHeaders) || typeof req.httpVersion !== 'string' || !(req.socket instanceof net.Socket)) {
      throw invalidArgType('req', 'an http.IncomingMessage', req);
    }
    if (res === null || typeof res !== 'object' || typeof res.writeHead !== 'function') throw invalidArgType('res', 'an http.ServerResponse', res);
    const accept = String(req.headers.accept ?? '');
    const post = req.method === 'POST' && /[?&]sy\.stream=/.test(req.url);
    const stream = req.method === 'GET' && !req.headers.upgrade && /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(accept);
    if (!post && !stream) return false;
    // Node must not answer it or keep the socket alive after.
    res.shouldKeepAlive = false;
    if (stream) return this.handleUpgrade(req, req.socket, Buffer.alloc(0));
    // --- first hour (issue 46): a body something read before (a body parser
    // such as express.json() mounted first) would never end here: said.
    if (req.readableEnded || req.readableDidRead) {
      answerThroughNode(req.socket, 500, 'the request body was already read');
      req.socket.destroy();
      this.#report(new SymphonyError('ERR_SYMPHONY_BODY_READ', `symphony: handleRequest: the body of POST ${req.url} was already ` +
        'read by something mounted before handleRequest (a body parser such as express.json()): mount symphony before body parsers'));
      return true;
    }
    // The body, whole (at most maxPayload + 1 bytes are kept: symphony
    // answers 413 past maxPayload), then the head it is given with: its
    // length as Content-Length, without the Transfer-Encoding Node decoded.
    const max = this.#opts.maxPayload + 1;
    const chunks = [];
    let size = 0;
    req.on('data', (d) => {
      if (size < max) chunks.push(d.subarray(0, max - size));
      size += d.length;
    });
    req.once('end', () => {
      const body = Buffer.concat(chunks);
      const raw = [];
      for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
        const name = req.rawHeaders[i].toLowerCase();
        if (name !== 'content-length' && name !== 'transfer-encoding') raw.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
      }
      raw.push('Content-Length', String(size > body.length ? size : body.length));
      const head = { method: req.method, url: req.url, httpVersion: req.httpVersion, rawHeaders: raw };
      this.handleUpgrade(head, req.socket, body);
    });
    return true;
  }

  #applyTls(tls, name) {
    const [certs, ca] = tlsArgs(tls, name);
    try {
      binding.serverSetTls(this.#handle, certs, ca);
    } catch (err) {
      if (err.code === 'ERR_SYMPHONY_TLS') throw new TlsError(err.message);
      throw err;
    }
  }

  /**
   * Replaces the certificates for new handshakes, atomically; connections
   * already open keep theirs. On any error (a bad certificate, a key that
   * does not match, a wrong passphrase) it throws a TlsError and the server
   * keeps serving the certificates it had.
   */
  setTls(tls) {
    if (this.#opts.tls === null) {
      throw new TlsError('symphony: setTls: this server was created without tls (wss:// needs options.tls)');
    }
    if (this.#state === 'closed' || this.#state === 'closing') {
      throw new SymphonyError('ERR_SERVER_NOT_RUNNING', 'symphony: setTls: the server is closed');
    }
    this.#applyTls(tls, 'tls');
    this.#opts.tls = tlsSummary(tls);
  }

  /** The effective options (defaults filled in). */
  get options() {
    return { ...this.#opts };
  }

  /** Starts listening. Resolves to { host, port }. */
  listen() {
    if (this.#opts.noServer) {
      return Promise.reject(new SymphonyError('ERR_SERVER_NO_LISTEN',
        'symphony: listen() on a noServer server: its connections come through handleUpgrade()'));
    }
    if (this.#state === 'closing' || this.#state === 'closed') {
      return Promise.reject(new SymphonyError('ERR_SERVER_NOT_RUNNING',
        'symphony: listen() after close(): a closed server does not listen again; create a new Server'));
    }
    if (this.#state !== 'new') {
      return Promise.reject(new SymphonyError('ERR_SERVER_ALREADY_LISTEN', 'symphony: listen() was already called'));
    }
    try {
      this.#port = binding.serverListen(this.#handle, (type, id, code, payload) => this.#dispatch(type, id, code, payload), true);
    } catch (err) {
      return Promise.reject(err);
    }
    this.#state = 'listening';
    const address = { host: this.#opts.host, port: this.#port };
    process.nextTick(() => this.emit('listening', address));
    return Promise.resolve(address);
  }

  /** { host, port } while listening, else null. */
  address() {
    return this.#state === 'listening' && !this.#opts.noServer ? { host: this.#opts.host, port: this.#port } : null;
  }

  #topicEvents(on) {
    if (this.#state === 'closed') {
      this.#active = on ? new Set() : null;
      return;
    }
    // Switched on first, then the topics active now: an edge after the
    // switch comes as an EV_TOPIC event, one before it is in the list.
    const now = binding.serverTopicEvents(this.#handle, on);
    this.#active = on ? new Set(now) : null;
  }

  // An IO thread saw a topic's applied subscriptions go 0 -> 1 (on) or
  // 1 -> 0. Threads' events may arrive in any order and late, so: an edge
  // the reported state has not made yet is reported (a subscribe and
  // unsubscribe that both happened before the first event was read is
  // still a true then a false), then the count is read again and, when it
  // says otherwise, that is reported too. Every emit flips the state, so
  // per topic the events alternate and the last one says where it is.
  #topicEdge(topic, on) {
    if (this.#active === null) return;
    if (on !== this.#active.has(topic)) this.#topicState(topic, on);
    const now = binding.serverTopicApplied(this.#handle, topic) > 0;
    if (now !== this.#active.has(topic)) this.#topicState(topic, now);
  }

  #topicState(topic, on) {
    if (on) this.#active.add(topic);
    else this.#active.delete(topic);
    this.emit('subscription', topic, on);
  }

  #dispatch(type, id, code, payload) {
    switch (type) {
      case EV_TOPIC:
        this.#topicEdge(payload, (code & EV_TOPIC_ON) !== 0);
        break;
      case EV_PUSHER_HOOK:
        this.#pusherHooks?.pusherEvent(code, payload);
        break;
      case EV_MESSAGE:
        this.emit('message', id, payload, code === 1);
        break;
      case EV_ASK:
        this.#asks.ask(id, code, payload);
        break;
      case EV_POST:
        if ((code & 2) !== 0) this.#fencedPost(id, (code & 1) !== 0, payload[0], payload[1]);
        else this.#forwardPost(id, (code & 1) !== 0, payload[0], payload[1]);
        break;
      case EV_PUSHER: // (app << 8) | kind: src/io/app/sy_pusher_presence.h
        this.#pusherPresence?.event(id, code & 0xff, code >> 8, payload);
        break;
      case EV_OPEN: {
        const data = this.#userData.get(id);
        // The resumes decided at the accept came just before (EV_RECOVERY).
        const recovery = this.#recovering.get(id) ?? [];
        this.#recovering.delete(id);
        const transport = (code & EV_OPEN_SSE) !== 0 ? 'sse' : 'websocket';
        const info = { protocol: payload, data, compression: (code & EV_OPEN_DEFLATE) !== 0, recovery, transport };
        this.emit('open', id, this.#pusherNode !== null && payload === 'pusher' ? pusherOpenInfo(this.#pusherNode, id, info) : info);
        for (const r of recovery) this.emit('recovery', id, r.topic, { recovered: r.recovered, reason: r.reason });
        break;
      }
      case EV_RECOVERY: {
        // code: (reason << 2) | (at the accept: before 'open' << 1) | recovered
        const r = { topic: payload, recovered: (code & 1) === 1, reason: RECOVERY_REASONS[code >> 2] ?? 'unknown' };
        if (r.recovered) r.reason = null;
        if ((code & 2) === 0) {
          this.emit('recovery', id, r.topic, { recovered: r.recovered, reason: r.reason });
        } else {
          const list = this.#recovering.get(id) ?? [];
          list.push(r);
          this.#recovering.set(id, list);
        }
        break;
      }
      case EV_CLOSE:
        this.#userData.delete(id);
        this.#presence.closed(id);
        this.#pusherPresence?.closed(id);
        this.#recovering.delete(id);
        this.#asks.closed(id);
        this.emit('close', id, code, payload);
        break;
      case EV_DRAIN:
        this.emit('drain', id);
        break;
      case EV_UPGRADE:
        // An error that escapes the answer (an 'error' listener that throws)
        // is an uncaught exception, as a throwing listener of the other
        // events is: rethrown from a next tick, never an unhandled rejection.
        this.#upgrade(id, parseRequest(payload, this.#trust, (code & EV_UPGRADE_SSE) !== 0 ? 'sse' : 'websocket')).catch((err) => process.nextTick(() => { throw err; }));
        break;
      case EV_FAILED: {
        // An IO thread could not go on (its poller failed for good): it has
        // closed its connections and stopped; the others go on.
        const err = new SymphonyError('ERR_SYMPHONY_IO_THREAD',
          `symphony: IO thread ${id} stopped: its poller failed (${payload})`);
        err.thread = id;
        err.errno = code;
        this.#report(err);
        break;
      }
      case EV_CLOSED:
        this.#state = 'closed';
        this.#userData.clear();
        // Settled first, so that a 'subscription' listener that throws below
        // cannot leave close() pending (its callbacks still run after these
        // events: a promise's reactions wait for this turn to end).
        if (this.#closed) this.#closed.resolve();
        // Every subscription has ended (the threads' events said so already,
        // unless one was lost for lack of memory).
        if (this.#active !== null) {
          const left = [...this.#active];
          this.#active.clear();
          for (const topic of left) this.emit('subscription', topic, false);
        }
        break;
      default:
        break;
    }
  }

  /**
   * A POST for an event stream of another node (docs/sse.md, "Several
   * nodes"): over the bus' control channel to every node, which the
   * stream's node delivers; answered 202 once Redis took it (so POSTs sent
   * one after another stay in order), 503 when it could not.
   */
  #forwardPost(id, binary, name, body) {
    if (this.#bus === null) {
      binding.serverPostAnswer(this.#handle, id, 404);
      return;
    }
    const m = JSON.stringify({ t: 'post', to: String(name).slice(0, 16), name: String(name), data: Buffer.from(body).toString('base64'), binary });
    this.#bus[busCtl](m).then(
      () => { if (this.#state === 'listening') binding.serverPostAnswer(this.#handle, id, 202); },
      () => { if (this.#state === 'listening') binding.serverPostAnswer(this.#handle, id, 503); },
    );
  }

  /**
   * A POST for this node's own event stream, with a bus: one that another
   * node forwarded before it (answered 202 before this one was sent) may
   * still be on its way from Redis. The fence lets those through first;
   * then this one goes to its stream's thread, which answers it. When the
   * fence fails (the bus is down), nothing forwarded before can still come
   * (Redis pub/sub does not replay): it is delivered all the same.
   */
  #fencedPost(id, binary, name, body) {
    const deliver = () => {
      if (this.#state === 'listening' && !binding.serverPost(this.#handle, name, body, binary, id)) {
        binding.serverPostAnswer(this.#handle, id, 404);
      }
    };
    this.#bus[busFence]().then(deliver, deliver);
  }

  /** A control message that is a forwarded POST: delivered when the stream is this node's. True: it was one. */
  #streamPost(buf) {
    if (buf.length < 12 || buf.toString('latin1', 0, 11) !== '{"t":"post"') return false;
    let m;
    try {
      m = JSON.parse(buf.toString('utf8'));
    } catch {
      return true;
    }
    this.#nodeTag ??= binding.serverNodeTag(this.#handle);
    if (m && m.to === this.#nodeTag && typeof m.name === 'string' && typeof m.data === 'string' && this.#state === 'listening') {
      binding.serverPost(this.#handle, m.name, Buffer.from(m.data, 'base64'), m.binary === true, 0);
    }
    return true;
  }

  /** Asks onUpgrade and answers; rejects only when reporting a failure throws. */
  async #upgrade(id, req) {
    let result;
    // --- first hour (issue 46): an answer slower than handshakeTimeout is
    // said ('error'), not only counted: the IO thread has hung up by then.
    const limit = this.#opts.handshakeTimeout;
    const timer = limit > 0 ? setTimeout(() => {
      if (this.#state !== 'listening') return;
      const err = new SymphonyError('ERR_SYMPHONY_UPGRADE_TIMEOUT', `symphony: onUpgrade did not answer connection ${id} ` +
        `(${req.url}) within handshakeTimeout (${limit} s): the client was hung up on (stats().timeouts); ` +
        'answer sooner, or raise handshakeTimeout');
      err.id = id;
      this.#report(err);
    }, limit * 1000).unref() : null;
    try {
      result = await this.#opts.onUpgrade(req);
    } catch (err) {
      this.#refuse(id, 500, undefined);
      this.#report(new HookError('onUpgrade', id, null, err, true));
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.#state !== 'listening') return;
    try {
      if (result === false || result === undefined || result === null) {
        this.#refuse(id, 403, undefined);
      } else if (result === true) {
        binding.serverAccept(this.#handle, id, defaultProtocol(req), '', [], true);
      } else if (typeof result === 'object' && result.status !== undefined) {
        integer('onUpgrade result status', result.status, REFUSE_STATUS_MIN, REFUSE_STATUS_MAX);
        this.#refuse(id, result.status, headerLines(result.headers, 'onUpgrade result headers'));
      } else if (typeof result === 'object') {
        const topics = result.topics ?? [];
        if (!Array.isArray(topics)) throw invalidArgType('onUpgrade result topics', 'an array of strings', topics);
        topics.forEach(checkTopic);
        let protocol = defaultProtocol(req);
        if (result.protocol !== undefined) {
          if (result.protocol === false || result.protocol === null) protocol = '';
          else if (typeof result.protocol !== 'string' || !req.protocols.includes(result.protocol)) {
            throw invalidArgValue('onUpgrade result protocol', 'must be one of the offered subprotocols', result.protocol);
          } else protocol = result.protocol;
        }
        const headers = headerLines(result.headers, 'onUpgrade result headers');
        const compress = result.compress ?? true;
        if (typeof compress !== 'boolean') throw invalidArgType('onUpgrade result compress', 'of type boolean', compress);
        const info = result.presence !== undefined ? infoText(result.presence, this.#presence.maxInfo) : null;
        if (result.data !== undefined) this.#userData.set(id, result.data);
        if (binding.serverAccept(this.#handle, id, protocol, headers, topics, compress)) {
          if (info !== null) this.#presence.accepted(id, info);
          for (const topic of topics) this.#presence.join(id, topic);
        } else {
          this.#userData.delete(id);
        }
      } else {
        throw invalidArgType('onUpgrade result', 'a boolean or an object', result);
      }
    } catch (err) {
      this.#refuse(id, 500, undefined);
      this.#report(err);
    }
  }

  #setTokens(keys) {
    if (typeof binding.serverSetTokens !== 'function') {
      throw new SymphonyError('ERR_SYMPHONY_TOKENS', 'symphony: tokens: this build has no OpenSSL to verify them');
    }
    const t = this.#opts.tokens;
    try {
      binding.serverSetTokens(this.#handle, keys, t.audience, t.issuer, t.leeway);
    } catch (err) {
      // --- first hour (issue 46): the binding's error as a SymphonyError, as every error of symphony's own.
      if (err.code === 'ERR_SYMPHONY_TOKENS') throw new SymphonyError(err.code, err.message);
      throw err;
    }
  }

  /**
   * Replaces the keys tokens are verified with (a rotation: keep the old
   * key beside the new one, by kid, until the tokens it signed expire).
   * The IO threads switch at their next turn. Throws, keeping the keys in
   * use, when a key cannot be used.
   */
  setTokenKeys(keys) {
    if (this.#opts.tokens === null) {
      throw new SymphonyError('ERR_SYMPHONY_TOKENS', 'symphony: setTokenKeys: this server was created without options.tokens');
    }
    const native = nativeKeys(keys, 'keys');
    if (this.#state === 'closed') return;
    this.#setTokens(native);
  }

  #refuse(id, status, headers) {
    if (this.#state === 'listening') binding.serverRefuse(this.#handle, id, status, headers ?? '');
  }

  #nodeTag = null; // how this node's streams' names begin (binding.serverNodeTag)

  #report(err) {
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else process.emitWarning(`symphony: ${err && err.stack ? err.stack : err}`);
  }

  /** The data onUpgrade attached to a connection, if any. */
  getUserData(id) {
    return this.#userData.get(id);
  }

  /** The bus (options.bus): its state and events; null without one. */
  get bus() { return this.#bus; }

  /**
   * Sends data to every subscriber of topic; the frame is built and the
   * payload copied once. With a bus, also to every other node (unless
   * options.local); Redis delivers it there at most once. Returns the
   * number of this node's subscribers it went toward.
   */
  publish(topic, data, options) {
    checkTopic(topic);
    return this.#publishTo(binding.serverPublish, topic, data, options);
  }

  /** publish() through native (serverPublish or serverPublishTopic). */
  #publishTo(native, target, data, options) {
    checkData(data);
    const flags = sendFlags(options, data, true);
    const event = publishEvent(options, typeof target === 'string');
    if (this.#state !== 'listening') return 0;
    const n = event === undefined ? native(this.#handle, target, data, flags)
      : publishWithEvent(this.#handle, target, data, flags, event);
    this.#owe();
    return n;
  }

  /**
   * A handle on topic whose publish(data, options) is this server's
   * publish(topic, data, options) without looking the name up each time.
   */
  topic(name, options) {
    checkTopic(name);
    let history;
    let presence;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') throw invalidArgType('options', 'an object', options);
      for (const k of Object.keys(options)) {
        if (k !== 'history' && k !== 'presence') throw invalidArgValue(`options.${k}`, 'is not a known topic option', k);
      }
      if (options.history !== undefined) history = topicHistoryOption(options.history);
      if (options.presence !== undefined) {
        if (typeof options.presence !== 'boolean') throw invalidArgType('options.presence', 'of type boolean', options.presence);
        presence = options.presence;
      }
    }
    if (this.#state === 'closed' || this.#state === 'closing') {
      throw new SymphonyError('ERR_SERVER_NOT_RUNNING', 'symphony: topic: the server is closed');
    }
    const handle = binding.serverTopic(this.#handle, name);
    // The override lives with the topic: while this handle (or a
    // subscriber, or a kept message) holds it.
    if (history !== undefined) binding.serverTopicHistory(this.#handle, handle, history.size, history.ttl);
    // Presence is decided when a connection subscribes: those subscribed
    // already are not listed (give it before the first subscription).
    if (presence !== undefined) this.#presence.setTopic(name, presence);
    return new Topic(name, (data, options) => this.#publishTo(binding.serverPublishTopic, handle, data, options),
      () => this.position(name));
  }

  /**
   * This node's subscribers of topic now (as uWebSockets.js'
   * numSubscribers): a subscription counts from the call that made it
   * (subscribe(), or onUpgrade's topics) until it ends. Exact and cheap (one
   * lookup); 0 for a topic nobody subscribes to.
   */
  subscribers(topic) {
    checkTopic(topic);
    if (this.#state !== 'listening') return 0;
    return binding.serverSubscribers(this.#handle, topic);
  }

  /**
   * Every topic this node has now (subscribed, held by a handle, or keeping
   * history), with its subscribers: a Map of name → count.
   */
  topics() {
    const m = new Map();
    if (this.#state !== 'listening') return m;
    const flat = binding.serverTopics(this.#handle);
    for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
    return m;
  }

  /**
   * The position of topic's history: { epoch, offset (the last given),
   * first (the oldest kept), kept }, or null (no such topic, or no history).
   * Read right after publish(), offset is that publish's (unless a bus
   * delivery to the same topic came in between).
   */
  position(topic) {
    checkTopic(topic);
    if (this.#state === 'closed') return null;
    return binding.serverPosition(this.#handle, topic);
  }

  /** Sends to one connection; false when the id is unknown or closed. */
  send(id, data, options) {
    checkId(id);
    checkData(data);
    const flags = sendFlags(options, data);
    if (this.#state !== 'listening') return false;
    const sent = binding.serverSend(this.#handle, id, data, flags);
    this.#owe();
    return sent;
  }

  /** The IO threads are woken at the end of this turn (see #wake). */
  #owe() {
    if (this.#wakeQueued) return;
    this.#wakeQueued = true;
    queueMicrotask(this.#wake);
  }

  /**
   * Subscribes a connection. options.since = { epoch, offset } (a client's
   * position, e.g. from req.since): what it missed is replayed first, or
   * 'recovery' says why not.
   */
  subscribe(id, topic, options) {
    checkId(id);
    checkTopic(topic);
    let since = null;
    if (options !== undefined) {
      if (options === null || typeof options !== 'object') throw invalidArgType('options', 'an object', options);
      for (const k of Object.keys(options)) {
        if (k !== 'since') throw invalidArgValue(`options.${k}`, 'is not a known subscribe option', k);
      }
      if (options.since !== undefined && options.since !== null) {
        since = options.since;
        if (typeof since !== 'object') throw invalidArgType('options.since', 'an object { epoch, offset }', since);
        if (typeof since.epoch !== 'string' || !/^[0-9a-fA-F]{16}$/.test(since.epoch)) {
          throw invalidArgValue('options.since.epoch', 'must be 16 hexadecimal characters', since.epoch);
        }
        // Up to 2^64, as req.since gives a client's offset (a u64 in the
        // URL, a double here: over 2^53 it comes rounded, up to 2^64).
        integer('options.since.offset', since.offset, 0, 2 ** 64);
      }
    }
    if (this.#state !== 'listening') return false;
    const ok = since !== null
      // Offsets over 2^53 - 1 are past any topic's last one (a topic does
      // not publish 2^53 messages): the largest exact offset stands for
      // them and gets the same answer, 'future'.
      ? binding.serverSubscribeSince(this.#handle, id, topic, since.epoch, Math.min(since.offset, Number.MAX_SAFE_INTEGER))
      : binding.serverSubscribe(this.#handle, id, topic);
    if (ok) this.#presence.join(id, topic);
    return ok;
  }

  unsubscribe(id, topic) {
    checkId(id);
    checkTopic(topic);
    if (this.#state !== 'listening') return false;
    const ok = binding.serverUnsubscribe(this.#handle, id, topic);
    if (ok) this.#presence.leave(id, topic);
    return ok;
  }

  /**
   * Who is subscribed to topic (a topic with presence): [{ node, id, info }]
   * for every connection, on every node with a bus (read from Redis; a
   * node that died is left out after options.presence.ttl), this node's
   * without. [] for a topic without presence on a server with presence;
   * rejects (ERR_SYMPHONY_NO_PRESENCE) on a server without it.
   */
  presence(topic) {
    try {
      checkTopic(topic);
    } catch (err) {
      return Promise.reject(err);
    }
    // --- first hour (issue 46): asking a server without presence is a mistake, said.
    if (this.#opts.presence === null && !this.#presence.has(topic)) {
      return Promise.reject(new SymphonyError('ERR_SYMPHONY_NO_PRESENCE', `symphony: presence(${JSON.stringify(topic)}): ` +
        'this topic keeps no presence (the server was created without options.presence): turn it on with options.presence, ' +
        'or for one topic with server.topic(name, { presence: true })'));
    }
    if (this.#state !== 'listening') return Promise.resolve([]);
    return this.#presence.list(topic);
  }

  /** Starts the close handshake. */
  end(id, code = 1000, reason = '') {
    checkId(id);
    integer('code', code, CLOSE_CODE_MIN, CLOSE_CODE_MAX);
    if (!validSendCode(code)) throw outOfRange('code', 'a close code an endpoint may send (1000-1003, 1007-1014, 3000-4999)', code);
    if (typeof reason !== 'string') throw invalidArgType('reason', 'of type string', reason);
    if (Buffer.byteLength(reason) > CLOSE_REASON_MAX_LEN) {
      throw outOfRange('reason', `at most ${CLOSE_REASON_MAX_LEN} UTF-8 bytes`, Buffer.byteLength(reason));
    }
    if (this.#state !== 'listening') return false;
    return binding.serverEnd(this.#handle, id, code, reason);
  }

  /** Closes the socket at once, without a close frame. */
  terminate(id) {
    checkId(id);
    if (this.#state !== 'listening') return false;
    return binding.serverTerminate(this.#handle, id);
  }

  /** Counters: totals, topics, and one entry per IO thread. */
  stats() {
    if (this.#state === 'closed') return null;
    const s = binding.serverStats(this.#handle);
    s.bus = binding.serverBusStats(this.#handle);
    return s;
  }

  /**
   * Prometheus text exposition (version 0.0.4): this server's counters per
   * IO thread and the allocator's gauges (per arena too). Serve it with
   * content type `text/plain; version=0.0.4`. labels: constant labels added
   * to every sample (e.g. { server: 'feed' } when a process runs several).
   */
  metrics(labels = {}) {
    if (labels === null || typeof labels !== 'object') throw invalidArgType('labels', 'an object', labels);
    for (const k of Object.keys(labels)) {
      if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(k) || k.startsWith('__')) {
        throw invalidArgValue('labels', 'holds a name that is not a valid Prometheus label name', k);
      }
    }
    return exposition(this.stats(), labels);
  }

  /**
   * Stops accepting, sends 1001 to every client, waits up to closeDeadline
   * ms for their replies, then closes what is left and frees everything.
   */
  close() {
    if (this.#closed) return this.#closed.promise;
    let resolve;
    const promise = new Promise((r) => { resolve = r; });
    // The webhooks' last sends end after the server (its last events).
    this.#closed = { promise: this.#pusherHooks === null ? promise : promise.then(() => this.#pusherHooks.close()), resolve };
    if (this.#state === 'listening') {
      this.#state = 'closing';
      this.#keepAlive(true); // --- first hour (issue 46): close() resolves before the process ends
      // This node's presence entries leave Redis (and every node is told)
      // while the bus still runs (for at most closeDeadline ms).
      let timer;
      const deadline = new Promise((r) => { timer = setTimeout(r, this.#opts.closeDeadline); });
      // So do this node's Pusher channels (their channel_vacated webhooks)
      // and presence members.
      Promise.race([Promise.all([this.#presence.close(), this.#pusherPresence?.close(), this.#pusherHooks?.closeOccupancy()]), deadline]).finally(() => {
        clearTimeout(timer);
        binding.serverClose(this.#handle, this.#opts.closeDeadline);
      });
    } else {
      this.#state = 'closed';
      resolve();
    }
    return this.#closed.promise;
  }
}

module.exports = { Server, Topic, DEFAULTS };
