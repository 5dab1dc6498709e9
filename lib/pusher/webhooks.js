'use strict';
// Pusher webhooks (docs/pusher.md, "Webhooks"): each app's events
// (channel_occupied, member_added, client_event, ...) POSTed to its webhook
// URLs as Pusher sends them: a JSON body { time_ms, events: [...] }, signed
// with the app's first secret (X-Pusher-Key, X-Pusher-Signature: hex
// HMAC-SHA256 of the body), batched per event loop turn when the app asks
// for batching, retried with backoff when the receiver fails or answers
// 5xx/429, and bounded: past maxQueued events waiting, new ones are dropped
// and counted, never buffered without end.

const crypto = require('node:crypto');
const { EventEmitter } = require('node:events');
const { SymphonyError } = require('../errors');

class WebhookError extends SymphonyError {
  constructor(message, { url, status = null, events = 0, cause } = {}) {
    super('ERR_SYMPHONY_WEBHOOK', message, cause ? { cause } : undefined);
    this.name = 'WebhookError';
    this.url = url;
    this.status = status;
    this.events = events;
  }
}

const DEFAULTS = {
  attempts: 5,          // sends of one batch, the first included
  backoffMin: 1000,     // ms before the second; doubling, ±20%
  backoffMax: 30000,
  timeout: 10000,       // ms for one POST to be answered
  maxQueued: 10000,     // events waiting (queued or being retried) per app
};

/** The signature Pusher puts in X-Pusher-Signature: hex HMAC-SHA256(secret, body). */
function sign(secret, body) {
  return crypto.createHmac('sha256', secret).update(body).digest('hex');
}

/** Whether a webhook wants an event: its types, and its channel filter. */
function wants(hook, event) {
  if (!hook.eventTypes.includes(event.name)) return false;
  const { startsWith, endsWith } = hook.filter;
  if (startsWith !== null && !String(event.channel ?? '').startsWith(startsWith)) return false;
  if (endsWith !== null && !String(event.channel ?? '').endsWith(endsWith)) return false;
  return true;
}

/**
 * One app's webhooks. send(event) takes one Pusher webhook event ({ name,
 * channel, ... }); 'error' hears a WebhookError for each batch given up
 * (after its attempts) and for each event dropped over maxQueued; stats()
 * counts them. close() sends what is queued (one attempt each) and resolves
 * when every send in flight has ended.
 */
class Webhooks extends EventEmitter {
  #app;
  #opts;
  #fetch;
  #pending = new Map(); // hook -> events of this turn
  #scheduled = false;
  #inFlight = new Set(); // POSTs not yet answered
  #waiting = new Set();  // batches waiting for their next attempt
  #queued = 0;
  #closed = false;
  #stats = { sent: 0, events: 0, retries: 0, failed: 0, dropped: 0 };

  constructor(app, { batching = false, fetch = globalThis.fetch, ...opts } = {}) {
    super();
    this.#app = app;
    this.#opts = { ...DEFAULTS, ...opts, batching };
    this.#fetch = fetch;
  }

  get active() {
    return this.#app.webhooks.length > 0;
  }

  /** Whether some webhook of the app wants events named `name` (so the caller can skip making them). */
  wantsName(name) {
    return this.#app.webhooks.some((h) => h.eventTypes.includes(name));
  }

  send(event) {
    if (this.#closed) return;
    for (const hook of this.#app.webhooks) {
      if (!wants(hook, event)) continue;
      if (this.#queued >= this.#opts.maxQueued) {
        this.#stats.dropped++;
        this.#fail(new WebhookError(`webhook ${hook.url}: ${this.#opts.maxQueued} events already waiting; ${event.name} dropped`, { url: hook.url, events: 1 }));
        continue;
      }
      this.#queued++;
      if (!this.#opts.batching) {
        this.#post(hook, [event], 1);
        continue;
      }
      const list = this.#pending.get(hook);
      if (list) list.push(event);
      else this.#pending.set(hook, [event]);
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    }
  }

  stats() {
    return { ...this.#stats, queued: this.#queued };
  }

  async close() {
    this.#flush();
    this.#closed = true;
    // A batch waiting to be retried is sent now, once.
    for (const e of this.#waiting) {
      clearTimeout(e.timer);
      this.#post(e.hook, e.events, e.attempt);
    }
    this.#waiting.clear();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  #flush() {
    this.#scheduled = false;
    const batches = [...this.#pending];
    this.#pending.clear();
    for (const [hook, events] of batches) this.#post(hook, events, 1);
  }

  #fail(err) {
    if (this.listenerCount('error') > 0) this.emit('error', err);
  }

  #post(hook, events, attempt) {
    const body = JSON.stringify({ time_ms: Date.now(), events });
    const headers = {
      ...hook.headers,
      'content-type': 'application/json',
      'x-pusher-key': this.#app.key,
      'x-pusher-signature': sign(this.#app.secrets[0], body),
    };
    const p = this.#attempt(hook, body, headers).then((status) => {
      this.#inFlight.delete(p);
      if (status >= 200 && status < 300) {
        this.#queued -= events.length;
        this.#stats.sent++;
        this.#stats.events += events.length;
        return;
      }
      // 4xx other than 429: the receiver refuses these events; sending them
      // again would get the same answer.
      const retryable = status === 0 || status === 429 || status >= 500;
      const last = this.#closed || !retryable || attempt >= this.#opts.attempts;
      if (last) {
        this.#queued -= events.length;
        this.#stats.failed += events.length;
        this.#fail(new WebhookError(`webhook ${hook.url}: ${status === 0 ? 'no answer' : `answered ${status}`} after ${attempt} attempt${attempt === 1 ? '' : 's'}; ${events.length} event${events.length === 1 ? '' : 's'} not delivered`, { url: hook.url, status: status || null, events: events.length }));
        return;
      }
      this.#stats.retries++;
      const base = Math.min(this.#opts.backoffMax, this.#opts.backoffMin * 2 ** (attempt - 1));
      const entry = { hook, events, attempt: attempt + 1, timer: null };
      entry.timer = setTimeout(() => {
        this.#waiting.delete(entry);
        this.#post(hook, events, attempt + 1);
      }, base * (0.8 + Math.random() * 0.4));
      this.#waiting.add(entry);
    });
    this.#inFlight.add(p);
  }

  /** One POST: its status, or 0 when none came (refused, reset, timeout). */
  async #attempt(hook, body, headers) {
    const ac = new AbortController();
    const t = setTimeout(() => ac.abort(), this.#opts.timeout);
    try {
      const res = await this.#fetch(hook.url, { method: 'POST', body, headers, signal: ac.signal, redirect: 'manual' });
      await res.arrayBuffer().catch(() => {});
      return res.status;
    } catch {
      return 0;
    } finally {
      clearTimeout(t);
    }
  }
}

module.exports = { Webhooks, WebhookError, sign };
