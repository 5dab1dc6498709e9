// Test vectors for test_pusher.c and tls/test_pusher_auth.c, made at test
// time by the real Pusher libraries (never committed as results):
//
//  - `pusher` (the Node server SDK 5): authorizeChannel, authenticateUser,
//    the signed query string of HTTP API requests (createSignedQueryString,
//    as requests.send builds it, at a fixed time), a webhook's signature
//    (its Token.sign), and which channel names and socket ids it accepts;
//  - `pusher-js` 8 and `laravel-echo` 2, run for real against a WebSocket
//    server on loopback that plays Pusher's side: every message they send
//    (subscribe to each kind of channel with the SDK's auth, sign in,
//    a client event and an Echo whisper, unsubscribe, ping).
//
//   node vectors/pusher.js OUT.json
'use strict';

const fs = require('node:fs');
const Pusher = require('pusher');
const PusherJs = require('pusher-js');
const { WebSocketServer } = require('ws');

const out = process.argv[2];
if (!out) {
  console.error('usage: node vectors/pusher.js OUT.json');
  process.exit(2);
}

// The encryption master key only lets the SDK sign for private-encrypted- channels.
const APP = { appId: '123', key: 'app-key', secret: 'app-secret', encryptionMasterKeyBase64: Buffer.alloc(32, 7).toString('base64') };
const APP2 = { appId: '123', key: 'app-key-2', secret: 'second secret, rotated in' };
const sdk = new Pusher(APP);
const sdk2 = new Pusher(APP2);
const TIME = 1700000000;

function signed(pusher, method, path, params, body) {
  const realNow = Date.now;
  Date.now = () => TIME * 1000;
  try {
    const fullPath = `/apps/${APP.appId}${path}`;
    const bodyText = body === undefined ? undefined : JSON.stringify(body);
    const query = pusher.createSignedQueryString({ method, path: fullPath, params, body: bodyText });
    const unsigned = query.replace(/&auth_signature=[0-9a-f]+$/, '');
    return {
      method, path: fullPath, query, body: bodyText ?? '',
      to_sign: [method, fullPath, unsigned].join('\n'),
      key: pusher.config.token.key, timestamp: TIME,
    };
  } finally {
    Date.now = realNow;
  }
}

function accepts(fn) {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
}

const presence = { user_id: 'u-1', user_info: { name: 'Ann "A" \\ é', tags: [1, true, null] } };
const user = { id: '42', name: 'Bo', watchlist: ['7'] };

const v = {
  app: { id: APP.appId, keys: [[APP.key, APP.secret], [APP2.key, APP2.secret]] },
  time: TIME,
  channel_auth: [],
  user_auth: [],
  requests: [],
  webhooks: [],
  channels: [],
  socket_ids: [],
  client_messages: [],
};

for (const [s, sock, ch, data] of [
  [sdk, '123.456', 'private-a', undefined],
  [sdk, '1.2', 'private-cache-x', undefined],
  [sdk, '151004717.3505838415', 'presence-room', presence],
  [sdk, '8910.66062685', 'presence-r', { user_id: 1265 }],
  [sdk2, '123.456', 'private-a', undefined],
  [sdk, '123.456', 'private-encrypted-a', undefined],
]) {
  let r;
  try {
    r = s.authorizeChannel(sock, ch, data);
  } catch {
    // private-encrypted- needs an encryption master key: sign it as the SDK does without one
    r = { auth: `${s.config.token.key}:${s.config.token.sign(`${sock}:${ch}`)}` };
  }
  v.channel_auth.push({ socket_id: sock, channel: ch, channel_data: r.channel_data ?? null, auth: r.auth });
}
for (const [s, sock, u] of [[sdk, '123.456', user], [sdk2, '9.9', { id: 'x' }]]) {
  const r = s.authenticateUser(sock, u);
  v.user_auth.push({ socket_id: sock, user_data: r.user_data, auth: r.auth });
}

v.requests.push(signed(sdk, 'POST', '/events', undefined, { name: 'my-event', data: '{"a":1}', channels: ['a', 'b'] }));
v.requests.push(signed(sdk, 'POST', '/events', undefined,
  { name: 'e', data: 'hi', channel: 'private-x', socket_id: '1.2', info: 'subscription_count' }));
v.requests.push(signed(sdk, 'POST', '/batch_events', undefined, {
  batch: [
    { channel: 'a', name: 'e1', data: 'x' },
    { channel: 'presence-b', name: 'e2', data: '{"k":[1]}', socket_id: '3.4', info: 'user_count,subscription_count' },
  ],
}));
v.requests.push(signed(sdk, 'GET', '/channels', { filter_by_prefix: 'presence-', info: 'user_count' }));
v.requests.push(signed(sdk, 'GET', '/channels/presence-room', { info: 'user_count,subscription_count' }));
v.requests.push(signed(sdk, 'GET', '/channels/presence-room/users'));
v.requests.push(signed(sdk, 'POST', '/users/42/terminate_connections', undefined, {}));
v.requests.push(signed(sdk2, 'GET', '/channels'));

for (const body of ['{"time_ms":1700000000000,"events":[{"name":"channel_occupied","channel":"a"}]}', '']) {
  v.webhooks.push({ body, key: APP.key, signature: sdk.config.token.sign(body) });
}

for (const name of ['a', 'AZaz09_-=@,.;', 'private-a', 'presence-a', 'cache-a', 'private-encrypted-a',
  'a b', 'a:b', 'a/b', 'a#b', 'é', 'a*', '#server-to-user-1', 'x'.repeat(200), 'x'.repeat(201), 'a\nb']) {
  v.channels.push({ name, valid: accepts(() => sdk.authorizeChannel('1.2', name)) });
}
for (const id of ['1.2', '0.0', '123.456', '1.', '.1', '1', 'a.1', '1.2.3', ' 1.2', '1.2\n', '-1.2',
  '12345678901234567890.12345678901234567890']) {
  v.socket_ids.push({ id, valid: accepts(() => sdk.authorizeChannel(id, 'private-a')) });
}

// pusher-js and Laravel Echo against a server on loopback.
function clients(Echo) {
  return new Promise((resolve, reject) => {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    const got = [];
    let pusher;
    const timer = setTimeout(() => done(new Error(`timed out with ${got.length} messages`)), 10000);
    function done(err) {
      clearTimeout(timer);
      if (pusher) pusher.disconnect();
      wss.close();
      for (const c of wss.clients) c.terminate();
      if (err) reject(err);
      else resolve(got);
    }
    wss.on('connection', (ws) => {
      const send = (o) => ws.send(JSON.stringify(o));
      send({ event: 'pusher:connection_established', data: JSON.stringify({ socket_id: '123.456', activity_timeout: 120 }) });
      ws.on('message', (buf) => {
        const text = buf.toString();
        got.push(text);
        const m = JSON.parse(text);
        if (m.event === 'pusher:subscribe') {
          const ch = m.data.channel;
          const data = ch.startsWith('presence-')
            ? JSON.stringify({ presence: { ids: ['u-1'], hash: { 'u-1': presence.user_info }, count: 1 } })
            : '{}';
          send({ event: 'pusher_internal:subscription_succeeded', channel: ch, data });
        } else if (m.event === 'pusher:signin') {
          send({ event: 'pusher:signin_success', data: { user_data: m.data.user_data } });
        }
        if (got.some((t) => t.includes('pusher:ping'))) done();
      });
    });
    wss.on('listening', () => {
      const port = wss.address().port;
      pusher = new PusherJs(APP.key, {
        cluster: 'local', wsHost: '127.0.0.1', wsPort: port, forceTLS: false, enabledTransports: ['ws'],
        disableStats: true,
        channelAuthorization: {
          customHandler: ({ socketId, channelName }, cb) =>
            cb(null, sdk.authorizeChannel(socketId, channelName, channelName.startsWith('presence-') ? presence : undefined)),
        },
        userAuthentication: { customHandler: ({ socketId }, cb) => cb(null, sdk.authenticateUser(socketId, user)) },
      });
      const echo = new Echo({ broadcaster: 'pusher', client: pusher });
      pusher.connection.bind('connected', () => {
        pusher.subscribe('my-channel');
        pusher.subscribe('cache-prices');
        pusher.signin();
        const priv = pusher.subscribe('private-a');
        priv.bind('pusher:subscription_succeeded', () => {
          priv.trigger('client-typing', { who: 'a', n: [1, 2] });
          const orders = echo.private('orders');
          orders.subscription.bind('pusher:subscription_succeeded', () => {
            orders.whisper('typing', { name: 'Bo' });
            echo.join('chat');
            pusher.unsubscribe('my-channel');
            setTimeout(() => pusher.send_event('pusher:ping', {}), 50);
          });
        });
      });
    });
    wss.on('error', done);
  });
}

// laravel-echo 2 is an ES module (its CommonJS file is not loadable by require).
import('laravel-echo').then(({ default: Echo }) => clients(Echo)).then((messages) => {
  v.client_messages = messages;
  fs.writeFileSync(out, JSON.stringify(v, null, 1) + '\n');
}, (err) => {
  console.error(`vectors/pusher.js: ${err.message}`);
  process.exit(1);
});
