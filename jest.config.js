/** One broker per run: globalSetup starts it (or finds one), tests share it. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // Fastify's inject (light-my-request) requires cookie 2, which is ESM only: jest's CommonJS runtime needs it
    // transpiled (Node itself loads it with require(esm)).
    '/node_modules/cookie/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', isolatedModules: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!cookie/)'],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  testTimeout: 60000,
  maxWorkers: 2,
};
