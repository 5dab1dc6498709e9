'use strict';
// Pusher's webhooks from a running server (docs/pusher.md, "Webhooks from
// the server"): each app with `webhooks` gets a Webhooks (./webhooks.js);
// every event reaches it through ./events.js (reportPusherEvent), whoever
// decided it:
//
// - the IO threads (a client event; presence members and cache misses from
//   their modules): SY_EV_PUSHER_HOOK, one event per webhook event and only of
//   the types some webhook of the app wants (hookEvents, the mask the
//   native side tests), lib/server.js hands it to pusherEvent() here;
// - occupancy (channel_occupied, channel_vacated, subscription_count):
//   ./occupancy.js, once per cluster, from the server's 'subscription'
//   event (a topic's subscribers on this node going 0 <-> 1: one event per
//   edge, not one per subscribe) and its periodic count reads; made only
//   when some app's webhooks want one of them.
//
// A topic is a channel: the first app's by its name, another app's as
// "<app id>:<channel>" (lib/pusher/server.js); #server-to-user- channels
// and topics that are no channel name are not tracked.

const { Webhooks } = require('./webhooks');
const { Occupancy } = require('./occupancy');
const { onPusherEvent, reportPusherEvent } = require('./events');

/** The webhook events the IO threads decide, in the order of their bits (src/io/app/sy_pusher_event.h). */
// (subscription_count: a channel's subscribers on this node changed, for
// the occupancy to read its count again; not a webhook event as it comes.)
const HOOK_BITS = Object.freeze(['client_event', 'member_added', 'member_removed', 'cache_miss', 'subscription_count']);
const OCCUPANCY_EVENTS = Object.freeze(['channel_occupied', 'channel_vacated', 'subscription_count']);
const CHANNEL_RE = /^[A-Za-z0-9_\-=@,.;]+$/;

/** The mask of HOOK_BITS an app's webhooks want (the native side's hookEvents). */
function hookMask(app) {
  let mask = 0;
  HOOK_BITS.forEach((name, i) => {
    if (app.webhooks.some((h) => h.eventTypes.includes(name))) mask |= 1 << i;
  });
  return mask;
}

class PusherHooks {
  #server;
  #apps;
  #byId = new Map(); // app id -> index
  #hooks = new Map(); // app id -> Webhooks
  #occupancy = null;
  #vacateDelay;
  #off;

  /** pusher: the checked option (./config.js); report(err): the server's 'error'. */
  constructor(server, pusher, report) {
    this.#server = server;
    this.#apps = pusher.apps;
    this.#vacateDelay = pusher.vacateDelay;
    pusher.apps.forEach((app, i) => {
      this.#byId.set(app.id, i);
      if (app.webhooks.length === 0) return;
      const hooks = new Webhooks(app, { batching: pusher.webhookBatching === true });
      hooks.on('error', report);
      this.#hooks.set(app.id, hooks);
    });
    this.#off = onPusherEvent(server, (appId, event) => this.#hooks.get(appId)?.send(event));
  }

  /** Whether any app has webhooks. */
  get active() { return this.#hooks.size > 0; }

  /** Starts occupancy once the server has its bus (the end of its constructor). */
  start() {
    const wanted = [...this.#hooks.values()].some((h) => OCCUPANCY_EVENTS.some((n) => h.wantsName(n)));
    if (!wanted) return;
    const report = (name) => (topic, n) => {
      const at = this.#channelOf(topic);
      if (at === null) return;
      const event = { name, channel: at.channel };
      if (name === 'subscription_count') {
        if (at.channel.startsWith('presence-')) return; // Pusher counts no presence channel
        event.subscription_count = n;
      }
      reportPusherEvent(this.#server, at.app.id, event);
    };
    this.#occupancy = new Occupancy(this.#server, {
      vacateDelay: this.#vacateDelay,
      topics: (topic) => {
        const at = this.#channelOf(topic);
        return at !== null && this.#hooks.has(at.app.id);
      },
      onOccupied: report('channel_occupied'),
      onVacated: report('channel_vacated'),
      onCount: report('subscription_count'),
    });
  }

  /** An event of the IO threads (SY_EV_PUSHER_HOOK): the app's index and the event's JSON. */
  pusherEvent(index, json) {
    const app = this.#apps[index];
    if (app === undefined) return;
    const event = JSON.parse(json);
    if (event.name === 'subscription_count') {
      this.#occupancy?.changed(index === 0 ? event.channel : `${app.id}:${event.channel}`);
      return;
    }
    reportPusherEvent(this.#server, app.id, event);
  }

  /** The app and channel a topic is, or null. */
  #channelOf(topic) {
    const colon = topic.indexOf(':');
    let app = this.#apps[0];
    let channel = topic;
    if (colon >= 0) {
      const i = this.#byId.get(topic.slice(0, colon));
      if (i === undefined || i === 0) return null;
      app = this.#apps[i];
      channel = topic.slice(colon + 1);
    }
    if (!CHANNEL_RE.test(channel)) return null; // not a channel (#server-to-user-, symphony's own names)
    return { app, channel };
  }

  /** Before the server closes: this node's channels leave (their vacated decided) while the bus runs. */
  async closeOccupancy() {
    if (this.#occupancy !== null) await this.#occupancy.close().catch(() => {});
  }

  /** After: what is queued is sent (one attempt each), the sends in flight end. */
  async close() {
    this.#off();
    await Promise.allSettled([...this.#hooks.values()].map((h) => h.close()));
  }
}

module.exports = { PusherHooks, HOOK_BITS, hookMask };
