'use strict';
// examples/chat: the server as a child process (PORT=0), driven by the
// client library in Node (rooms, presence, what the hooks refuse) and its
// page in headless Chromium (two users, a message, a room change). Fails
// (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { SymphonyClient } = require('symphony-ws/client');
const { launch } = require('../helpers/chromium');
const { start, once, untilDom } = require('./run');

const T = { timeout: 20000 };

async function chat(t) {
  const ex = await start(t, 'examples/chat/server.js', { env: { PORT: '0' }, ready: /open http:\/\/127\.0\.0\.1:(\d+)\//m });
  return Number(ex.match[1]);
}

/** A client of the chat named name; closed in t.after. Records each room's messages. */
function user(t, port, name) {
  const client = new SymphonyClient(`ws://127.0.0.1:${port}/chat?name=${name}`, { WebSocket, backoff: { min: 10, max: 100 } });
  t.after(() => client.close());
  return client;
}

/** Subscribes client to topic; resolves the subscription once subscribed, with every message it gets in .got. */
async function join(client, topic) {
  const sub = client.subscribe(topic);
  sub.got = [];
  sub.on('message', (data) => sub.got.push(JSON.parse(data)));
  await once(sub, 'subscribed', { what: `${topic} subscribed` });
  return sub;
}

const next = (sub, pred, what) => once(sub, 'message', { pred: (data) => pred(JSON.parse(data)), what });

test('chat: clients join rooms themselves, see who is there, speak only as themselves', T, async (t) => {
  const port = await chat(t);
  const alice = user(t, port, 'alice');
  const bob = user(t, port, 'bob');

  const lobbyA = await join(alice, 'room.lobby');
  const bobJoined = next(lobbyA, (m) => m.join === 'bob', 'alice to hear bob join');
  const lobbyB = await join(bob, 'room.lobby');
  await bobJoined;
  assert.deepEqual((await bob.request(JSON.stringify({ who: 'room.lobby' }))).sort(), ['alice', 'bob']);
  assert.deepEqual(await bob.request(JSON.stringify({ who: 'room.empty' })), []);

  // A message reaches everyone in the room, with its offset in the room's history.
  const heard = next(lobbyA, (m) => m.text === 'hi alice', 'alice to get bob\'s message');
  const { offset } = await bob.publish('room.lobby', JSON.stringify({ from: 'bob', text: 'hi alice' }));
  assert.ok(offset >= 1, `an offset: ${offset}`);
  assert.deepEqual((await heard)[0], JSON.stringify({ from: 'bob', text: 'hi alice' }));

  // What the hooks refuse: another's name, a topic that is no room, bad JSON.
  await assert.rejects(bob.publish('room.lobby', JSON.stringify({ from: 'alice', text: 'it was me' })), { code: 'forbidden' });
  await assert.rejects(bob.publish('room.lobby', '{oops'), { code: 'bad-json' });
  await assert.rejects(bob.publish('secrets', JSON.stringify({ from: 'bob', text: 'x' })), { code: 'forbidden' });
  const admin = bob.subscribe('admin');
  const [err] = await once(admin, 'refused', { what: 'admin refused' });
  assert.equal(err.code, 'forbidden');

  // Bob moves to another room: the lobby hears him leave.
  const left = next(lobbyA, (m) => m.leave === 'bob', 'alice to hear bob leave');
  lobbyB.unsubscribe();
  await join(bob, 'room.random');
  await left;
  assert.deepEqual(await alice.request(JSON.stringify({ who: 'room.lobby' })), ['alice']);
  assert.deepEqual(await alice.request(JSON.stringify({ who: 'room.random' })), ['bob']);
  assert.ok(!lobbyA.got.some((m) => m.text === 'it was me'), 'the refused message went nowhere');
});

test('chat: an upgrade without a name is refused with 400', T, async (t) => {
  const port = await chat(t);
  const ws = new WebSocket(`ws://127.0.0.1:${port}/chat`);
  const [, res] = await once(ws, 'unexpected-response', { what: 'the refusal' });
  assert.equal(res.statusCode, 400);
  ws.on('error', () => {}); // terminate() before an open reports one
  ws.terminate();
  const page = await fetch(`http://127.0.0.1:${port}/`);
  assert.match(await page.text(), /<title>symphony chat<\/title>/);
  const lib = await fetch(`http://127.0.0.1:${port}/symphony-client.mjs`);
  assert.equal(lib.headers.get('content-type'), 'text/javascript');
  assert.match(await lib.text(), /export class SymphonyClient/);
});

test('chat: the page in Chromium: two users, a message, a room change', T, async (t) => {
  const port = await chat(t);
  const browser = await launch();
  t.after(() => browser.close());
  const alice = await browser.newPage(`http://127.0.0.1:${port}/?name=alice`);
  await untilDom(alice, "document.getElementById('status').textContent === 'open'", 5000, 'alice connected');
  assert.equal(await alice.evaluate("getComputedStyle(document.getElementById('login')).display"), 'none', 'no login form with ?name=');
  const bob = await browser.newPage(`http://127.0.0.1:${port}/?name=bob`);
  const members = "[...document.querySelectorAll('#members li')].map((li) => li.textContent).join()";
  await untilDom(alice, `${members} === 'alice,bob'`, 5000, 'alice to see bob in the lobby');
  await untilDom(bob, `${members} === 'alice,bob'`, 5000, 'bob to see alice in the lobby');

  await bob.evaluate("document.getElementById('text').value = 'hello from bob'; document.getElementById('say').requestSubmit()");
  const log = "[...document.querySelectorAll('#log li')].map((li) => li.textContent)";
  await untilDom(alice, `${log}.includes('bob: hello from bob')`, 5000, 'alice to see bob\'s message');
  await untilDom(bob, `${log}.includes('bob: hello from bob')`, 5000, 'bob to see his own message');

  // Bob goes to #random: alice sees him leave, bob sees only himself there.
  await bob.evaluate("[...document.querySelectorAll('#rooms button')].find((b) => b.textContent === '#random').click()");
  await untilDom(alice, `${log}.includes('bob left') && ${members} === 'alice'`, 5000, 'alice to see bob leave');
  await untilDom(bob, `document.getElementById('title').textContent === '#random' && ${members} === 'bob'`, 5000, 'bob alone in #random');
  assert.equal(await bob.evaluate(`${log}.includes('bob: hello from bob')`), false, 'a new room starts empty');
});
