/** The fast tier: no broker, no Java (fakes of the project's own ports). `npm test` runs it with everything else. */
const base = require('./jest.config');

module.exports = {
  ...base,
  roots: ['<rootDir>/test/unit', '<rootDir>/src', '<rootDir>/consumers'],
  globalSetup: undefined,
  globalTeardown: undefined,
  // The full run's coverage threshold is about both tiers; this tier alone reaches less.
  coverageThreshold: undefined,
};
