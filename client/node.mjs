// symphony-ws/client imported in Node: the CommonJS build's own classes,
// so that `import` and `require` of the client give the same AskError,
// SymphonyClient and Subscription (one copy per process: an AskError from
// one is `instanceof` the other's). Browsers and bundlers get
// client/symphony-client.mjs, the one file (package.json's "browser"
// condition); client/symphony-client.cjs is made from it.
import client from './symphony-client.cjs';

export const { PROTOCOL, PROTOCOL_V2, AskError, Subscription, SymphonyClient, connect } = client;
