'use strict';
// npx symphony-ws pusher (bin/symphony-ws.js): Soketi's environment and
// --config file read as symphony's options (--print-config), and each bad
// argument a clear message with exit code 2.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const { once } = require('node:events');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const BIN = path.join(__dirname, '..', '..', 'bin', 'symphony-ws.js');
const pkg = require('../../package.json');

function run(args, env = {}) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SOKETI_')));
  return spawnSync(process.execPath, [BIN, ...args], { env: { ...clean, ...env }, encoding: 'utf8', timeout: 60000 });
}

test('the package names the command', () => {
  assert.equal(pkg.bin['symphony-ws'], 'bin/symphony-ws.js');
  assert.ok(pkg.files.includes('bin/'));
  assert.match(fs.readFileSync(BIN, 'utf8'), /^#!\/usr\/bin\/env node\n/);
});

test('--print-config: Soketi\'s environment and file as symphony options, secrets masked, ignored settings named', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-cli-'));
  try {
    const file = path.join(dir, 'soketi.json');
    fs.writeFileSync(file, JSON.stringify({ port: 6100, 'appManager.array.apps': [{ id: 'a1', key: 'k1', secret: 'very-secret' }] }));
    const r = run(['pusher', '--config', file, '--print-config'], {
      SOKETI_ADAPTER_DRIVER: 'redis', SOKETI_DB_REDIS_PORT: '6390', SOKETI_DB_REDIS_PASSWORD: 'pw', SOKETI_CACHE_DRIVER: 'redis',
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.options.port, 6100);
    assert.equal(out.options.pusher.apps[0].key, 'k1');
    assert.equal(out.options.pusher.apps[0].secret, '(set)');
    assert.equal(out.options.bus.url, 'redis://(credentials)@127.0.0.1:6390');
    assert.doesNotMatch(r.stdout, /very-secret|pw@/);
    assert.match(r.stderr, /ignored SOKETI_CACHE_DRIVER: /);
    // --port wins over the file and the environment.
    assert.equal(JSON.parse(run(['pusher', '--print-config', '--port=7000'], { SOKETI_PORT: '6200' }).stdout).options.port, 7000);
    // Without anything: Soketi's defaults (port 6001, app-id/app-key/app-secret).
    const d = JSON.parse(run(['pusher', '--print-config']).stdout).options;
    assert.deepEqual([d.port, d.pusher.apps[0].id, d.pusher.apps[0].key], [6001, 'app-id', 'app-key']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bad arguments and settings: exit 2 with what is wrong', () => {
  const cases = [
    [['pusher', '--bogus'], {}, /unknown argument "--bogus"/],
    [['pusher', '--port', 'x'], {}, /--port x: not a port number/],
    [['pusher', '--config'], {}, /--config needs a value/],
    [['pusher', '--config', '/nonexistent/soketi.json'], {}, /no such file/],
    [['pusher'], { SOKETI_APP_MANAGER_DRIVER: 'mysql' }, /JSON file/],
    [['pusher'], { SOKETI_DEFAULT_APP_KEY: 'bad key' }, /pusher\.apps\[0\]\.key/],
    [['serve'], {}, /unknown command "serve"/],
  ];
  for (const [args, env, re] of cases) {
    const r = run(args, env);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, re);
  }
});

test('it serves: pusher-js subscribes, the pusher SDK triggers, SIGTERM closes it with exit 0', async (t) => {
  const Pusher = require('pusher-js');
  const PusherSdk = require('pusher');
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SOKETI_')));
  const child = spawn(process.execPath, [BIN, 'pusher', '--host', '127.0.0.1', '--port', '0'], {
    env: { ...clean, SOKETI_DEFAULT_APP_ID: 'cli-app', SOKETI_DEFAULT_APP_KEY: 'cli-key', SOKETI_DEFAULT_APP_SECRET: 'cli-secret' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = once(child, 'exit');
  t.after(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  let out = '';
  const port = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on ws:\/\/127\.0\.0\.1:(\d+)\/app\/\{key\} \(apps: cli-key\)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`exited ${code} before listening: ${out}`)));
  });
  const client = new Pusher('cli-key', { wsHost: '127.0.0.1', wsPort: port, forceTLS: false, enabledTransports: ['ws'], cluster: '' });
  t.after(() => client.disconnect());
  const channel = client.subscribe('news');
  await new Promise((resolve) => channel.bind('pusher:subscription_succeeded', resolve));
  const got = new Promise((resolve) => channel.bind('headline', resolve));
  const sdk = new PusherSdk({ appId: 'cli-app', key: 'cli-key', secret: 'cli-secret', host: '127.0.0.1', port, useTLS: false });
  await sdk.trigger('news', 'headline', { x: 1 });
  assert.deepEqual(await got, { x: 1 });
  assert.match(client.connection.socket_id, /^\d+\.\d+$/);
  client.disconnect();
  child.kill('SIGTERM');
  const [code] = await exited;
  assert.equal(code, 0);
  assert.match(out, /SIGTERM: closing/);
});
