'use strict';
// Pages for the Chromium suites (__test__/browser/, __test__/client/browser.test.js):
//
// - servePage(html): a local http server for a test's page, which also
//   serves the client library (client/symphony-client.mjs, as it is) at
//   /symphony-client.mjs, so a page imports it as one file:
//   `import { SymphonyClient } from '/symphony-client.mjs';`
// - openPage(html): Chromium launched, the page served and loaded in a tab,
//   and its module script run (it sets window.ready).
// - WAITS: a script for such a page: wake(), to call at each of its events,
//   and until(cond, ms, what), which resolves once cond() holds, checked at
//   each wake() (no polling), or rejects after ms with window.summary() if
//   the page defines one.
// - html: the page of __test__/browser/browser.test.js, whose functions are
//   called with page.evaluate(): open(url) connects a WebSocket; every
//   message it receives is echoed back unchanged and kept, so that take(n)
//   can report its type, length and SHA-256; sendText/sendBase64 send.
const http = require('node:http');
const fs = require('node:fs');
const { launch } = require('./chromium');
const { mjsPath } = require('../../scripts/client-cjs');

/** Serves html at every path but /symphony-client.mjs on 127.0.0.1; resolves { url, close() }. */
async function servePage(html) {
  const client = fs.readFileSync(mjsPath);
  const web = http.createServer((req, res) => {
    const isClient = req.url === '/symphony-client.mjs';
    res.writeHead(200, { 'content-type': `text/${isClient ? 'javascript' : 'html'}; charset=utf-8` });
    res.end(isClient ? client : html);
  });
  await new Promise((resolve, reject) => {
    web.once('error', reject);
    web.listen(0, '127.0.0.1', resolve);
  });
  return {
    url: `http://127.0.0.1:${web.address().port}/`,
    close: () => new Promise((resolve) => {
      web.closeAllConnections();
      web.close(() => resolve());
    }),
  };
}

/**
 * Launches Chromium, serves html (servePage) and loads it in a tab, then
 * waits for the page's window.ready (a module script may run after the load
 * event is reported). Resolves { browser, tab, close() }; close() closes the
 * browser, then the server. Nothing is left running when it rejects.
 */
async function openPage(html, { timeout = 10000 } = {}) {
  const web = await servePage(html);
  let browser = null;
  const close = async () => {
    try {
      if (browser) await browser.close();
    } finally {
      await web.close();
    }
  };
  try {
    browser = await launch();
    const tab = await browser.newPage(web.url, { timeout });
    await tab.evaluate(`new Promise((resolve, reject) => {
      const t0 = performance.now();
      const f = () => (window.ready ? resolve(true)
        : performance.now() - t0 > ${timeout} ? reject(new Error('the page did not set window.ready'))
        : setTimeout(f, 10));
      f();
    })`, { timeout: timeout + 1000 });
    return { browser, tab, close };
  } catch (err) {
    await close();
    throw err;
  }
}

const WAITS = `
let waiters = [];
function wake() { for (const w of waiters.slice()) w(); }
window.until = (cond, ms, what) => new Promise((resolve, reject) => {
  const check = () => { if (cond()) { done(); resolve(true); } };
  const done = () => { clearTimeout(timer); waiters = waiters.filter((w) => w !== check); };
  const timer = setTimeout(() => {
    done();
    reject(new Error('timed out after ' + ms + ' ms waiting for ' + what + (window.summary ? ': ' + window.summary() : '')));
  }, ms);
  waiters.push(check);
  check();
});
`;

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

module.exports = { servePage, openPage, WAITS, html };
