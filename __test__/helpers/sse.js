'use strict';
// An event stream's client for the tests: a GET with Accept:
// text/event-stream over node:http, its body parsed as the WHATWG
// EventSource algorithm does (lines end at CR, LF or CRLF; "data" lines
// joined with LF; one space after the colon dropped; an empty line
// dispatches; the last id is kept across events). Each event is
// { id, event, data, fields }, where id is the last id then and fields every
// field of the event (the unknown ones, "enc", included).
const http = require('node:http');

/** Parses text into events; feed() takes chunks, returns the complete events. */
function parser() {
  let buf = '';
  let lastId = '';
  let cur = { data: [], event: '', fields: {} };
  return function feed(chunk) {
    buf += chunk;
    const out = [];
    for (;;) {
      const m = /\r\n|\r|\n/.exec(buf);
      if (m === null || (m[0] === '\r' && m.index === buf.length - 1)) break; // a CR may be a CRLF's
      const line = buf.slice(0, m.index);
      buf = buf.slice(m.index + m[0].length);
      if (line === '') {
        if (cur.data.length > 0) {
          out.push({ id: lastId, event: cur.event || 'message', data: cur.data.join('\n'), fields: cur.fields });
        }
        cur = { data: [], event: '', fields: {} };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const name = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      cur.fields[name] = value;
      if (name === 'data') cur.data.push(value);
      else if (name === 'event') cur.event = value;
      else if (name === 'id' && !value.includes('\0')) lastId = value;
    }
    return out;
  };
}

/**
 * Opens a stream. Resolves with { res, status, headers, body (for a
 * refusal), events (all so far), next(pred), close() } once the response
 * head is in. next(pred) resolves with the first event (from the start of
 * the stream, not yet taken by an earlier next) that satisfies pred, or
 * rejects when the stream ends first.
 */
function openStream(port, { path = '/', headers = {}, host = '127.0.0.1' } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host, port, path, agent: false, headers: { accept: 'text/event-stream', ...headers } });
    req.once('error', reject);
    req.once('response', (res) => {
      const s = { res, status: res.statusCode, headers: res.headers, body: '', events: [], ended: false, taken: 0 };
      const waiters = [];
      const check = () => {
        for (const w of [...waiters]) {
          const i = s.events.findIndex((e, k) => k >= w.from && w.pred(e));
          if (i >= 0) {
            waiters.splice(waiters.indexOf(w), 1);
            w.resolve(s.events[i]);
          } else if (s.ended) {
            waiters.splice(waiters.indexOf(w), 1);
            w.reject(new Error(`the stream ended before the event; it had: ${JSON.stringify(s.events)}`));
          }
        }
      };
      const feed = parser();
      res.setEncoding('utf8');
      res.on('data', (d) => {
        if (s.status !== 200) s.body += d;
        else s.events.push(...feed(d));
        check();
      });
      const end = () => {
        s.ended = true;
        check();
      };
      res.on('end', end);
      res.on('close', end);
      req.on('error', end);
      s.next = (pred = () => true) => new Promise((resolve2, reject2) => {
        waiters.push({ pred, from: s.taken, resolve: (e) => { s.taken = s.events.indexOf(e) + 1; resolve2(e); }, reject: reject2 });
        check();
      });
      s.close = () => req.destroy();
      s.done = new Promise((r) => (s.ended ? r() : res.once('close', r)));
      resolve(s);
    });
  });
}

/** The name a stream POSTs with (its sy.open event). */
async function streamName(s) {
  const e = await s.next((x) => x.event === 'sy.open');
  return JSON.parse(e.data).stream;
}

/** POSTs body for the stream named name: resolves with { status, body }. */
function post(port, name, body, headers = {}, path = '/') {
  return new Promise((resolve, reject) => {
    const r = http.request({ host: '127.0.0.1', port, method: 'POST', agent: false, path: `${path}?sy.stream=${name}`, headers }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { b += d; });
      res.on('end', () => resolve({ status: res.statusCode, statusMessage: res.statusMessage, body: b }));
    });
    r.once('error', reject);
    r.end(body);
  });
}

module.exports = { openStream, streamName, post, parser };
