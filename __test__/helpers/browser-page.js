'use strict';
// The page that __test__/browser/browser.test.js loads into headless Chromium. Its
// functions are called with page.evaluate(): open(url) connects a WebSocket;
// every message it receives is echoed back unchanged and kept, so that
// take(n) can report its type, length and SHA-256; sendText/sendBase64 send.
const script = `
'use strict';
let ws = null;
let closed = null;
const inbox = [];
let wake = () => {};

function open(url) {
  return new Promise((resolve, reject) => {
    ws = new WebSocket(url);
    ws.binaryType = 'arraybuffer';
    ws.onopen = () => resolve({ extensions: ws.extensions, protocol: ws.protocol });
    ws.onerror = () => reject(new Error('WebSocket error'));
    ws.onclose = (e) => { closed = { code: e.code, reason: e.reason }; wake(); };
    ws.onmessage = (e) => { ws.send(e.data); inbox.push(e.data); wake(); };
  });
}

async function describe(data) {
  const binary = typeof data !== 'string';
  const bytes = binary ? new Uint8Array(data) : new TextEncoder().encode(data);
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  const sha256 = Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  return { binary, length: bytes.length, sha256 };
}

/** The first n messages received (waits for them), described; removes them. */
async function take(n) {
  while (inbox.length < n) {
    if (closed) throw new Error('closed (' + closed.code + ') with ' + inbox.length + ' of ' + n + ' messages');
    await new Promise((r) => { wake = r; });
  }
  return Promise.all(inbox.splice(0, n).map(describe));
}

function sendText(s) { ws.send(s); return s.length; }

function sendBase64(b64) {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  ws.send(bytes);
  return bytes.length;
}
`;

const html = `<!doctype html><html><head><meta charset="utf-8"><title>symphony browser test</title>
<script>${script}</script></head><body>symphony</body></html>`;

module.exports = { html };
