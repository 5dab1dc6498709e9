'use strict';
// A symphony.v1 client for the history suites, written from docs/protocol.md
// (not the client library): it parses every frame the server sends, keeps
// the positions a client keeps, and lets a test wait on what arrived.
const WebSocket = require('ws');
const { waitFor } = require('./raw');

/** The query string of positions: [{ epoch, offset, topic }] -> 'sy.since=...&sy.since=...'. */
function sinceQuery(list) {
  return list.map((s) => `sy.since=${encodeURIComponent(`${s.epoch}:${s.offset}:${s.topic}`)}`).join('&');
}

/**
 * One server frame as symphony.v1 says: { kind: 'p', id, offset (BigInt or
 * undefined), payload, binary } | { kind: 'd', payload, binary } |
 * { kind: 'c', notice, binary } | { kind: '?', raw, binary } (a frame that
 * breaks the format: the tests fail on it).
 */
function parseFrame(data, binary) {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data);
  const kind = String.fromCharCode(buf[0]);
  if (kind === 'c') return { kind, notice: JSON.parse(buf.subarray(1).toString()), binary };
  const nl = buf.indexOf(0x0a);
  if (nl < 0) return { kind: '?', raw: buf, binary };
  const head = buf.subarray(1, nl).toString('latin1');
  const payload = buf.subarray(nl + 1);
  if (kind === 'd') return head === '' ? { kind, payload, binary } : { kind: '?', raw: buf, binary };
  if (kind === 'p') {
    const m = /^(\d+)(?:,(\d+))?$/.exec(head);
    if (!m) return { kind: '?', raw: buf, binary };
    return { kind, id: Number(m[1]), offset: m[2] === undefined ? undefined : BigInt(m[2]), payload, binary };
  }
  return { kind: '?', raw: buf, binary };
}

/**
 * Opens a symphony.v1 connection to url (a path and query may be given by
 * the caller; positions are appended as sy.since). Resolves once open to
 * { ws, frames: every parsed frame in order, topics: Map id -> name,
 *   notices(type), messages(topic), closed: Promise }.
 */
function connectV1(url, { since = [], protocols = ['symphony.v1'], wsOptions = {} } = {}) {
  const q = sinceQuery(since);
  const full = q === '' ? url : `${url}${url.includes('?') ? '&' : '?'}${q}`;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(full, protocols, wsOptions);
    const c = {
      ws,
      frames: [],
      topics: new Map(),
      closed: new Promise((r) => ws.once('close', (code) => r(code))),
      notices(type) { return this.frames.filter((f) => f.kind === 'c' && f.notice.type === type).map((f) => f.notice); },
      /** The 'p' frames of a topic (by name, through the notices' ids). */
      messages(topic) {
        return this.frames.filter((f) => f.kind === 'p' && f.topic === topic);
      },
      until(pred, ms = 10000, what = 'frames') { return waitFor(() => pred(this), ms, what); },
    };
    ws.on('message', (data, binary) => {
      const f = parseFrame(data, binary);
      if (f.kind === 'c' && f.notice.type === 'subscribed') c.topics.set(f.notice.id, f.notice.topic);
      if (f.kind === 'p') f.topic = c.topics.get(f.id);
      c.frames.push(f);
    });
    ws.once('open', () => resolve(c));
    ws.once('error', reject);
  });
}

/**
 * A symphony.v2 connection: connectV1's (opts as its), with the raw frames
 * kept (raw), answers by rid (answer, waitAnswer), and sub(...entries),
 * which sends one subscribe frame.
 */
async function connectV2(url, opts = {}) {
  const c = await connectV1(url, { protocols: ['symphony.v1', 'symphony.v2'], ...opts });
  c.raw = [];
  c.ws.on('message', (data, binary) => c.raw.push({ data: Buffer.from(data), binary }));
  c.answer = (type, rid) => c.notices(type).find((n) => n.rid === rid);
  c.waitAnswer = (type, rid, what) => c.until(() => c.answer(type, rid) !== undefined, 10000, what ?? `${type} ${rid}`);
  c.sub = (...subs) => c.ws.send(`s${JSON.stringify({ subs })}`);
  return c;
}

module.exports = { sinceQuery, parseFrame, connectV1, connectV2 };
