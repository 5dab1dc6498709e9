'use strict';
const allocator = require('./allocator');
const errors = require('./errors');
const { Server } = require('./server');

module.exports = {
  Server,
  allocator,
  SymphonyError: errors.SymphonyError,
  LoadError: errors.LoadError,
  TlsError: errors.TlsError,
};
