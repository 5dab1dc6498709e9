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

module.exports = { SymphonyError, LoadError, AllocatorError, TlsError, ClientError, invalidArgType, outOfRange, invalidArgValue, integer };
