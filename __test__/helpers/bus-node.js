'use strict';
// One symphony node in a child process, for the multi-process tests (the
// parent side is bus-nodes.js):
//
//   node __test__/helpers/bus-node.js '<JSON server options>'
//
// The options go to new Server() as they are (bus included), with host
// 127.0.0.1, port 0 and threads 1 unless they say otherwise. Each client
// connection is subscribed, at its upgrade, to the topics in its URL query:
// ws://127.0.0.1:PORT/?topics=a,b (comma separated, each URI-encoded).
//
// IPC with the parent (process.send):
//   -> { type: 'listening', port, pid, bus: state or null }
//   <- { type: 'publish', id, topic, data, options }   data: a string, or { base64 } for bytes
//   -> { type: 'published', id, subscribers } or { type: 'published', id, error }
//   <- { type: 'stream', id, topic, count, rate, prefix }
//        publishes prefix + 0 .. prefix + (count - 1) at about rate per second
//        (a batch every 10 ms), then -> { type: 'streamed', id, count }
//   <- { type: 'topic', id, name, history } server.topic(name, { history }) (the handle kept)
//                                  -> { type: 'topic', id }
//   <- { type: 'stats', id }       -> { type: 'stats', id, stats }
//   <- { type: 'presence', id, topic } -> { type: 'presence', id, entries } (server.presence)
//   <- { type: 'subscribers', id, topic, timeout } -> { type: 'subscribers', id, count } (server.bus.subscribers)
//   <- { type: 'subscribe', id, conn, topic } / { type: 'unsubscribe', ... } -> { type: ..., id, ok }
//   -> { type: 'presence-event', event: 'join' | 'leave', topic, entry, reason }
//   -> { type: 'open', conn, url } each connection's id as it opens
// A URL's presence=<JSON> query parameter is the connection's presence info.
//   <- { type: 'close', id }       -> { type: 'closed', id }, then exit 0
//   -> { type: 'bus', state, error: { message, code } or null }   (each bus state change, when server.bus exists)
//   -> { type: 'error', error: { message, code } }                 (the server's 'error' events)
// The process exits when the parent goes away (the IPC channel closes).

const { Server } = require('../..');

function errorInfo(err) {
  if (!err) return null;
  return { message: String(err.message ?? err), code: err.code ?? null };
}

function send(msg) {
  if (process.connected) process.send(msg);
}

function topicsOf(url) {
  const q = new URL(url, 'http://localhost').searchParams.get('topics');
  if (!q) return [];
  return q.split(',').filter(Boolean).map((t) => decodeURIComponent(t));
}

async function main() {
  if (!process.send) throw new Error('bus-node.js runs as a child process with an IPC channel (bus-nodes.js startNode)');
  const config = JSON.parse(process.argv[2] || '{}');
  const server = new Server({
    host: '127.0.0.1',
    port: 0,
    threads: 1,
    ...config,
    onUpgrade: (req) => {
      const info = new URL(req.url, 'http://localhost').searchParams.get('presence');
      return info === null ? { topics: topicsOf(req.url) } : { topics: topicsOf(req.url), presence: JSON.parse(info) };
    },
  });
  server.on('open', (conn, info) => send({ type: 'open', conn, data: info.data ?? null }));
  for (const event of ['join', 'leave']) {
    server.on(event, (topic, entry, reason) => send({ type: 'presence-event', event, topic, entry, reason: reason ?? null }));
  }
  server.on('error', (err) => send({ type: 'error', error: errorInfo(err) }));
  // server.bus exists once the bus is built (issue 12); without it this
  // runner serves the local fan-out only.
  if (server.bus) {
    // One message per state change, whether the bus says it with 'state'
    // (state, err), with 'connecting' / 'up' / 'down' (err), or both: the
    // events of one change come in one synchronous burst, deduplicated here.
    let burst = null;
    const forward = (state, err) => {
      if (!burst) {
        burst = new Set();
        queueMicrotask(() => { burst = null; });
      }
      if (burst.has(state)) return;
      burst.add(state);
      const error = err ?? (state === 'down' ? server.bus.error : null);
      send({ type: 'bus', state, error: errorInfo(error) });
    };
    server.bus.on('state', (state, err) => forward(state, err));
    for (const state of ['connecting', 'up', 'down']) server.bus.on(state, (err) => forward(state, err));
  }
  const handles = [];
  let closing = false;
  const close = async () => {
    if (closing) return;
    closing = true;
    await server.close();
  };

  process.on('message', async (msg) => {
    try {
      switch (msg.type) {
        case 'publish': {
          const data = typeof msg.data === 'string' ? msg.data : Buffer.from(msg.data.base64, 'base64');
          let subscribers;
          try {
            subscribers = msg.options ? server.publish(msg.topic, data, msg.options) : server.publish(msg.topic, data);
          } catch (err) {
            send({ type: 'published', id: msg.id, error: errorInfo(err) });
            break;
          }
          send({ type: 'published', id: msg.id, subscribers });
          break;
        }
        case 'stream': {
          // A bounded load: count messages, paced by the clock (rate/s).
          const start = Date.now();
          let i = 0;
          await new Promise((resolve) => {
            const tick = () => {
              const due = Math.min(msg.count, Math.ceil(((Date.now() - start) / 1000) * msg.rate) + 1);
              for (; i < due; i++) server.publish(msg.topic, `${msg.prefix}${i}`);
              if (i >= msg.count) resolve();
              else setTimeout(tick, 10);
            };
            tick();
          });
          send({ type: 'streamed', id: msg.id, count: i });
          break;
        }
        case 'topic':
          handles.push(server.topic(msg.name, msg.presence === undefined ? { history: msg.history } : { history: msg.history, presence: msg.presence }));
          send({ type: 'topic', id: msg.id });
          break;
        case 'stats':
          send({ type: 'stats', id: msg.id, stats: server.stats() });
          break;
        case 'presence':
          send({ type: 'presence', id: msg.id, entries: await server.presence(msg.topic) });
          break;
        case 'subscribers':
          send({ type: 'subscribers', id: msg.id, count: await server.bus.subscribers(msg.topic, { timeout: msg.timeout ?? 2000 }) });
          break;
        case 'subscribe':
        case 'unsubscribe':
          send({ type: msg.type, id: msg.id, ok: server[msg.type](msg.conn, msg.topic) });
          break;
        case 'close':
          await close();
          // Exits once the reply is written (the parent also takes exit code 0 as closed).
          if (process.connected) process.send({ type: 'closed', id: msg.id }, () => process.exit(0));
          else process.exit(0);
          break;
        default:
          send({ type: 'error', error: { message: `bus-node: unknown message type ${JSON.stringify(msg.type)}`, code: null } });
      }
    } catch (err) {
      send({ type: 'error', id: msg.id, error: errorInfo(err) });
    }
  });
  // The parent is gone: nobody will ever close this node.
  process.on('disconnect', () => {
    if (!closing) process.exit(0);
  });

  const { port } = await server.listen();
  send({ type: 'listening', port, pid: process.pid, bus: server.bus ? server.bus.state : null });
}

main().catch((err) => {
  process.stderr.write(`bus-node: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
