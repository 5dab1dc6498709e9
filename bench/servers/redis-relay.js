'use strict';
// The peer arms' bus (ws-redis, uws-redis): what Node users write by hand
// today to run several WebSocket nodes as one fan-out, on the `redis` npm
// client with its defaults. Two clients, as its documentation shows for
// pub/sub: one publishes, its duplicate subscribes (a subscribed
// connection can run no other command). A node subscribes a topic's
// channel (prefix + topic, classic SUBSCRIBE) when the topic gets its first
// local subscriber and unsubscribes when the last one leaves; every message
// that arrives on a channel is relayed to the local sockets of that topic
// by the server script (onMessage). The publishing node only PUBLISHes: its
// own local subscribers get the message when Redis sends it back, as with
// every other node. The client reconnects by itself (its default backoff)
// and subscribes again to what it had; a publish while Redis is down waits
// in its offline queue (its default) and goes out after the reconnect.
//
// The server scripts print `events` (state changes) on stderr as
// {"busEvent":...} lines, as fanout-server.js does for symphony's bus
// (relayFor does that for them).

const path = require('node:path');
const { busEvent } = require('./harness');

function loadRedis() {
  // the benchmark's own devDependency (package.json), from this checkout
  return require(require.resolve('redis', { paths: [path.join(__dirname, '..', '..')] }));
}

/**
 * opts: { url, prefix, topics (names), onMessage(topicIndex, Buffer),
 * onEvent(name, detail) }. Resolves once both clients are connected.
 */
async function createRelay({ url, prefix, topics, onMessage, onEvent = () => {} }) {
  const { createClient } = loadRedis();
  const version = require(require.resolve('redis/package.json', { paths: [path.join(__dirname, '..', '..')] })).version;
  const pub = createClient({ url });
  const sub = pub.duplicate();
  const st = {
    state: 'connecting',
    published: 0, // PUBLISH calls made
    publishErrors: 0, // of those, rejected
    received: 0, // channel messages relayed
    errors: 0, // 'error' events of either client
    reconnects: 0, // 'reconnecting' events of either client
    channels: 0, // channels subscribed (asked for)
    lastError: null,
  };
  const ready = { pub: false, sub: false };
  const setState = () => {
    const s = ready.pub && ready.sub ? 'up' : st.reconnects > 0 || st.errors > 0 ? 'down' : 'connecting';
    if (s !== st.state) {
      st.state = s;
      onEvent(s, st.lastError);
    }
  };
  for (const [name, c] of [['pub', pub], ['sub', sub]]) {
    c.on('error', (err) => {
      st.errors++;
      st.lastError = `${name}: ${err && err.message}`;
      ready[name] = false;
      setState();
    });
    c.on('reconnecting', () => {
      st.reconnects++;
      ready[name] = false;
      setState();
    });
    c.on('ready', () => {
      ready[name] = true;
      setState();
    });
    c.on('end', () => {
      ready[name] = false;
      setState();
    });
  }
  await Promise.all([pub.connect(), sub.connect()]);
  ready.pub = ready.sub = true;
  setState();

  const channel = topics.map((t) => `${prefix}${t}`);
  const listeners = topics.map((_, g) => (message) => {
    st.received++;
    onMessage(g, message);
  });
  return {
    version,
    // relayed: what was handed to onMessage (the peers' bus counters name it so)
    stats: () => ({ ...st, relayed: st.received }),
    subscribe(g) {
      st.channels++;
      sub.subscribe(channel[g], listeners[g], true).catch((err) => {
        st.errors++;
        st.lastError = `subscribe: ${err && err.message}`;
      });
    },
    unsubscribe(g) {
      st.channels--;
      sub.unsubscribe(channel[g], listeners[g], true).catch((err) => {
        st.errors++;
        st.lastError = `unsubscribe: ${err && err.message}`;
      });
    },
    /** PUBLISH to topic g's channel; returns 0, the local subscribers it
     * reached (they get it when it comes back, through onMessage). */
    publish(g, buf) {
      st.published++;
      pub.publish(channel[g], buf).catch(() => {
        st.publishErrors++;
      });
      return 0;
    },
    async close() {
      const end = (c) => {
        if (!c.isOpen) return Promise.resolve();
        if (typeof c.close === 'function') return c.close(); // v5+
        return c.quit(); // v4
      };
      let timer;
      await Promise.race([
        Promise.allSettled([end(pub), end(sub)]),
        new Promise((resolve) => { timer = setTimeout(resolve, 2000); }),
      ]);
      clearTimeout(timer);
      for (const c of [pub, sub]) {
        if (!c.isOpen) continue;
        if (typeof c.destroy === 'function') c.destroy();
        else c.disconnect().catch(() => {});
      }
    },
  };
}

/** A peer server's relay with --bus-url (on o['bus-url'], o['bus-prefix'],
 * its state changes printed as busEvent lines), null without. */
async function relayFor(o, topics, onMessage) {
  if (!o['bus-url']) return null;
  return createRelay({ url: o['bus-url'], prefix: o['bus-prefix'], topics, onMessage, onEvent: busEvent });
}

module.exports = { createRelay, relayFor };
