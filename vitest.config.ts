import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['spec/**/*.spec.ts'],
    // The native addon needs real typed arrays from one realm: forks, never vm pools.
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
