import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: crawl tests start real processes; running files two at a time keeps them honest.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
