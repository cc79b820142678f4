import { defineConfig } from 'vitest/config';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Ends the run with the plain `N passed, N failed, N skipped` line that CI and
 * people read, counted over every test case of every module.
 */
const plainSummary: Reporter = {
  onTestRunEnd(modules: ReadonlyArray<TestModule>) {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
    }
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  },
};

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Crash tests spawn real processes; two workers match the CI machine's two cores.
    maxWorkers: 2,
    reporters: ['default', plainSummary],
  },
});
