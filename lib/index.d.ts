// Types for symphony's public API (lib/index.js).
import { EventEmitter } from 'node:events';

/** A connection id: a safe integer naming (IO thread, slot, generation). */
export type ConnectionId = number;

export type Payload = string | Buffer | ArrayBufferView | ArrayBuffer;

export interface UpgradeRequest {
  /** The request target, path and query. */
  url: string;
  /** Header names lower-cased; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** Name, value, name, value... as received. */
  rawHeaders: string[];
  /** The client's address: the PROXY protocol header's source when the
   * listener reads one (proxyProtocol), else the socket's peer; then, with
   * trustProxy, the client a trusted proxy forwarded (Forwarded / X-Forwarded-For). */
  remoteAddress: string;
  /** Its port; 0 when a trusted proxy forwarded the address without one. */
  remotePort: number;
  /** The TCP peer of the socket itself (the load balancer's, behind one). */
  socketAddress: string;
  socketPort: number;
  /** Subprotocols offered in Sec-WebSocket-Protocol, in order. */
  protocols: string[];
  origin: string | null;
  /** The client's resume positions (sy.since in the URL, docs/protocol.md; an event stream's
   * Last-Event-ID when it sent one, docs/sse.md); topics given at accept resume from them. */
  since: Array<Since & { topic: string }>;
  /** 'websocket' for an upgrade; 'sse' for a GET that asks for an event stream
   * (Accept: text/event-stream, docs/sse.md): answered the same way. */
  transport: Transport;
}

/** How a connection reaches its client (docs/sse.md). */
export type Transport = 'websocket' | 'sse' | 'pusher';

/**
 * onUpgrade's answer. UserData: what `data` attaches to the connection
 * (getUserData(id), 'open''s info.data); Server<UserData> infers it from
 * onUpgrade, or takes it as written (new Server<{ user: string }>({ ... })).
 */
export type UpgradeResult<UserData = unknown> =
  | boolean
  | { status: number; headers?: Record<string, string | string[]> }
  | {
      topics?: string[];
      data?: UserData;
      /** The connection's presence info (JSON-serializable, at most presence.maxInfo bytes as JSON),
       * listed by server.presence() and given in 'join' / 'leave' for topics with presence. Default null. */
      presence?: unknown;
      /** One of req.protocols, or false for none. Default: the first offered. */
      protocol?: string | false;
      headers?: Record<string, string | string[]>;
      /** false declines permessage-deflate for this connection (the offers are in
       * req.headers['sec-websocket-extensions']). Default true: accepted when the
       * server has compression and the client offers it. */
      compress?: boolean;
    };

/** permessage-deflate (RFC 7692), once per publish, no state per connection. */
export interface CompressionOptions {
  /** Payloads smaller than this many bytes always go uncompressed. Default 128. */
  threshold?: number;
  /** libdeflate level, 1 (fastest) to 9 (smallest). Default 6. */
  level?: number;
}

export interface SendOptions {
  /** Default: true for Buffers and other bytes, false for strings. */
  binary?: boolean;
  /** false: never compressed. Default true (when the server has compression and
   * the payload reaches the threshold). */
  compress?: boolean;
}

/** PEM text: a string or the bytes of a PEM file. */
export type Pem = string | Buffer | ArrayBufferView | ArrayBuffer;

export interface TlsOptions {
  /** The certificate chain, leaf first. */
  cert: Pem;
  /** Its private key (may be encrypted: give passphrase). */
  key: Pem;
  passphrase?: string;
  /** CAs to ask clients for certificates with (mutual TLS). Default: none asked. */
  ca?: Pem;
  /** More certificates chosen by SNI: exact names or '*.example.com' (one label). */
  servername?: Record<string, { cert: Pem; key: Pem; passphrase?: string }>;
}

export interface ServerOptions<UserData = unknown> {
  /** Address to bind. Default '0.0.0.0'. */
  host?: string;
  /** 0 picks a free port. Default 0. */
  port?: number;
  /** Only this path (before '?') upgrades; others get 404. Default null: any. */
  path?: string | null;
  /** IO threads. Default min(2, CPUs). */
  threads?: number;
  /** Largest message accepted from a client (bytes); larger: close 1009. Default 1 MiB. */
  maxPayload?: number;
  /** Frames (fragments) in one message from a client; more: close 1008 ("too many fragments",
   * counted in fragmentCloses). 0: no limit. Default (null): max(1024, maxPayload / 64). */
  maxFragments?: number | null;
  /** Control frames (pings, pongs) per second per connection, in bursts of as many; more: close 1008
   * ("too many control frames", counted in controlRateCloses). 0: no limit. Default 100. */
  controlRate?: number;
  /** Bytes queued per connection before the slow-consumer policy. Default 1 MiB. */
  maxBackpressure?: number;
  /** 'drop': skip messages for it (counted); 'close': close 1008; 'conflate': each topic's newest message
   * takes the place of its older one still queued (counted in conflated), send() is dropped as with 'drop'.
   * Default 'drop'. */
  slowConsumer?: 'drop' | 'close' | 'conflate';
  /** Seconds without traffic before 1001 (a ping goes out at half). 0: never. Default 120. */
  idleTimeout?: number;
  /** Seconds for a complete upgrade request. Default 10. */
  handshakeTimeout?: number;
  /** Seconds to wait for the peer's close reply. Default 5. */
  closeTimeout?: number;
  /** Request line + headers limit (bytes); larger: 431. Default 8192. */
  maxHeaderSize?: number;
  /** Most headers in an upgrade request; more: 431. Default 64. */
  maxHeaders?: number;
  /** listen() backlog. Default 511. */
  backlog?: number;
  /** Upgrades refused with 503 above this many sockets. 0: no limit. Default 0. */
  maxConnections?: number;
  /** Open connections per client address (addressPrefix); more are answered 503 and closed by the IO
   * thread before onUpgrade (addressRejects). 0: no limit. Default 0. */
  maxConnectionsPerAddress?: number;
  /** New connections per second per client address, in bursts of as many; more are answered 429 with
   * Retry-After (upgradeRateRejects). 0: no limit. Default 0. */
  upgradeRatePerAddress?: number;
  /** What names a client address: its first v4 (1-32) or v6 (1-64) bits. Default { v4: 32, v6: 64 }. */
  addressPrefix?: { v4?: number; v6?: number };
  /** Data messages a connection may send per second, in bursts of messageBurst. 0: no limit. Default 0. */
  maxMessagesPerSecond?: number;
  /** Payload bytes (as on the wire) a connection may send per second, in bursts of byteBurst. 0: no limit. Default 0. */
  maxBytesPerSecond?: number;
  /** Burst of maxMessagesPerSecond (at most 60 seconds' worth). null: one second's worth. */
  messageBurst?: number | null;
  /** Burst of maxBytesPerSecond (at most 60 seconds' worth). null: one second's worth. */
  byteBurst?: number | null;
  /** Over the inbound rate: 'pause' (not read until within it: TCP pushes back; rateWaits) or 'close'
   * (1008 'rate limit exceeded' once more than rateLimitGrace ms ahead; rateCloses). Default 'pause'. */
  rateLimit?: 'pause' | 'close';
  /** rateLimit 'close': how far ahead of its rate (ms, 0-60000) a client may get before it is closed. Default 1000. */
  rateLimitGrace?: number;
  /** The work one connection may cause on its IO thread, in units per second (about 10 µs of a core each:
   * each subscribe entry, publish, request, unsubscribe or message POSTed to a symphony.v2 event stream 1; each token signature checked
   * 1-40 by algorithm), in bursts of workBurst. Over it, asks are refused 'rate-limited' (workRefused);
   * asking on for another burst's worth, the connection is closed (1008; workCloses). 0: no budget.
   * Default 2048. */
  maxWorkPerSecond?: number;
  /** Burst of maxWorkPerSecond, in units (at most 60 seconds' worth). null: one second's worth. */
  workBurst?: number | null;
  /** Per IO thread: stop reading from clients while JS has this many bytes of
   * events (messages) not yet delivered; resume below a quarter. Default 64 MiB. */
  maxEventBytes?: number;
  /** close(): ms to wait for clients' close replies. Default 2000. */
  closeDeadline?: number;
  /** The memory policy: after an IO thread's connections fall to half (or it
   * goes idle for 10 s) it defragments its connections and purges its arena.
   * Default true (false when SYMPHONY_RECLAIM=0 is in the environment). */
  reclaim?: boolean;
  /** Decides each upgrade. Without it every valid upgrade is accepted natively. */
  onUpgrade?: ((req: UpgradeRequest) => UpgradeResult<UserData> | Promise<UpgradeResult<UserData>>) | null;
  /** wss:// only, on symphony's private OpenSSL. The PEM is copied at the call
   * and not kept; server.options.tls then shows only the SNI names. */
  tls?: TlsOptions | null;
  /** permessage-deflate: false (default), true, or { threshold, level }. */
  compression?: boolean | CompressionOptions;
  /** No listener of its own: connections come from another server's 'upgrade'
   * event through handleUpgrade() (one port with node:http, Express, Fastify).
   * listen() then rejects with ERR_SERVER_NO_LISTEN. Not with tls. */
  noServer?: boolean;
  /** Several servers as one fan-out over Redis (sharded pub/sub, Redis 7+). Default null. */
  bus?: BusOptions | null;
  /** Per-topic history and recovery (docs/history.md); off by default. */
  history?: boolean | HistoryOptions;
  /** Who is subscribed to which topic, on every node with a bus (docs/api.md, "Presence: who is here, on every node"). Default false. */
  presence?: boolean | PresenceOptions;
  /** A symphony.v2 client's subscribe (README, "Clients subscribe, publish and request"): true grants,
   * false refuses ('forbidden'), { code, reason } refuses with those, { data } grants and sends data to
   * the client; or a Promise of one. Runs again on every resubscribe after a reconnect. Default null:
   * clients' subscribes are refused. */
  onSubscribe?: ((id: ConnectionId, topic: string, ask: SubscribeAsk) => AskAnswer | { data?: unknown } | Promise<AskAnswer | { data?: unknown }>) | null;
  /** A symphony.v2 client's publish: true publishes it (as publish(topic, data)); false / { code, reason } refuse.
   * data: a string (text frame) or a Buffer (binary). Default null: refused. */
  onPublish?: ((id: ConnectionId, topic: string, data: string | Buffer, info: { binary: boolean }) => AskAnswer | Promise<AskAnswer>) | null;
  /** A symphony.v2 client's request: the reply (a JSON value, or a Buffer / Uint8Array for bytes),
   * or a throw / rejection (a ClientError's code and message reach the client; others as 'internal'). */
  onRequest?: ((id: ConnectionId, data: string | Buffer, info: { binary: boolean }) => any) | null;
  /** Tokens (JWT) verified on the IO threads (docs/tokens.md). A client's subscribe with a token that
   * grants its topic goes live with no call into JavaScript; one whose token is invalid, expired or does
   * not grant the topic is refused ('token-expired', 'forbidden', ...). Default null. */
  tokens?: TokensOptions | null;
  /** The Pusher Channels protocol (docs/pusher.md) at <pathPrefix>/app/<key>, beside symphony's own. Default null. */
  pusher?: PusherOptions | null;
  /** A hook not answered after this many ms refuses with 'timeout'. Default 5000. */
  askTimeout?: number;
  /** Subscriptions per connection a client may hold and ask for (0: no limit). Default 1024. */
  maxSubscriptions?: number;
  /** A client's asks waiting for a hook at once, per connection. Default 16. */
  maxPending?: number;
  /** The PROXY protocol (v1 and v2) before every connection on symphony's own
   * listener: false (default), true (required: a connection without one is
   * closed) or 'optional'. Not with noServer. */
  proxyProtocol?: boolean | 'optional';
  /** The sources a PROXY header is accepted from: addresses or CIDR ranges
   * (at most 64). Default null: any source (the listener must then be
   * reachable only by the load balancer). */
  proxyProtocolFrom?: string[] | null;
  /** req.remoteAddress from Forwarded / X-Forwarded-For when the immediate peer
   * (the socket's, or the PROXY header's source) is trusted: false (default),
   * true (any), a number of hops, or addresses / CIDR ranges / 'loopback' /
   * 'linklocal' / 'uniquelocal' (an array or a comma-separated string). */
  trustProxy?: boolean | number | string | string[];
}

export interface PresenceOptions {
  /** Which topics keep presence: true (every topic, the default) or a predicate; server.topic(name, { presence }) overrides it. */
  topics?: true | ((topic: string) => boolean);
  /** ms: with a bus, a node that died is left out after at most ttl + ttl/3 (its entries expire; 'leave' with reason 'expired'). Default 15000. */
  ttl?: number;
  /** Bytes of a connection's presence info as JSON. Default 4096. */
  maxInfo?: number;
}

/** One connection on a topic with presence. */
export interface PresenceEntry {
  /** The node it is on (server.bus.node on that node). */
  node: string;
  /** Its connection id on that node. */
  id: ConnectionId;
  /** onUpgrade's result.presence, or null. */
  info: unknown;
}

/** options.bus: one Redis or a Redis Cluster (url), or a primary that Redis Sentinel names (sentinels and name). */
export type BusOptions = BusCommonOptions & (BusRedisOptions | BusSentinelOptions);

export interface BusRedisOptions {
  /** 'redis://[user:password@]host:port[/db]', or a list of seeds of a Redis Cluster. */
  url: string | string[];
  /** Redis Cluster (slot map, SPUBLISH to the channel's shard). Default: url is a list. */
  cluster?: boolean;
  sentinels?: null;
  name?: null;
}

/** Redis Sentinel (docs/bus.md, "Redis Sentinel"). */
export interface BusSentinelOptions {
  /** The sentinels: 'redis://[user:password@]host[:port]' (their own credentials; port default 26379) or { host, port }. 1 to 64. */
  sentinels: (string | { host: string; port?: number })[];
  /** The primary's name in Sentinel (`sentinel monitor <name> ...`): 1 to 128 bytes, no space. */
  name: string;
  /** The data nodes' credentials and redis:// or rediss:// (the host is not used: Sentinel names it). Default: none. */
  url?: string | null;
  /** Not with sentinels. */
  cluster?: false | null;
}

export interface BusCommonOptions {
  /** channel = prefix + topic. Default 'symphony:'. */
  prefix?: string;
  /** Bytes of publishes toward Redis not yet acknowledged; past it they are dropped (counted). Default 16 MiB. */
  maxBuffer?: number;
  /** ms. Default 2000. */
  connectTimeout?: number;
  /** ms between reconnects: doubling from min to max, +-20% jitter. Default { min: 100, max: 1000 }. */
  backoff?: { min?: number; max?: number };
  /** TLS to Redis (rediss:// turns it on). Default CAs: Node's tls.rootCertificates. */
  tls?: boolean | BusTlsOptions | null;
}

export interface BusTlsOptions {
  ca?: Pem | Pem[];
  /** A client certificate and its key, for a Redis with tls-auth-clients. */
  cert?: Pem;
  key?: Pem;
  passphrase?: string;
  /** The name to ask for (SNI) and check; default: the URL's host. */
  servername?: string;
  /** Check the server's certificate. Default true. */
  rejectUnauthorized?: boolean;
}

export type BusState = 'connecting' | 'up' | 'down';

/** One Pusher app (docs/pusher.md). */
export interface PusherApp {
  id: string | number;
  key: string;
  /** One secret, or up to 4: the first signs, every one verifies. */
  secret: string | string[];
  enabled?: boolean;
  enableClientMessages?: boolean;
  enableUserAuthentication?: boolean;
  maxConnections?: number;
  maxClientEventsPerSecond?: number;
  maxBackendEventsPerSecond?: number;
  maxReadRequestsPerSecond?: number;
  webhooks?: Array<{ url: string; event_types: string[]; headers?: Record<string, string>; filter?: { channel_name_starts_with?: string; channel_name_ends_with?: string } }>;
}

/** The pusher option (docs/pusher.md): apps and the protocol's limits. */
export interface PusherOptions {
  apps: PusherApp[];
  pathPrefix?: string;
  activityTimeout?: number;
  maxChannelNameLength?: number;
  maxEventNameLength?: number;
  maxEventBytes?: number;
  maxChannelsPerEvent?: number;
  maxBatchSize?: number;
  maxPresenceMembers?: number;
  maxPresenceMemberBytes?: number;
  userAuthenticationTimeout?: number;
  /** Seconds a cache channel keeps its last event (default 1800, Pusher's 30 minutes; 0: no limit). */
  cacheTtl?: number;
  /** Ms a node keeps a channel's last subscriber before it leaves, for channel_vacated (default 3000, Pusher's "up to three seconds"; 0: at once). */
  vacateDelay?: number;
  webhookBatching?: boolean;
}

/** The bus is down: message is Redis' own error text (or the socket's). code 'ERR_BUS_DOWN'. */
export interface BusError extends Error {
  code: 'ERR_BUS_DOWN';
}

/** server.bus: the bus' state and its changes. */
export interface Bus extends EventEmitter {
  readonly state: BusState;
  /** Why it is down, else null. */
  readonly error: BusError | null;
  /** The options in effect, without credentials. */
  readonly options: Omit<Required<BusCommonOptions>, 'tls'> & {
    /** null with sentinels and no url. */
    url: string | string[] | null;
    cluster: boolean;
    tls: boolean;
    /** The Redis addresses given (none with sentinels). */
    seeds: { host: string; port: number }[];
    /** Redis Sentinel: the sentinels and the primary's name; else null. */
    sentinels: { host: string; port: number }[] | null;
    name: string | null;
  };
  /** This node's id in presence entries (PresenceEntry.node). */
  readonly node: string;
  /**
   * The subscribers of topic on every node (this one too): each node is asked over Redis and answers.
   * Rejects with code 'ERR_BUS_TIMEOUT' when a node does not answer within options.timeout ms (default 2000),
   * 'ERR_BUS_DOWN' when the bus is not up.
   */
  subscribers(topic: string, options?: { timeout?: number }): Promise<number>;
  on(event: 'up', listener: () => void): this;
  on(event: 'down', listener: (err: BusError) => void): this;
  on(event: 'state', listener: (state: BusState, err: BusError | null) => void): this;
}

/** stats().bus. The list comes from src/bus/sy_bus.h (binding.busStatFields). */
export interface BusStats {
  state: BusState;
  published: number;
  received: number;
  dropped: number;
  ignored: number;
  late: number;
  errors: number;
  reconnects: number;
  subscribeCommands: number;
  mapRefreshes: number;
  bufferedBytes: number;
  syncs: number;
  filled: number;
  renewals: number;
  channels: number;
}

export interface PublishOptions extends SendOptions {
  /** This node only, not the bus. Default false. */
  local?: boolean;
  /** server.publish() only: the event name Pusher subscribers get (docs/pusher.md). Default 'message'. */
  event?: string;
}

/** One IO thread's counters. The list comes from src/io/model/sy_stats.h (binding.statFields);
 * __test__/repo/lists.test.js fails when this interface and that list differ. */
export interface ThreadStats {
  connections: number;
  opened: number;
  closed: number;
  messagesIn: number;
  bytesIn: number;
  messagesOut: number;
  bytesOut: number;
  dropped: number;
  slowCloses: number;
  conflated: number;
  askSubscribes: number;
  askPublishes: number;
  askRequests: number;
  tokenSubscribes: number;
  tokenRefused: number;
  tokenChecks: number;
  workRefused: number;
  workCloses: number;
  askRefused: number;
  askErrors: number;
  handshakeRejects: number;
  /** HTTP connections kept open after an answer, waiting for their next request (gauge). */
  keepAlive: number;
  /** HTTP requests answered on an IO thread with the connection kept open. */
  keptAnswers: number;
  protocolErrors: number;
  /** Times a connection was not read because its control replies (pongs) waited to be written: a client
   * that pings without reading is pushed back on by TCP instead of growing a queue (docs/protocol.md). */
  controlWaits: number;
  /** Connections closed (1008) for a message in more than maxFragments frames. */
  fragmentCloses: number;
  /** Connections closed (1008) for control frames over controlRate per second. */
  controlRateCloses: number;
  /** Times a connection was not read while over maxMessagesPerSecond or maxBytesPerSecond (rateLimit 'pause'). */
  rateWaits: number;
  /** Connections closed (1008, 'rate limit exceeded') over their inbound rate (rateLimit 'close'). */
  rateCloses: number;
  /** Connections refused (503) at maxConnectionsPerAddress, before onUpgrade. */
  addressRejects: number;
  /** Connections refused (429, Retry-After) over upgradeRatePerAddress, before onUpgrade. */
  upgradeRateRejects: number;
  timeouts: number;
  oomCloses: number;
  eventsLost: number;
  commandRuns: number;
  /** Connections closed right after accept because the process was out of file descriptors. */
  acceptRejects: number;
  /** Waits of the IO thread's poller (epoll_wait) that failed; the thread stops after 100 in a row. */
  pollFailures: number;
  /** 1 when this thread sends with io_uring (batches of sends, one io_uring_enter each), 0 when it
   * sends with send()/sendmsg() (SYMPHONY_IO_URING=0, or io_uring refused here); in the totals, how many
   * threads use it. */
  ioUring: number;
  /** Batches of sends submitted to io_uring (one io_uring_enter each). */
  uringBatches: number;
  /** Sends made in those batches (one per connection per batch). */
  uringSends: number;
  /** Memory reclaims run by the policy (see the `reclaim` option). */
  reclaims: number;
  /** Blocks (connections, subscription arrays) moved out of sparse slabs by them. */
  reclaimMoved: number;
  /** Arena pages (active + dirty + muzzy) they gave back, in bytes. */
  reclaimFreedBytes: number;
  /** Time they took in all, microseconds. */
  reclaimMicros: number;
  /** The longest one, microseconds (in the totals: the longest of any thread). */
  reclaimMaxMicros: number;
  /** TLS handshakes completed. */
  tlsHandshakes: number;
  /** TLS handshakes failed: not TLS, an unsupported version, a bad record, closed midway. */
  tlsFailures: number;
  /** Handshake steps left for the next loop turn (the per-turn handshake budget). */
  tlsDeferred: number;
  /** Connections whose PROXY protocol header was accepted (LOCAL ones included). */
  proxyHeaders: number;
  /** Connections closed for a PROXY protocol header that was bad, truncated or missing. */
  proxyRejects: number;
  /** Connections closed for a PROXY protocol header from a source not in proxyProtocolFrom. */
  proxyUntrusted: number;
  /** Open connections that negotiated permessage-deflate. */
  deflateConnections: number;
  sseConnections: number;
  sseOpened: number;
  ssePosts: number;
  sseRateCloses: number;
  /** Messages compressed (once per publish, shared by its subscribers). */
  compressed: number;
  /** Payload bytes given to the compressor. */
  compressBytesIn: number;
  /** Compressed payload bytes it produced (kept only when smaller). */
  compressBytesOut: number;
  /** Microseconds spent compressing. */
  compressMicros: number;
  /** Compressed client messages inflated. */
  inflated: number;
  /** Compressed payload bytes received from clients. */
  inflateBytesIn: number;
  /** Resumes that replayed missed messages from history. */
  replays: number;
  /** Messages queued by replays. */
  replayed: number;
  /** Resumes that recovered (replayed or already up to date). */
  recovered: number;
  /** Resumes that failed: the epoch was not the topic's. */
  recoveryFailedEpoch: number;
  /** Resumes that failed: history no longer held the first missed message. */
  recoveryFailedTrimmed: number;
  /** Resumes that failed: the position was past the last offset. */
  recoveryFailedFuture: number;
  /** Resumes that failed: the missed messages were over maxBackpressure. */
  recoveryFailedTooLarge: number;
  /** Resumes that failed: the topic keeps no history (or the connection is not symphony.v1). */
  recoveryFailedNoHistory: number;
  /** Resumes that failed: out of memory. */
  recoveryFailedMemory: number;
}

export interface IoThreadStats extends ThreadStats {
  /** This thread's own jemalloc arena; -1 in the system build. */
  arena: number;
  /** The arena jemalloc says this thread's connections live in (checked once a second); -1 until seen. */
  connArena: number;
}

export interface ServerStats extends ThreadStats {
  topics: number;
  /** Messages topics' history keeps now (all topics). */
  historyMessages: number;
  /** Their bytes: the frames plus 64 per message (what history.maxBytes caps). */
  historyBytes: number;
  /** Client addresses in the per-address table (with connections, or a rate of new ones not yet idle); 0 without per-address limits. */
  addresses: number;
  threads: IoThreadStats[];
  /** The bus' counters; null without a bus. */
  bus: BusStats | null;
}

/** server.topic(name): publish to one topic without looking its name up each time. */
export interface Topic {
  readonly name: string;
  /** As server.publish(name, data, options). */
  publish(data: Payload, options?: PublishOptions): number;
  /** As server.position(name). */
  readonly position: Position | null;
}

/** A topic's history: its epoch and offsets (docs/history.md). */
export interface Position {
  /** 16 hexadecimal characters; changes when the topic's offsets restart. */
  epoch: string;
  /** The last offset given (0: none yet). */
  offset: number;
  /** The oldest offset kept (offset + 1 when none is kept). */
  first: number;
  /** How many messages are kept. */
  kept: number;
}

/** history: true, or these (docs/history.md). */
export interface HistoryOptions {
  /** Messages kept per topic (default 100; 0: none). */
  size?: number;
  /** None kept longer than this many seconds (default 300; 0: no age limit). */
  ttl?: number;
  /** All topics' history together, in bytes; the oldest go first (default 64 MiB; 0: no cap). */
  maxBytes?: number;
}

/** A client's position on a topic, as symphony.v1 clients send it (req.since, subscribe's since). */
export interface Since {
  epoch: string;
  /** A u64 on the wire: over 2^53 it is rounded (any such offset is past a topic's last: 'future'). */
  offset: number;
}

/** Why a resume did not recover (docs/protocol.md). */
export type RecoveryReason = 'epoch' | 'trimmed' | 'future' | 'too-large' | 'no-history' | 'memory' | 'not-symphony.v1';

export interface Recovery {
  recovered: boolean;
  /** null when it recovered. */
  reason: RecoveryReason | null;
}

/**
 * UserData: the data onUpgrade attaches to each connection (its result's
 * `data`), as getUserData(id) and 'open''s info.data give it back; inferred
 * from onUpgrade, or given: new Server<{ user: string }>({ ... }). As with
 * uWebSockets.js' getUserData, it is typed as present: getUserData of an id
 * that is closed, or whose onUpgrade attached nothing, is undefined.
 */
export class Server<UserData = unknown> extends EventEmitter {
  constructor(options?: ServerOptions<UserData>);
  readonly options: Omit<Required<ServerOptions<UserData>>, 'tls'> & { tls: { servername: string[] } | null };
  /** New certificates for new handshakes, atomically; open connections keep
   * theirs. Throws TlsError (and keeps the old ones) when they cannot be used. */
  setTls(tls: TlsOptions): void;
  /** Replaces the keys of options.tokens (rotation without a restart, several keys by kid). Throws
   * ERR_SYMPHONY_TOKENS (keeping the keys in use) when a key cannot be used. */
  setTokenKeys(keys: TokenKey[]): void;
  listen(): Promise<{ host: string; port: number }>;
  /**
   * Takes over a connection from a node:http server's 'upgrade' event (Express,
   * Fastify, Koa): the same checks and answers as symphony's own listener,
   * onUpgrade as usual, the 101 written by an IO thread on its own duplicate of
   * the socket. true when taken over; false when it could not be (a TLS socket,
   * one already closed or with bytes Node still has to write): the client got
   * an HTTP error where possible and the reason went to 'error'.
   */
  handleUpgrade(req: import('node:http').IncomingMessage, socket: import('node:stream').Duplex, head?: Buffer): boolean;
  /** From a node:http 'request' event: takes over an event stream's GET (Accept: text/event-stream) or POST
   * (?sy.stream=); false when the request is not one (answer it yourself). docs/sse.md. */
  handleRequest(req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): boolean;
  address(): { host: string; port: number } | null;
  /** With a bus, also to every other node (unless options.local). Returns this node's subscribers. */
  publish(topic: string, data: Payload, options?: PublishOptions): number;
  /**
   * A handle on a topic: its publish() skips the name's lookup. The topic's
   * entry (~100 bytes) stays while the handle lives. Throws on a closed server.
   */
  topic(name: string, options?: { history?: boolean | { size?: number; ttl?: number }; presence?: boolean }): Topic;
  /** Who is subscribed to topic (a topic with presence): every node's connections with a bus, this node's without. */
  presence(topic: string): Promise<PresenceEntry[]>;
  /** This node's subscribers of topic now (0: none). */
  subscribers(topic: string): number;
  /** Every topic this node has now, with its subscribers. */
  topics(): Map<string, number>;
  /** The topic's history position, or null (no such topic, or no history). */
  position(topic: string): Position | null;
  /** The bus (options.bus); null without one. */
  readonly bus: Bus | null;
  send(id: ConnectionId, data: Payload, options?: SendOptions): boolean;
  /** options.since: the client's position; what it missed is replayed first, or 'recovery' says why not. */
  subscribe(id: ConnectionId, topic: string, options?: { since?: Since | null }): boolean;
  unsubscribe(id: ConnectionId, topic: string): boolean;
  end(id: ConnectionId, code?: number, reason?: string): boolean;
  terminate(id: ConnectionId): boolean;
  getUserData(id: ConnectionId): UserData;
  stats(): ServerStats | null;
  /** Prometheus text exposition (0.0.4) of stats() and the allocator's gauges. */
  metrics(labels?: Record<string, string>): string;
  close(): Promise<void>;

  on(event: 'open', listener: (id: ConnectionId, info: { protocol: string; data: UserData; compression: boolean; recovery: Array<Recovery & { topic: string }>; transport: Transport; socketId?: string }) => void): this;
  /** A resume's result (at the accept, after 'open'; or a subscribe with since). */
  on(event: 'recovery', listener: (id: ConnectionId, topic: string, result: Recovery) => void): this;
  on(event: 'message', listener: (id: ConnectionId, data: Buffer, isBinary: boolean) => void): this;
  on(event: 'close', listener: (id: ConnectionId, code: number, reason: string) => void): this;
  on(event: 'drain', listener: (id: ConnectionId) => void): this;
  /**
   * This node's subscriptions of topic went from none to some (active true: uWebSockets.js' subscription at
   * newCount 1 / oldCount 0, socket.io's 'create-room') or from some to none (false: 'delete-room'). Per topic the
   * events alternate; reported from the first listener on (topics active then: only their end).
   */
  on(event: 'subscription', listener: (topic: string, active: boolean) => void): this;
  on(event: 'listening', listener: (address: { host: string; port: number }) => void): this;
  /** A connection subscribed to a topic with presence (on any node, with a bus). */
  on(event: 'join', listener: (topic: string, entry: PresenceEntry) => void): this;
  /** A connection left a topic with presence: 'left' (unsubscribed, closed, its node closed) or 'expired' (its node died). */
  on(event: 'leave', listener: (topic: string, entry: PresenceEntry, reason: 'left' | 'expired') => void): this;
  /**
   * An onUpgrade that threw or returned a bad answer, or an IO thread that
   * stopped because its poller failed (err.code 'ERR_SYMPHONY_IO_THREAD',
   * with err.thread and err.errno).
   */
  on(event: 'error', listener: (err: Error & { code?: string; thread?: number; errno?: number }) => void): this;
}

export interface AllocatorStats {
  allocated: number;
  active: number | null;
  resident: number | null;
  mapped: number | null;
  retained: number | null;
  metadata: number | null;
  /** Of `allocated`, bytes freed into threads' caches and not yet back in their slabs (0: system build). */
  cached: number;
}

export interface AllocatorConfig {
  pageSize: number;
  narenas: number;
  /** Arenas that exist now: automatic ones plus one per IO thread ever running at once. */
  arenas: number;
  /** Explicit arenas symphony made for IO threads (pooled for reuse). */
  createdArenas: number;
  dirtyDecayMs: number;
  muzzyDecayMs: number;
  backgroundThread: boolean;
  thp: string;
  metadataThp: string | null;
  builtinConf: string;
  envConf: string | null;
}

export interface SelfCheck {
  ok: boolean;
  allocator: 'jemalloc' | 'system';
  checked: string;
  jemallocLinked: boolean;
  oursIsJemalloc: boolean;
  oursArena: number | null;
  libcIsJemalloc: boolean;
  probeSize: number;
  /** The private OpenSSL is built in. */
  tlsLinked: boolean;
  /** An object OpenSSL allocated came through symphony's allocator. */
  tlsRouted?: boolean;
  /** ... and jemalloc owns it (false in the system build). */
  tlsIsJemalloc?: boolean;
  tlsArena?: number | null;
  /** A libdeflate decompressor (permessage-deflate) came through symphony's allocator. */
  deflateRouted: boolean;
  /** ... and jemalloc owns it (false in the system build). */
  deflateIsJemalloc: boolean;
  /** A hiredis reply reader (the Redis bus) came through symphony's allocator. */
  redisRouted: boolean;
  /** ... and jemalloc owns it (false in the system build). */
  redisIsJemalloc: boolean;
}

export const allocator: {
  readonly name: 'jemalloc' | 'system';
  readonly version: string;
  /** "symphony-build: allocator=... lg-page=... libc=... arch=..." */
  readonly build: string;
  readonly pageSize: number | null;
  readonly nativePath: string;
  readonly config: AllocatorConfig | null;
  stats(): AllocatorStats;
  /** Per-arena pages (bytes); null in the system build. */
  arenaStats(): { arena: number; active: number; dirty: number; muzzy: number; resident: number }[] | null;
  /** jemalloc's full statistics report (malloc_stats_print); null in the system build. */
  report(opts?: { json?: false }): string | null;
  report(opts: { json: true }): Record<string, unknown> | null;
  selfCheck(): SelfCheck;
  /** The private OpenSSL: its version, bytes it holds and allocations it made through symphony's allocator. */
  tls(): { version: string; allocated: number; allocations: number } | null;
  purge(): boolean;
  setDecay(opts: { dirtyMs?: number; muzzyMs?: number }): boolean;
  backgroundThread(enabled: boolean): boolean;
};

export class SymphonyError extends Error {
  constructor(code: string, message: string, options?: ErrorOptions);
  code: string;
}

/** A verification key: HS256 with a secret; ES256 / RS256 / EdDSA with a PEM public key (SPKI) or a
 * KeyObject; or a JWK / JWKS (kty oct, EC P-256, RSA, OKP Ed25519), its kid and alg taken from it. */
export type TokenKey =
  | { kid?: string; alg: 'HS256'; secret: string | Uint8Array }
  | { kid?: string; alg: 'ES256' | 'RS256' | 'EdDSA'; publicKey: string | Uint8Array | import('node:crypto').KeyObject }
  | { jwk: object | string }
  | { jwks: { keys: object[] } | string };

export interface TokensOptions {
  keys: TokenKey[];
  /** A token's aud must name it. */
  audience?: string | null;
  /** A token's iss must be it. */
  issuer?: string | null;
  /** Seconds of clock skew allowed on exp and nbf. Default 0. */
  leeway?: number;
}

/** What onSubscribe is told. */
export interface SubscribeAsk {
  /** The position the client resumes from, if it gave one. */
  since: { epoch: string; offset: number } | null;
  /** The token the client gave, if any (checked by the application). */
  token: string | undefined;
  /** The JSON the client sent with its subscribe. */
  data: unknown;
  /** True when the client subscribes again after a reconnect. */
  resubscribe: boolean;
}

/** A hook's answer: grant (true), refuse (false: 'forbidden'), or refuse with a code and a reason. */
export type AskAnswer = boolean | null | undefined | { code: string; reason?: string };

/** An error whose code and message a client is shown (thrown by onSubscribe, onPublish, onRequest). */
export class ClientError extends Error {
  constructor(code: string, message?: string);
  code: string;
}

/**
 * Given to the server's 'error' when a hook failed, naming the hook, the
 * connection and the topic; `cause` is what failed.
 * - code ERR_SYMPHONY_HOOK_ANSWER: a hook's answer cannot reach the client:
 *   a value JSON cannot write (a BigInt, a cycle, nesting too deep, a toJSON
 *   that throws) in onRequest's reply or onSubscribe's { data }, or any other
 *   failure between a hook and the wire. The client got the 'internal'
 *   refusal or error.
 * - code ERR_SYMPHONY_HOOK_THREW (`threw`): the hook threw or rejected with
 *   anything but a ClientError (onUpgrade: the client got 500).
 */
export class HookError extends SymphonyError {
  constructor(hook: HookName, id: ConnectionId, topic: string | null, cause: unknown, threw?: boolean);
  code: 'ERR_SYMPHONY_HOOK_ANSWER' | 'ERR_SYMPHONY_HOOK_THREW';
  /** The hook that failed. */
  hook: HookName;
  /** The connection that asked. */
  id: ConnectionId;
  /** The topic asked for; null for a request or an upgrade. */
  topic: string | null;
}

/** The hooks a HookError names. */
export type HookName = 'onUpgrade' | 'onSubscribe' | 'onPublish' | 'onRequest';

/** Certificates, keys or passphrases that cannot be used (code ERR_SYMPHONY_TLS). */
export class TlsError extends SymphonyError {
  constructor(message: string);
}

/** No native build could be loaded here (code ERR_SYMPHONY_LOAD): every path tried, and why. */
export class LoadError extends SymphonyError {
  constructor(message: string, tried: { path: string; error: string }[]);
  tried: { path: string; error: string }[];
}
