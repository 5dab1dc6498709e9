'use strict';
// One symphony node serving the Pusher protocol, in a child process, for
// the Pusher acceptance suite (pusher-target.js starts it):
//
//   node __test__/helpers/pusher-node.js '<JSON server options>'
//
// The options go to new Server() as they are ({ host, port, pusher, bus }).
// Prints "PUSHER-NODE-LISTENING <port>" once it listens, or
// "PUSHER-NODE-FAILED <why>" and exits 1 when it cannot start (until issue
// 45 is wired, new Server() does not know the `pusher` option: that is the
// message every test then fails with). SIGTERM closes the server and exits.

let server = null;

async function main() {
  const options = JSON.parse(process.argv[2] || '{}');
  const { Server } = require('../..');
  // The test's own settings first: a mistake there is the test's, not the server's.
  try {
    require('../../lib/pusher/config').pusherOptions(options.pusher);
  } catch (err) {
    throw new Error(`the test's pusher options are invalid: ${err.message}`);
  }
  try {
    server = new Server(options);
  } catch (err) {
    if (/options\.pusher/.test(err.message)) {
      throw new Error(`symphony does not serve the Pusher protocol yet: new Server({ pusher }) throws "${err.message}" (issue 45 is not wired into the server)`);
    }
    throw err;
  }
  server.on('error', (err) => process.stderr.write(`server error: ${err.stack || err}\n`));
  const { port } = await server.listen();
  process.stdout.write(`PUSHER-NODE-LISTENING ${port}\n`);
}

async function shutdown() {
  try {
    if (server) await server.close();
  } finally {
    process.exit(0);
  }
}

process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

main().catch((err) => {
  process.stdout.write(`PUSHER-NODE-FAILED ${String(err.message).replace(/\n/g, ' ')}\n`);
  process.exit(1);
});
