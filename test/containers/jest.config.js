/**
 * The container tests (npm run test:containers runs test/containers/run.sh, which starts the
 * engine and calls this). They bring their own Kafka in containers: no global broker here.
 */
const base = require('../../jest.config');

module.exports = {
  ...base,
  rootDir: '../..',
  roots: ['<rootDir>/test/containers'],
  testMatch: ['**/*.container-test.ts'],
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 600000,
  maxWorkers: 1,
};
