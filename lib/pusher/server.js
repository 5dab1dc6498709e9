'use strict';
// The `pusher` option on a running Server (docs/pusher.md): the checked
// option (./config.js) handed to the native side, which builds the apps'
// table and speaks Pusher on the IO threads; and what the 'open' event says
// of a Pusher connection. lib/server.js calls these three and nothing else.

const { binding } = require('../native');

/**
 * Sets the Pusher protocol of a server not started yet: the number that
 * begins its connections' socket ids (this process' random node).
 */
function setPusher(handle, pusher) {
  return binding.serverSetPusher(handle, pusher);
}

/** The 'open' event's info of a Pusher connection: its socket id is "<node>.<id>". */
function pusherOpenInfo(node, id, info) {
  return { ...info, protocol: '', transport: 'pusher', socketId: `${node}.${id}` };
}

/** server.options' view of the pusher option: every field but the apps' secrets. */
function pusherSummary(pusher) {
  if (pusher === null) return null;
  return { ...pusher, apps: pusher.apps.map(({ secrets, ...app }) => ({ ...app, secrets: secrets.length })) };
}

module.exports = { setPusher, pusherOpenInfo, pusherSummary };
