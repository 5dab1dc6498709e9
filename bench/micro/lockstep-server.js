'use strict';
// The server side of bench/micro/instructions.js: a symphony server (one IO
// thread) driven in lock step, so that every round does the same work and
// valgrind can count it. Not a benchmark on its own.
//
//   node bench/micro/lockstep-server.js ROOT SHAPE SIZE
//
// ROOT: the checkout whose lib/ and native build are loaded (this one, or a
// baseline built by `npm run bench -- --compare REF`). SHAPE: `fanout` (every
// subscriber on topic t) or `publish` (subscriber n alone on topic t<n>).
// The first connection is the control: the server says `hello` to it, then
// subscribes every later connection; the control asks `opens` (answered
// with how many subscribers opened) and `go` (one round: one publish of SIZE
// bytes to t, or one to each topic). The control waits for every subscriber
// to have its message before the next `go`, so nothing queues up and each
// round writes one frame per subscriber. stdout: {"port":N} once listening.

const [root, shape, sizeArg] = process.argv.slice(2);
const { Server } = require(root);
if (shape !== 'fanout' && shape !== 'publish') throw new Error(`lockstep-server: unknown shape ${shape}`);
const size = Number(sizeArg);
if (!Number.isInteger(size) || size < 1) throw new Error(`lockstep-server: bad size ${sizeArg}`);

const server = new Server({ host: '127.0.0.1', port: 0, threads: 1 });
const payload = Buffer.alloc(size, 0x61);
let control = null;
const topics = [];

server.on('open', (id) => {
  if (control === null) {
    control = id;
    server.send(control, 'hello');
    return;
  }
  const topic = shape === 'fanout' ? 't' : `t${topics.length}`;
  topics.push(topic);
  server.subscribe(id, topic);
});

server.on('message', (id, data) => {
  if (id !== control) return;
  const what = data.toString();
  if (what === 'opens') {
    server.send(control, `opens ${topics.length}`);
  } else if (what === 'go') {
    if (shape === 'fanout') server.publish('t', payload);
    else for (const topic of topics) server.publish(topic, payload);
  } else if (what === 'stop') {
    server.close().then(() => process.exit(0));
  }
});

server.listen().then(({ port }) => process.stdout.write(`${JSON.stringify({ port })}\n`));
