/** Tests run the TypeScript sources through ts-jest (transpile only: `npm test`
 * type-checks the whole tree with tsc first). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // ESM-only dependencies (aedes 1.x) must be transformed to run under jest.
  transformIgnorePatterns: ['/node_modules/(?!(aedes)/)'],
  testTimeout: 20000,
  maxWorkers: 2,
};
