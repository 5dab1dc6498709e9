'use strict';
// The loaded native addon (one per process/worker), and where it came from.
const { load } = require('./loader');

const { binding, path } = load();

module.exports = { binding, path };
