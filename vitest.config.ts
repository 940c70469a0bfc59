import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['spec/**/*.spec.ts'],
    // The native addon needs real typed arrays from one realm: forks, never vm pools.
    pool: 'forks',
    // The JSON summary lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ['default', ['json', { outputFile: 'node_modules/.cache/rxccl/vitest-results.json' }]],
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
