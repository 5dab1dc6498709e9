'use strict';
// symphony's errors: real Error subclasses, each with a stable `code`.

class SymphonyError extends Error {
  constructor(code, message, options) {
    super(message, options);
    this.name = 'SymphonyError';
    this.code = code;
  }
}

/** The native addon could not be found or loaded. */
class LoadError extends SymphonyError {
  constructor(message, tried) {
    super('ERR_SYMPHONY_LOAD', message);
    this.name = 'SymphonyLoadError';
    this.tried = tried;
  }
}

/** An allocator operation that the allocator in this build cannot do. */
class AllocatorError extends SymphonyError {
  constructor(code, message) {
    super(code, message);
    this.name = 'SymphonyAllocatorError';
  }
}

/** Certificates or keys that cannot be used (new Server / setTls). */
class TlsError extends SymphonyError {
  constructor(message) {
    super('ERR_SYMPHONY_TLS', message);
    this.name = 'SymphonyTlsError';
  }
}

/**
 * A hook's answer that cannot reach the client (onSubscribe's { data },
 * onRequest's reply, or any answer JSON cannot write: a BigInt, a cycle,
 * nesting too deep, a toJSON that throws): the client got the 'internal'
 * refusal or error, and the server's 'error' gets this, naming the hook, the
 * connection and the topic (null for a request or an upgrade); `cause` is
 * what failed. With `threw`, the hook itself threw or rejected (with
 * anything but a ClientError): code ERR_SYMPHONY_HOOK_THREW.
 */
class HookError extends SymphonyError {
  constructor(hook, id, topic, cause, threw = false) {
    const where = topic === null ? '' : ` on topic ${JSON.stringify(topic)}`;
    const why = cause instanceof Error ? cause.message : String(cause);
    super(threw ? 'ERR_SYMPHONY_HOOK_THREW' : 'ERR_SYMPHONY_HOOK_ANSWER', threw
      ? `symphony: ${hook} threw for connection ${id}${where}: ${why}`
      : `symphony: ${hook}'s answer to connection ${id}${where} cannot be sent: ${why}`, { cause });
    this.name = 'SymphonyHookError';
    this.hook = hook;
    this.id = id;
    this.topic = topic;
  }
}

/**
 * An error a client is meant to see: thrown or rejected by onSubscribe,
 * onPublish or onRequest, its code and message reach the client as they
 * are (any other error reaches it as 'internal', and the server's 'error').
 */
class ClientError extends Error {
  constructor(code, message = '') {
    super(message);
    this.name = 'ClientError';
    if (typeof code !== 'string' || !/^[a-z0-9][a-z0-9._-]{0,63}$/.test(code)) {
      throw invalidArgValue('code', 'must be 1 to 64 characters of a-z, 0-9, ".", "_" or "-"', code);
    }
    this.code = code;
  }
}

function invalidArgType(name, expected, value) {
  const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
  const err = new TypeError(`The "${name}" argument must be ${expected}. Received ${got}`);
  err.code = 'ERR_INVALID_ARG_TYPE';
  return err;
}

function outOfRange(name, range, value) {
  const err = new RangeError(`The value of "${name}" is out of range. It must be ${range}. Received ${String(value)}`);
  err.code = 'ERR_OUT_OF_RANGE';
  return err;
}

function invalidArgValue(name, reason, value) {
  const err = new TypeError(`The argument "${name}" ${reason}. Received ${String(value)}`);
  err.code = 'ERR_INVALID_ARG_VALUE';
  return err;
}

/** value, when it is an integer within [min, max]; else the TypeError or RangeError naming it. */
function integer(name, value, min, max) {
  if (typeof value !== 'number') throw invalidArgType(name, 'of type number', value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw outOfRange(name, `an integer >= ${min} and <= ${max}`, value);
  }
  return value;
}

module.exports = { SymphonyError, LoadError, AllocatorError, TlsError, HookError, ClientError, invalidArgType, outOfRange, invalidArgValue, integer };
