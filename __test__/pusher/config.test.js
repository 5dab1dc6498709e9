'use strict';
// The `pusher` option's checks and defaults, and Soketi's configuration read
// into symphony's options (lib/pusher/config.js; docs/pusher.md).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pusherOptions, fromSoketi, LIMITS } = require('../../lib/pusher/config');

const app = { id: 'app-1', key: 'key-1', secret: 'secret-1' };

test('defaults: Pusher\'s limits, one secret, client messages off', () => {
  const o = pusherOptions({ apps: [app] });
  assert.equal(o.activityTimeout, 120);
  assert.equal(o.maxChannelsPerEvent, 100);
  assert.equal(o.maxBatchSize, 10);
  assert.equal(o.vacateDelay, 3000); // Pusher's "up to three seconds" before channel_vacated
  assert.deepEqual(o.apps[0].secrets, ['secret-1']);
  assert.equal(o.apps[0].enableClientMessages, false);
  assert.equal(o.apps[0].maxClientEventsPerSecond, 10);
  for (const [k, [dflt]] of Object.entries(LIMITS)) assert.equal(o[k], dflt, k);
  assert.equal(pusherOptions(undefined), null);
  assert.equal(pusherOptions(false), null);
});

test('bad apps are refused with the field named', () => {
  const cases = [
    [{ apps: [] }, /pusher\.apps/],
    [{ apps: [{ ...app, key: 'a/b' }] }, /pusher\.apps\[0\]\.key/],
    [{ apps: [{ ...app, id: '' }] }, /pusher\.apps\[0\]\.id/],
    [{ apps: [{ ...app, secret: '' }] }, /pusher\.apps\[0\]\.secret/],
    [{ apps: [{ ...app, secret: [] }] }, /pusher\.apps\[0\]\.secret/],
    [{ apps: [app, { ...app, id: 'other' }] }, /two apps with the key "key-1"/],
    [{ apps: [app, { ...app, key: 'other' }] }, /two apps with the id "app-1"/],
    [{ apps: [{ ...app, maxConnections: 1.5 }] }, /maxConnections/],
    [{ apps: [{ ...app, webhooks: [{ url: 'ftp://x', event_types: ['channel_occupied'] }] }] }, /webhooks\[0\]\.url/],
    [{ apps: [{ ...app, webhooks: [{ url: 'http://127.0.0.1/', event_types: ['nope'] }] }] }, /event_types/],
    [{ apps: [app], activityTimeout: 0 }, /activityTimeout/],
    [{ apps: [app], vacateDelay: -2 }, /vacateDelay/],
    [{ apps: [app], vacateDelay: 1.5 }, /vacateDelay/],
    [{ apps: [app], vacateDelay: 3600001 }, /vacateDelay/],
    [{ apps: [app], pathPrefix: 'ws/' }, /pathPrefix/],
  ];
  for (const [value, re] of cases) assert.throws(() => pusherOptions(value), (e) => re.test(e.message) && /^ERR_/.test(e.code), JSON.stringify(value));
});

test('several secrets (rotation), -1 as no limit, webhooks normalized', () => {
  const o = pusherOptions({
    apps: [{ ...app, secret: ['new', 'old'], maxConnections: -1,
      webhooks: [{ url: 'http://127.0.0.1:9/hook', event_types: ['member_added', 'member_added'], filter: { channel_name_starts_with: 'presence-' } }] }],
  });
  assert.deepEqual(o.apps[0].secrets, ['new', 'old']);
  assert.equal(o.apps[0].maxConnections, 0);
  assert.deepEqual(o.apps[0].webhooks, [{ url: 'http://127.0.0.1:9/hook', eventTypes: ['member_added'], headers: {}, filter: { startsWith: 'presence-', endsWith: null } }]);
});

test('Soketi\'s environment: the default app, port 6001, Redis, limits in KiB; what has no counterpart is listed', () => {
  const { options, ignored, metrics } = fromSoketi({ env: {
    SOKETI_DEFAULT_APP_ID: '42', SOKETI_DEFAULT_APP_KEY: 'k', SOKETI_DEFAULT_APP_SECRET: 's',
    SOKETI_DEFAULT_APP_ENABLE_CLIENT_MESSAGES: 'true', SOKETI_ADAPTER_DRIVER: 'redis',
    SOKETI_DB_REDIS_HOST: '127.0.0.2', SOKETI_DB_REDIS_PORT: '7001', SOKETI_DB_REDIS_PASSWORD: 'p w',
    SOKETI_EVENT_MAX_SIZE_IN_KB: '10', SOKETI_PRESENCE_MAX_MEMBERS: '50', SOKETI_QUEUE_DRIVER: 'sync',
    SOKETI_METRICS_ENABLED: 'true', PATH: '/usr/bin',
  } });
  assert.equal(options.port, 6001);
  assert.deepEqual(options.bus, { url: 'redis://:p%20w@127.0.0.2:7001' });
  const p = pusherOptions(options.pusher);
  assert.equal(p.apps[0].id, '42');
  assert.equal(p.apps[0].enableClientMessages, true);
  assert.equal(p.apps[0].maxClientEventsPerSecond, 0); // Soketi's default: no limit
  assert.equal(p.maxEventBytes, 10 * 1024);
  assert.equal(p.maxPresenceMembers, 50);
  assert.deepEqual(ignored.map((l) => l.split(':')[0]), ['SOKETI_QUEUE_DRIVER']);
  assert.deepEqual(metrics, { host: '0.0.0.0', port: 9601 });
});

test('Soketi\'s --config file: apps, nested or dotted keys; the environment wins', () => {
  const file = { port: 6002, 'appManager.array.apps': [{ id: 'a', key: 'ka', secret: 'sa' }, { id: 'b', key: 'kb', secret: 'sb' }],
    eventLimits: { maxBatchSize: 20 } };
  const { options } = fromSoketi({ file, env: { SOKETI_DEFAULT_APP_SECRET: 'rotated' } });
  assert.equal(options.port, 6002);
  const p = pusherOptions(options.pusher);
  assert.deepEqual(p.apps.map((a) => [a.id, a.key, a.secrets[0]]), [['a', 'ka', 'rotated'], ['b', 'kb', 'sb']]);
  assert.equal(p.maxBatchSize, 20);
  // Soketi's defaults where larger than Pusher's: an app moving from Soketi keeps working.
  assert.equal(p.maxEventBytes, 100 * 1024);
  assert.equal(p.maxPresenceMemberBytes, 2 * 1024);
  assert.equal(p.apps[0].maxClientEventsPerSecond, 0);
  assert.equal(pusherOptions({ apps: [app] }).maxEventBytes, 10 * 1024);
});

test('Soketi settings symphony cannot honour are errors that say what to do', () => {
  assert.throws(() => fromSoketi({ env: { SOKETI_APP_MANAGER_DRIVER: 'mysql' } }), { code: 'ERR_SYMPHONY_CONFIG', message: /JSON file/ });
  assert.throws(() => fromSoketi({ env: { SOKETI_ADAPTER_DRIVER: 'nats' } }), { code: 'ERR_SYMPHONY_CONFIG', message: /Redis/ });
  assert.throws(() => fromSoketi({ env: { SOKETI_MODE: 'worker' } }), { code: 'ERR_SYMPHONY_CONFIG' });
  assert.throws(() => fromSoketi({ env: { SOKETI_SSL_CERT: '/nonexistent/cert.pem', SOKETI_SSL_KEY: '/nonexistent/key.pem' } }), { code: 'ERR_SYMPHONY_CONFIG', message: /cannot read/ });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-soketi-'));
  try {
    fs.writeFileSync(path.join(dir, 'c.pem'), 'CERT');
    assert.throws(() => fromSoketi({ env: { SOKETI_SSL_CERT: path.join(dir, 'c.pem') } }), { message: /go together/ });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('Soketi\'s Redis Cluster and Sentinel settings become the bus\'s', () => {
  const c = fromSoketi({ env: { SOKETI_ADAPTER_DRIVER: 'redis', SOKETI_ADAPTER_REDIS_CLUSTER_MODE: 'true', SOKETI_DB_REDIS_CLUSTER_NODES: '["127.0.0.1:7000","127.0.0.1:7001"]' } });
  assert.deepEqual(c.options.bus, { url: ['redis://127.0.0.1:7000', 'redis://127.0.0.1:7001'], cluster: true });
  const s = fromSoketi({ env: { SOKETI_ADAPTER_DRIVER: 'redis', SOKETI_DB_REDIS_SENTINELS: '[{"host":"127.0.0.1","port":26380}]', SOKETI_DB_REDIS_INSTANCE_NAME: 'main' } });
  assert.deepEqual(s.options.bus, { sentinels: [{ host: '127.0.0.1', port: 26380 }], name: 'main' });
  assert.throws(() => fromSoketi({ env: { SOKETI_ADAPTER_DRIVER: 'redis', SOKETI_ADAPTER_REDIS_CLUSTER_MODE: 'true' } }), /CLUSTER_NODES/);
});
