'use strict';
// The misbehaving network of the Chromium suites (__test__/browser/
// recovery, eventsource and fallback): a TCP proxy on 127.0.0.1 whose every
// connection is one to a target port, and which cuts its connections (both
// sides destroyed, at once or after a number of bytes toward the page) or
// holds their bytes for a while, when the test says so.
//
// - new CutProxy(target): cuts count bytes from the connection's first
//   byte toward the page (a WebSocket: in the 101, a frame, the replay).
// - { heads: true }: each response's head is found first; armNext counts
//   from its end, and no cut falls inside it (Chromium fails an
//   EventSource for good on a head cut after its first byte).
// - { requests: true }: each connection's first request head is read
//   before the server is dialled, and says what the connection is (kinds:
//   websocket, stream (a GET whose Accept names text/event-stream), post,
//   other); a connection carries one request: the proxy asks the server
//   to close after each request that is no upgrade nor event stream
//   ("Connection: close" in its head, as nginx speaks to its upstreams by
//   default; the server keeps a POST's connection otherwise), and Chromium
//   opens a WebSocket on a connection of its own. Cuts, holds and armNext then
//   take only event streams, and `refuse` ('strip' or '400', null to let
//   through) refuses upgrades as a proxy that knows nothing of WebSockets
//   does; everything else passes as it is.
const net = require('node:net');
const { once, EventEmitter } = require('node:events');

const HEAD_END = '\r\n\r\n';
const HEAD_MAX = 65536;
/** Bytes of an event stream after its head kept to see whether its sy.notice passed. */
const EARLY = 2048;

/**
 * The proxy. Counters: accepted (connections), cuts, armedCuts (cuts of a
 * connection armNext armed), earlyCuts (cut before the end of the head +
 * 600 B: before the page could have its subscribed notice), unnoticed (with
 * heads: cut before a whole `event: sy.notice` passed), holds; with
 * requests: kinds ({ websocket, stream, post, other }), refused and
 * upgrades (let through). log: what it did, the last ~200 entries. Emits
 * 'refused' (the connection's number) at each refused upgrade.
 */
class CutProxy extends EventEmitter {
  /**
   * @param {number} target the port on 127.0.0.1 every connection goes to
   * @param {{ heads?: boolean, requests?: boolean, refuse?: null | 'strip' | '400' }} [options]
   *   heads: find each response's head, cut only after it; requests: read
   *   each request head first, cut only event streams; refuse (with
   *   requests, changeable later as proxy.refuse): 'strip' forwards an
   *   upgrade's GET without Upgrade and Connection's upgrade token, '400'
   *   answers it here, null lets it through.
   */
  constructor(target, { heads = false, requests = false, refuse = null } = {}) {
    super();
    this.target = target;
    this.heads = heads;
    this.requests = requests;
    this.refuse = refuse;
    this.pairs = new Set();
    this.accepted = 0;
    this.kinds = { websocket: 0, stream: 0, post: 0, other: 0 };
    this.refused = 0;
    this.upgrades = 0;
    this.cuts = 0;
    this.armedCuts = 0;
    this.earlyCuts = 0;
    this.unnoticed = 0;
    this.holds = 0;
    this.armed = null;
    this.log = [];
  }

  /** Listens on 127.0.0.1 (a free port); resolves the port, also in proxy.port. */
  async listen() {
    this.server = net.createServer((c) => this.#accept(c));
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.port = this.server.address().port;
    return this.port;
  }

  #note(s) {
    this.log.push(s);
    if (this.log.length > 200) this.log.splice(0, 50);
  }

  #accept(client) {
    client.setNoDelay(true);
    // headEnd: where the response's head ends (0 without heads); afterHead:
    // the armed cut's bytes after it; early: an event stream's first bytes.
    const pair = {
      n: ++this.accepted, client, upstream: null, kind: null, request: Buffer.alloc(0), held: null, down: 0,
      head: Buffer.alloc(0), headEnd: this.heads ? null : 0, early: '', cutAt: null, afterHead: null, dead: false, onCut: null,
    };
    this.pairs.add(pair);
    client.on('data', (d) => this.#up(pair, d));
    client.on('error', (err) => this.#kill(pair, `page error ${err.code}`));
    client.on('close', () => this.#closed(pair, 'page'));
    if (this.requests) return;
    this.#arm(pair);
    this.#dial(pair, null);
  }

  /** The pair takes the armed cut, if any. */
  #arm(pair) {
    pair.afterHead = this.armed;
    this.armed = null;
    if (pair.afterHead !== null && pair.headEnd !== null) pair.cutAt = pair.headEnd + pair.afterHead;
  }

  /** Connects the pair to the target; first (a Buffer) is written to it. */
  #dial(pair, first) {
    const upstream = pair.upstream = net.connect(this.target, '127.0.0.1');
    upstream.setNoDelay(true);
    upstream.on('data', (x) => this.#down(pair, x));
    upstream.on('error', (err) => this.#kill(pair, `server error ${err.code}`));
    upstream.on('close', () => this.#closed(pair, 'server'));
    if (first) upstream.write(first);
  }

  /** Bytes toward the server: held, forwarded, or (with requests) the request head read first. */
  #up(pair, d) {
    if (pair.dead) return;
    if (pair.held) { pair.held.push(['up', d]); return; }
    if (pair.upstream) { pair.upstream.write(d); return; }
    pair.request = Buffer.concat([pair.request, d]);
    const i = pair.request.indexOf(HEAD_END);
    if (i < 0) {
      if (pair.request.length > HEAD_MAX) this.#kill(pair, 'request head over 64 KB');
      return;
    }
    const lines = pair.request.subarray(0, i).toString('latin1').split('\r\n');
    const rest = pair.request.subarray(i + 4);
    pair.request = null;
    const [line, ...headers] = lines;
    const has = (name, re) => headers.some((h) => h.slice(0, name.length + 1).toLowerCase() === `${name}:` && re.test(h.slice(name.length + 1)));
    const kind = pair.kind = has('upgrade', /\bwebsocket\b/i) ? 'websocket'
      : /^GET /.test(line) && has('accept', /text\/event-stream/i) ? 'stream'
        : /^POST /.test(line) ? 'post' : 'other';
    this.kinds[kind]++;
    let out = lines;
    if (kind === 'websocket' && this.refuse !== null) {
      this.refused++;
      this.emit('refused', pair.n);
      if (this.refuse === '400') {
        this.#note(`#${pair.n} ${line}: upgrade answered 400`);
        pair.dead = true;
        this.pairs.delete(pair);
        pair.client.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        pair.client.setTimeout(2000, () => pair.client.destroy());
        return;
      }
      out = [line, ...stripUpgrade(headers)];
      this.#note(`#${pair.n} ${line}: Upgrade stripped, forwarded`);
    } else {
      if (kind === 'websocket') this.upgrades++;
      if (kind === 'stream') this.#arm(pair);
      if (kind === 'post' || kind === 'other') out = [line, ...headers.filter((h) => !/^connection:/i.test(h)), 'Connection: close'];
      this.#note(`#${pair.n} ${line} (${kind})`);
    }
    this.#dial(pair, Buffer.concat([Buffer.from(`${out.join('\r\n')}${HEAD_END}`, 'latin1'), rest]));
  }

  /** Bytes toward the page: held, forwarded, or forwarded up to a cut (never inside a head). */
  #down(pair, d) {
    if (pair.dead) return;
    if (pair.held) { pair.held.push(['down', d]); return; }
    if (pair.headEnd === null) {
      // Bounded: a head is a few hundred bytes.
      pair.head = Buffer.concat([pair.head, d]).subarray(-HEAD_MAX);
      const i = pair.head.indexOf(HEAD_END);
      if (i >= 0) {
        pair.headEnd = pair.down + d.length - (pair.head.length - (i + 4));
        this.#note(`#${pair.n} ${pair.head.subarray(0, pair.head.indexOf('\r\n')).toString('latin1')}, head ${pair.headEnd} B`);
        pair.head = null;
        if (pair.afterHead !== null) pair.cutAt = pair.headEnd + pair.afterHead;
      }
    }
    let part = d;
    let cut = false;
    if (pair.cutAt !== null && pair.headEnd !== null && pair.down + d.length >= pair.cutAt) {
      part = d.subarray(0, Math.max(0, pair.cutAt - pair.down));
      cut = true;
    }
    if (this.heads && pair.headEnd !== null && pair.early.length < EARLY) {
      // The stream's first bytes after its head: did its sy.notice pass?
      const from = Math.max(0, pair.headEnd - pair.down);
      pair.early += part.subarray(from, from + EARLY).toString('latin1');
    }
    pair.down += part.length;
    if (!cut) pair.client.write(part);
    else this.#cut(pair, part, `after ${pair.down} B to the page${this.heads ? ` (${pair.down - pair.headEnd} B after the head)` : ''}`);
  }

  /** A cut: the server's side destroyed now, the page's once `last` is written. */
  #cut(pair, last, why) {
    if (pair.dead) return;
    pair.dead = true;
    this.pairs.delete(pair);
    this.cuts++;
    if (pair.afterHead !== null) this.armedCuts++;
    if (pair.headEnd === null || pair.down < pair.headEnd + 600) this.earlyCuts++;
    if (this.heads && !/event: sy\.notice\n(?:[^\n]+\n)*\n/.test(pair.early)) this.unnoticed++;
    this.#note(`#${pair.n} cut ${why}`);
    this.#gone(pair);
    pair.upstream.destroy();
    if (last && last.length > 0) pair.client.write(last, () => pair.client.destroy());
    else pair.client.destroy();
    if (pair.onCut) pair.onCut();
  }

  #kill(pair, why) {
    if (pair.dead) return;
    pair.dead = true;
    this.pairs.delete(pair);
    this.#note(`#${pair.n} ${why}`);
    this.#gone(pair);
    pair.client.destroy();
    if (pair.upstream) pair.upstream.destroy();
  }

  /** One side closed by itself (the server's terminate or close, the page's close): the other side ends after what it was sent. */
  #closed(pair, side) {
    if (pair.dead) return;
    pair.dead = true;
    this.pairs.delete(pair);
    if (pair.kind !== 'post') this.#note(`#${pair.n}${pair.kind ? ` (${pair.kind})` : ''} closed by the ${side} after ${pair.down} B to the page`);
    this.#gone(pair);
    const other = side === 'page' ? pair.upstream : pair.client;
    if (!other) return;
    for (const [dir, d] of pair.held || []) if ((dir === 'down') === (other === pair.client)) other.write(d);
    other.end();
    other.setTimeout(2000, () => other.destroy());
  }

  /** The live connections a cut or a hold takes: every one, or with requests the event streams. */
  #targets() { return [...this.pairs].filter((p) => !this.requests || p.kind === 'stream'); }

  /** Cuts the live connections now; returns how many. */
  cut() {
    let n = 0;
    for (const pair of this.#targets()) { this.#cut(pair, null, `now, after ${pair.down} B to the page`); n++; }
    return n;
  }

  /** Cuts the live connections after n more bytes toward the page (past the head); resolves once each was cut or closed. */
  cutAfter(bytes) {
    const live = this.#targets();
    this.#note(`cut ${live.map((p) => `#${p.n}`).join(',')} after ${bytes} more B`);
    return Promise.all(live.map((pair) => new Promise((resolve) => {
      pair.onCut = resolve;
      pair.cutAt = Math.max(pair.down, pair.headEnd ?? 0) + bytes;
      pair.client.once('close', resolve);
    })));
  }

  /** Keeps the bytes of both directions of the live connections for ms, then lets them through (or cuts, thenCut, losing them); resolves then. */
  hold(ms, thenCut = false) {
    const pairs = this.#targets().filter((p) => !p.held);
    for (const pair of pairs) pair.held = [];
    this.holds += pairs.length;
    this.#note(`hold ${pairs.map((p) => `#${p.n}`).join(',')} ${ms} ms${thenCut ? ', then cut' : ''}`);
    return new Promise((resolve) => setTimeout(() => {
      for (const pair of pairs) {
        const held = pair.held;
        pair.held = null;
        if (pair.dead) continue;
        if (thenCut) this.#cut(pair, null, `after holding ${held.length} chunks`);
        else for (const [dir, d] of held) if (dir === 'up') this.#up(pair, d); else this.#down(pair, d);
      }
      resolve();
    }, ms));
  }

  /**
   * The next connection (with requests: event stream) is cut n bytes after
   * the end of its response's head (without heads: after its first n bytes
   * toward the page); resolves once it was cut (or closed otherwise).
   */
  armNext(bytes) {
    this.armed = bytes;
    return new Promise((resolve) => { this.#armedEnd = resolve; });
  }

  #armedEnd = null;

  /** A pair is gone: if it was an armed one, armNext's promise resolves. */
  #gone(pair) {
    if (pair.afterHead === null || this.#armedEnd === null) return;
    const resolve = this.#armedEnd;
    this.#armedEnd = null;
    resolve();
  }

  /** Destroys every live connection and stops listening. */
  async close() {
    for (const pair of [...this.pairs]) this.#kill(pair, 'proxy closing');
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** What a proxy that forwards hop-by-hop headers no further does to an upgrade's headers: Upgrade and Connection's upgrade token dropped. */
function stripUpgrade(headers) {
  const out = [];
  for (const h of headers) {
    const name = h.slice(0, h.indexOf(':')).trim().toLowerCase();
    if (name === 'upgrade') continue;
    if (name === 'connection') {
      const tokens = h.slice(h.indexOf(':') + 1).split(',').map((t) => t.trim()).filter((t) => t && t.toLowerCase() !== 'upgrade');
      if (tokens.length > 0) out.push(`Connection: ${tokens.join(', ')}`);
      continue;
    }
    out.push(h);
  }
  return out;
}

module.exports = { CutProxy };
