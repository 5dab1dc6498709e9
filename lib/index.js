'use strict';
// The package's entry, for require('symphony-ws') and import ... from
// 'symphony-ws' alike: every export is a plain name in the literal below,
// which is what lets Node find them when an ES module imports this file
// (__test__/package/esm.test.mjs checks that all of them arrive).
const allocator = require('./allocator');
const { SymphonyError, LoadError, TlsError, HookError, ClientError } = require('./errors');
const { Server } = require('./server');

module.exports = {
  Server,
  allocator,
  SymphonyError,
  LoadError,
  TlsError,
  HookError,
  ClientError,
};
