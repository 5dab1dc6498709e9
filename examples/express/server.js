'use strict';
// An Express app whose WebSocket upgrades are authenticated with its own
// session: one port serves the app and hands each upgrade to symphony
// (noServer + handleUpgrade); onUpgrade reads the same session cookie the
// app's routes read, and refuses the upgrade without a valid one.
//
//   node examples/express/server.js       then open http://127.0.0.1:3002/ (log in as two names, in two browsers)
//
// The session is a random id in a cookie signed with HMAC-SHA256
// (node:crypto), kept in memory like express-session's MemoryStore: use
// express-session or your own store in production; onUpgrade only needs a
// way to look a session up from the Cookie header.

const crypto = require('node:crypto');
const http = require('node:http');
const path = require('node:path');
const express = require('express');
const { Server } = require('symphony-ws');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 3002);
const SECRET = process.env.SESSION_SECRET || crypto.randomBytes(32);

// --- sessions: sid -> { sid, name } -----------------------------------------
const sessions = new Map();
const mac = (sid) => crypto.createHmac('sha256', SECRET).update(sid).digest('base64url');

/** The session a Cookie header names (sid=<id>.<mac>), or null. */
function sessionOf(cookie = '') {
  const value = /(?:^|;\s*)sid=([\w-]+)\.([\w-]+)/.exec(cookie);
  if (!value) return null;
  const [, sid, given] = value;
  const want = Buffer.from(mac(sid));
  if (given.length !== want.length || !crypto.timingSafeEqual(Buffer.from(given), want)) return null;
  return sessions.get(sid) || null;
}

// --- symphony: authenticated at the upgrade ---------------------------------
const live = new Server({
  noServer: true,
  path: '/live',
  onUpgrade: (req) => {
    const session = sessionOf(req.headers.cookie);
    if (!session) return { status: 401 };
    // A cookie goes with a WebSocket from any site: accept our own pages only.
    if (req.origin !== `http://${req.headers.host}`) return { status: 403 };
    return { topics: [`user.${session.name}`, 'news'], data: { session } };
  },
});
const sockets = new Map(); // connection id -> its session
live.on('open', (id, { data }) => {
  sockets.set(id, data.session);
  live.send(id, JSON.stringify({ hello: data.session.name }));
});
live.on('close', (id) => sockets.delete(id));
live.on('error', (err) => console.error(`live: ${err.message}`));

// --- the app -----------------------------------------------------------------
const app = express();
app.use(express.urlencoded({ extended: false }));
app.use(express.json());
app.use((req, res, next) => {
  req.session = sessionOf(req.headers.cookie);
  next();
});
const needSession = (req, res, next) => (req.session ? next() : res.status(401).json({ error: 'log in first' }));

app.get('/', (req, res) => res.sendFile(path.join(__dirname, req.session ? 'app.html' : 'login.html')));
app.get('/symphony-client.mjs', (req, res) => res.sendFile(path.join(path.dirname(require.resolve('symphony-ws/package.json')), 'client', 'symphony-client.mjs')));

app.post('/login', (req, res) => {
  const name = String(req.body.name || '');
  if (!/^[a-z0-9_-]{1,24}$/i.test(name)) return res.status(400).send('a name is 1-24 letters, digits, _ or -');
  const sid = crypto.randomBytes(18).toString('base64url');
  sessions.set(sid, { sid, name });
  res.cookie('sid', `${sid}.${mac(sid)}`, { httpOnly: true, sameSite: 'lax', path: '/' });
  live.publish('news', JSON.stringify({ news: `${name} logged in` }));
  res.redirect(303, '/');
});

app.post('/logout', needSession, (req, res) => {
  sessions.delete(req.session.sid);
  // Its WebSockets end with it.
  for (const [id, session] of sockets) if (session === req.session) live.end(id, 4001, 'logged out');
  res.clearCookie('sid', { path: '/' });
  res.redirect(303, '/');
});

app.get('/me', needSession, (req, res) => res.json({ name: req.session.name }));

// A note to another user: to every WebSocket of theirs.
app.post('/notes', needSession, (req, res) => {
  const { to, text } = req.body;
  if (typeof to !== 'string' || typeof text !== 'string' || text === '') return res.status(400).json({ error: '{ to, text }' });
  const delivered = live.publish(`user.${to}`, JSON.stringify({ from: req.session.name, text }));
  res.json({ delivered });
});

const web = http.createServer(app);
web.on('upgrade', (req, socket, head) => live.handleUpgrade(req, socket, head));
web.listen(port, host, () => console.log(`express: open http://${host}:${web.address().port}/`));

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, async () => {
    web.close();
    await live.close();
    process.exit(0);
  });
}
