'use strict';
// A symphony server in a child process whose descriptor limit the parent
// lowered (`ulimit -n` in sh before exec): __test__/protocol/fdlimit.test.js.
// It tells the parent { port, pid } over IPC, subscribes every connection to
// 'all', and answers the parent's requests: 'stats' → { stats },
// 'publish' → publishes `text` to 'all' and answers { published },
// 'subscribers' → { subscribers } (of 'all').
const { Server } = require('../..');

const server = new Server({ host: '127.0.0.1', port: 0, threads: 1, handshakeTimeout: 600 });
server.on('open', (id) => server.subscribe(id, 'all'));
server.listen().then(({ port }) => process.send({ port, pid: process.pid }));
process.on('message', (m) => {
  if (m.op === 'stats') process.send({ stats: server.stats() });
  else if (m.op === 'publish') { server.publish('all', m.text); process.send({ published: m.text }); }
  else if (m.op === 'subscribers') process.send({ subscribers: server.subscribers('all') });
});
process.on('disconnect', () => process.exit(0));
