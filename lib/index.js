'use strict';
const allocator = require('./allocator');
const errors = require('./errors');

module.exports = {
  allocator,
  SymphonyError: errors.SymphonyError,
  LoadError: errors.LoadError,
};
