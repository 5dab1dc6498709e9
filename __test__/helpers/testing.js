'use strict';
// The test-only exports (binding._testAlloc/_testFree) exist only in a
// testing build (scripts/build.js --testing; SY_TESTING). npm test runs every
// suite against the production build, then the suites that require this
// helper again against the testing build of the same allocator and page
// (scripts/test.js, through SYMPHONY_NATIVE). Against a production build
// (the first run, a prebuilt binary) the tests that need them are skipped.
const { binding } = require('../../lib/native');

const isTestingBuild = typeof binding._testAlloc === 'function';

/** node:test options for a test that needs the test-only exports. */
const needsTestingBuild = {
  skip: isTestingBuild ? false : 'needs a testing build (_testAlloc): npm test runs this suite against one too',
};

module.exports = { binding, isTestingBuild, needsTestingBuild };
