'use strict';
// pusher-js 8 in Node against a symphony server with the pusher option
// (__test__/pusher/wire-*.test.js): a client connected on loopback, its
// private channels signed with the `pusher` SDK's authorizeChannel (or as
// given), disconnected when the test ends.
const PusherJs = require('pusher-js');

/** A connected pusher-js client (key: the app's; authorize(socketId, channel) -> { auth }). */
async function pusherClient(t, port, { key, authorize }) {
  const p = new PusherJs(key, {
    wsHost: '127.0.0.1', wsPort: port, forceTLS: false, enabledTransports: ['ws'], cluster: 'local', disableStats: true,
    channelAuthorization: { customHandler: ({ socketId, channelName }, cb) => cb(null, authorize(socketId, channelName)) },
  });
  t.after(() => p.disconnect());
  await new Promise((resolve, reject) => {
    p.connection.bind('connected', resolve);
    p.connection.bind('failed', () => reject(new Error('pusher-js: connection failed')));
  });
  return p;
}

/** p subscribed to name: the channel, once subscription_succeeded came (a subscription_error rejects). */
async function joined(p, name) {
  const ch = p.subscribe(name);
  await new Promise((resolve, reject) => {
    ch.bind('pusher:subscription_succeeded', resolve);
    ch.bind('pusher:subscription_error', (e) => reject(Object.assign(new Error('pusher:subscription_error'), { detail: e })));
  });
  return ch;
}

module.exports = { pusherClient, joined };
