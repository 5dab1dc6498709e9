'use strict';
// A chat with rooms and presence. One node:http port serves the page and
// hands WebSocket upgrades to symphony. The client library subscribes to
// the rooms itself and publishes into them; the server only decides, in its
// hooks, what a client may do:
//
//   node examples/chat/server.js          then open http://127.0.0.1:3000/ in two tabs
//
// - a connection says who it is in the URL (?name=alice): its presence info;
// - a client may subscribe to any room "room.<name>" (onSubscribe) and
//   publish {"from": <its own name>, "text": ...} there (onPublish);
// - a join or leave is announced in the room; a request {"who": room}
//   answers the room's members (server.presence()).

const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { Server } = require('symphony-ws');

const host = process.env.HOST || '127.0.0.1';
const port = Number(process.env.PORT || 3000);

const ROOM = /^room\.[a-z0-9-]{1,32}$/;
const NAME = /^[\w .-]{1,24}$/;

const chat = new Server({
  noServer: true,
  path: '/chat',
  history: { size: 50, ttl: 600 }, // a client that drops for a moment gets what it missed
  presence: { topics: (topic) => ROOM.test(topic) }, // who is in each room
  onUpgrade: (req) => {
    const name = new URL(req.url, 'ws://x').searchParams.get('name') || '';
    if (!NAME.test(name)) return { status: 400 };
    return { data: { name }, presence: { name } };
  },
  onSubscribe: (id, topic) => ROOM.test(topic),
  onPublish: (id, topic, data) => {
    if (!ROOM.test(topic) || typeof data !== 'string' || data.length > 2000) return false;
    try {
      const msg = JSON.parse(data);
      // Nobody speaks in someone else's name.
      return msg.from === chat.getUserData(id).name && typeof msg.text === 'string' && msg.text !== '';
    } catch {
      return { code: 'bad-json', reason: 'a message is {"from", "text"}' };
    }
  },
  onRequest: async (id, data) => {
    const { who } = JSON.parse(data);
    if (!ROOM.test(who)) return [];
    return (await chat.presence(who)).map((entry) => entry.info.name);
  },
});

// Presence events: everyone in the room hears who came and went.
chat.on('join', (room, { info }) => chat.publish(room, JSON.stringify({ join: info.name })));
chat.on('leave', (room, { info }) => chat.publish(room, JSON.stringify({ leave: info.name })));
chat.on('error', (err) => console.error(`chat: ${err.message}`));

// The page, and the client library for browsers (one ES module file).
const files = {
  '/': [path.join(__dirname, 'index.html'), 'text/html; charset=utf-8'],
  '/symphony-client.mjs': [path.join(path.dirname(require.resolve('symphony-ws/package.json')), 'client', 'symphony-client.mjs'), 'text/javascript'],
};

const web = http.createServer((req, res) => {
  const file = files[new URL(req.url, 'http://x').pathname];
  if (!file) return res.writeHead(404).end('not found\n');
  res.writeHead(200, { 'content-type': file[1] });
  fs.createReadStream(file[0]).pipe(res);
});
web.on('upgrade', (req, socket, head) => chat.handleUpgrade(req, socket, head));

web.listen(port, host, () => console.log(`chat: open http://${host}:${web.address().port}/`));

for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, async () => {
    web.close();
    await chat.close(); // everyone gets 1001 (and leaves their rooms)
    process.exit(0);
  });
}
