// symphony-ws/client as a page's TypeScript uses it (ES module, DOM
// library): the browser's WebSocket is the default; positions kept in
// localStorage. Compiled, not run, by __test__/client/types.test.js.
import {
  SymphonyClient, connect, PROTOCOL,
  type Positions, type ClientState, type MessageInfo, type RecoveredInfo, type ClientStats, type ClientError,
  type ReconnectCause, type TransportReason,
} from 'symphony-ws/client';

const saved: Positions = JSON.parse(localStorage.getItem('positions') ?? '{}');
const client = new SymphonyClient('/feed?room=lobby', { positions: saved, backoff: { min: 250, max: 10000 } });
const p: 'symphony.v1' = PROTOCOL;
void p;

client.on('message', (topic: string | null, data: string | Uint8Array, info: MessageInfo) => {
  const text: string = typeof data === 'string' ? data : new TextDecoder().decode(data);
  const offset: number | undefined = info.offset;
  document.title = `${topic ?? 'direct'} ${offset ?? '-'} ${text}`;
  localStorage.setItem('positions', JSON.stringify(client.positions()));
});
client.on('recovered', (topic: string, ok: boolean, info: RecoveredInfo) => {
  if (!ok) client.send(JSON.stringify({ snapshot: topic, reason: info.reason ?? null, since: info.since }));
});
client.once('subscribed', (topic, info) => console.log(topic, info.id, info.epoch, info.offset));
client.on('unsubscribed', (topic: string) => console.log(topic));
client.on('state', (state: ClientState, info) => console.log(state, info));
client.on('state', (state, info) => {
  if (state === 'reconnecting' && 'cause' in info) {
    const cause: ReconnectCause = info.cause;
    console.log(cause, info.delay, client.transport, client.transportReason satisfies TransportReason);
  }
});
const early: Promise<{ epoch?: string; offset?: number }> = client.publish('t', 'x', { timeout: 5000 });
void early;
const c2 = new SymphonyClient('/live', { openTimeout: 2000, heartbeat: 0, timers: { now: () => 0 } });
c2.close();
client.on('error', (err: ClientError) => console.warn(err.code, err.message));
const s: ClientStats = client.stats();
const sent: boolean = client.send(new Uint8Array([1, 2]));
const url: string = client.url();
const state: ClientState = client.state;
console.log(s.duplicates, sent, url, state);

// The browser's own WebSocket, given explicitly, and a URL object.
const other = connect(new URL('wss://example.invalid/feed'), { WebSocket, random: Math.random });
other.close(1000, 'bye');

// @ts-expect-error: an unknown event
client.on('nope', () => {});
// @ts-expect-error: a position's offset is a number
new SymphonyClient('/feed', { positions: { t: { epoch: '0123456789abcdef', offset: '1' } } });
