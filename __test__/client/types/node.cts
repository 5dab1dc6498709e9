// symphony-ws/client in a Node CommonJS project (no DOM library): the
// WebSocket constructor is ws's. Compiled, not run, by
// __test__/client/types.test.js. ws is described here as @types/ws writes it
// (the project does not depend on @types/ws).
import client = require('symphony-ws/client');

declare class NodeWs {
  constructor(address: string | URL, protocols?: string | string[], options?: { headers?: Record<string, string> });
  readonly protocol: string;
  binaryType: 'nodebuffer' | 'arraybuffer' | 'fragments';
  onopen: ((event: { target: NodeWs }) => void) | null;
  onmessage: ((event: { data: unknown; type: string; target: NodeWs }) => void) | null;
  onclose: ((event: { code: number; reason: string; wasClean: boolean }) => void) | null;
  onerror: ((event: { error: unknown; message: string }) => void) | null;
  send(data: unknown, cb?: (err?: Error) => void): void;
  close(code?: number, data?: string | Buffer): void;
}

const c = new client.SymphonyClient('ws://127.0.0.1:8080/feed', {
  WebSocket: NodeWs,
  positions: { prices: { epoch: '3f9a0c1d2e4b5a69', offset: 1042 } },
  timers: { setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h) },
});
c.on('message', (topic, data, { offset, epoch }) => {
  const bytes: Uint8Array | string = data;
  console.log(topic, bytes.length, offset, epoch);
});
const sub: client.Subscription = c.subscribe('room.1', { since: { epoch: '3f9a0c1d2e4b5a69', offset: 3 }, data: { x: 1 } });
sub.on('message', (data, info) => console.log(data.length, info.offset));
sub.on('subscribed', ({ recovered, reason, data }) => console.log(recovered, reason, data));
sub.on('refused', (err: client.AskError) => console.log(err.code, err.reason, err.retry));
sub.on('unsubscribed', ({ by }) => console.log(by === 'client'));
const state: client.SubscriptionState = sub.state;
console.log(state, c.subscriptions().length);
void c.publish('room.1', 'hi').then(({ offset }) => console.log(offset));
void c.request(JSON.stringify({ q: 1 }), { timeout: 1000 }).then((reply) => console.log(reply));
sub.unsubscribe();
// @ts-expect-error a topic is a string
c.subscribe(1);
const positions: client.Positions = c.positions();
console.log(JSON.stringify(positions), client.PROTOCOL);
c.close();
