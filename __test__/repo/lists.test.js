'use strict';
// Facts kept in one place. The IO threads' counters are one list
// (src/io/model/sy_stats.h), exported by the binding as statFields: stats(),
// metrics(), lib/index.d.ts and the table in docs/metrics.md must all follow it. The
// limits the binding checks and its event codes are exported as
// binding.constants, and lib/ must check the same limits.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Server } = require('../..');
const { binding } = require('../../lib/native');
const { normalizeOptions, nativeOptions: libNative } = require('../../lib/options');
const { startServer, client, closeAll } = require('../helpers/server');
const { waitFor } = require('../helpers/raw');

const root = path.resolve(__dirname, '..', '..');
const { statFields, constants } = binding;
const names = statFields.map((f) => f.name);

test.after(closeAll);

test('statFields: one frozen descriptor per counter, well formed', () => {
  assert.ok(Object.isFrozen(statFields) && statFields.every(Object.isFrozen));
  assert.equal(new Set(names).size, names.length, 'names are unique');
  assert.equal(new Set(statFields.map((f) => f.metric)).size, names.length, 'metrics are unique');
  assert.ok(names.includes('pollFailures'));
  for (const f of statFields) {
    assert.deepEqual(Object.keys(f).sort(), ['aggregate', 'help', 'metric', 'name', 'scale', 'type'], f.name);
    assert.match(f.name, /^[a-z][A-Za-z]*$/);
    assert.ok(['sum', 'max'].includes(f.aggregate), `${f.name}: ${f.aggregate}`);
    assert.match(f.metric, /^symphony_[a-z_]+$/);
    assert.ok(f.type === 'counter' ? f.metric.endsWith('_total') : f.type === 'gauge', `${f.metric}: ${f.type}`);
    assert.ok(f.scale === 1 || f.scale === 1e-6, `${f.name}: scale ${f.scale}`);
    assert.ok(f.help.length > 0 && f.help.endsWith('.'), `${f.name}: help`);
  }
});

test('lib/index.d.ts: ThreadStats lists exactly statFields, in order', () => {
  const dts = fs.readFileSync(path.join(root, 'lib', 'index.d.ts'), 'utf8');
  const body = /export interface ThreadStats \{([\s\S]*?)\n\}/.exec(dts);
  assert.ok(body, 'interface ThreadStats found');
  const fields = [...body[1].replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/^\s*([A-Za-z]+)\s*:\s*number;/gm)].map((m) => m[1]);
  assert.deepEqual(fields, names);
});

test('the bus counters: busStatFields, lib/index.d.ts BusStats and docs/metrics.md follow src/bus/sy_bus.h', () => {
  const { busStatFields } = binding;
  assert.ok(Object.isFrozen(busStatFields) && busStatFields.length > 0);
  const dts = fs.readFileSync(path.join(root, 'lib', 'index.d.ts'), 'utf8');
  const body = /export interface BusStats \{([\s\S]*?)\n\}/.exec(dts);
  const fields = [...body[1].matchAll(/^\s*([A-Za-z]+)\s*:\s*number;/gm)].map((m) => m[1]);
  assert.deepEqual(fields, busStatFields.map((f) => f.name));
  const doc = fs.readFileSync(path.join(root, 'docs', 'metrics.md'), 'utf8');
  const rows = [...doc.matchAll(/^\| `bus\.([A-Za-z]+)` \| `(symphony_bus_[a-z_]+)` \| (counter|gauge) \|/gm)]
    .map((m) => ({ name: m[1], metric: m[2], type: m[3] }));
  assert.deepEqual(rows, busStatFields.map(({ name, metric, type }) => ({ name, metric, type })));
  for (const f of busStatFields) {
    assert.ok(f.type === 'counter' ? f.metric.endsWith('_total') : f.type === 'gauge', f.metric);
  }
});

test('docs/metrics.md: the counters table lists exactly statFields (field, metric, type), in order', () => {
  const readme = fs.readFileSync(path.join(root, 'docs', 'metrics.md'), 'utf8');
  const rows = [...readme.matchAll(/^\| `([A-Za-z]+)` \| `(symphony_[a-z_]+)` \| (counter|gauge) \|/gm)]
    .map((m) => ({ name: m[1], metric: m[2], type: m[3] }));
  assert.deepEqual(rows, statFields.map(({ name, metric, type }) => ({ name, metric, type })));
});

test('stats() has every counter, per thread and in the totals (sum or max)', async () => {
  const { server, url } = await startServer({ threads: 2 });
  const clients = await Promise.all([client(url), client(url), client(url)]);
  await waitFor(() => server.stats().connections === 3, 5000, 'open');
  const s = server.stats();
  assert.deepEqual(Object.keys(s).sort(), [...names, 'topics', 'historyMessages', 'historyBytes', 'addresses', 'threads', 'bus'].sort());
  assert.equal(s.bus, null, 'no bus');
  assert.equal(s.threads.length, 2);
  for (const t of s.threads) assert.deepEqual(Object.keys(t).sort(), [...names, 'arena', 'connArena'].sort());
  for (const f of statFields) {
    const values = s.threads.map((t) => t[f.name]);
    assert.equal(s[f.name], f.aggregate === 'max' ? Math.max(...values) : values.reduce((a, b) => a + b, 0), f.name);
  }
  assert.equal(s.opened, 3);
  // metrics(): one family per counter with its TYPE and HELP, one sample
  // per thread, in the metric's unit. The counters only grow (and a quiet
  // server's hold still), so stats() taken after bounds each sample.
  const text = server.metrics();
  const after = server.stats();
  for (const f of statFields) {
    assert.ok(text.includes(`# HELP ${f.metric} ${f.help}\n# TYPE ${f.metric} ${f.type}\n`), f.metric);
    after.threads.forEach((t, i) => {
      const m = new RegExp(`^${f.metric}\\{thread="${i}"\\} (\\S+)$`, 'm').exec(text);
      assert.ok(m, `${f.metric}{thread="${i}"}`);
      const v = Number(m[1]);
      assert.ok(v >= 0 && v <= t[f.name] * f.scale, `${f.metric}{thread="${i}"} ${v} vs ${t[f.name]} x ${f.scale}`);
      if (f.name === 'connections') assert.equal(v, t.connections);
    });
  }
  for (const ws of clients) ws.terminate();
});

test('constants: frozen, and the event codes distinct', () => {
  assert.ok(Object.isFrozen(constants) && Object.isFrozen(constants.options));
  const ev = ['EV_UPGRADE', 'EV_OPEN', 'EV_MESSAGE', 'EV_CLOSE', 'EV_DRAIN', 'EV_CLOSED', 'EV_RECOVERY', 'EV_TOPIC'].map((k) => constants[k]);
  assert.ok(ev.every(Number.isInteger));
  assert.equal(new Set(ev).size, ev.length);
  assert.equal(constants.CLOSE_REASON_MAX_LEN, 123, 'a control frame\'s 125 bytes less the code');
});

/** The options serverCreate reads, as lib/options.js makes them from the constructor's defaults. */
function nativeOptions(over = {}) {
  return { ...libNative(normalizeOptions({ host: '127.0.0.1', threads: 1 })), ...over };
}

// Native options that are parts of lib/'s object options (compression: { level,
// threshold }, history: { size, ttl, maxBytes }, addressPrefix: { v4, v6 }):
// the list's path says which ("history.size").
const PATHS = Object.fromEntries(binding.optionSchema.map((r) => [r.name, r.path.split('.')]));
const jsOptions = (key, v) => (PATHS[key][1] ? { [PATHS[key][0]]: { [PATHS[key][1]]: v } } : { [key]: v });
const jsName = (key) => `options\\.${PATHS[key].join('\\.')}`;
const jsValue = (s, key) => PATHS[key].reduce((o, k) => o[k], s.options);

test('optionSchema: one row per option, each well formed, and serverCreate takes each by its default', () => {
  const KINDS = ['uint', 'bool', 'enum', 'string'];
  const names = new Set();
  for (const r of binding.optionSchema) {
    assert.ok(Object.isFrozen(r) && !names.has(r.name) && KINDS.includes(r.kind) && r.help.length > 0, r.name);
    names.add(r.name);
    if (r.kind === 'uint') assert.ok(Number.isSafeInteger(r.min) && r.min <= r.max, r.name);
    if (r.kind === 'enum') assert.ok(r.values.includes(r.default), r.name);
  }
  // Every native option lib/ gives is a row (or proxyProtocolFrom, decoded by hand), and the reverse.
  const given = Object.keys(nativeOptions());
  assert.deepEqual(given.filter((k) => !names.has(k)), ['proxyProtocolFrom']);
  assert.deepEqual([...names].filter((k) => !given.includes(k)), []);
  // With only what has no default, the binding takes the list's defaults.
  const needed = Object.fromEntries(binding.optionSchema.filter((r) => r.default === null && r.kind === 'uint')
    .map((r) => [r.name, r.min]));
  binding.serverClose(binding.serverCreate({ host: '127.0.0.1', ...needed }), 0);
  for (const [key, bad] of [['slowConsumer', 'slow'], ['rateLimit', 1]]) {
    assert.throws(() => binding.serverCreate(nativeOptions({ [key]: bad })), { message: new RegExp(key) });
  }
});

test('constants.options: lib/ and the binding accept the same ranges', () => {
  const keys = Object.keys(constants.options);
  assert.deepEqual(keys.sort(), ['backlog', 'closeDeadline', 'closeTimeout', 'compressLevel', 'compressThreshold',
    'handshakeTimeout', 'historyMaxBytes', 'historySize', 'historyTtl', 'idleTimeout', 'maxBackpressure',
    'maxConnections', 'maxEventBytes', 'maxHeaderSize', 'maxHeaders', 'maxPayload', 'port', 'threads',
    'maxFragments', 'controlRate', 'maxConnectionsPerAddress', 'upgradeRatePerAddress', 'addressPrefixV4',
    'addressPrefixV6', 'maxMessagesPerSecond', 'messageBurst', 'maxBytesPerSecond', 'byteBurst', 'rateLimitGrace',
    'maxSubscriptions', 'maxPending', 'maxWorkPerSecond', 'workBurst'].sort());
  for (const [key, { min, max }] of Object.entries(constants.options)) {
    for (const bad of [min - 1, max + 1]) {
      assert.throws(() => new Server(jsOptions(key, bad)), { name: 'RangeError', message: new RegExp(`${jsName(key)}.*>= ${min} and <= ${max}`) });
      if (key === 'closeDeadline') continue; // serverClose's argument, below
      assert.throws(() => binding.serverCreate(nativeOptions({ [key]: bad })), { name: 'RangeError', message: new RegExp(key) });
    }
    for (const good of [min, max]) {
      if (key === 'port' && good !== 0) continue; // never bound here, but keep to port 0
      // A burst is at most a minute of its rate: the largest workBurst with no budget.
      const s = new Server({ ...jsOptions(key, good), ...(key === 'workBurst' ? { maxWorkPerSecond: 0 } : {}) });
      assert.equal(jsValue(s, key), good);
      s.close();
    }
  }
  const h = binding.serverCreate(nativeOptions());
  assert.throws(() => binding.serverClose(h, constants.options.closeDeadline.max + 1), { name: 'RangeError' });
  assert.equal(binding.serverClose(h, constants.options.closeDeadline.max), false, 'not listening');
});

test('the topic, close reason, close code and refusal status limits are the binding\'s', async () => {
  const { TOPIC_MAX_LEN, CLOSE_REASON_MAX_LEN, CLOSE_CODE_MIN, CLOSE_CODE_MAX } = constants;
  const { server } = await startServer();
  const h = binding.serverCreate(nativeOptions());
  assert.equal(server.publish('t'.repeat(TOPIC_MAX_LEN), 'x'), 0);
  assert.throws(() => server.publish('t'.repeat(TOPIC_MAX_LEN + 1), 'x'),
    { name: 'RangeError', message: new RegExp(`at most ${TOPIC_MAX_LEN} UTF-8 bytes`) });
  assert.throws(() => binding.serverPublish(h, 't'.repeat(TOPIC_MAX_LEN + 1), 'x', 0),
    { name: 'RangeError', message: new RegExp(`at most ${TOPIC_MAX_LEN} UTF-8 bytes`) });
  assert.equal(server.end(1, 1000, 'r'.repeat(CLOSE_REASON_MAX_LEN)), false, 'an unknown id');
  assert.throws(() => server.end(1, 1000, 'r'.repeat(CLOSE_REASON_MAX_LEN + 1)),
    { name: 'RangeError', message: new RegExp(`at most ${CLOSE_REASON_MAX_LEN} UTF-8 bytes`) });
  assert.throws(() => binding.serverEnd(h, 1, 1000, 'r'.repeat(CLOSE_REASON_MAX_LEN + 1)),
    { name: 'RangeError', message: new RegExp(`at most ${CLOSE_REASON_MAX_LEN} UTF-8 bytes`) });
  for (const code of [CLOSE_CODE_MIN - 1, CLOSE_CODE_MAX + 1]) {
    assert.throws(() => server.end(1, code), { name: 'RangeError' });
    assert.throws(() => binding.serverEnd(h, 1, code, ''), { name: 'RangeError' });
  }
  for (const status of [constants.REFUSE_STATUS_MIN - 1, constants.REFUSE_STATUS_MAX + 1]) {
    assert.throws(() => binding.serverRefuse(h, 1, status, ''), { name: 'RangeError', message: /status/ });
  }
  binding.serverClose(h, 0);
});
