'use strict';
// The parent side of bus-node.js: symphony nodes in child processes, and ws
// clients that record what they receive. Every wait is bounded; every child
// and client is closed by closeAll() (test.after(closeAll)), and every child
// still alive at process exit gets SIGKILL (by PID).

const { fork } = require('node:child_process');
const path = require('node:path');
const WebSocket = require('ws');

const RUNNER = path.join(__dirname, 'bus-node.js');

const nodes = new Set();
const clients = new Set();

process.on('exit', () => {
  for (const n of nodes) {
    if (n.alive) {
      try { process.kill(n.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  }
});

function withTimeout(promise, ms, what, onTimeout) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => {
      if (onTimeout) onTimeout();
      reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Starts a symphony node (bus-node.js) in a child process with config as
 * its server options. Resolves, once it listens, to
 * { port, pid, output(), publish(topic, data, options), stats(), busEvents,
 *   busState, waitBus(state, timeoutMs, from), errors, close(), kill9(), exited }.
 * options: timeoutMs (for listening, 10 s), env (extra environment).
 */
async function startNode(config = {}, { timeoutMs = 10000, env = {} } = {}) {
  const child = fork(RUNNER, [JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...process.env, ...env },
    serialization: 'json',
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });

  let seq = 0;
  const waiting = new Map(); // id -> { resolve, reject }
  const busEvents = [];
  const presenceEvents = []; // { event, topic, entry, reason }
  const opened = [];         // connection ids, in the order they opened
  const errors = [];
  const busWaiters = new Set();
  let exitInfo = null;
  let listening;
  const listened = new Promise((resolve, reject) => { listening = { resolve, reject }; });
  const exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      const err = new Error(`bus node pid ${child.pid} exited (${JSON.stringify(exitInfo)})${out ? `:\n${out.trim()}` : ''}`);
      listening.reject(err);
      for (const [, w] of waiting) w.reject(err);
      waiting.clear();
      for (const w of busWaiters) w();
      resolve(exitInfo);
    });
  });

  const node = {
    pid: child.pid,
    port: null,
    child,
    busEvents,
    busState: null,
    presenceEvents,
    opened,
    errors,
    exited,
    get alive() { return exitInfo === null; },
    /** What the child wrote to stdout/stderr so far. */
    output: () => out,
  };

  child.on('message', (msg) => {
    if (msg.type === 'listening') {
      node.port = msg.port;
      if (msg.bus !== null) {
        node.busState = msg.bus;
        busEvents.push({ state: msg.bus, error: null, initial: true, at: Date.now() });
      }
      listening.resolve();
    } else if (msg.type === 'bus') {
      node.busState = msg.state;
      busEvents.push({ state: msg.state, error: msg.error, at: Date.now() });
      for (const w of busWaiters) w();
    } else if (msg.type === 'presence-event') {
      presenceEvents.push(msg);
    } else if (msg.type === 'open') {
      opened.push(msg.conn);
    } else if (msg.type === 'error' && msg.id === undefined) {
      errors.push(msg.error);
    } else if (msg.id !== undefined && waiting.has(msg.id)) {
      const w = waiting.get(msg.id);
      waiting.delete(msg.id);
      if (msg.error) {
        const err = new Error(msg.error.message);
        err.code = msg.error.code;
        w.reject(err);
      } else {
        w.resolve(msg);
      }
    }
  });

  const request = (msg, ms, what) => {
    if (exitInfo) return Promise.reject(new Error(`bus node pid ${child.pid} has exited (${JSON.stringify(exitInfo)})`));
    const id = ++seq;
    const p = new Promise((resolve, reject) => { waiting.set(id, { resolve, reject }); });
    child.send({ ...msg, id });
    return withTimeout(p, ms, `bus node pid ${child.pid}: ${what}`, () => waiting.delete(id));
  };

  /** Publishes on the node; resolves to publish()'s return (the local subscribers). */
  node.publish = async (topic, data, options, ms = 5000) => {
    const wire = typeof data === 'string' ? data : { base64: Buffer.from(data).toString('base64') };
    const reply = await request({ type: 'publish', topic, data: wire, options }, ms, `publish to ${topic}`);
    return reply.subscribers;
  };

  /** Publishes prefix + 0 .. count - 1 on topic at about rate/s; resolves once all are published. */
  node.stream = async (topic, { count, rate, prefix }, ms = 60000) =>
    (await request({ type: 'stream', topic, count, rate, prefix }, ms, `stream to ${topic}`)).count;

  /** server.topic(name, { history }) on the node (its handle kept there). */
  node.topic = async (name, history, ms = 5000) => { await request({ type: 'topic', name, history }, ms, `topic ${name}`); };

  /** server.presence(topic) on the node. */
  node.presence = async (topic, ms = 5000) => (await request({ type: 'presence', topic }, ms, `presence ${topic}`)).entries;
  /** server.bus.subscribers(topic) on the node. */
  node.subscribersAll = async (topic, timeout, ms = 10000) =>
    (await request({ type: 'subscribers', topic, timeout }, ms, `subscribers ${topic}`)).count;
  /** server.subscribe / unsubscribe(conn, topic) on the node. */
  node.subscribe = async (conn, topic, ms = 5000) => (await request({ type: 'subscribe', conn, topic }, ms, 'subscribe')).ok;
  node.unsubscribe = async (conn, topic, ms = 5000) => (await request({ type: 'unsubscribe', conn, topic }, ms, 'unsubscribe')).ok;
  /** server.topic(name, { presence }) on the node. */
  node.presenceTopic = async (name, presence, ms = 5000) => { await request({ type: 'topic', name, presence }, ms, `topic ${name}`); };

  /** server.stats() of the node. */
  node.stats = async (ms = 5000) => (await request({ type: 'stats' }, ms, 'stats')).stats;

  /**
   * Resolves to the first bus event from busEvents[from] on with that state
   * (the initial state counts as an event); pass from = node.busEvents.length
   * to wait for a new one.
   */
  node.waitBus = (state, ms = 10000, from = 0) => new Promise((resolve, reject) => {
    const check = () => {
      const hit = busEvents.slice(from).find((e) => e.state === state);
      if (hit) { done(); resolve(hit); return; }
      if (exitInfo) { done(); reject(new Error(`bus node pid ${child.pid} exited before its bus was '${state}'`)); }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`timed out after ${ms} ms waiting for bus node pid ${child.pid}'s bus to be '${state}' ` +
        `(events: ${JSON.stringify(busEvents.map((e) => e.state))})`));
    }, ms);
    const done = () => { clearTimeout(timer); busWaiters.delete(check); };
    busWaiters.add(check);
    check();
  });

  /** Asks the node to close its server and exit; waits for the exit (SIGKILL past ms, and then throws). */
  node.close = async (ms = 10000) => {
    nodes.delete(node);
    if (exitInfo) return exitInfo;
    try {
      await request({ type: 'close' }, ms, 'close').catch((err) => {
        if (!exitInfo) throw err; // exited under the reply: fine when the code is 0
      });
      const info = await withTimeout(exited, ms, `bus node pid ${child.pid} to exit after close`);
      if (info.code !== 0) throw new Error(`bus node pid ${child.pid} exited ${JSON.stringify(info)} on close:\n${out.trim()}`);
      return info;
    } catch (err) {
      if (!exitInfo) {
        try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
        await withTimeout(exited, 5000, `bus node pid ${child.pid} to exit after SIGKILL`);
      }
      throw err;
    }
  };

  /** SIGKILL, waits for the exit. */
  node.kill9 = async (ms = 5000) => {
    nodes.delete(node);
    if (exitInfo) return exitInfo;
    try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ }
    return withTimeout(exited, ms, `bus node pid ${child.pid} to exit after SIGKILL`);
  };

  nodes.add(node);
  try {
    await withTimeout(listened, timeoutMs, `bus node pid ${child.pid} to listen`);
  } catch (err) {
    await node.kill9().catch(() => {});
    err.message += out ? `\n${out.trim()}` : '';
    throw err;
  }
  return node;
}

/**
 * A ws client of the node on port, subscribed (at its upgrade) to topics.
 * Resolves once open to the WebSocket with: messages (every message as a
 * string, in order), frames ([{ data: Buffer, binary }]), waitFor(n, ms)
 * (resolves messages once there are at least n), and closeAndWait(ms).
 */
function connectClient(port, topics = [], { timeoutMs = 5000, ...wsOptions } = {}) {
  const q = topics.map((t) => encodeURIComponent(t)).join(',');
  const url = `ws://127.0.0.1:${port}/?topics=${encodeURIComponent(q)}`;
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, wsOptions);
    ws.messages = [];
    ws.frames = [];
    const waiters = new Set();
    const closed = new Promise((r) => ws.once('close', (code, reason) => {
      for (const w of waiters) w();
      r({ code, reason: reason.toString() });
    }));
    ws.on('message', (data, binary) => {
      const buf = Buffer.isBuffer(data) ? data : Buffer.concat(data);
      ws.frames.push({ data: buf, binary });
      ws.messages.push(buf.toString());
      for (const w of waiters) w();
    });
    ws.waitFor = (n, ms = 5000) => new Promise((res, rej) => {
      const check = () => {
        if (ws.messages.length >= n) { done(); res(ws.messages); return; }
        if (ws.readyState === WebSocket.CLOSED) {
          done();
          rej(new Error(`the client on port ${port} closed with ${ws.messages.length} of ${n} messages`));
        }
      };
      const timer = setTimeout(() => {
        done();
        rej(new Error(`timed out after ${ms} ms waiting for ${n} messages on a client of port ${port} ` +
          `(topics ${topics.join(',')}); got ${ws.messages.length}: ${JSON.stringify(ws.messages.slice(-5))}`));
      }, ms);
      const done = () => { clearTimeout(timer); waiters.delete(check); };
      waiters.add(check);
      check();
    });
    ws.closeAndWait = async (ms = 5000) => {
      clients.delete(ws);
      if (ws.readyState === WebSocket.CLOSED) return;
      ws.close();
      try {
        await withTimeout(closed, ms, `a client of port ${port} to close`);
      } catch (err) {
        ws.terminate();
        throw err;
      }
    };
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`timed out after ${timeoutMs} ms opening ${url}`));
    }, timeoutMs);
    ws.once('open', () => {
      clearTimeout(timer);
      clients.add(ws);
      resolve(ws);
    });
    ws.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Closes every client and node still open (test.after(closeAll)); SIGKILL for a node that does not close. */
async function closeAll() {
  for (const ws of [...clients]) ws.terminate();
  clients.clear();
  const all = [...nodes];
  const results = await Promise.allSettled(all.map((n) => n.close()));
  const failed = results.filter((r) => r.status === 'rejected');
  if (failed.length) throw failed[0].reason;
}

module.exports = { startNode, connectClient, closeAll };
