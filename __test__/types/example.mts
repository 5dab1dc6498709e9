// The public API as a TypeScript user writes it (ES module). Compiled, not
// run, by npm test ("types": tsc --noEmit --strict -p __test__/types): a
// wrong type in lib/index.d.ts, or one that no longer matches lib/, fails it.
import http from 'node:http';
import {
  Server, allocator, SymphonyError, TlsError, LoadError, ClientError, HookError,
  type ConnectionId, type TokenKey, type SubscribeAsk, type ServerOptions, type UpgradeRequest, type UpgradeResult, type ServerStats, type PresenceEntry,
} from 'symphony-ws';

// One port with node:http: no listener of symphony's own.
const options: ServerOptions = {
  noServer: true,
  threads: 2,
  path: '/feed',
  maxPayload: 1 << 20,
  maxBackpressure: 1 << 20,
  slowConsumer: 'close',
  compression: { threshold: 256, level: 4 },
  history: { size: 500, ttl: 300, maxBytes: 32 << 20 },
  maxFragments: null,
  maxConnectionsPerAddress: 50,
  upgradeRatePerAddress: 10,
  addressPrefix: { v6: 56 },
  maxMessagesPerSecond: 20,
  messageBurst: null,
  maxBytesPerSecond: 64 << 10,
  byteBurst: 256 << 10,
  rateLimit: 'pause',
  rateLimitGrace: 500,
  maxWorkPerSecond: 4096,
  workBurst: null,
  // What clients ask (symphony.v2).
  onSubscribe: async (id: ConnectionId, topic: string, ask: SubscribeAsk) => {
    if (ask.resubscribe && ask.since) console.log(ask.since.epoch, ask.since.offset);
    if (!topic.startsWith('room.')) return { code: 'not-a-room', reason: topic };
    return { data: { welcome: topic } };
  },
  onPublish: (id, topic, data, { binary }) => !binary && typeof data === 'string' && topic.startsWith('room.'),
  onRequest: async (id, data) => {
    if (data.length === 0) throw new ClientError('empty', 'say something');
    return { length: data.length };
  },
  askTimeout: 2000,
  maxSubscriptions: 100,
  maxPending: 8,
  tokens: { keys: [{ kid: 'k1', alg: 'HS256', secret: 'a secret of 32 bytes or more, here' }], audience: 'feeds', leeway: 5 },
  onUpgrade: async (req: UpgradeRequest): Promise<UpgradeResult> => {
    for (const { topic, epoch, offset } of req.since) console.log(topic, epoch.length, offset);
    const user = req.headers.cookie?.match(/user=(\w+)/)?.[1];
    if (!user) return { status: 401, headers: { 'WWW-Authenticate': 'Cookie' } };
    const wanted: string | false = req.protocols.includes('feed.v1') ? 'feed.v1' : false;
    return { topics: ['prices', `user:${user}`], data: { user }, protocol: wanted, compress: req.origin !== null };
  },
};
const server = new Server(options);

const names = new Map<ConnectionId, string>();
server.on('open', (id, info) => {
  const data = info.data as { user: string };
  names.set(id, data.user);
  if (info.compression) server.send(id, JSON.stringify({ hello: data.user, protocol: info.protocol }));
});
server.on('message', (id, data, isBinary) => {
  const text: string = data.toString('utf8');
  const sent: boolean = server.send(id, isBinary ? data : `echo ${text}`, { binary: isBinary, compress: false });
  if (!sent) server.terminate(id);
});
server.on('close', (id, code, reason) => {
  names.delete(id);
  console.log(`closed ${id}: ${code} ${reason}`);
});
server.on('drain', (id) => server.subscribe(id, 'prices'));
server.on('subscription', (topic, active) => console.log(`${topic}: ${active ? 'first subscriber' : 'none left'}`));
new Server({ slowConsumer: 'conflate' });
const rooms = new Server({ presence: { topics: (t) => t.startsWith('room:'), ttl: 10000 }, bus: { url: 'redis://127.0.0.1:6379' } });
rooms.topic('room:lobby', { presence: true });
rooms.on('join', (topic, entry) => console.log(topic, entry.node, entry.id, entry.info));
rooms.on('leave', (topic, entry, reason: 'left' | 'expired') => console.log(topic, entry.id, reason));
const who: PresenceEntry[] = await rooms.presence('room:lobby');
const everywhere: number = await rooms.bus!.subscribers('room:lobby', { timeout: 1000 });
console.log(who.length, everywhere, rooms.bus!.node);
const viaSentinel = new Server({
  bus: { sentinels: ['redis://127.0.0.1:26379', { host: '127.0.0.1', port: 26380 }], name: 'mymaster', url: 'redis://:pw@primary' },
});
const sentinelNames: string[] = viaSentinel.bus?.options.sentinels?.map((s) => `${s.host}:${s.port}`) ?? [];
console.log(sentinelNames, viaSentinel.bus?.options.name);
new Server({ bus: { url: 'redis://127.0.0.1:6379', prefix: 'app:' } });
// @ts-expect-error Sentinel watches one primary: no cluster
new Server({ bus: { sentinels: ['redis://127.0.0.1:26379'], name: 'mymaster', cluster: true } });
// @ts-expect-error sentinels need the primary's name
new Server({ bus: { sentinels: ['redis://127.0.0.1:26379'] } });
server.on('error', (err) => console.error(err.code, err.thread, err.errno, err.message));
server.on('error', (err) => {
  // A hook's answer that could not reach the client (it got 'internal').
  if (err instanceof HookError) console.error(err.hook, err.id satisfies ConnectionId, err.topic ?? '(a request)', err.cause);
});

const web = http.createServer((req, res) => res.end('ok'));
web.on('upgrade', (req, socket, head) => {
  const taken: boolean = server.handleUpgrade(req, socket, head);
  if (!taken) console.warn('not taken over');
});
web.listen(8080);

const delivered: number = server.publish('prices', Buffer.from([1, 2, 3]), { compress: true });
server.publish('prices', new Uint8Array(8));
server.publish('prices', new ArrayBuffer(8), { binary: true });
server.publish('prices', 'text');
server.unsubscribe(1, 'prices');
// History and recovery (docs/history.md), subscriber counts.
server.subscribe(1, 'prices', { since: { epoch: '0123456789abcdef', offset: 41 } });
const pos = server.position('prices');
if (pos !== null) console.log(pos.epoch, pos.offset, pos.first, pos.kept);
const trades = server.topic('trades', { history: { size: 1000, ttl: 60 } });
const last: number | undefined = trades.position?.offset;
const counted: number = server.subscribers('prices');
for (const [name, n] of server.topics()) console.log(name, n + counted, last);
server.on('recovery', (id, topic, { recovered, reason }) => {
  if (!recovered) server.send(id, `snapshot of ${topic} (${reason ?? ''})`);
});
server.on('open', (id, info) => info.recovery.forEach((r) => console.log(id, r.topic, r.recovered, r.reason)));
// @ts-expect-error an epoch is a string
server.subscribe(1, 'prices', { since: { epoch: 1, offset: 0 } });
server.end(1, 4000, 'bye');
const user: unknown = server.getUserData(1);
const stats: ServerStats | null = server.stats();
if (stats) console.log(delivered, user, stats.connections, stats.threads[0]?.arena, stats.compressed, stats.topics);
if (stats) console.log(stats.addresses, stats.addressRejects, stats.upgradeRateRejects, stats.rateWaits, stats.threads[0]?.rateCloses);
if (stats) console.log(stats.tokenChecks, stats.workRefused, stats.threads[0]?.workCloses);
const text: string = server.metrics({ service: 'feed' });
console.log(text.length, server.options.noServer, server.options.compression, server.address()?.port);

// Its own port, over TLS, with a certificate reload.
const tlsServer = new Server({ port: 0, tls: { cert: 'PEM', key: Buffer.from('PEM'), servername: { 'eu.example.com': { cert: 'a', key: 'b' } } } });
const { host, port } = await tlsServer.listen();
console.log(host, port, tlsServer.options.tls?.servername);
try {
  tlsServer.setTls({ cert: 'new', key: 'new', passphrase: 'x' });
} catch (err) {
  if (err instanceof TlsError) console.error(err.code);
  else if (err instanceof SymphonyError) console.error(err.code);
}
await tlsServer.close();
await server.close();

// The allocator.
const name: 'jemalloc' | 'system' = allocator.name;
const page: number | null = allocator.pageSize;
const check = allocator.selfCheck();
const mem = allocator.stats();
const resident: number | null = mem.resident;
const arenas = allocator.arenaStats();
console.log(name, page, check.ok, check.tlsRouted, mem.allocated - mem.cached, resident, arenas?.[0]?.dirty,
  allocator.config?.dirtyDecayMs, allocator.report(), allocator.report({ json: true }), allocator.tls()?.version);
allocator.setDecay({ dirtyMs: 1000, muzzyMs: 0 });
allocator.backgroundThread(false);
allocator.purge();

function explain(err: unknown): string {
  if (err instanceof LoadError) return err.tried.map((t) => `${t.path}: ${t.error}`).join('\n');
  if (err instanceof SymphonyError) return err.code;
  return String(err);
}
console.log(explain(new LoadError('none', [{ path: '/x.node', error: 'not found' }])), check.deflateRouted, check.redisRouted);

// What the types refuse.
// @ts-expect-error an unknown option
new Server({ prot: 80 });
// @ts-expect-error slowConsumer is 'drop', 'close' or 'conflate'
new Server({ slowConsumer: 'evict' });
// @ts-expect-error compression levels are numbers
new Server({ compression: { level: 'max' } });
// @ts-expect-error maxWorkPerSecond is a number
new Server({ maxWorkPerSecond: '2048' });
// @ts-expect-error rateLimit is 'pause' or 'close'
new Server({ rateLimit: 'drop' });
// @ts-expect-error addressPrefix has v4 and v6 only
new Server({ addressPrefix: { v5: 8 } });
// @ts-expect-error a topic is a string
server.publish(1, 'x');
// @ts-expect-error ids are numbers
server.send('1', 'x');
// @ts-expect-error a payload is a string or bytes
server.publish('prices', { price: 1 });
// @ts-expect-error handleUpgrade needs the request
server.handleUpgrade();
const rotated: TokenKey[] = [{ jwks: { keys: [] } }, { alg: 'EdDSA', publicKey: '-----BEGIN PUBLIC KEY-----' }];
server.setTokenKeys(rotated);
// @ts-expect-error HS256 takes a secret, not a public key
server.setTokenKeys([{ alg: 'HS256', publicKey: 'x' }]);
// @ts-expect-error a hook's refusal has a code
new Server({ onSubscribe: () => ({ reason: 1 }) });
// @ts-expect-error no such event
server.on('connection', () => {});
// @ts-expect-error a SymphonyError has a code first
new SymphonyError();
