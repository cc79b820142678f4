import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Crash tests spawn real processes; two workers match the CI machine's two cores.
    maxWorkers: 2,
  },
});
