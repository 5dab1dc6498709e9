// Types of symphony-ws/client (client/symphony-client.mjs and its generated
// .cjs). Written without the DOM library or @types/ws, so that a Node project
// and a page type-check it alike: the WebSocket it needs is described below
// by the few members it uses.

/** The subprotocol the client offers first: 'symphony.v1' (what a server before symphony.v2 takes). */
export declare const PROTOCOL: 'symphony.v1';
/** Offered second: symphony.v1 plus what the client asks (subscribe, unsubscribe, publish, request). */
export declare const PROTOCOL_V2: 'symphony.v2';

/** The few members of a WebSocket that the client uses (browsers' WebSocket, Node's global one, ws). */
export interface WebSocketLike {
  readonly protocol: string;
  binaryType: string;
  onopen: ((event: any) => void) | null;
  onmessage: ((event: any) => void) | null;
  onclose: ((event: any) => void) | null;
  onerror: ((event: any) => void) | null;
  send(data: any): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: `new WebSocket(url, ['symphony.v1'])`. */
export type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocketLike;

/** A URL object (browsers' and Node's URL), described so that neither library is needed. */
export interface UrlLike {
  readonly href: string;
}

/** A Blob (browsers' and Node's). */
export interface BlobLike {
  readonly size: number;
  readonly type: string;
}

/** A topic's position: its epoch (16 hex characters) and the offset of the last message the client has. */
export interface Position {
  epoch: string;
  /** A Number, exact up to 2^53-1 (Number.MAX_SAFE_INTEGER). */
  offset: number;
}

/** What client.positions() returns and options.positions takes: JSON-able (e.g. kept in localStorage). */
export type Positions = Record<string, Position>;

export type ClientState = 'connecting' | 'open' | 'reconnecting' | 'closed';

export interface ClientOptions {
  /** The WebSocket constructor; default: the global WebSocket (browsers, Node 22+). In Node 20: `require('ws')`. */
  WebSocket?: WebSocketConstructor;
  /** Reconnect delays in ms: random(0, min(max, min * 2^attempt)); attempt resets after an open. Default { min: 500, max: 30000 }. */
  backoff?: { min?: number; max?: number };
  /** A number in [0, 1): the jitter. Default Math.random. */
  random?: () => number;
  /** What the reconnects' delays wait with, and the outage's clock. Default the global setTimeout/clearTimeout and Date.now. */
  timers?: { setTimeout?: (fn: () => void, ms: number) => unknown; clearTimeout?: (handle: any) => void; now?: () => number };
  /** ms an attempt may take on any transport before it counts as failed (cause 'timeout'). Default 10000. */
  openTimeout?: number;
  /** ms without a frame after which a symphony.v2 WebSocket sends a heartbeat; unanswered by the next check, it is dead ('stalled'). Default 30000; 0: off. */
  heartbeat?: number;
  /** Positions to resume from (what positions() returned earlier). */
  positions?: Positions;
  /**
   * A token (JWT) for a subscription: asked on every resubscribe after a
   * reconnect, for a subscription given no token, and once more when the
   * server says a token expired. Its failure is reported ('error',
   * ERR_GET_TOKEN) and the subscribe goes without a token.
   */
  getToken?: (topic: string) => string | Promise<string>;
  /**
   * How to reach the server (docs/sse.md). 'auto' (default, where fetch
   * exists): a WebSocket, and on evidence that WebSockets are blocked where
   * HTTP passes (docs/sse.md, "The rule"), the server's event stream (read
   * with fetch; messages and asks sent as POSTs), with the same API,
   * positions and events; a WebSocket is tried again every
   * fallback.retryWebSocket ms while on it. 'websocket' or 'sse': that one only.
   */
  transport?: 'auto' | Transport;
  /** The fetch the event stream uses. Default the global fetch. */
  fetch?: (url: string, init?: any) => Promise<any>;
  /** 'auto''s thresholds: after (default 2) WebSockets failed in a row, a plain GET asks whether HTTP passes;
   * retryWebSocket (ms, default 60000); openTimeout: the former name of options.openTimeout. */
  fallback?: { after?: number; openTimeout?: number; retryWebSocket?: number };
}

/** A connection's transport: a WebSocket or an event stream (Server-Sent Events, docs/sse.md). */
export type Transport = 'websocket' | 'sse';

/** What the server answered no with: code ('forbidden', 'timeout', 'token-expired', 'disconnected', ...) and reason. */
export declare class AskError extends Error {
  readonly code: string;
  readonly reason: string;
  /** On a subscription's 'refused': it is asked again after this many ms (a transient refusal). */
  retry?: number;
}

export type SubscriptionState = 'subscribing' | 'subscribed' | 'unsubscribed';

export interface SubscribeOptions {
  /** Resume from this position (else from the one the client keeps, if any). */
  since?: Position | null;
  /** A token (JWT) the server checks. */
  token?: string;
  /** JSON for the server's onSubscribe (e.g. what the client wants to see). */
  data?: unknown;
}

export interface SubscriptionInfo {
  /** Undefined for a topic without history. */
  epoch: string | undefined;
  offset: number | undefined;
  /** When a position was given: whether what was missed was replayed, and why not. */
  recovered: boolean | undefined;
  reason: string | undefined;
  since: number | undefined;
  /** What the server's onSubscribe granted with ({ data }). */
  data: unknown;
}

export interface SubscriptionEvents {
  message: (data: string | Uint8Array, info: MessageInfo) => void;
  /** On every (re)subscribe, and again when the topic's sequence changes under it. */
  subscribed: (info: SubscriptionInfo) => void;
  /** err.retry set: asked again later; else final (state 'unsubscribed'). */
  refused: (err: AskError) => void;
  unsubscribed: (info: { by: 'client' | 'server' }) => void;
}

export declare class Subscription {
  readonly topic: string;
  readonly state: SubscriptionState;
  on<E extends keyof SubscriptionEvents>(event: E, listener: SubscriptionEvents[E]): this;
  off<E extends keyof SubscriptionEvents>(event: E, listener: SubscriptionEvents[E]): this;
  once<E extends keyof SubscriptionEvents>(event: E, listener: SubscriptionEvents[E]): this;
  unsubscribe(): void;
}

/** The third argument of 'message'. Both are undefined for a direct message and for a topic without history. */
export interface MessageInfo {
  offset: number | undefined;
  epoch: string | undefined;
}

export interface SubscribedInfo {
  /** The topic's id on this connection. */
  id: number;
  /** Undefined for a topic without history. */
  epoch: string | undefined;
  /** The offset of the last message published before the subscription went live; undefined without history. */
  offset: number | undefined;
}

export interface RecoveredInfo {
  /** Why there was no replay (recovered false): 'epoch' | 'trimmed' | 'future' | 'too-large' | 'no-history' | 'memory' | a later one. */
  reason: string | undefined;
  epoch: string | undefined;
  offset: number | undefined;
  /** The position the recovery started from. */
  since: number | undefined;
}

/** Why a connection or an attempt ended (docs/sse.md, "The rule"). */
export type ReconnectCause = 'closed' | 'lost' | 'refused' | 'reset' | 'dns' | 'unreachable' | 'rejected' | 'timeout'
  | 'stalled' | 'offline' | 'upgrade-blocked' | 'silent' | 'failed';

/** Why the client is on its transport. */
export type TransportReason = 'first' | 'option' | 'upgrade-blocked' | 'silent' | 'websocket-open' | 'stream-rejected';

export type StateInfo =
  | { url: string; attempt: number; transport: Transport } // connecting
  | { protocol: string; plain: boolean; transport: Transport } // open; plain: the server did not choose symphony.v1
  | { delay: number; attempt: number; code: number; reason: string; cause: ReconnectCause } // reconnecting
  | Record<string, never>; // closed

export interface ClientStats {
  /** Messages delivered to 'message'. */
  messages: number;
  /** `p` messages dropped because their offset was not after the kept one. */
  duplicates: number;
  /** Frames and notices that could not be read (ignored). */
  malformed: number;
  /** Frames and notices of a kind this client does not know (ignored). */
  unknown: number;
  /** Reconnects scheduled (each lost or failed connection). */
  reconnects: number;
}

/** An error given to 'error': 'ERR_WEBSOCKET' (the socket's error), 'ERR_SUBPROTOCOL' (a plain connection), 'ERR_GET_TOKEN', 'ERR_ASK' (the server could not take a frame). */
export interface ClientError extends Error {
  code: 'ERR_WEBSOCKET' | 'ERR_SUBPROTOCOL' | string;
}

export interface ClientEvents {
  /** topic null for a direct message (and on a plain connection); data: string (text frame) or Uint8Array (binary frame). */
  message: (topic: string | null, data: string | Uint8Array, info: MessageInfo) => void;
  subscribed: (topic: string, info: SubscribedInfo) => void;
  unsubscribed: (topic: string) => void;
  /** After 'subscribed', when the client had given a position for the topic. */
  recovered: (topic: string, ok: boolean, info: RecoveredInfo) => void;
  state: (state: ClientState, info: StateInfo) => void;
  error: (err: ClientError) => void;
}

export declare class SymphonyClient {
  constructor(url: string | UrlLike, options?: ClientOptions);
  /** 'connecting' | 'open' | 'reconnecting' | 'closed' */
  readonly state: ClientState;
  /** The transport in use, or the one the next connection tries. */
  readonly transport: Transport;
  /** Why that transport. */
  readonly transportReason: TransportReason;
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): this;
  off<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): this;
  once<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): this;
  /** The URL of the next (or current) connection, with a sy.since per kept position. */
  url(): string;
  /** The kept positions (a copy). */
  positions(): Positions;
  stats(): ClientStats;
  /** Sends as is (on symphony.v2 after "d\n"); false (nothing sent, nothing queued) when not open; bad data throws in every state. */
  send(data: string | ArrayBufferLike | ArrayBufferView | BlobLike): boolean;
  /** Subscribes (symphony.v2): the same Subscription for the same topic while it lives. */
  subscribe(topic: string, options?: SubscribeOptions): Subscription;
  /** The live subscriptions. */
  subscriptions(): Subscription[];
  /** Publishes through the server's onPublish, or by a token (options.token) whose topics.publish grants it:
   * { epoch, offset } on a topic with history (without a bus), else {}. */
  publish(topic: string, data: string | ArrayBufferLike | ArrayBufferView, options?: { token?: string; timeout?: number }): Promise<{ epoch?: string; offset?: number }>;
  /** The server's onRequest's reply: a JSON value, or a Uint8Array for bytes. Before 'open', publish and request wait for it (options.timeout from the call: request's default 30000). */
  request(data: string | ArrayBufferLike | ArrayBufferView, options?: { timeout?: number }): Promise<unknown>;
  /** Closes for good (no reconnect); 'state' 'closed' is emitted at once. */
  close(code?: number, reason?: string): void;
}

/** new SymphonyClient(url, options) */
export declare function connect(url: string | UrlLike, options?: ClientOptions): SymphonyClient;
