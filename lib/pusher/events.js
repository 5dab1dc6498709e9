'use strict';
// Pusher's webhook events of a running server (docs/pusher.md, "Webhooks"):
// whatever decides one (presence members, cache misses, client events,
// occupancy) calls reportPusherEvent(server, appId, event) with the event
// as Pusher's webhook body lists it ({ name, channel, user_id, event, data,
// socket_id }, the fields its type has); the server's Pusher glue listens
// with onPusherEvent and hands them to that app's webhooks. One way in, so
// a new kind of event is one call, not a new path.

const listeners = new WeakMap();

/** fn(appId, event) hears every Pusher event of server; returns a function that stops it. */
function onPusherEvent(server, fn) {
  const list = listeners.get(server) ?? [];
  list.push(fn);
  listeners.set(server, list);
  return () => {
    const i = list.indexOf(fn);
    if (i >= 0) list.splice(i, 1);
  };
}

/** Hands event (of app appId) to whoever listens on server; a listener that throws does not stop the others. */
function reportPusherEvent(server, appId, event) {
  const list = listeners.get(server);
  if (list === undefined) return;
  for (const fn of [...list]) {
    try {
      fn(appId, event);
    } catch (err) {
      server.emit('error', err);
    }
  }
}

module.exports = { onPusherEvent, reportPusherEvent };
