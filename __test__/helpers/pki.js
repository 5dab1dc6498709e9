'use strict';
// The test PKI: the same one the benchmark's TLS arms use (bench/servers/pki.js).
module.exports = require('../../bench/servers/pki');
