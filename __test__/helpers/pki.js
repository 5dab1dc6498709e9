'use strict';
// The test PKI: the same one the benchmark's TLS arms use (bench/lib/pki.js).
module.exports = require('../../bench/lib/pki');
