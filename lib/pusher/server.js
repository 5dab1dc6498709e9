'use strict';
// The `pusher` option on a running Server (docs/pusher.md): the checked
// option (./config.js) handed to the native side, which builds the apps'
// table and speaks Pusher on the IO threads; and what the 'open' event says
// of a Pusher connection. lib/server.js calls these three and nothing else.

const { binding } = require('../native');
const { invalidArgType, invalidArgValue } = require('../errors');
const { hookMask } = require('./hooks');

/**
 * Sets the Pusher protocol of a server not started yet: the number that
 * begins its connections' socket ids (this process' random node).
 */
function setPusher(handle, pusher) {
  // hookEvents: the webhook events of the IO threads each app wants (./hooks.js).
  return binding.serverSetPusher(handle, { ...pusher, apps: pusher.apps.map((a) => ({ ...a, hookEvents: hookMask(a) })) });
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

/** The longest event name publish() takes, in bytes (Pusher's limit for event names). */
const EVENT_MAX_BYTES = 200;

/**
 * publish(topic, data, { event }): the event name a Pusher subscriber gets
 * (1 to EVENT_MAX_BYTES bytes, not pusher: or pusher_internal:), or undefined
 * when options name none (Pusher subscribers then get "message").
 */
function publishEvent(options, byName = true) {
  const event = options?.event;
  if (event === undefined) return undefined;
  if (!byName) throw invalidArgValue('options.event', "is server.publish()'s only (not yet a topic handle's publish())", event);
  if (typeof event !== 'string') throw invalidArgType('options.event', 'a string', event);
  if (event.length === 0 || Buffer.byteLength(event) > EVENT_MAX_BYTES || /^pusher(_internal)?:/.test(event) || event.includes('\0')) {
    throw invalidArgValue('options.event', `must be 1 to ${EVENT_MAX_BYTES} bytes without a NUL, not beginning with "pusher:" or "pusher_internal:"`, event);
  }
  return event;
}

/** serverPublish with an event name (the publish's meta). */
function publishWithEvent(handle, topic, data, flags, event) {
  const bytes = typeof data === 'string' || Buffer.isBuffer(data) ? data
    : ArrayBuffer.isView(data) ? Buffer.from(data.buffer, data.byteOffset, data.byteLength) : Buffer.from(data);
  return binding.serverPublishEvent(handle, topic, bytes, flags, event);
}

module.exports = { EVENT_MAX_BYTES, setPusher, pusherOpenInfo, pusherSummary, publishEvent, publishWithEvent };
