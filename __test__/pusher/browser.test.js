'use strict';
// pusher-js 8 in headless Chromium (its web build, dist/web/pusher.min.js,
// as an app's page loads it), against the target: a public channel, a
// private channel and a presence channel authorized by a real auth endpoint
// (the page's own server signs with the `pusher` SDK, as an app's backend
// does: POST socket_id & channel_name, answer {auth, channel_data}), client
// events between two pages, user sign-in with sendToUser, and a reconnect
// after the server restarts. Fails (does not skip) when chromium is missing.
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { once } = require('node:events');
const { launch } = require('../helpers/chromium');
const { startTarget, DEFAULT_APP } = require('../helpers/pusher-target');
const { sdk } = require('../helpers/pusher-clients');

const PUSHER_JS = path.join(path.dirname(require.resolve('pusher-js/package.json')), 'dist', 'web', 'pusher.min.js');

function page(target) {
  return `<!doctype html><html><head><meta charset="utf-8"><title>pusher-js</title>
<script src="/pusher.min.js"></script>
<script>
window.seen = [];
let waiters = [];
function note(x) { window.seen.push(x); for (const w of waiters.slice()) w(); }
window.waitFor = (pred, ms, what) => new Promise((resolve, reject) => {
  const check = () => { const hit = window.seen.find(pred); if (hit !== undefined) { done(); resolve(hit); } };
  const done = () => { clearTimeout(timer); waiters = waiters.filter((w) => w !== check); };
  const timer = setTimeout(() => { done(); reject(new Error('timed out after ' + ms + ' ms waiting for ' + what + ': ' + JSON.stringify(window.seen).slice(0, 1500))); }, ms);
  waiters.push(check);
  check();
});
const params = new URLSearchParams(location.search);
window.pusher = new Pusher(${JSON.stringify(target.key)}, {
  wsHost: ${JSON.stringify(target.wsHost)}, wsPort: ${target.wsPort}, forceTLS: false,
  enabledTransports: ['ws'], cluster: '', disableStats: true,
  channelAuthorization: { endpoint: '/pusher/auth?user=' + encodeURIComponent(params.get('user') || 'anon'), transport: 'ajax' },
  userAuthentication: { endpoint: '/pusher/user-auth?user=' + encodeURIComponent(params.get('user') || 'anon'), transport: 'ajax' },
});
pusher.connection.bind('state_change', (s) => note({ state: s.current }));
window.sub = (name) => {
  const ch = pusher.subscribe(name);
  ch.bind('pusher:subscription_succeeded', (m) => note({ subscribed: name, count: m && m.count }));
  ch.bind('pusher:subscription_error', (e) => note({ subscriptionError: name, e }));
  ch.bind('pusher:member_added', (m) => note({ added: name, id: m.id, info: m.info }));
  ch.bind('pusher:member_removed', (m) => note({ removed: name, id: m.id }));
  ch.bind_global((event, data) => { if (!event.startsWith('pusher')) note({ channel: name, event, data }); });
  return true;
};
window.ready = true;
</script></head><body>pusher-js</body></html>`;
}

/** The app's web server: the page, pusher-js, and the auth endpoints that sign with the SDK. */
async function appServer(t, target) {
  const api = sdk(target);
  const js = fs.readFileSync(PUSHER_JS);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/pusher.min.js') {
      res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
      return;
    }
    if (req.method === 'POST' && url.pathname.startsWith('/pusher/')) {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const form = new URLSearchParams(Buffer.concat(chunks).toString());
        const user = url.searchParams.get('user');
        let body;
        if (url.pathname === '/pusher/auth') {
          const channel = form.get('channel_name');
          if (user === 'denied') {
            res.writeHead(403, { 'content-type': 'application/json' }).end('{"error":"forbidden"}');
            return;
          }
          body = api.authorizeChannel(form.get('socket_id'), channel,
            channel.startsWith('presence-') ? { user_id: user, user_info: { name: user } } : undefined);
        } else {
          body = api.authenticateUser(form.get('socket_id'), { id: user });
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(target));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => { server.closeAllConnections(); server.close(); });
  return `http://127.0.0.1:${server.address().port}/`;
}

async function openTab(browser, url) {
  const tab = await browser.newPage(url, { timeout: 10000 });
  await tab.evaluate(`new Promise((resolve, reject) => {
    const t0 = performance.now();
    const f = () => (window.ready ? resolve(true) : performance.now() - t0 > 5000 ? reject(new Error('no window.ready')) : setTimeout(f, 10));
    f();
  })`);
  await tab.evaluate(`waitFor((x) => x.state === 'connected', 8000, 'connected')`, { timeout: 10000 });
  return tab;
}

const w = (tab, pred, what, ms = 5000) => tab.evaluate(`waitFor(${pred}, ${ms}, ${JSON.stringify(what)})`, { timeout: ms + 2000 });

test('pusher-js in Chromium: public, private and presence channels, client events, a refused auth, sign-in, a restart', async (t) => {
  const target = await startTarget({ t, apps: [{ ...DEFAULT_APP, enableUserAuthentication: true }], userAuthenticationTimeout: 60000 });
  const base = await appServer(t, target);
  const browser = await launch();
  t.after(() => browser.close());
  const ann = await openTab(browser, `${base}?user=ann`);
  const bob = await openTab(browser, `${base}?user=bob`);
  const api = sdk(target);

  // Public.
  await ann.evaluate(`sub('news')`);
  await w(ann, `(x) => x.subscribed === 'news'`, 'news subscribed');
  await api.trigger('news', 'headline', { title: 'from the SDK' });
  const ev = await w(ann, `(x) => x.event === 'headline'`, 'the headline');
  assert.deepEqual(ev.data, { title: 'from the SDK' });

  // Private, through the auth endpoint; client events between the two pages.
  for (const tab of [ann, bob]) {
    await tab.evaluate(`sub('private-room')`);
    await w(tab, `(x) => x.subscribed === 'private-room'`, 'private-room subscribed');
  }
  await ann.evaluate(`pusher.channel('private-room').trigger('client-hello', { from: 'ann' })`);
  const hello = await w(bob, `(x) => x.event === 'client-hello'`, 'ann\'s client event at bob');
  assert.deepEqual(hello.data, { from: 'ann' });

  // Presence: members with the info the endpoint signed.
  await ann.evaluate(`sub('presence-lobby')`);
  await w(ann, `(x) => x.subscribed === 'presence-lobby'`, 'ann in the lobby');
  await bob.evaluate(`sub('presence-lobby')`);
  const bobIn = await w(bob, `(x) => x.subscribed === 'presence-lobby'`, 'bob in the lobby');
  assert.equal(bobIn.count, 2);
  const added = await w(ann, `(x) => x.added === 'presence-lobby'`, 'bob added at ann');
  assert.deepEqual([added.id, added.info], ['bob', { name: 'bob' }]);

  // A refused auth (the endpoint answers 403): pusher-js reports it on the channel.
  const denied = await openTab(browser, `${base}?user=denied`);
  await denied.evaluate(`sub('private-room')`);
  const refusal = await w(denied, `(x) => x.subscriptionError === 'private-room'`, 'the refusal');
  assert.equal(refusal.e.status, 403);

  // Sign-in and an event to the user.
  await bob.evaluate(`pusher.signin(); pusher.user.bind('notice', (d) => note({ user: 'notice', data: d })); pusher.user.signinDonePromise.then(() => true)`, { timeout: 8000 });
  await bob.evaluate(`new Promise((resolve) => { const c = pusher.user.serverToUserChannel; if (c.subscribed) resolve(true); else c.bind('pusher:subscription_succeeded', () => resolve(true)); })`, { timeout: 8000 });
  await api.sendToUser('bob', 'notice', { to: 'bob' });
  const notice = await w(bob, `(x) => x.user === 'notice'`, 'the notice to bob');
  assert.deepEqual(notice.data, { to: 'bob' });

  // The server restarts: the page reconnects and resubscribes by itself.
  await target.restart();
  await w(ann, `(x) => window.seen.filter((y) => y.state === 'connected').length >= 2`, 'ann connected again', 30000);
  await w(ann, `(x) => window.seen.filter((y) => y.subscribed === 'news').length >= 2`, 'news resubscribed', 10000);
  await api.trigger('news', 'headline', { title: 'after the restart' });
  await w(ann, `(x) => x.event === 'headline' && x.data.title === 'after the restart'`, 'the headline after the restart');
});
