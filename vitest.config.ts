import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: crawl tests start real processes; running files two at a time keeps them honest.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        // Unit tests share one module graph per worker (no isolation): they set no global state that
        // outlives them (fake timers are restored in afterEach), and loading the sources again for
        // each of 79 files was 56 s of CPU of a CI run at its 10-minute bound (148 s to 92 s).
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], isolate: false },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts'] },
      },
    ],
  },
});
