'use strict';
// A raw WebSocket client over net.Socket, for inputs no well-behaved client
// sends: it builds frames byte by byte and reads the server's frames.
const net = require('node:net');
const crypto = require('node:crypto');

const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';

function request(path = '/', headers = {}) {
  const base = {
    Host: 'localhost',
    Upgrade: 'websocket',
    Connection: 'Upgrade',
    'Sec-WebSocket-Key': KEY,
    'Sec-WebSocket-Version': '13',
  };
  const all = { ...base, ...headers };
  let s = `GET ${path} HTTP/1.1\r\n`;
  for (const [k, v] of Object.entries(all)) if (v !== null) s += `${k}: ${v}\r\n`;
  return `${s}\r\n`;
}

/** Connects and collects everything the server sends until it closes. */
function connect(port) {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const state = { sock, data: Buffer.alloc(0), ended: false, error: null };
    sock.on('data', (d) => { state.data = Buffer.concat([state.data, d]); });
    sock.on('error', (e) => { state.error = e; });
    sock.on('close', () => { state.ended = true; });
    sock.once('connect', () => resolve(state));
    sock.once('error', reject);
  });
}

function waitFor(pred, ms = 5000, what = 'condition') {
  // pred may be async: its promise is awaited (a pending promise is not "true").
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = async () => {
      let v;
      try { v = await pred(); } catch (e) { reject(e); return; }
      if (v) resolve(v);
      else if (Date.now() - start > ms) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(tick, 10);
    };
    tick();
  });
}

/** Sends an upgrade request and waits for the 101; returns the state with
 * the bytes after the response head. */
async function open(port, path = '/', headers = {}) {
  const st = await connect(port);
  st.sock.write(request(path, headers));
  await waitFor(() => st.data.indexOf('\r\n\r\n') >= 0 || st.ended, 5000, 'handshake response');
  const end = st.data.indexOf('\r\n\r\n');
  st.head = st.data.subarray(0, end).toString('latin1');
  st.data = st.data.subarray(end + 4);
  return st;
}

/** A client frame; masked unless mask === false. */
function frame(opcode, payload = Buffer.alloc(0), { fin = true, mask = true, rsv = 0 } = {}) {
  payload = Buffer.from(payload);
  const len = payload.length;
  let head;
  if (len < 126) head = Buffer.from([0, len]);
  else if (len < 65536) { head = Buffer.alloc(4); head[1] = 126; head.writeUInt16BE(len, 2); }
  else { head = Buffer.alloc(10); head[1] = 127; head.writeBigUInt64BE(BigInt(len), 2); }
  head[0] = (fin ? 0x80 : 0) | (rsv << 4) | opcode;
  if (!mask) return Buffer.concat([head, payload]);
  head[1] |= 0x80;
  const key = crypto.randomBytes(4);
  const body = Buffer.from(payload);
  for (let i = 0; i < body.length; i++) body[i] ^= key[i & 3];
  return Buffer.concat([head, key, body]);
}

/** Parses the server's (unmasked) frames from a buffer. */
function parseFrames(buf) {
  const out = [];
  let pos = 0;
  while (pos + 2 <= buf.length) {
    const b0 = buf[pos], b1 = buf[pos + 1];
    let len = b1 & 0x7f, off = pos + 2;
    if (len === 126) { if (off + 2 > buf.length) break; len = buf.readUInt16BE(off); off += 2; }
    else if (len === 127) { if (off + 8 > buf.length) break; len = Number(buf.readBigUInt64BE(off)); off += 8; }
    if (off + len > buf.length) break;
    const payload = buf.subarray(off, off + len);
    out.push({ fin: !!(b0 & 0x80), rsv1: !!(b0 & 0x40), opcode: b0 & 0x0f, masked: !!(b1 & 0x80), payload });
    pos = off + len;
  }
  return out;
}

/** Waits for the server's close frame; returns { code, reason }. */
async function closeFrom(st, ms = 5000) {
  const f = await waitFor(() => parseFrames(st.data).find((x) => x.opcode === 8), ms, 'close frame');
  return {
    code: f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005,
    reason: f.payload.subarray(2).toString(),
  };
}

function statusOf(head) {
  const m = /^HTTP\/1\.1 (\d{3})/.exec(head || '');
  return m ? Number(m[1]) : null;
}

module.exports = { request, connect, open, frame, parseFrames, closeFrom, waitFor, statusOf };
