'use strict';
// examples/express: the app as a child process (PORT=0). Its session
// decides the upgrade: none, a forged one, another site's page and a
// logged-out one are refused; a logged-in user is subscribed to its own
// topic and the news, gets notes posted through the app, and its WebSocket
// ends with its session. Then the pages in headless Chromium: log in, get a
// note, log out. Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient } = require('symphony-ws/client');
const { launch } = require('../helpers/chromium');
const { start, once, untilDom } = require('./run');

const T = { timeout: 20000 };

async function app(t) {
  const ex = await start(t, 'examples/express/server.js', { env: { PORT: '0' }, ready: /open http:\/\/127\.0\.0\.1:(\d+)\//m });
  return `127.0.0.1:${ex.match[1]}`;
}

/** Logs in as name; resolves the session cookie ("sid=..."). */
async function login(base, name) {
  const res = await fetch(`http://${base}/login`, { method: 'POST', body: new URLSearchParams({ name }), redirect: 'manual' });
  assert.equal(res.status, 303);
  const cookie = res.headers.get('set-cookie');
  assert.match(cookie, /^sid=[\w-]+\.[\w-]+; Path=\/; HttpOnly; SameSite=Lax$/);
  return cookie.split(';')[0];
}

/** The HTTP status an upgrade to /live with these headers gets (101 when accepted). */
function upgrade(base, headers) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://${base}/live`, { headers });
    ws.on('error', () => {});
    ws.once('unexpected-response', (req, res) => { resolve(res.statusCode); ws.terminate(); });
    ws.once('open', () => { resolve(101); ws.close(); });
    ws.once('close', () => reject(new Error('closed before an answer')));
  });
}

/** A client library client with this cookie (and the app's own Origin). */
function client(t, base, cookie) {
  class WithSession extends WebSocket {
    constructor(url, protocols) { super(url, protocols, { headers: { cookie, origin: `http://${base}` } }); }
  }
  const c = new SymphonyClient(`ws://${base}/live`, { WebSocket: WithSession, backoff: { min: 10, max: 50 } });
  c.got = [];
  c.on('message', (topic, data) => c.got.push([topic, JSON.parse(data)]));
  t.after(() => c.close());
  return c;
}

const message = (c, pred, what) => once(c, 'message', { pred: (topic, data) => pred(topic, JSON.parse(data)), what });

test('express: the session decides the upgrade, and its WebSockets end with it', T, async (t) => {
  const base = await app(t);
  const origin = `http://${base}`;
  assert.equal(await upgrade(base, { origin }), 401, 'no session');
  const alice = await login(base, 'alice');
  const forged = alice.replace(/\.[\w-]+$/, '.' + 'A'.repeat(43));
  assert.equal(await upgrade(base, { origin, cookie: forged }), 401, 'a forged signature');
  assert.equal(await upgrade(base, { origin, cookie: 'sid=nosuchsession.x' }), 401, 'a malformed cookie');
  assert.equal(await upgrade(base, { origin: 'http://evil.example', cookie: alice }), 403, 'another site\'s page');
  assert.equal(await upgrade(base, { origin, cookie: alice }), 101, 'the session');

  const a = client(t, base, alice);
  const [, hello] = await message(a, (topic, m) => topic === null && m.hello, 'alice\'s welcome');
  assert.deepEqual(JSON.parse(hello), { hello: 'alice' });

  // Bob logs in: the news reaches alice; his note reaches her through the app.
  const news = message(a, (topic, m) => topic === 'news' && m.news === 'bob logged in', 'the news of bob');
  const bob = await login(base, 'bob');
  await news;
  const note = message(a, (topic, m) => topic === 'user.alice' && m.from === 'bob', 'bob\'s note');
  const post = (cookie, body) => fetch(`http://${base}/notes`, { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const res = await post(bob, { to: 'alice', text: 'hi alice' });
  assert.deepEqual(await res.json(), { delivered: 1 });
  assert.deepEqual(JSON.parse((await note)[1]), { from: 'bob', text: 'hi alice' });
  assert.equal((await post('', { to: 'alice', text: 'anonymous' })).status, 401);
  assert.equal((await post(bob, { to: 'alice' })).status, 400);
  assert.ok(!a.got.some(([, m]) => m.text === 'anonymous'));

  // Alice logs out: her WebSocket is closed with 4001, and her cookie opens nothing any more.
  const closed = once(a, 'state', { pred: (state, info) => state === 'reconnecting', what: 'alice\'s close' });
  const out = await fetch(`http://${base}/logout`, { method: 'POST', headers: { cookie: alice }, redirect: 'manual' });
  assert.equal(out.status, 303);
  assert.match(out.headers.get('set-cookie'), /^sid=;/);
  const [, info] = await closed;
  assert.deepEqual([info.code, info.reason], [4001, 'logged out']);
  assert.equal(await upgrade(base, { origin, cookie: alice }), 401, 'a logged-out session');
  assert.equal(await upgrade(base, { origin, cookie: bob }), 101, 'bob is still in');
});

test('express: the pages in Chromium: log in, get a note, log out', T, async (t) => {
  const base = await app(t);
  const browser = await launch();
  t.after(() => browser.close());
  const page = await browser.newPage(`http://${base}/`);
  const navigated = () => page.cdp.waitEvent('Page.loadEventFired', page.sessionId, 5000);
  let load = navigated();
  await page.evaluate("document.querySelector('input[name=name]').value = 'carol'; document.querySelector('form').requestSubmit()");
  await load;
  const feed = "[...document.querySelectorAll('#feed li')].map((li) => li.textContent)";
  await untilDom(page, `document.getElementById('me').textContent === 'carol' && ${feed}.includes('connected as carol')`, 5000, 'the app page, connected');

  const dave = await login(base, 'dave');
  await untilDom(page, `${feed}.includes('dave logged in')`, 5000, 'the news in the page');
  await page.evaluate("document.getElementById('to').value = 'carol'; document.getElementById('text').value = 'to myself'; document.getElementById('note').requestSubmit()");
  await untilDom(page, `${feed}.includes('carol: to myself')`, 5000, 'the page\'s own note');
  await fetch(`http://${base}/notes`, { method: 'POST', headers: { cookie: dave, 'content-type': 'application/json' }, body: JSON.stringify({ to: 'carol', text: 'hello carol' }) });
  await untilDom(page, `${feed}.includes('dave: hello carol')`, 5000, 'dave\'s note in the page');

  load = navigated();
  await page.evaluate("document.getElementById('logout').click()");
  await load;
  assert.equal(await page.evaluate("document.querySelector('h1').textContent"), 'Log in');
});
