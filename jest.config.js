/** Tests run the TypeScript sources through ts-jest (transpile only: `npm test`
 * type-checks the whole tree with tsc first). */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.tsx?$': ['ts-jest', { tsconfig: 'tsconfig.json' }],
    // aedes 1.x is ESM-only ("type": "module"): compile its .js files to CommonJS for jest 29.
    '/node_modules/aedes/.+\\.js$': [
      'ts-jest',
      { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022', esModuleInterop: true, isolatedModules: true } },
    ],
  },
  // ESM-only dependencies (aedes 1.x) must be transformed to run under jest.
  transformIgnorePatterns: ['/node_modules/(?!(aedes)/)'],
  testTimeout: 20000,
  maxWorkers: 2,
};
